// The certificate of a model's whole stream (docs/design.md section 2.7), kept
// beside the model: it hands the labeled prepared examples to a solver that
// runs elsewhere, and accumulates the hinge sums of the candidate comparators
// that solver found, so that the reported bound covers every example.
//
//   // On the learning path, under the model's lock, once per labeled example:
//   tracker.Observe(prepared, label);
//   // A refresher, under the same lock:
//   perceptron::KeptRows rows = tracker.Take();
//   // ... off the lock: solver.Add(rows); c = solver.Solve(R, options);
//   //     sums = HingeSums(solver.rows(), vs) for candidates vs from c ...
//   // and under the lock again:
//   tracker.Install(vs, sums, c.lower, c.converged, solver.size(),
//                   generation);
//   perceptron::CertificateReport r = tracker.Report(radius);
//
// Each candidate v gives the comparator u = v / ||v|| with margin
// gamma = 1 / ||v||, whose bound (R/gamma)^2 + 2 TD_gamma(u) / gamma is
// R^2 ||v||^2 + 2 sum_t max(0, 1 - y_t v . x^_t). Candidates are installed with
// their sums over every example seen so far (the tracker adds those that
// arrived after the refresher took its rows) and accumulate each new example,
// so the least of their bounds, `upper`, is the theorem's bound for the whole
// stream at every moment. `lower` is the dual value of the last solve, a lower
// value of B* over a prefix of the stream, hence of B* over all of it (adding
// examples or growing R never lowers B*).
//
// Up to `limit` rows (or bytes) are kept for the solver, then `slack` more
// rows until a solution converged over exactly the first `limit` rows (with
// every example equal to one of them when its rows were taken; those counted
// while it was solved are summed into its candidates) is installed, or
// kFreezeRounds that did not converge; then the candidates are frozen and no
// example is kept any more. An example equal to a row after the limit
// counts that row again. If a new row finds the slack full first, the
// candidates installed last are frozen at it (docs/certificate.md, "Limits
// and the freeze"). Not thread-safe: the model's lock guards it.
#ifndef PERCEPTRON_CORE_CERTIFICATE_TRACKER_H_
#define PERCEPTRON_CORE_CERTIFICATE_TRACKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/byte_budget.h"
#include "core/candidate_sums.h"
#include "core/certificate.h"
#include "core/config.h"
#include "core/huge_pages.h"
#include "core/kernel_certificate.h"
#include "core/prepare.h"

