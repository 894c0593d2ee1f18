// The voted perceptron (Freund & Schapire 1999; docs/design.md section 2.3).
// Use MakeLearner. Not thread-safe.
#ifndef PERCEPTRON_CORE_VOTED_LEARNER_H_
#define PERCEPTRON_CORE_VOTED_LEARNER_H_

#include "core/capped_deque.h"
#include "core/learner.h"
#include "core/magnitude_bound.h"

namespace perceptron {

// Learns as classic. Each weight vector w_k carries c_k, the number of labeled
// examples it survived (arrived while it was current and did not change it);
// the score is sum_k c_k sign(w_k . x^), over the stored past vectors and the
// current one. A vector that survived nothing has no vote and is not stored. At
// most `max_voted_vectors` past vectors are kept; past that the oldest is
// dropped and counted. Scoring costs O(vectors * nnz).
class VotedLearner : public Learner {
 public:
  explicit VotedLearner(const ModelConfig& config);

  double Score(const Prepared& x) const override;
  absl::StatusOr<bool> Learn(const Prepared& x, int y) override;
  absl::Span<const double> weights() const override { return w_; }
  LearnerFigures figures() const override;
  LearnerState ExportState() const override;
  absl::Status ImportState(LearnerState state) override;
  void Reset() override;
  void SetJournaling(bool on) override;
  LearnerDelta TakeDelta() override;
  absl::Status ApplyDelta(const LearnerDelta& delta) override;

 private:
  double eta_;
  std::vector<double> w_;
  MagnitudeBound w_bound_;  // kept with every change to w_
  uint64_t survived_ = 0;
  CappedDeque<VotedVector> past_;
  DirtyTracker dirty_w_;  // while journaling: the changed coordinates of w
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_VOTED_LEARNER_H_
