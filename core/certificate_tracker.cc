#include "core/certificate_tracker.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/multiclass_learner.h"
#include "core/row_hash.h"

namespace perceptron {
namespace {

double Square(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

}  // namespace

CertificateTracker::CertificateTracker(
    uint64_t limit, uint64_t slack, uint64_t limit_bytes,
    std::shared_ptr<CertificateBudget> budget,
    std::optional<KernelConfig> kernel, uint32_t weight_dimension, int classes)
    : limit_(limit < 1 ? 1 : limit),
      slack_(slack),
      kernel_(kernel),
      weight_dimension_(weight_dimension),
      classes_(classes),
      limit_bytes_(limit_bytes),
      budget_(std::move(budget)) {
  if (kernel_) {
    kernel_rows_ = std::make_unique<KernelRows>(weight_dimension_, *kernel_);
  }
  if (wide()) in_use_.Reset(weight_dimension_);
}

uint64_t CertificateTracker::KeptBytes(absl::Span<const uint32_t> indices,
                                       uint64_t row, uint64_t* fresh) const {
  *fresh = 0;
  if (!wide()) return row;
  for (uint32_t i : indices) *fresh += !in_use_.Has(i);
  return row + *fresh * WideCoordinateBytes(classes_);
}

std::vector<double> CertificateTracker::Squares(
    const std::vector<std::vector<double>>& vs, const KeptRows& basis) const {
  if (kernel_) return KernelSquares(basis, kernel_rows_.get(), vs);
  std::vector<double> squares;
  for (const std::vector<double>& v : vs) squares.push_back(Square(v));
  return squares;
}

std::vector<double> CertificateTracker::Sums(
    const KeptRows& rows, const std::vector<std::vector<double>>& vs,
    const KeptRows& basis, const CandidateSupport* support) const {
  if (kernel_) return KernelHingeSums(rows, basis, kernel_rows_.get(), vs);
  if (classes_ > 0) {
    return support != nullptr ? ClassHingeSums(rows, vs, classes_, *support)
                              : ClassHingeSums(rows, vs, classes_);
  }
  if (support != nullptr) return HingeSums(rows, vs, *support);
  return HingeSums(rows, vs);
}

void CertificateTracker::Scale() {
  // A wide model's support was made with these candidates (Install, the
  // state restored) and knows their multiples.
  scaled_ = support_ != nullptr && support_->scaled() != nullptr
                ? *support_->scaled()
                : ScaledCandidates(candidates_);
  scores_.assign(candidates_.size(), 0.0);
  // The scores remembered by place were of the candidates before.
  if (++scores_epoch_ == 0) {
    std::fill(place_epochs_.begin(), place_epochs_.end(), 0);
    scores_epoch_ = 1;
  }
}

bool CertificateTracker::Reserve(uint64_t bytes) {
  if (budget_ == nullptr) return true;
  if (used_ + bytes > held_) {
    const uint64_t n = std::max(kBudgetChunk, used_ + bytes - held_);
    if (!budget_->Take(n)) return false;
    held_ += n;
  }
  used_ += bytes;
  return true;
}

void CertificateTracker::Release() {
  if (budget_ != nullptr && held_ > 0) budget_->Give(held_);
  held_ = 0;
  used_ = 0;
}

void CertificateTracker::TurnOff(std::string reason, bool permanent) {
  permanent_off_ = permanent;
  phase_ = CertificatePhase::kOff;
  reason_ = std::move(reason);
  ClearQueueAndTail();
  Release();
  candidates_.clear();
  support_.reset();
  Scale();
  basis_.Clear();
  squares_.clear();
  sums_.clear();
  candidates_changed_ = true;
  unattached_.reset();
  DropRows();
}

void CertificateTracker::DropRows() {
  restored_.Clear();
  journal_rows_.Clear();
  journal_repeats_.clear();
  rows_cleared_ = true;
  seen_ = {};
  keys_ = std::vector<RowKey>();
  place_scores_ = std::vector<double>();
  place_epochs_ = std::vector<uint32_t>();
  next_place_ = 0;
  repeats_.clear();
  in_use_.Clear();
}

void CertificateTracker::Apply(const RowsDelta& delta, KeptRows* all) {
  if (delta.cleared) all->Clear();
  all->Append(delta.rows);
  for (uint32_t t : delta.repeats) {
    if (t < all->size()) all->AddCount(t, 1);
  }
}

CertificateTracker::RowKey CertificateTracker::KeyOf(const KeptRows& rows,
                                                     size_t t) {
  // A dense row's indices are 0..n-1: its values alone (an equal example
  // kept sparse then has another key, and is only kept apart, not taken for
  // another).
  return KeyOf(rows.dense(t) ? absl::Span<const uint32_t>() : rows.indices(t),
               rows.values(t), rows.label(t));
}

CertificateTracker::RowKey CertificateTracker::KeyOf(
    absl::Span<const uint32_t> i, absl::Span<const double> v, int label) {
  // The bytes of the values (after the indices, for a sparse row) hashed
  // into 128 bits by xxHash's XXH3, seeded by the label and the count of
  // indices (so that rows of other labels or shapes hash apart). Equal bits
  // are what counts here. Long rows in an AVX2 build (core/row_hash.h), not
  // the one xxHash's x86 dispatcher picks at run time: that one's AVX-512
  // slowed the code around each call more than it saved (docs/benchmarks.md,
  // "What the figures say", 2026-12-05).
  const uint64_t seed = (uint64_t{static_cast<uint32_t>(label)} << 32) ^
                        static_cast<uint64_t>(i.size());
  RowHash h;
  if (i.empty()) {
    h = HashRow(v.data(), v.size() * sizeof(double), seed);
  } else {
    thread_local std::string bytes;
    bytes.assign(reinterpret_cast<const char*>(i.data()),
                 i.size() * sizeof(uint32_t));
    bytes.append(reinterpret_cast<const char*>(v.data()),
                 v.size() * sizeof(double));
    h = HashRow(bytes.data(), bytes.size(), seed);
  }
  return {h.low, h.high};
}

void CertificateTracker::Placed(uint64_t place, const RowKey& key) {
  // Places come in order; if one did not, no place is looked up first.
  if (keys_.size() == place) {
    keys_.push_back(key);
    place_scores_.push_back(0);
    place_epochs_.push_back(0);
  } else {
    keys_ = std::vector<RowKey>();
    place_scores_ = std::vector<double>();
    place_epochs_ = std::vector<uint32_t>();
  }
  next_place_ = place + 1;
}

bool CertificateTracker::CountAgain(uint32_t place) {
  if (place < taken_) {
    repeats_.push_back(place);
    return true;
  }
  const size_t p = place - taken_;
  if (p < restored_.size()) return restored_.AddCount(p, 1);
  return p - restored_.size() < queue_.size() &&
         queue_.AddCount(p - restored_.size(), 1);
}

void CertificateTracker::SetJournaling(bool on) {
  journaling_ = on;
  journal_rows_.Clear();
}

CertificateTracker::RowsDelta CertificateTracker::TakeRows() {
  RowsDelta d{rows_cleared_, std::move(journal_rows_),
              std::move(journal_repeats_)};
  journal_rows_.Clear();
  journal_repeats_.clear();
  rows_cleared_ = false;
  return d;
}

void CertificateTracker::Observe(const Prepared& x, int label) {
  ++observed_;
  // While keeping, the row is copied and its key's slot in the table of kept
  // rows requested first: the table misses the caches when the rows are many,
  // and the candidates' scores below are summed while the slot comes.
  // The copy is staged, not kept: an example seen before only counts again.
  // Freezing, the same for the rows after the limit (the tail).
  // A cycling stream's row is first looked for after the last one met
  // (keys_): `guessed` is its place if it is there.
  RowKey key{0, 0};
  std::optional<uint32_t> guessed;
  KeptRows::Staged staged;
  const bool keeping = phase_ == CertificatePhase::kKeeping;
  if (keeping || phase_ == CertificatePhase::kFreezing) {
    KeptRows& to = keeping ? queue_ : tail_;
    to.Stage(x, &staged);
    key = KeyOf(to.indices(staged), to.values(staged), label);
    if (next_place_ < keys_.size() && keys_[next_place_] == key &&
        key != kNoKey) {
      guessed = static_cast<uint32_t>(next_place_);
    } else {
      seen_.prefetch(key);
    }
  }
  const std::vector<uint32_t>& summed = scaled_.summed();
  if (guessed && summed.size() == 1 &&
      place_epochs_[*guessed] == scores_epoch_) {
    // The row met again, scored against these candidates before: the same
    // bits (its key) score the same.
    scores_[summed[0]] = place_scores_[*guessed];
  } else if (classes_ > 0) {
    ClassMargins(x, label);
  } else if (kernel_ && !candidates_.empty()) {
    kernel_rows_->Against(basis_, x, &kernel_values_);
    for (uint32_t k : summed) {
      double f = 0;
      for (size_t s = 0; s < kernel_values_.size(); ++s) {
        f += candidates_[k][s] * kernel_values_[s];
      }
      scores_[k] = f;
    }
  } else if (support_ != nullptr) {
    support_->Scores(candidates_, summed, x, scores_.data());
  } else if (!x.x.sparse && summed.size() > 1) {
    // The summed candidates' w . x in one pass over a dense x (the same bits
    // as Dot's).
    constexpr size_t kChunk = 8;
    const double* vs[kChunk];
    double raw[kChunk];
    for (size_t k0 = 0; k0 < summed.size(); k0 += kChunk) {
      const size_t m = std::min(kChunk, summed.size() - k0);
      for (size_t k = 0; k < m; ++k) vs[k] = candidates_[summed[k0 + k]].data();
      DenseDotsOf(vs, m, x.x.values.data(), x.x.values.size(), raw);
      for (size_t k = 0; k < m; ++k) {
        const uint32_t c = summed[k0 + k];
        scores_[c] = DotFrom(raw[k], candidates_[c], x);
      }
    }
  } else {
    for (uint32_t k : summed) scores_[k] = Dot(candidates_[k], x);
  }
  scaled_.Spread(scores_.data());
  // A multiclass candidate's score is its margin: its hinge is 1 - margin.
  // Without a branch, whose outcome a stream rarely lets the processor
  // predict: adding 0 where h <= 0 (or is NaN) leaves a sum's bits as they
  // were (a sum is never -0).
  const double y = classes_ > 0 ? 1.0 : label;
  double* sums = sums_.data();
  const double* scores = scores_.data();
  for (size_t k = 0; k < candidates_.size(); ++k) {
    const double h = 1 - y * scores[k];
    sums[k] += h > 0 ? h : 0.0;
  }
  if (phase_ != CertificatePhase::kKeeping &&
      phase_ != CertificatePhase::kFreezing) {
    return;
  }
  const uint64_t row = RowBytes(x.x.sparse ? x.x.indices.size() + x.has_bias
                                           : x.dimension + x.has_bias);
  if (keeping) {
    bool added = true;
    // An example equal to a kept row counts that row again instead.
    uint32_t place = 0;
    if (guessed) {
      place = *guessed;
      added = false;
    } else {
      const auto [it, fresh_key] =
          seen_.try_emplace(key, static_cast<uint32_t>(kept_));
      place = it->second;
      added = fresh_key;
    }
    if (!added && CountAgain(place)) {
      RememberScore(place);
      ++kept_examples_;
      if (journaling_) journal_repeats_.push_back(place);
      next_place_ = uint64_t{place} + 1;
      return;
    }
    // A wide model's new coordinates count as the row that brings them does.
    uint64_t fresh = 0;
    const absl::Span<const uint32_t> indices = queue_.coordinates(staged);
    const uint64_t bytes = KeptBytes(indices, row, &fresh);
    if (!Reserve(bytes)) {
      // The candidates already count this example: frozen here, it is covered.
      StopKeeping(budget_->reason());
      return;
    }
    if (fresh > 0) {
      for (uint32_t i : indices) in_use_.Add(i);
    }
    queue_.Keep(staged, label);
    Placed(kept_, added ? key : kNoKey);
    RememberScore(kept_);
    if (journaling_) journal_rows_.Add(x, label);
    kept_bytes_ += bytes;
    ++kept_examples_;
    if (++kept_ == limit_ || kept_bytes_ >= limit_bytes_) ReachLimit();
    return;
  }
  // Freezing: the rows after the limit (the tail). An example equal to a row
  // before the limit counts that row again, for the solver as while keeping;
  // one equal to a row of the tail counts that row. A stream cycling through
  // fewer rows than the limit and the slack together does not fill the
  // slack: it is frozen once a solution over the rows before the limit
  // converges (Install).
  const auto place = static_cast<uint32_t>(kept_ + tail_.size());
  auto it = seen_.end();
  bool added = false;
  if (!guessed) std::tie(it, added) = seen_.try_emplace(key, place);
  if (!added) {
    const uint32_t at = guessed ? *guessed : it->second;
    if (at >= kept_ ? tail_.AddCount(at - kept_, 1) : CountAgain(at)) {
      RememberScore(at);
      if (at < kept_) ++kept_examples_;
      if (journaling_) journal_repeats_.push_back(at);
      next_place_ = uint64_t{at} + 1;
      return;
    }
    // The key is the new row's from here on.
    if (guessed) {
      seen_.insert_or_assign(key, place);
    } else {
      it->second = place;
    }
    if (at < keys_.size()) keys_[at] = kNoKey;
  }
  // The rows after the limit take no more than those kept before it: a new
  // row they have no room for freezes the candidates installed last (it is
  // covered, as above). Not before one comes: a stream that ends with the
  // slack just full leaves the solver the time to converge.
  if (tail_.size() >= slack_ || tail_bytes_ + row > limit_bytes_) {
    FreezeFull();
    return;
  }
  if (!Reserve(row)) {
    StopKeeping(budget_->reason());  // covered, as above
    return;
  }
  tail_.Keep(staged, label);
  Placed(place, key);
  RememberScore(place);
  if (journaling_) journal_rows_.Add(x, label);
  tail_bytes_ += row;
}

void CertificateTracker::ReachLimit() {
  phase_ = CertificatePhase::kFreezing;
  reason_ =
      kept_ >= limit_
          ? absl::StrCat("the examples kept reached ", kept_,
                         " rows: perceptrond --certificate_examples")
          : absl::StrCat("the examples kept reached ",
                         absl::StrFormat("%.6g", limit_bytes_ / 1048576.0),
                         " MiB at ", kept_,
                         " rows, the certificate's memory per model: "
                         "perceptrond --certificate_model_mb");
}

void CertificateTracker::FreezeFull() {
  Freeze(observed_);
  if (phase_ != CertificatePhase::kFrozen) return;
  reason_ = absl::StrCat(reason_, reason_.empty() ? "" : "; ",
                         "the rows after the limit filled as many again "
                         "before a solution over those before it converged");
}

void CertificateTracker::ClassMargins(const Prepared& x, int label) {
  double s[kMaxClasses];
  for (uint32_t c : scaled_.summed()) {
    if (support_ != nullptr) {
      support_->ClassScores(candidates_, c, classes_, x, s);
    } else {
      ClassScores(candidates_[c].data(), classes_, weight_dimension_, x, s);
    }
    scores_[c] = MarginOf(s, classes_, label);
  }
}

KeptRows CertificateTracker::Take(std::vector<uint32_t>* repeats) {
  // Rows restored with the state come first: they were kept before.
  KeptRows rows = std::move(restored_);
  restored_.Clear();
  rows.Append(std::move(queue_));
  queue_.Clear();
  taken_ += rows.size();
  taken_examples_ += rows.examples() + repeats_.size();
  if (repeats != nullptr) *repeats = std::move(repeats_);
  repeats_.clear();
  return rows;
}

std::optional<KeptRows> CertificateTracker::TakeAllRows() {
  if (taken_ != 0) return std::nullopt;
  KeptRows rows = std::move(restored_);
  restored_.Clear();
  rows.Append(std::move(queue_));
  queue_.Clear();
  rows.Append(std::move(tail_));
  tail_.Clear();
  return rows;
}

void CertificateTracker::Install(
    std::vector<std::vector<double>> vs, std::vector<double> sums, double lower,
    bool converged, uint64_t covered, uint64_t generation, KeptRows basis,
    std::shared_ptr<const CandidateSupport> support,
    const KeptRows* solved_rows) {
  if (generation != generation_ || covered != taken_ ||
      vs.size() != sums.size() || phase_ == CertificatePhase::kOff ||
      phase_ == CertificatePhase::kFrozen ||
      (!repeats_.empty() && solved_rows == nullptr)) {
    return;
  }
  // The rows kept since the refresher took its own: the queue, then the tail,
  // and the rows it took that were seen again since.
  const std::vector<double> queued = Sums(queue_, vs, basis, support.get());
  const std::vector<double> tailed = Sums(tail_, vs, basis, support.get());
  for (size_t k = 0; k < vs.size(); ++k) sums[k] += queued[k] + tailed[k];
  if (!repeats_.empty()) {
    const std::vector<double> again =
        kernel_        ? KernelHingeSumsAt(*solved_rows, repeats_, basis,
                                           kernel_rows_.get(), vs)
        : classes_ > 0 ? ClassHingeSumsAt(*solved_rows, repeats_, vs, classes_)
                       : HingeSumsAt(*solved_rows, repeats_, vs);
    for (size_t k = 0; k < vs.size(); ++k) sums[k] += again[k];
  }
  squares_ = Squares(vs, basis);
  candidates_ = std::move(vs);
  support_ = std::move(support);
  Scale();
  basis_ = std::move(basis);
  candidates_changed_ = true;
  sums_ = std::move(sums);
  lower_ = lower;
  converged_ = converged;
  solved_ = taken_examples_;
  // Pressed: at the pace of the last solve, the tail fills its slack (in
  // rows or bytes) within kPressedSolves more.
  const uint64_t grew =
      tail_.size() - std::min<uint64_t>(tail_.size(), tail_at_install_);
  const uint64_t grew_bytes =
      tail_bytes_ - std::min(tail_bytes_, tail_bytes_at_install_);
  const uint64_t room = slack_ - std::min<uint64_t>(slack_, tail_.size());
  const uint64_t room_bytes =
      limit_bytes_ - std::min(limit_bytes_, tail_bytes_);
  pressed_ = (grew > 0 && grew * kPressedSolves >= room) ||
             (grew_bytes > 0 && grew_bytes * kPressedSolves >= room_bytes);
  tail_at_install_ = tail_.size();
  tail_bytes_at_install_ = tail_bytes_;
  // Frozen at the limit with a solution that reached its tolerance: until
  // one comes, the rows after the limit are kept (up to the slack), but not
  // for more than kFreezeRounds solutions that did not. Examples equal to
  // rows before the limit counted while it was solved (a stream cycling
  // through more rows than the limit brings them all the time) do not hold
  // it back: their hinge terms are in its sums (above), so U covers every
  // example, and the solution is the exact one over those it covers.
  if (phase_ == CertificatePhase::kFreezing && covered == kept_ &&
      (converged || ++unconverged_at_limit_ >= kFreezeRounds)) {
    Freeze(taken_examples_);
  }
}

void CertificateTracker::StopKeeping(const std::string& why) {
  if (phase_ != CertificatePhase::kKeeping &&
      phase_ != CertificatePhase::kFreezing) {
    return;
  }
  if (candidates_.empty()) {
    phase_ = CertificatePhase::kOff;
    reason_ = why;
    ClearQueueAndTail();
    Release();
    DropRows();
    return;
  }
  Freeze(observed_);
  if (phase_ == CertificatePhase::kFrozen) reason_ = why;
}

void CertificateTracker::RowsGaveWay(const std::string& why) {
  if (phase_ != CertificatePhase::kKeeping &&
      phase_ != CertificatePhase::kFreezing) {
    return;
  }
  StopKeeping(why);
  reason_ = why;
}

void CertificateTracker::Freeze(uint64_t at) {
  if (candidates_.empty()) {
    phase_ = CertificatePhase::kOff;
    reason_ = absl::StrCat(
        "the examples outgrew the certificate's limit before a first "
        "solution",
        reason_.empty() ? "" : ": ", reason_);
  } else {
    phase_ = CertificatePhase::kFrozen;
    frozen_at_ = at;
  }
  ClearQueueAndTail();
  Release();
  DropRows();
}

void CertificateTracker::ClearQueueAndTail() {
  queue_.Clear();
  tail_.Clear();
  tail_bytes_ = 0;
  tail_at_install_ = 0;
  tail_bytes_at_install_ = 0;
}

void CertificateTracker::Reset() {
  // A tracker off because examples before it were not kept starts over too:
  // the reset forgets those.
  const uint64_t generation = generation_ + 1;
  if (permanent_off_) {
    observed_ = 0;
  } else {
    Release();
    const bool journaling = journaling_;
    *this = CertificateTracker(limit_, slack_, limit_bytes_, budget_, kernel_,
                               weight_dimension_, classes_);
    journaling_ = journaling;
    candidates_changed_ = true;
  }
  DropRows();
  unattached_.reset();
  generation_ = generation;
}

CertificateReport CertificateTracker::Report(double radius, bool with_u,
                                             double margin_gamma) const {
  CertificateReport r;
  r.phase = phase_;
  r.reason = reason_;
  r.examples = observed_;
  r.solved = solved_;
  r.frozen_at = frozen_at_;
  r.converged = converged_;
  r.kept = kept_examples_;
  r.kept_rows = kept_;
  r.bytes = bytes();
  if (candidates_.empty() || phase_ == CertificatePhase::kOff) return r;
  // A multiclass bound's radius is the Kesler vectors', sqrt(2) R.
  const double r2 = (classes_ > 0 ? 2 : 1) * radius * radius;
  size_t best = 0;
  double upper = 0;
  for (size_t k = 0; k < candidates_.size(); ++k) {
    const double b = r2 * squares_[k] + 2 * sums_[k];
    if (k == 0 || b < upper) {
      upper = b;
      best = k;
    }
  }
  const double norm = std::sqrt(squares_[best]);
  if (!(norm > 0)) return r;
  r.available = true;
  r.upper = upper;
  r.lower = lower_ < upper ? lower_ : upper;
  r.gamma = 1 / norm;
  r.td = r.gamma * sums_[best];
  for (size_t k = 0; k < candidates_.size(); ++k) {
    // y v . x^ >= 1 on every example, so u = v/||v|| has margin 1/||v||.
    if (sums_[k] == 0 && squares_[k] > 0) {
      r.margin = std::max(r.margin, 1 / std::sqrt(squares_[k]));
    }
  }
  if (margin_gamma > 0 && r.margin >= margin_gamma) {
    r.margin_bound_available = true;
    r.margin_bound = 8 / (margin_gamma * margin_gamma);
  }
  if (!with_u) return r;
  std::vector<double>& u = kernel_ ? r.coefficients : r.u;
  u.resize(candidates_[best].size());
  for (size_t i = 0; i < u.size(); ++i) u[i] = candidates_[best][i] / norm;
  if (kernel_) r.basis = basis_;
  if (support_ != nullptr) {
    r.u_indices = support_->coordinates();
    if (classes_ > 0) {
      // Class r's block of k: coordinate i at r W + i of the k vectors.
      const size_t n = r.u_indices.size();
      r.u_indices.resize(n * static_cast<size_t>(classes_));
      for (int c = 1; c < classes_; ++c) {
        for (size_t p = 0; p < n; ++p) {
          r.u_indices[c * n + p] =
              r.u_indices[p] + static_cast<uint32_t>(c) * weight_dimension_;
        }
      }
    }
  }
  return r;
}

size_t CertificateTracker::bytes() const {
  size_t b =
      queue_.bytes() + restored_.bytes() + tail_.bytes() + basis_.bytes();
  for (const std::vector<double>& v : candidates_) {
    b += v.capacity() * sizeof(double);
  }
  if (support_ != nullptr) b += support_->bytes();
  b += in_use_.bytes() + keys_.capacity() * sizeof(RowKey) +
       place_scores_.capacity() * sizeof(double) +
       place_epochs_.capacity() * sizeof(uint32_t);
  b += seen_.capacity() * (sizeof(std::pair<RowKey, uint32_t>) + 1) +
       (repeats_.capacity() + journal_repeats_.capacity()) * sizeof(uint32_t);
  return b;
}

std::vector<std::vector<double>> CandidatesFrom(const Certificate& c,
                                                const HardMargin* hard) {
  std::vector<std::vector<double>> vs;
  if (!(c.gamma > 0) || c.u.empty()) return vs;
  // Each of d values, on huge pages when d is large (a wide model's new
  // candidates would otherwise be a fault every 512 coordinates).
  std::vector<double> base = HugeVector<double>(c.u.size());
  for (size_t i = 0; i < base.size(); ++i) base[i] = c.u[i] / c.gamma;
  // The multiple 1 of v is v itself (1 * x is x): `base`, moved in last.
  std::vector<std::vector<double>> scaled(std::size(kCandidateScales));
  size_t one = scaled.size();
  for (size_t k = 0; k < scaled.size(); ++k) {
    const double scale = kCandidateScales[k];
    if (scale == 1.0 && one == scaled.size()) {
      one = k;
      continue;
    }
    std::vector<double>& v = scaled[k];
    v = HugeVector<double>(base.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * base[i];
  }
  if (one < scaled.size()) scaled[one] = std::move(base);
  for (std::vector<double>& v : scaled) {
    if (std::all_of(v.begin(), v.end(),
                    [](double x) { return std::isfinite(x); })) {
      vs.push_back(std::move(v));  // not one that overflows
    }
  }
  if (hard != nullptr && hard->separable && hard->lower > 0 &&
      hard->u.size() == c.u.size()) {
    const double scale = (1 + 1e-9) / hard->lower;
    std::vector<double> v = HugeVector<double>(hard->u.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = hard->u[i] * scale;
    if (std::all_of(v.begin(), v.end(),
                    [](double x) { return std::isfinite(x); })) {
      vs.push_back(std::move(v));
    }
  }
  return vs;
}

}  // namespace perceptron