namespace perceptron {

enum class CertificatePhase {
  // No certificate: `reason` says why.
  kOff,
  // Examples are kept; the figures come from the last solution installed
  // (none yet while `available` is false).
  kKeeping,
  // The limit is reached; a converged solution over exactly `limit` examples
  // is due.
  kFreezing,
  // No example is kept any more; the candidates accumulate.
  kFrozen,
};

struct CertificateReport {
  CertificatePhase phase = CertificatePhase::kOff;
  std::string reason;  // why it is off
  // Whether `upper` and the comparator exist (after the first installation).
  bool available = false;
  // The bound of the best candidate over every example seen:
  // upper = (R/gamma)^2 + 2 td / gamma for the comparator u below.
  double upper = 0;
  // A lower value of the best bound B* over every example seen.
  double lower = 0;
  double gamma = 0;
  double td = 0;
  // The unit comparator: for a linear model u itself (weight dimension
  // entries); for a kernel model u = sum_s coefficients_s phi(basis_s) in the
  // kernel's feature space (u empty).
  std::vector<double> u;
  // A wide model's u: its non-zeros, at these coordinates (u holds one value
  // each); empty otherwise. A multiclass model's u is its k vectors of the
  // weight dimension W one after another, so its coordinate i of class r is
  // r W + i here.
  std::vector<uint32_t> u_indices;
  std::vector<double> coefficients;
  KeptRows basis;
  // Labeled examples the certificate covers (all those the model learned
  // from since tracking began), those the last solution was computed over,
  // and, frozen, the example it was frozen at.
  uint64_t examples = 0;
  uint64_t solved = 0;
  uint64_t frozen_at = 0;
  // Whether the last solve reached its tolerance.
  bool converged = false;
  // Examples kept for the solver, the rows that hold them (a row stands for
  // several equal examples), and the bytes the tracker itself holds.
  uint64_t kept = 0;
  uint64_t kept_rows = 0;
  size_t bytes = 0;
  // The largest margin with which a candidate separates every example seen
  // (a lower value of gamma*), 0 if none does; and for the margin rule with
  // the model's gamma, its bound 8/gamma^2 once that margin is at least gamma
  // (the margin perceptron's theorem: every example is separated with margin
  // gamma).
  double margin = 0;
  bool margin_bound_available = false;
  double margin_bound = 0;
};

// What a tracker carries over a restart or an export: its comparators, their
// hinge sums and its figures, not the examples it keeps (see Restore and
// TakeRows).
struct CertificateState {
  CertificatePhase phase = CertificatePhase::kKeeping;
  std::string reason;
  bool permanent_off = false;
  uint64_t observed = 0;
  uint64_t kept = 0;  // rows
  // The examples they stand for (a row may stand for several equal ones;
  // 0 in states from before: as many as the rows).
  uint64_t kept_examples = 0;
  uint64_t solved = 0;  // examples
  uint64_t frozen_at = 0;
  double lower = 0;
  bool converged = false;
  // Whether `candidates` are given: a journal carries them only when they
  // changed (the sums, always).
  bool with_candidates = true;
  // A kernel model's candidates are coefficients over the rows of `basis`.
  KeptRows basis;
  std::vector<std::vector<double>> candidates;
  // A wide linear model's candidates hold one value for each of these
  // coordinates (CandidateSupport); empty: one for every coordinate.
  std::vector<uint32_t> support;
  std::vector<double> sums;
  friend bool operator==(const CertificateState&,
                         const CertificateState&) = default;
};

// Bytes of kept rows that the trackers sharing it may hold together (a
// server's memory for certificates). A tracker takes them in chunks as it
// keeps rows and gives them all back when it stops keeping (frozen, off,
// reset or destroyed); a tracker that finds the budget taken stops keeping
// then, with the budget's reason.
using CertificateBudget = ByteBudget;

// The examples a kernel model keeps for its certificate, at most: its solver's
// pass costs O(n^2 nnz) at worst, and each candidate adds O(n nnz) per example
// once frozen.
inline constexpr uint64_t kKernelCertificateLimit = 2000;

// A set of coordinates of a model of weight dimension d: a bit each up to
// kBitsUpTo, a table above it.
class CoordinatesInUse {
 public:
  static constexpr uint32_t kBitsUpTo = uint32_t{1} << 24;
  void Clear() {
    bits_ = {};
    table_ = {};
    size_ = 0;
  }
  void Reset(uint32_t dimension) {
    Clear();
    dimension_ = dimension;
  }
  bool Has(uint32_t i) const {
    if (dimension_ <= kBitsUpTo) {
      return (i >> 6) < bits_.size() && ((bits_[i >> 6] >> (i & 63)) & 1);
    }
    return table_.contains(i);
  }
  void Add(uint32_t i) {
    if (dimension_ <= kBitsUpTo) {
      if (bits_.empty()) bits_.assign((uint64_t{dimension_} + 63) / 64, 0);
      if ((i >> 6) >= bits_.size()) return;
      const uint64_t bit = uint64_t{1} << (i & 63);
      size_ += (bits_[i >> 6] & bit) == 0;
      bits_[i >> 6] |= bit;
      return;
    }
    size_ += table_.insert(i).second;
  }
  uint64_t size() const { return size_; }
  size_t bytes() const {
    return bits_.capacity() * sizeof(uint64_t) +
           table_.capacity() * (sizeof(uint32_t) + 1);
  }

