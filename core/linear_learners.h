// The primal learners: classic, margin and averaged perceptrons
// (docs/design.md section 2, 3). Use MakeLearner (learner.h) rather than these
// classes directly. Not thread-safe.
#ifndef PERCEPTRON_CORE_LINEAR_LEARNERS_H_
#define PERCEPTRON_CORE_LINEAR_LEARNERS_H_

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/huge_pages.h"
#include "core/journal.h"
#include "core/learner.h"
#include "core/magnitude_bound.h"
#include "core/prepare.h"
#include "core/status_macros.h"

namespace perceptron {

// What the classic and margin rules share: one weight vector w, the score
// w . x^, and a rule that decides from that score. `Rule` (the derived class)
// supplies LearnFromScore(x, y, s): the update for a score s = w . x^ computed
// on the current w, with the errors of Learn; called directly, not virtually.
template <typename Rule>
class WeightVectorLearner : public Learner {
 public:
  double Score(const Prepared& x) const override { return Dot(w_, x); }
  absl::StatusOr<bool> Learn(const Prepared& x, int y) override {
    return rule().LearnFromScore(x, y, Dot(w_, x));
  }
  absl::StatusOr<double> ScoreAndLearn(const Prepared& x, int y,
                                       bool* updated) override {
    return WeightVectorLearner::ScoreAndLearnFrom(x, y, Dot(w_, x), updated);
  }
  const std::vector<double>* dot_weights() const override { return &w_; }
  absl::StatusOr<double> ScoreAndLearnFrom(const Prepared& x, int y,
                                           double w_dot,
                                           bool* updated) override {
    PERCEPTRON_ASSIGN_OR_RETURN(*updated, rule().LearnFromScore(x, y, w_dot));
    return w_dot;
  }
  absl::Span<const double> weights() const override { return w_; }
  void Prefetch(const FeatureView& x) const override { PrefetchAt(w_, x); }
  void SetJournaling(bool on) override {
    if (on) {
      dirty_w_.Enable(w_.size());
    } else {
      dirty_w_.Disable();
    }
  }

 protected:
  explicit WeightVectorLearner(const ModelConfig& config)
      : eta_(config.eta), w_(HugeVector<double>(config.weight_dimension())) {}

  double eta_;
  std::vector<double> w_;
  MagnitudeBound w_bound_;  // kept with every change to w_
  DirtyTracker dirty_w_;

 private:
  Rule& rule() { return static_cast<Rule&>(*this); }
};

// w <- w + eta*y*x^ whenever y*(w . x^) <= 0 on the current w.
class ClassicLearner : public WeightVectorLearner<ClassicLearner> {
 public:
  explicit ClassicLearner(const ModelConfig& config)
      : WeightVectorLearner(config) {}

  LearnerState ExportState() const override;
  absl::Status ImportState(LearnerState state) override;
  void Reset() override;
  LearnerDelta TakeDelta() override;
  absl::Status ApplyDelta(const LearnerDelta& delta) override;

  // LearnFromScore for a caller that knows the learner's type (a batch of
  // rows, Model::LearnDense): inline, with the answer as a number. 1 for an
  // update, 0 for none, -1 where LearnFromScore refuses, with nothing
  // changed; Refusal(x, y, s) is then its error.
  int TryLearnFromScore(const Prepared& x, int y, double s) {
    if (!std::isfinite(s)) return -1;
    // A zero x^ (possible only without bias and normalization) leaves w
    // unchanged: no update.
    if (!Mistaken(x, y, s)) return 0;
    if (!UpdateStaysFinite(w_bound_, eta_ * y, x, w_)) return -1;
    Update(x, y);
    return 1;
  }
  absl::Status Refusal(const Prepared& x, int y, double s) const;

 protected:
  friend class WeightVectorLearner<ClassicLearner>;
  // The update for a score s = w . x^ computed on the current w; the errors
  // of Learn.
  absl::StatusOr<bool> LearnFromScore(const Prepared& x, int y, double s);
  // Whether the rule updates for a score s = w . x^ computed on the current w.
  static bool Mistaken(const Prepared& x, int y, double s) {
    return y * s <= 0 && x.norm != 0;
  }
  // w <- w + eta y x^ (checked by the caller).
  void Update(const Prepared& x, int y);
};

// Seed 001 section 1.3: update when w = 0 or y*(w . x^)/||w|| <= gamma/2.
class MarginLearner : public WeightVectorLearner<MarginLearner> {
 public:
  explicit MarginLearner(const ModelConfig& config);

