#include "core/voted_learner.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/huge_pages.h"
#include "core/linear_learners.h"
#include "core/status_macros.h"

namespace perceptron {

VotedLearner::VotedLearner(const ModelConfig& config)
    : eta_(config.eta),
      w_(HugeVector<double>(config.weight_dimension())),
      past_(config.max_voted_vectors) {}

double VotedLearner::Score(const Prepared& x) const {
  double vote = static_cast<double>(survived_) * PredictedLabel(Dot(w_, x));
  for (const VotedVector& v : past_) {
    vote += static_cast<double>(v.survived) * PredictedLabel(Dot(v.weights, x));
  }
  return vote;
}

absl::StatusOr<bool> VotedLearner::Learn(const Prepared& x, int y) {
  const double s = Dot(w_, x);
  if (!std::isfinite(s)) return NonFiniteScore(s);
  if (y * s > 0 || x.norm == 0) {
    ++survived_;
    return false;
  }
  if (!UpdateStaysFinite(w_bound_, eta_ * y, x, w_))
    return NonFiniteUpdate("a weight");
  if (survived_ > 0) past_.Push({w_, survived_});
  survived_ = 0;
  AddScaled(eta_ * y, x, absl::MakeSpan(w_));
  w_bound_.Added(eta_ * y, x);
  dirty_w_.Mark(x);
  return true;
}

LearnerFigures VotedLearner::figures() const {
  LearnerFigures f;
  f.voted_vectors = past_.size() + 1;
  f.dropped = past_.dropped();
  return f;
}

LearnerState VotedLearner::ExportState() const {
  LearnerState state;
  ExportDoubles(w_, &state.weights, &state.sparse_weights);
  state.current_survived = survived_;
  state.voted.assign(past_.begin(), past_.end());
  state.dropped = past_.dropped();
  return state;
}

absl::Status VotedLearner::ImportState(LearnerState state) {
  PERCEPTRON_RETURN_IF_ERROR(ImportDoubles("weights", &state.weights,
                                           &state.sparse_weights, w_.size()));
  if (state.voted.size() > past_.cap()) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: ", state.voted.size(),
                     " voted vectors exceed the cap ", past_.cap()));
  }
  for (size_t k = 0; k < state.voted.size(); ++k) {
    PERCEPTRON_RETURN_IF_ERROR(CheckVector(absl::StrCat("voted vector ", k),
                                           state.voted[k].weights, w_.size()));
  }
  w_ = OnHugePages(std::move(state.weights));
  w_bound_.Set(w_);
  survived_ = state.current_survived;
  past_.Assign(std::move(state.voted), state.dropped);
  return absl::OkStatus();
}

void VotedLearner::Reset() {
  std::fill(w_.begin(), w_.end(), 0.0);
  w_bound_.Clear();
  survived_ = 0;
  past_.Clear();
  dirty_w_.MarkAll();
}

void VotedLearner::SetJournaling(bool on) {
  past_.SetJournaling(on);
  if (on) {
    dirty_w_.Enable(w_.size());
  } else {
    dirty_w_.Disable();
  }
}

LearnerDelta VotedLearner::TakeDelta() {
  LearnerDelta d;
  d.weights = dirty_w_.Take(w_);
  d.current_survived = survived_;
  d.dropped = past_.dropped();
  d.voted_added = past_.TakeAdded();
  d.voted_removed = past_.TakeRemoved();
  return d;
}

absl::Status VotedLearner::ApplyDelta(const LearnerDelta& d) {
  PERCEPTRON_RETURN_IF_ERROR(CheckDelta("weights", d.weights, w_.size()));
  for (const VotedVector& v : d.voted_added) {
    PERCEPTRON_RETURN_IF_ERROR(
        CheckVector("voted vector", v.weights, w_.size()));
  }
  if (!past_.Fits(d.voted_added.size(), d.voted_removed)) {
    return absl::InvalidArgumentError("journal: voted vectors do not add up");
  }
  perceptron::ApplyDelta(d.weights, &w_);
  w_bound_.Raise(d.weights);
  past_.Apply(d.voted_added, d.voted_removed, d.dropped);
  survived_ = d.current_survived;
  return absl::OkStatus();
}

}  // namespace perceptron
