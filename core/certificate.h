// The certificate of docs/design.md section 2.7: the theorem's best bound over
// every comparator, computed from the labeled prepared examples themselves,
// with a certified gap.
//
// For examples x^_t with labels y_t and radius R (the running maximum of
// ||x^||), the best bound over all (u, gamma) with ||u|| <= 1 is
//   B* = min over v of R^2 ||v||^2 + 2 sum_t max(0, 1 - y_t v . x^_t)
//      = 2 R^2 P*(C = 1 / R^2),
// P* the optimum of the L2-regularised hinge-loss SVM without intercept. The
// solver runs dual coordinate descent (Hsieh et al., 2008, as liblinear's
// L1-loss SVC does) on
//   max over 0 <= alpha_t <= C of  sum_t alpha_t - 1/2 ||sum_t alpha_t y_t x^_t||^2,
// whose value at any feasible alpha is at most P*; its iterate v gives the
// concrete comparator u = v / ||v|| and margin gamma = 1 / ||v||, whose bound
// (R/gamma)^2 + 2 TD_gamma(u) / gamma is at least B*. So
//   lower <= B* <= upper,
// and `upper` is the theorem's bound for a comparator the caller can use.
//
//   perceptron::CertificateSolver solver(/*weight_dimension=*/d + 1);
//   solver.Add(prepared, label);          // keeps a copy of x^
//   perceptron::Certificate c = solver.Solve(radius, {});
//   // updates <= c.upper for the classic rule, c.lower <= B* <= c.upper
//
// Solve warm-starts from the previous solution, and shrinks as liblinear
// does: variables held at a bound are left out of passes until the rest are
// nearly optimal (docs/design.md section 2). Not thread-safe.
#ifndef PERCEPTRON_CORE_CERTIFICATE_H_
#define PERCEPTRON_CORE_CERTIFICATE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "core/config.h"
#include "core/prepare.h"

namespace perceptron {

// The gap at which a solution counts as converged for the server
// (docs/design.md section 2.7: (U - L) / U <= 1e-3): its refresher solves to
// it, 2.8x fewer passes than to the default 1e-4 (10^5 kept examples of
// d = 20 from cold: 16 against 45).
inline constexpr double kConvergedGap = 1e-3;

struct CertificateOptions {
  // Stop once (upper - lower) <= tolerance * upper. Default: 1e-4.
  double tolerance = 1e-4;
  // Passes over the kept examples at most, per Solve. Default: 1000.
  int max_passes = 1000;
  // If set, Solve asks it after each pass and, given true, ends there with
  // `stopped` set: its figures are then not a solution's, and are not to be
  // used (the server's refresher: the model froze or changed meanwhile, so
  // the solution would be thrown away). The solver can be solved again.
  std::function<bool()> stop;
};

struct Certificate {
  // The bound (R/gamma)^2 + 2 TD_gamma(u) / gamma of the comparator below,
  // over the examples given: an upper value of B*.
  double upper = 0;
  // A lower value of B*, from the dual: no comparator does better.
  double lower = 0;
  // The comparator attaining `upper`: a unit vector of the weight dimension,
  // its margin, and TD_gamma(u) over the examples.
  std::vector<double> u;
  double gamma = 0;
  double td = 0;
  // The examples it covers, the passes this Solve took, and whether it
  // reached the tolerance.
  uint64_t examples = 0;
  int passes = 0;
  bool converged = false;
  // Ended by CertificateOptions::stop: nothing above is to be used.
  bool stopped = false;
};

// The hard margin: gamma* = max over ||u|| <= 1 of min_t y_t u . x^_t, when
// the examples are separable through the origin (the bias being a coordinate).
struct HardMargin {
  // Whether a separating comparator was found; the rest holds only then.
  bool separable = false;
  // lower <= gamma* <= upper: `lower` is the margin of `u` itself, `upper`
  // comes from the dual.
  double lower = 0;
  double upper = 0;
  std::vector<double> u;
  int passes = 0;
  bool converged = false;
};

// TD*_gamma = min over ||u|| <= 1 of sum_t max(0, gamma - y_t u . x^_t), for a
// given gamma: the least total distance of docs/design.md section 2.7.
struct LeastDistance {
  // lower <= TD*_gamma <= upper; `upper` is TD_gamma(u) of `u` itself.
  double lower = 0;
  double upper = 0;
  std::vector<double> u;
  int solves = 0;  // regularised problems solved on the way
  bool converged = false;
};

// Labeled prepared examples as rows: x^_t's non-zeros (the bias coordinate
// included), its label and ||x^_t||^2. Owns its values. Rows live in blocks
// that never move once written (a full block is followed by a new one, twice
// its size up to 3 MiB, or the row's): keeping a row costs one copy of its
// non-zeros, however many rows there are, and Append(KeptRows&&) takes the
// other's blocks without copying them. A row whose non-zeros are coordinates
// 0, 1, ..., n-1 (a dense x^ with no zero, the bias last) keeps only its
// values, in a block of such rows: 8 bytes a coordinate, not 12.
class KeptRows {
 public:
  KeptRows() = default;
  KeptRows(const KeptRows& other) { Append(other); }
  KeptRows& operator=(const KeptRows& other);
  KeptRows(KeptRows&&) = default;
  KeptRows& operator=(KeptRows&&) = default;