 private:
  uint32_t dimension_ = 0;
  std::vector<uint64_t> bits_;
  absl::flat_hash_set<uint32_t> table_;
  uint64_t size_ = 0;
};

class CertificateTracker {
 public:
  // A tracker that keeps up to `limit` (>= 1) examples, or fewer if they
  // reach `limit_bytes` (as counted by RowBytes), plus `slack` examples; the
  // bytes of every row kept are taken from `budget` too, if given. With
  // `kernel`, for a kernel model of weight dimension `weight_dimension`: its
  // candidates are coefficient vectors over a basis of rows (Install). With
  // `classes` k > 0, for a multiclass model (docs/design.md section 2.8):
  // labels are classes 0..k-1, a candidate V holds k vectors of the weight
  // dimension one after another, its hinge is the multiclass one
  // (ClassHingeSums) and its bound 2 R^2 ||V||_F^2 + 2 sum_t xi_t.
  CertificateTracker(uint64_t limit, uint64_t slack,
                     uint64_t limit_bytes = UINT64_MAX,
                     std::shared_ptr<CertificateBudget> budget = nullptr,
                     std::optional<KernelConfig> kernel = std::nullopt,
                     uint32_t weight_dimension = 0, int classes = 0);
  ~CertificateTracker() { Release(); }
  CertificateTracker(const CertificateTracker&) = delete;
  CertificateTracker& operator=(const CertificateTracker&) = delete;
  // What keeping one row of `nnz` non-zeros counts: its values and indices
  // (12 bytes each), its offset, label and square, and the solver's dual
  // variable (25 bytes), its entry in the table that finds an example equal
  // to a kept one (32), its key by place (16) and its last score by place
  // (12). Growing the arrays may take up to as much again.
  static uint64_t RowBytes(size_t nnz) { return nnz * 12 + 85; }
  // What the certificate's dense vectors of a model of weight dimension `d`
  // take: the candidates and the solver's (8 doubles per coordinate).
  // A wide model's (IsWide) are counted by the coordinates its rows use
  // instead, WideCoordinateBytes(k) each, as the first row kept for the solver
  // that uses it is kept (so a limit holds whenever a solve ends).
  static uint64_t VectorBytes(uint64_t d) { return IsWide(d) ? 0 : d * 64; }
  // What a coordinate of a wide model's certificate takes at most: the
  // candidates' values (6 doubles), the refresher's next candidates while
  // these are kept (6), the solver's iterates and u (4), and the position
  // tables of the solver and the tracker (about 24 bytes each), and the
  // summed candidates' values by coordinate when the coordinates are dense
  // enough (CandidateSupport::kDenseBytes, 48), and the two tables' filters
  // (at most 4 bytes each).
  static constexpr uint64_t kWideCoordinateBytes = 232;
  // A wide multiclass model's (k classes): its candidates (4 of k values)
  // and the summed one's values by position (k), as many for the
  // refresher's next ones, the solver's W and u (2k), 8 bytes each, and the
  // position tables and the filter as above (56).
  static constexpr uint64_t WideCoordinateBytes(int classes) {
    return classes > 0 ? uint64_t{96} * static_cast<uint64_t>(classes) + 56
                       : kWideCoordinateBytes;
  }
  // Bytes taken from the budget at a time.
  static constexpr uint64_t kBudgetChunk = uint64_t{1} << 16;
  // Solutions over exactly the limit that may be installed unconverged before
  // the tracker freezes at the last of them anyway.
  static constexpr int kFreezeRounds = 50;

  // ---- On the learning path, under the model's lock ----

  // Accounts one labeled example (prepared as the model does). O(nnz) per
  // candidate that is not a multiple of another (ScaledCandidates),
  // plus a copy of x^ while keeping. A linear model's example equal bit for
  // bit (label, coordinates, values of x^) to one kept before, as cyclic
  // training repeats them, counts that row once more instead of being kept
  // again: the solver solves it as that many equal examples.
  void Observe(const Prepared& x, int label);
  // Asks for what Observe(x) first waits on in a wide model, as
  // Model::Prefetch asks for the weights: the candidates' values at x's
  // coordinates where they are kept by coordinate, else the slots of x's
  // coordinates in the table of positions. A hint: it changes nothing. Not
  // for a multiclass model, whose scores it made slower (the slots asked for
  // ahead: BM_ObserveFrozenMulticlass/bits:20, 312 ns an example against
  // 263).
  void Prefetch(const FeatureView& x) const {
    if (support_ != nullptr && classes_ == 0 && !kernel_) support_->Prefetch(x);
  }

