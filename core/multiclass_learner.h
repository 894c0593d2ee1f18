// The multiclass perceptron of docs/design.md section 2.8 (seed 003's k
// classes; Crammer & Singer, JMLR 2003): k weight vectors, one a class, laid
// one after another in one array (class r's at r * the weight dimension).
// Use MakeLearner. Not thread-safe.
//
//   perceptron::MulticlassLearner& m = ...;  // MakeLearner(config) with
//                                            // config.classes set
//   perceptron::Decision d = m.Decide(prepared);  // d.label: a class index
//   bool updated = *m.Learn(prepared, /*y=*/3);
//
// Labels are class indices 0..k-1. The Learner interface's Score answers the
// decision's margin; Decide gives the class too.
#ifndef PERCEPTRON_CORE_MULTICLASS_LEARNER_H_
#define PERCEPTRON_CORE_MULTICLASS_LEARNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/capped_deque.h"
#include "core/config.h"
#include "core/learner.h"
#include "core/magnitude_bound.h"

namespace perceptron {

// w_r . x^ for each of the k class vectors of `w` (k times `dim` values, one
// after another) into out[0..k-1]: a dense x's in one pass over x per four
// classes (DenseDotsOf), the same bits as k calls of Dot.
void ClassScores(const double* w, int k, uint32_t dim, const Prepared& x,
                 double* out);

// What a multiclass model predicts: the class with the highest score (the
// lowest index among ties) and its margin over the best other class
// (s_label - max over r != label of s_r, >= 0; 0 on a tie).
struct Decision {
  int label = 0;
  double margin = 0;
  friend bool operator==(const Decision&, const Decision&) = default;
};

// The decision for scores s (at least two).
Decision Decide(absl::Span<const double> s);

// Whether class y was not strictly above every other class (a mistake,
// docs/design.md section 2.8), given the decision made on the scores: y lost,
// or won on a tie.
inline bool MulticlassMistake(const Decision& d, int y) {
  return d.label != y || !(d.margin > 0);
}

// classic: on a mistake judged with the current W, w_y += eta x^ and
// w_r -= eta x^ for r the highest-scoring class other than y (the lowest
// index among ties). averaged: learns as classic, scores with the average of
// W over the labeled examples seen (the accumulator of AveragedLearner, one a
// class). voted: learns as classic; each W_k (past and current) votes c_k,
// the examples it survived, for its own decision's class; the decision is on
// the votes.
class MulticlassLearner : public Learner {
 public:
  // `config` is valid and multiclass, its algorithm classic, averaged or
  // voted.
  explicit MulticlassLearner(const ModelConfig& config);

  int classes() const { return k_; }
  // The scores the model decides on (the averaged ones for averaged, the
  // votes for voted), into `out` (k entries). Not checked for finiteness.
  void Scores(const Prepared& x, absl::Span<double> out) const;
  // The decision on Scores; INVALID_ARGUMENT (NonFiniteScore) if a score is
  // not finite.
  absl::StatusOr<Decision> Decide(const Prepared& x) const;
  // The decision's margin, or NaN when a score is not finite.
  double Score(const Prepared& x) const override;
  // The rule for class `y` (0..k-1, checked by the caller).
  absl::StatusOr<bool> Learn(const Prepared& x, int y) override;
  // Decide(x), then Learn(x, y), bit for bit; on error nothing changed.
  absl::StatusOr<Decision> DecideAndLearn(const Prepared& x, int y,
                                          bool* updated);
  absl::StatusOr<double> ScoreAndLearn(const Prepared& x, int y,
                                       bool* updated) override;

  absl::Span<const double> weights() const override { return w_; }
  LearnerFigures figures() const override;
  LearnerState ExportState() const override;
  absl::Status ImportState(LearnerState state) override;
  void Reset() override;
  void SetJournaling(bool on) override;
  LearnerDelta TakeDelta() override;
  absl::Status ApplyDelta(const LearnerDelta& delta) override;

 private:
  absl::Span<const double> Block(const std::vector<double>& v, int r) const {
    return absl::MakeConstSpan(v.data() + size_t{dim_} * r, dim_);
  }
  absl::Span<double> Block(std::vector<double>& v, int r) const {
    return absl::MakeSpan(v.data() + size_t{dim_} * r, dim_);
  }
  // The current W's scores into out.
  void RawScores(const std::vector<double>& w, const Prepared& x,
                 absl::Span<double> out) const;
  // The rule, given the current W's scores s (finite): whether it updates,
  // and the error if the update would not stay finite.
  absl::StatusOr<bool> Step(const Prepared& x, int y,
                            absl::Span<const double> s);

  Algorithm algorithm_;
  int k_;
  uint32_t dim_;  // the weight dimension
  double eta_;
  std::vector<double> w_;
  MagnitudeBound w_bound_;
  DirtyTracker dirty_w_;
  // averaged
  std::vector<double> acc_;
  MagnitudeBound acc_bound_;
  DirtyTracker dirty_acc_;
  uint64_t steps_ = 0;
  // voted
  uint64_t survived_ = 0;
  CappedDeque<VotedVector> past_;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_MULTICLASS_LEARNER_H_