  // Keeps a copy of x^ and its label (-1 or +1). O(nnz).
  void Add(const Prepared& x, int label);
  // Keeps a row given by its non-zeros (indices and values of x^).
  void Add(absl::Span<const uint32_t> indices, absl::Span<const double> values,
           int label);
  // Appends every row of `more` (copies).
  void Append(const KeptRows& more);
  // Appends every row of `more`, taking its blocks (small ones are copied,
  // so that many small appends do not leave many part-filled blocks).
  void Append(KeptRows&& more);
  void Clear() { *this = KeptRows(); }

  size_t size() const { return labels_.size(); }
  // Bytes the rows take.
  size_t bytes() const;

  int label(size_t t) const { return labels_[t]; }
  double square(size_t t) const { return square_[t]; }
  // w . x^_t, over the non-zeros in order.
  double Dot(size_t t, const std::vector<double>& w) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    double s = 0;
    if (b.index == nullptr) {
      const double* v = b.value.get() + r.begin;
      for (size_t i = 0; i < r.end - r.begin; ++i) s += w[i] * v[i];
      return s;
    }
    for (size_t k = r.begin; k < r.end; ++k) s += w[b.index[k]] * b.value[k];
    return s;
  }
  // w . x^_t as DenseDot sums a dense row (eight partial sums, which hide the
  // latency of addition: at d = 1000 several times faster than Dot's one
  // chain, not the same bits); a sparse row as Dot does. For the solver,
  // whose iterates and figures depend on no particular order of a sum.
  double DotUnordered(size_t t, const std::vector<double>& w) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index == nullptr) {
      return DenseDot(w.data(), b.value.get() + r.begin, r.end - r.begin);
    }
    return Dot(t, w);
  }
  // w <- w + a x^_t.
  void AddTo(size_t t, double a, std::vector<double>* w) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index == nullptr) {
      const double* v = b.value.get() + r.begin;
      double* out = w->data();
      for (size_t i = 0; i < r.end - r.begin; ++i) out[i] += a * v[i];
      return;
    }
    for (size_t k = r.begin; k < r.end; ++k) (*w)[b.index[k]] += a * b.value[k];
  }
  // Whether row t keeps only its values (its non-zeros are 0, 1, ..., n-1).
  bool dense(size_t t) const {
    return blocks_[rows_[t].block].index == nullptr;
  }
  // Asks the processor to fetch, ahead of their use, row t's label, square
  // and place among the blocks; and, once its place has come, its non-zeros.
  // A pass visits the rows in random order, and past the caches every row
  // costs several misses: fetched ahead they overlap (nothing read changes).
  void PrefetchPlace(size_t t) const {
    __builtin_prefetch(&rows_[t]);
    __builtin_prefetch(&labels_[t]);
    __builtin_prefetch(&square_[t]);
  }
  void PrefetchValues(size_t t) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index != nullptr) {
      Prefetch(b.index.get() + r.begin, b.index.get() + r.end);
    }
    Prefetch(b.value.get() + r.begin, b.value.get() + r.end);
  }
  // Row t's non-zeros.
  absl::Span<const uint32_t> indices(size_t t) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index == nullptr) return {Iota(r.end - r.begin), r.end - r.begin};
    return {b.index.get() + r.begin, r.end - r.begin};
  }
  absl::Span<const double> values(size_t t) const {
    const Row& r = rows_[t];
    return {blocks_[r.block].value.get() + r.begin, r.end - r.begin};
  }
  // The same rows (labels, squares and non-zeros), however they are stored.
  friend bool operator==(const KeptRows& a, const KeptRows& b);

 private:
  struct Block {
    std::unique_ptr<uint32_t[]> index;  // null: a block of dense rows
    std::unique_ptr<double[]> value;
    size_t size = 0;
    size_t capacity = 0;
  };
  // Row t is coordinates [begin, end) of block `block`.
  struct Row {
    uint32_t block;
    uint32_t begin;
    uint32_t end;
  };
  // Every cache line of [begin, end).
  template <typename T>
  static void Prefetch(const T* begin, const T* end) {
    if (begin == end) return;
    const char* p = reinterpret_cast<const char*>(begin);
    const char* last = reinterpret_cast<const char*>(end) - 1;
    for (; p <= last; p += 64) __builtin_prefetch(p);
    __builtin_prefetch(last);
  }
  // The open block of dense rows (or of the others), with room for `n` more
  // coordinates (a new one if needed).
  Block& Room(size_t n, bool dense);
  // 0, 1, ..., n-1: the indices of a dense row of n coordinates (a table
  // shared by every KeptRows, grown by powers of two and never freed).
  static const uint32_t* Iota(size_t n);
  // Keeps a row whose non-zeros are `values` at 0, 1, ..., n-1 (all
  // non-zero).
  void AddDense(absl::Span<const double> values, int label);
  // Ends the row written at the end of `b` (from `begin`), with its label
  // and square.
  void Close(const Block& b, size_t begin, int label, double square);

  std::vector<Block> blocks_;
  int64_t open_dense_ = -1;   // the block dense rows go on filling, if any
  int64_t open_sparse_ = -1;  // and the one the others do
  std::vector<Row> rows_;
  std::vector<int8_t> labels_;
  std::vector<double> square_;
};