  // ---- The figures ----

  // Counts resets, so that a refresher can tell its solver is stale.
  uint64_t generation() const { return generation_; }

  // The figures for radius R = `radius` (the model's, now); the comparator
  // u too if `with_u`; the margin rule's bound if `margin_gamma` > 0 (the
  // model's gamma, for the margin rule).
  CertificateReport Report(double radius, bool with_u = true,
                           double margin_gamma = 0) const;
  CertificatePhase phase() const { return phase_; }
  // Labeled examples observed since tracking began (or the last Reset).
  uint64_t observed() const { return observed_; }
  size_t bytes() const;

  // ---- Rows: who takes the kept examples, and when ----
  //
  // Every row Observe keeps goes to three places, each by its own call:
  //  - the solver (the refresher): Take hands over the rows kept since the
  //    last Take; due() says whether there is work; Install brings back the
  //    candidates solved over the first taken() rows;
  //  - durability (the log): with SetJournaling on, TakeRows hands over the
  //    rows kept since the last TakeRows, and whether the rows handed out
  //    before them no longer count;
  //  - carry-over (export, a restart, a replacing tracker): RowsNow copies
  //    every row kept, TakeAllRows moves them, and Restore or AttachRows
  //    take them back with a saved state.

  // The rows kept since the last Take, in order, with their counts; taken()
  // counts all taken. `repeats` gets the places (among all taken) of rows
  // taken before that were seen again since, once each (for
  // CertificateSolver::Add).
  KeptRows Take(std::vector<uint32_t>* repeats = nullptr);
  uint64_t taken() const { return taken_; }
  // Whether a solve is worth its cost now: a freeze or restored rows wait
  // for one, or the examples kept or seen again since the last Take are at
  // least 1/kRipe of those taken before (any, while none was). A stream's
  // solves are then spaced geometrically, not one for every batch; what
  // waits below that is solved once the model is quiet (the refresher's).
  // Past kRipeRepeats places counted again it is ripe too, whatever was
  // taken before: they wait in a list of 4 bytes each, which a long stream
  // over rows seen before would otherwise grow by an eighth of all it
  // brought (27 MB after 54 M examples).
  static constexpr uint64_t kRipe = 8;
  static constexpr size_t kRipeRepeats = size_t{1} << 18;
  bool ripe() const {
    const uint64_t waiting = queue_.examples() + repeats_.size();
    return (waiting > 0 && waiting * kRipe >= taken_examples_) ||
           repeats_.size() >= kRipeRepeats ||
           phase_ == CertificatePhase::kFreezing ||
           (restored_.size() > 0 && (!converged_ || solved_ < kept_examples_));
  }
  // Whether rows wait to be taken, a freeze waits for its solution, or rows
  // restored with their state wait for a solution that covers them.
  bool due() const {
    return queue_.size() > 0 || !repeats_.empty() ||
           phase_ == CertificatePhase::kFreezing ||
           (restored_.size() > 0 && (!converged_ || solved_ < kept_examples_));
  }

  // Installs candidates `vs` whose hinge sums over the first `covered` kept
  // rows are `sums`, with the solve's `lower` and `converged`. `covered` must
  // equal taken() and `generation` generation() (no reset since the rows
  // were taken); the tracker adds the rows kept since. Ignored otherwise, and
  // when frozen or off. A kernel model's candidates are coefficients over
  // the rows of `basis` (KernelCandidatesFrom). The rows taken that were seen
  // again since (Take's `repeats`) are summed over `solved_rows`, the rows
  // the solution was computed over (in the candidates' coordinates); the
  // solution is ignored if there are such and it is null.
  // A wide model's candidates hold one value for each coordinate of
  // `support` (CertificateSolver::coordinates), coordinates of the rows
  // taken, counted against the limits as those rows were kept; a support
  // made with candidates (CandidateSupport::Of's `vs`) was made with `vs`.
  void Install(std::vector<std::vector<double>> vs, std::vector<double> sums,
               double lower, bool converged, uint64_t covered,
               uint64_t generation, KeptRows basis = {},
               std::shared_ptr<const CandidateSupport> support = nullptr,
               const KeptRows* solved_rows = nullptr);
  // While freezing: whether the rows after the limit grew between the last
  // two solutions installed at a pace that fills the slack (in rows or
  // bytes) within kPressedSolves more, so that the solution may not come
  // first (a refresher then solves without resting); a stream that repeats
  // rows kept, or brings new ones slowly, does not press.
  static constexpr uint64_t kPressedSolves = 16;
  bool pressed() const {
    return phase_ == CertificatePhase::kFreezing && pressed_;
  }
  // Whether the candidates live in a kernel's feature space.
  bool kernel() const { return kernel_.has_value(); }
  // A multiclass model's classes k; 0 for a binary model.
  int classes() const { return classes_; }

