#include "core/voted_learner.h"

#include "absl/strings/str_cat.h"
#include "core/linear_learners.h"
#include "core/status_macros.h"

namespace perceptron {

VotedLearner::VotedLearner(const ModelConfig& config)
    : eta_(config.eta),
      max_vectors_(config.max_voted_vectors),
      w_(config.weight_dimension(), 0.0) {}

double VotedLearner::Score(const Prepared& x) const {
  double vote = static_cast<double>(survived_) * PredictedLabel(Dot(w_, x));
  for (const VotedVector& v : past_) {
    vote += static_cast<double>(v.survived) * PredictedLabel(Dot(v.weights, x));
  }
  return vote;
}

bool VotedLearner::Learn(const Prepared& x, int y) {
  if (y * Dot(w_, x) > 0 || x.norm == 0) {
    ++survived_;
    return false;
  }
  if (survived_ > 0) {
    past_.push_back({w_, survived_});
    if (journaling_) added_.push_back(past_.back());
    if (past_.size() > max_vectors_) {
      past_.pop_front();
      ++dropped_;
      removed_ += journaling_;
    }
  }
  survived_ = 0;
  AddScaled(eta_ * y, x, absl::MakeSpan(w_));
  dirty_w_.Mark(x);
  return true;
}

LearnerFigures VotedLearner::figures() const {
  LearnerFigures f;
  f.voted_vectors = past_.size() + 1;
  f.dropped = dropped_;
  return f;
}

LearnerState VotedLearner::ExportState() const {
  LearnerState state;
  state.weights = w_;
  state.current_survived = survived_;
  state.voted.assign(past_.begin(), past_.end());
  state.dropped = dropped_;
  return state;
}

absl::Status VotedLearner::ImportState(LearnerState state) {
  PERCEPTRON_RETURN_IF_ERROR(CheckVector("weights", state.weights, w_.size()));
  if (state.voted.size() > max_vectors_) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: ", state.voted.size(),
                     " voted vectors exceed the cap ", max_vectors_));
  }
  for (size_t k = 0; k < state.voted.size(); ++k) {
    PERCEPTRON_RETURN_IF_ERROR(CheckVector(absl::StrCat("voted vector ", k),
                                           state.voted[k].weights, w_.size()));
  }
  w_ = std::move(state.weights);
  survived_ = state.current_survived;
  past_.assign(std::make_move_iterator(state.voted.begin()),
               std::make_move_iterator(state.voted.end()));
  dropped_ = state.dropped;
  return absl::OkStatus();
}

void VotedLearner::Reset() {
  std::fill(w_.begin(), w_.end(), 0.0);
  survived_ = 0;
  if (journaling_) removed_ += past_.size();
  past_.clear();
  dropped_ = 0;
  dirty_w_.MarkAll();
}

void VotedLearner::SetJournaling(bool on) {
  journaling_ = on;
  added_.clear();
  removed_ = 0;
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
  d.dropped = dropped_;
  d.voted_added = std::move(added_);
  d.voted_removed = removed_;
  added_.clear();
  removed_ = 0;
  return d;
}

absl::Status VotedLearner::ApplyDelta(const LearnerDelta& d) {
  PERCEPTRON_RETURN_IF_ERROR(CheckDelta("weights", d.weights, w_.size()));
  for (const VotedVector& v : d.voted_added) {
    PERCEPTRON_RETURN_IF_ERROR(
        CheckVector("voted vector", v.weights, w_.size()));
  }
  const uint64_t total = past_.size() + d.voted_added.size();
  if (d.voted_removed > total || total - d.voted_removed > max_vectors_) {
    return absl::InvalidArgumentError("journal: voted vectors do not add up");
  }
  perceptron::ApplyDelta(d.weights, &w_);
  for (const VotedVector& v : d.voted_added) past_.push_back(v);
  for (uint64_t i = 0; i < d.voted_removed; ++i) past_.pop_front();
  survived_ = d.current_survived;
  dropped_ = d.dropped;
  return absl::OkStatus();
}

}  // namespace perceptron