  LearnerState ExportState() const override;
  absl::Status ImportState(LearnerState state) override;
  void Reset() override;
  LearnerDelta TakeDelta() override;
  absl::Status ApplyDelta(const LearnerDelta& delta) override;

  // As ClassicLearner's.
  int TryLearnFromScore(const Prepared& x, int y, double s) {
    if (!std::isfinite(s)) return -1;
    if (x.norm == 0) return 0;
    if (norm_sq_ > 0 && y * s > half_gamma_ * std::sqrt(norm_sq_)) return 0;
    const double a = eta_ * y;
    const double norm_sq = NormSqAfter(a, x, s);
    if (!std::isfinite(norm_sq) || !UpdateStaysFinite(w_bound_, a, x, w_))
      return -1;
    norm_sq_ = norm_sq;
    Update(a, x);
    return 1;
  }
  absl::Status Refusal(const Prepared& x, int y, double s) const;

 private:
  friend class WeightVectorLearner<MarginLearner>;
  // As ClassicLearner's.
  absl::StatusOr<bool> LearnFromScore(const Prepared& x, int y, double s);
  // ||w + a x^||^2 = ||w||^2 + 2 a (w . x^) + a^2 ||x^||^2, for s = w . x^.
  double NormSqAfter(double a, const Prepared& x, double s) const {
    return std::max(0.0, norm_sq_ + 2 * a * s + a * a * x.norm * x.norm);
  }
  // w <- w + a x^ (checked by the caller).
  void Update(double a, const Prepared& x);

  double half_gamma_;
  double norm_sq_ = 0;  // ||w||^2, kept incrementally in O(nnz) per update
};

// Learns as classic; scores with the average of w over the labeled examples
// seen, where w_t is the weight vector after example t. With n examples and
// updates delta_k made at example t_k,
//   sum_{t=1..n} w_t = (n+1) w_n - sum_k t_k delta_k,
// so a second accumulator makes the cost O(nnz) per update and O(nnz) per
// score.
class AveragedLearner : public ClassicLearner {
 public:
  explicit AveragedLearner(const ModelConfig& config);

  double Score(const Prepared& x) const override;
  void Prefetch(const FeatureView& x) const override {
    ClassicLearner::Prefetch(x);
    PrefetchAt(acc_, x);
  }
  absl::StatusOr<bool> Learn(const Prepared& x, int y) override;
  absl::StatusOr<double> ScoreAndLearn(const Prepared& x, int y,
                                       bool* updated) override;
  absl::StatusOr<double> ScoreAndLearnFrom(const Prepared& x, int y,
                                           double w_dot,
                                           bool* updated) override;
  LearnerState ExportState() const override;
  absl::Status ImportState(LearnerState state) override;
  void Reset() override;
  void SetJournaling(bool on) override;
  LearnerDelta TakeDelta() override;
  absl::Status ApplyDelta(const LearnerDelta& delta) override;

 private:
  double AverageScore(double w_dot, const Prepared& x) const;
  absl::StatusOr<bool> Step(const Prepared& x, int y, double w_dot);

  std::vector<double> acc_;
  MagnitudeBound acc_bound_;  // kept with every change to acc_
  uint64_t steps_ = 0;
  DirtyTracker dirty_acc_;
};

// INVALID_ARGUMENT unless `v` has `size` finite values; `what` names it in the
// message.
absl::Status CheckVector(absl::string_view what, const std::vector<double>& v,
                         size_t size);

// A learner's vector `v` into an exported state: by its non-zeros into
// `*sparse` when it has at least kSparseExportSize entries and that form is
// smaller (12 bytes a non-zero against 8 an entry), else whole into `*dense`.
inline constexpr size_t kSparseExportSize = size_t{1} << 16;
void ExportDoubles(const std::vector<double>& v, std::vector<double>* dense,
                   std::optional<SparseDoubles>* sparse);
// The inverse for ImportState: `*sparse`, if set, spread into `*dense` (which
// must be empty), then CheckVector; INVALID_ARGUMENT naming `what` for a
// malformed sparse form (indices not ascending or past its size).
absl::Status ImportDoubles(absl::string_view what, std::vector<double>* dense,
                           std::optional<SparseDoubles>* sparse, size_t size);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_LINEAR_LEARNERS_H_