  // The rows a journal carries: with journaling on, every row kept since the
  // last TakeRows, and whether the rows handed out before them no longer
  // count (the tracker reset, froze, turned off, or was restored without
  // them).
  struct RowsDelta {
    bool cleared = false;
    KeptRows rows;
    // Places (among every row kept since the last clearing, these rows
    // included) of rows seen again, once each, after `rows` are appended.
    std::vector<uint32_t> repeats;
  };
  // Brings `all` (every row of the deltas before) up to date with `delta`.
  static void Apply(const RowsDelta& delta, KeptRows* all);
  void SetJournaling(bool on);
  RowsDelta TakeRows();
  // Every row kept, in order, if no Take has handed any to a solver since
  // the last Restore (for a tracker replacing this one); else none.
  std::optional<KeptRows> TakeAllRows();
  // A copy of every row kept, in order, while keeping: `taken` (the rows
  // Take handed to a solver, all of them; null if none was) followed by
  // those not taken. None if not keeping or `taken` are not all taken.
  std::optional<KeptRows> RowsNow(const KeptRows* taken) const;

  // ---- State carried over a restart or an export ----

  // The state to carry over, the candidates only if `with_candidates`.
  CertificateState Save(bool with_candidates = true) const;
  // Whether the candidates changed since the last call (installed, cleared
  // or restored): a journal then carries them.
  bool TakeCandidatesChanged() {
    return std::exchange(candidates_changed_, false);
  }
  // Continues from `state`, keeping the candidates if it carries none. The
  // examples it kept are not in the state: given `rows` (every example it
  // kept, in order: as many as it observed), a tracker that was keeping
  // goes on keeping, its figures unchanged, and its rows go to the solver
  // with the next Take (none is due while the state's solution covers them
  // converged). Without them it is frozen here, at the last example
  // covered, so that U stays a valid bound for the whole stream though no
  // longer exact; or, with no solution yet, off until a Reset. Either says
  // why, and AttachRows may still bring them. A state that does not fit
  // weight dimension `weight_dimension` (CheckState's error, returned) turns
  // the certificate off until a Reset, saying so: the model itself is never
  // refused for its certificate.
  absl::Status Restore(const CertificateState& state, uint32_t weight_dimension,
                       KeptRows* rows = nullptr);
  // After a Restore without rows of a tracker that was keeping: continues
  // that state with `rows` as Restore would have. False (nothing changed) if
  // there is no such state or `rows` are not as many as it observed.
  bool AttachRows(KeptRows rows);
  // INVALID_ARGUMENT naming the field if `state` (with the candidates kept
  // if it carries none) does not fit weight dimension `weight_dimension`.
  absl::Status CheckState(const CertificateState& state,
                          uint32_t weight_dimension) const;

  // ---- Changes from outside the stream ----

  // Turns the tracker off for `reason` until the next Reset (the model learned
  // from examples the tracker did not see), or for good if `permanent`.
  void TurnOff(std::string reason, bool permanent = false);

  // Stops keeping examples (a memory budget is reached): freezes at the
  // candidates installed last, or turns off if there are none.
  void StopKeeping(const std::string& why);
  // Stops keeping examples because those kept could not be stored (a full
  // disk): as StopKeeping, with `why` as the reason either way.
  void RowsGaveWay(const std::string& why);
  // Bytes this tracker holds of its budget.
  uint64_t held() const { return held_; }

  // Forgets everything (the model was reset); keeps the limits.
  void Reset();