// Which of candidates `vs` are a power of two times an earlier one, as
// CandidatesFrom's 0.5 v and 2 v are of v (and 0.71 v of 1.41 v): the score of
// such a candidate, p (v . x), is taken from the earlier one's instead of
// summed again. (p v) . x and p (v . x) are the same number unless a term of
// the sum lies below the normal range (2.2e-308 in magnitude), where they may
// differ in the last place. Checked coordinate by coordinate: any other
// candidates are summed.
class ScaledCandidates {
 public:
  ScaledCandidates() = default;
  explicit ScaledCandidates(const std::vector<std::vector<double>>& vs);

  // The candidates whose scores are summed, in increasing order.
  const std::vector<uint32_t>& summed() const { return summed_; }
  // Fills scores[k] of every other candidate from the summed ones'.
  void Spread(double* scores) const {
    for (const Multiple& m : multiples_) scores[m.k] = m.p * scores[m.of];
  }

 private:
  struct Multiple {
    uint32_t k;   // this candidate
    uint32_t of;  // is p times this summed one (of < k)
    double p;
  };
  std::vector<uint32_t> summed_;
  std::vector<Multiple> multiples_;
};

// sum_t max(0, 1 - y_t v . x^_t) over `rows`, for each v of `vs`: the hinge
// sums that make TD_gamma(u) = gamma * sum for u = v / ||v||, gamma = 1/||v||.
// Each v . x^_t is KeptRows::DotUnordered's; scores of scaled candidates are
// shared as ScaledCandidates says.
std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs);

// Kernel values of examples against kept rows: k(b_s, x^) for every row b_s of
// a basis, computed with x^ spread over a dense scratch vector. Not
// thread-safe.
class KernelRows {
 public:
  KernelRows(uint32_t weight_dimension, const KernelConfig& kernel)
      : kernel_(kernel), scratch_(weight_dimension, 0.0) {}
  // k(basis_s, rows_t) for every s, into *out (resized).
  void Against(const KeptRows& basis, const KeptRows& rows, size_t t,
               std::vector<double>* out);
  // k(basis_s, x^) for every s, into *out (resized).
  void Against(const KeptRows& basis, const Prepared& x,
               std::vector<double>* out);
  const KernelConfig& kernel() const { return kernel_; }