 private:
  void RestoreChecked(const CertificateState& state, KeptRows* rows);
  // Whether `rows` are as many as the examples observed, each of them
  // within the weight dimension and finite (rows of a state from elsewhere).
  bool RowsFit(const KeptRows& rows) const;
  // Takes back the rows of `rows` as kept (the first kept_ for the solver,
  // the rest as the tail), within the budget and the limits.
  void RestoreRows(KeptRows&& rows);
  // Forgets every row kept: a journal's next rows start over.
  void DropRows();
  // Empties the queue for the solver and the tail after it.
  void ClearQueueAndTail();
  // Counts the kept row at `place` once more; false if it cannot.
  bool CountAgain(uint32_t place);
  // The key an example equal to row t of `rows` has (its bits' 128-bit hash).
  using RowKey = std::pair<uint64_t, uint64_t>;
  static RowKey KeyOf(const KeptRows& rows, size_t t);
  // The key of a row of non-zeros `i` (empty for a dense row) and `v`.
  static RowKey KeyOf(absl::Span<const uint32_t> i, absl::Span<const double> v,
                      int label);
  // Notes that the row kept at `place` has `key`, kNoKey if the table finds
  // that key at another place (keys_).
  void Placed(uint64_t place, const RowKey& key);
  // Notes the score just summed (one candidate's) as the row at `place`'s.
  void RememberScore(uint64_t place) {
    const std::vector<uint32_t>& summed = scaled_.summed();
    if (place < place_epochs_.size() && summed.size() == 1) {
      place_scores_[place] = scores_[summed[0]];
      place_epochs_[place] = scores_epoch_;
    }
  }
  // A key no row is given (XXH3's 128 bits make a row with it unlikely, and
  // Observe never takes one for it).
  static constexpr RowKey kNoKey{~uint64_t{0}, ~uint64_t{0}};
  // Whether its candidates hold one value a coordinate its rows use (a wide
  // linear model's, CandidateSupport; a multiclass model's, k such blocks).
  bool wide() const { return !kernel_ && IsWide(weight_dimension_); }

  CertificateTracker& operator=(CertificateTracker&&) = default;
  void Freeze(uint64_t at);
  // ||v||^2 of each candidate.
  std::vector<double> Squares(const std::vector<std::vector<double>>& vs,
                              const KeptRows& basis) const;
  // Hinge sums of the candidates over `rows`.
  std::vector<double> Sums(const KeptRows& rows,
                           const std::vector<std::vector<double>>& vs,
                           const KeptRows& basis,
                           const CandidateSupport* support) const;
  // A multiclass model's: scores_[c] = the margin of each summed candidate c
  // on x^ of class `label`.
  void ClassMargins(const Prepared& x, int label);
  // Finds which candidates are multiples of others (after they change).
  void Scale();
  // What keeping row `indices` for the solver takes: its RowBytes and, for a
  // wide model, WideCoordinateBytes(k) for each coordinate no row kept before
  // it used (`fresh`, not yet marked in in_use_).
  uint64_t KeptBytes(absl::Span<const uint32_t> indices, uint64_t row,
                     uint64_t* fresh) const;
  // The limit is reached: freezing, saying which.
  void ReachLimit();
  // Frozen because the rows after the limit filled the slack first, saying
  // so after the limit's reason.
  void FreezeFull();
  // Keeps a row of `bytes` within the budget (taking a chunk if needed);
  // false, and nothing kept, if the budget is taken.
  bool Reserve(uint64_t bytes);
  // Gives back every byte held of the budget.
  void Release();