 private:
  void Fill(const KeptRows& basis, double square, std::vector<double>* out);
  KernelConfig kernel_;
  std::vector<double> scratch_;  // all 0 between calls
};

// For a kernel model the comparator lives in the kernel's feature space:
// v = sum_s c_s phi(b_s) over the rows b_s of a basis (the kept examples with a
// non-zero dual variable), given by its coefficients c.
struct KernelCertificate {
  // As Certificate's, with R the feature space's radius (FeatureRadius).
  double upper = 0;
  double lower = 0;
  double gamma = 0;
  double td = 0;
  // v = u / gamma = sum_t coefficients_t phi(x^_t) over the kept rows.
  std::vector<double> coefficients;
  uint64_t examples = 0;
  int passes = 0;
  bool converged = false;
  bool stopped = false;  // as Certificate's
};

// Kernel candidates: a basis of rows and coefficient vectors over it.
struct KernelCandidates {
  KeptRows basis;
  std::vector<std::vector<double>> vs;
};

// The candidates a refresher installs for a kernel solution `c` over `rows`:
// its v and the same multiples of it as CandidatesFrom, over the rows with a
// non-zero coefficient.
KernelCandidates KernelCandidatesFrom(const KernelCertificate& c,
                                      const KeptRows& rows);

// sum_t max(0, 1 - y_t v . phi(x^_t)) over `rows` for each v = sum_s v_s
// phi(basis_s) of `vs` (scaled candidates shared as in HingeSums).
std::vector<double> KernelHingeSums(const KeptRows& rows, const KeptRows& basis,
                                    KernelRows* kernel,
                                    const std::vector<std::vector<double>>& vs);
// ||v||^2 = sum_{s,r} v_s v_r k(basis_s, basis_r) for each v of `vs`.
std::vector<double> KernelSquares(const KeptRows& basis, KernelRows* kernel,
                                  const std::vector<std::vector<double>>& vs);

// The certificate of a kernel model: the same dual coordinate descent over
// the kernel matrix (Q_ts = y_t y_s k(x^_t, x^_s), computed a row at a time
// when a dual variable changes; y_t (Q alpha)_t kept for every row), with
// R^2 = max k(x^, x^). A pass costs O(n * nnz) per changed variable, so
// O(n^2 nnz) at worst: the kept examples of a kernel model are few
// (kKernelCertificateLimit). Warm-starts like CertificateSolver. Not
// thread-safe.
class KernelCertificateSolver {
 public:
  KernelCertificateSolver(uint32_t weight_dimension, const KernelConfig& kernel)
      : kernel_(weight_dimension, kernel) {}

  void Add(KeptRows rows);
  size_t size() const { return rows_.size(); }
  const KeptRows& rows() const { return rows_; }
  KernelRows* kernel() { return &kernel_; }
  size_t bytes() const;

  // Solves for the feature space's radius `radius` (>= sqrt(k(x^, x^)) for
  // every kept row), from the last solution.
  KernelCertificate Solve(double radius, const CertificateOptions& options);

  // TD*_gamma in the feature space, as CertificateSolver's: `u` holds the
  // comparator's coefficients over the kept rows, u = sum_t u_t phi(x^_t).
  LeastDistance SolveLeastDistance(double gamma,
                                   const CertificateOptions& options);

 private:
  // alpha_t = next, keeping q (of the same dual variables).
  void Move(size_t t, double next, std::vector<double>* alpha,
            std::vector<double>* q);
  // q_t = sum_s alpha_s y_s k(x^_s, x^_t) (so y_t q_t = (Q alpha)_t), summed
  // afresh over the rows with alpha_s != 0, for rows [from, n).
  void Recompute(size_t from, const std::vector<double>& alpha,
                 std::vector<double>* q);
  // One pass of dual coordinate descent over every row, alpha in [0, cap].
  void Pass(double cap, std::vector<double>* alpha, std::vector<double>* q);