  uint64_t limit_;
  uint64_t slack_;
  std::optional<KernelConfig> kernel_;
  uint32_t weight_dimension_;
  int classes_;
  // Kernel values, for a kernel model (scratch; its scratch vector is
  // restored after each use).
  std::unique_ptr<KernelRows> kernel_rows_;
  std::vector<double> kernel_values_;  // scratch
  uint64_t limit_bytes_;
  std::shared_ptr<CertificateBudget> budget_;
  uint64_t held_ = 0;  // taken from budget_
  uint64_t used_ = 0;  // of those, by rows kept
  bool permanent_off_ = false;
  uint64_t kept_bytes_ = 0;
  CertificatePhase phase_ = CertificatePhase::kKeeping;
  std::string reason_;
  uint64_t generation_ = 0;
  uint64_t observed_ = 0;
  uint64_t kept_ = 0;            // rows kept for the solver (<= limit_)
  uint64_t taken_ = 0;           // of those, rows taken
  uint64_t kept_examples_ = 0;   // the examples the kept rows stand for
  uint64_t taken_examples_ = 0;  // of those, handed to a solver
  // While keeping: each kept row by its key, to its place among them.
  // (Its table on huge pages when large: a new row's key lands on a page of
  // its own, at random.)
  absl::flat_hash_map<RowKey, uint32_t, absl::Hash<RowKey>,
                      std::equal_to<RowKey>,
                      HugePageAllocator<std::pair<const RowKey, uint32_t>>>
      seen_;
  // The same keys by place (kNoKey where seen_ has the key at another place):
  // a cycling stream (epochs over a file) brings its rows in the order they
  // were kept, so the row after the last one met, next_place_, is asked
  // first, and seen_, whose entries miss the caches when the rows are many,
  // only if that is not it. Empty if the places did not come in order.
  std::vector<RowKey> keys_;
  uint64_t next_place_ = 0;
  // By place as keys_: the summed candidate's score of the row there, valid
  // where its epoch is scores_epoch_ (the candidates it was scored against;
  // Scale counts them). A row met again takes it instead of being scored.
  std::vector<double> place_scores_;
  std::vector<uint32_t> place_epochs_;
  uint32_t scores_epoch_ = 1;
  std::vector<uint32_t> repeats_;          // rows taken seen again since Take
  std::vector<uint32_t> journal_repeats_;  // rows seen again since TakeRows
  KeptRows queue_;                         // kept rows not yet taken
  KeptRows restored_;  // rows kept before a Restore, not yet taken
  // The state a Restore without rows froze (AttachRows); behind a pointer,
  // as it is rare and a tracker is kept for every model.
  std::unique_ptr<CertificateState> unattached_;
  bool journaling_ = false;
  KeptRows journal_rows_;         // kept since the last TakeRows
  bool rows_cleared_ = false;     // since the last TakeRows
  KeptRows tail_;                 // rows after the limit, while freezing
  uint64_t tail_bytes_ = 0;       // their RowBytes
  uint64_t tail_at_install_ = 0;  // their count at the last Install
  uint64_t tail_bytes_at_install_ = 0;
  bool pressed_ = false;  // they grew between the last two
  std::vector<std::vector<double>> candidates_;
  // The coordinates a wide model's candidates hold (null: every one).
  std::shared_ptr<const CandidateSupport> support_;
  // A wide model's coordinates used by the rows kept for the solver, each
  // counted WideCoordinateBytes(k) against the limits as the first row that
  // uses it is kept (a solution over them will hold one value each).
  CoordinatesInUse in_use_;
  ScaledCandidates scaled_;  // of candidates_
  // scratch: each candidate's v . x^ (a multiclass candidate's margin)
  std::vector<double> scores_;
  KeptRows basis_;               // a kernel model's candidates' rows
  std::vector<double> squares_;  // ||v||^2 of each candidate
  std::vector<double> sums_;     // their hinge sums
  double lower_ = 0;
  bool converged_ = false;
  uint64_t solved_ = 0;
  uint64_t frozen_at_ = 0;
  bool candidates_changed_ = false;
  // Solutions over exactly the limit installed while freezing that had not
  // converged.
  int unconverged_at_limit_ = 0;
};

// The candidates a refresher installs for a solution `c`: v = u / gamma and its
// multiples p * v[i] by kCandidateScales (the best scale may move as examples
// arrive; each is scored from v's sum, ScaledCandidates); and, given
// a separating hard-margin solution, its u / gamma scaled up by 1e-9 so that
// every kept example's hinge term is exactly 0 despite rounding (a witness of
// the margin for the margin rule).
std::vector<std::vector<double>> CandidatesFrom(
    const Certificate& c, const HardMargin* hard = nullptr);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CERTIFICATE_TRACKER_H_