  KernelRows kernel_;
  KeptRows rows_;
  std::vector<double> alpha_;
  std::vector<double> q_;
  std::vector<double> td_alpha_;  // SolveLeastDistance's
  std::vector<double> td_q_;
  std::vector<double> diagonal_;  // k(x^_t, x^_t)
  std::vector<double> row_;       // scratch: one row of the kernel matrix
  uint64_t seed_ = 0x9e3779b97f4a7c15ull;
};

class CertificateSolver {
 public:
  explicit CertificateSolver(uint32_t weight_dimension);

  // Keeps a copy of x^ (its non-zeros, and the bias coordinate) and its label
  // (-1 or +1). O(nnz).
  void Add(const Prepared& x, int label);
  // Keeps every row of `rows`.
  void Add(KeptRows rows);

  size_t size() const { return rows_.size(); }
  const KeptRows& rows() const { return rows_; }
  // Bytes the kept examples and their dual variables take.
  size_t bytes() const;

  // Solves for radius `radius` (>= every kept ||x^||; the model's R), from
  // the last solution. With no example kept: upper = lower = 0, gamma = 0.
  Certificate Solve(double radius, const CertificateOptions& options);

  // The hard-margin SVM (min ||v||^2 / 2 with y_t v . x^_t >= 1) by the same
  // dual coordinate descent with no upper bound on alpha, from the last
  // solution. Not separable: `separable` false after max_passes (not a proof
  // that no separator exists).
  HardMargin SolveHardMargin(const CertificateOptions& options);

  // TD*_gamma for `gamma` > 0: bisection on the C of the regularised SVM
  // whose solution has ||v_C|| = 1/gamma (the constraint ||u|| <= 1 with
  // u = gamma v). Every v_C scaled into the ball is a comparator (an upper
  // value); every alpha_C / C in [0, 1]^n gives the dual value
  // gamma sum beta - ||sum beta y x^|| (a lower value).
  LeastDistance SolveLeastDistance(double gamma,
                                   const CertificateOptions& options);

 private:
  double DotRow(size_t t, const std::vector<double>& w) const {
    return rows_.DotUnordered(t, w);
  }
  void AddRow(size_t t, double a, std::vector<double>* w) const {
    rows_.AddTo(t, a, w);
  }
  // w = sum_t alpha_t y_t x^_t, summed afresh in example order.
  std::vector<double> Primal(const std::vector<double>& alpha) const;
  // One pass of dual coordinate descent over `alpha` (each in [0, cap]) in a
  // fresh random order, keeping w = sum alpha_t y_t x^_t.
  void Pass(double cap, std::vector<double>* alpha, std::vector<double>* w);
  // Which rows a pass leaves out: those at 0 whose gradient is above
  // `above`, and those at the cap whose gradient is below `below`.
  struct Shrink {
    double above = std::numeric_limits<double>::infinity();
    double below = -std::numeric_limits<double>::infinity();
  };
  // The extreme projected gradients of the rows a pass kept, and the sum
  // of each visited row's share of the duality gap as the pass met it.
  struct Gradients {
    double max = -std::numeric_limits<double>::infinity();
    double min = std::numeric_limits<double>::infinity();
    double gap = 0;
  };
  // The same over the rows `active` (ascending), from which it removes those
  // `shrink` leaves out.
  Gradients Pass(double cap, std::vector<double>* alpha, std::vector<double>* w,
                 const Shrink& shrink, std::vector<uint32_t>* active);
  // The spread of the projected gradients of the rows left at which every
  // row comes back (LIBLINEAR's default stopping tolerance).
  static constexpr double kShrinkSpread = 0.1;
  // The figures are checked after a pass whose share of the gap is within
  // this many times the tolerance of the dual value.
  static constexpr double kNearGap = 1;

  uint32_t dimension_;
  KeptRows rows_;
  std::vector<double> alpha_;
  std::vector<double> w_;           // sum alpha_t y_t x^_t, kept up to date
  std::vector<double> hard_alpha_;  // the hard-margin dual's
  std::vector<double> td_alpha_;    // SolveLeastDistance's
  std::vector<double> hard_w_;
  uint64_t seed_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CERTIFICATE_H_
