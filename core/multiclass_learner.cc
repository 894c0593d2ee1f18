#include "core/multiclass_learner.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/huge_pages.h"
#include "core/linear_learners.h"
#include "core/status_macros.h"

namespace perceptron {

Decision Decide(absl::Span<const double> s) {
  // Selects rather than branches (which scores rarely let the processor
  // predict); the same choices: the first highest, and the highest of the
  // others.
  int best = 0;
  double top = s[0];
  double runner_up = -std::numeric_limits<double>::infinity();
  for (size_t r = 1; r < s.size(); ++r) {
    const double v = s[r];
    const bool above = v > top;
    runner_up = above ? top : (v > runner_up ? v : runner_up);
    best = above ? static_cast<int>(r) : best;
    top = above ? v : top;
  }
  Decision d;
  d.label = best;
  d.margin = top - runner_up;
  return d;
}

MulticlassLearner::MulticlassLearner(const ModelConfig& config)
    : algorithm_(config.algorithm),
      k_(static_cast<int>(config.weight_vectors())),
      dim_(config.weight_dimension()),
      eta_(config.eta),
      w_(HugeVector<double>(config.weight_count())),
      past_(algorithm_ == Algorithm::kVoted ? config.max_voted_vectors : 0) {
  if (algorithm_ == Algorithm::kAveraged) acc_ = HugeVector<double>(w_.size());
}

void ClassScores(const double* w, int k, uint32_t dim, const Prepared& x,
                 double* out) {
  auto block = [&](int r) {
    return absl::MakeConstSpan(w + size_t{dim} * static_cast<size_t>(r), dim);
  };
  if (x.x.sparse) {
    for (int r = 0; r < k; ++r) out[r] = Dot(block(r), x);
    return;
  }
  // A dense x: the k sums in one pass over x per four classes (DenseDotsOf),
  // each in DenseDot's order, then the bias and scale as Dot applies them.
  const double* vs[kMaxClasses] = {};
  double raw[kMaxClasses];
  for (int r = 0; r < k; ++r) vs[r] = block(r).data();
  DenseDotsOf(vs, static_cast<size_t>(k), x.x.values.data(), x.x.values.size(),
              raw);
  for (int r = 0; r < k; ++r) out[r] = DotFrom(raw[r], block(r), x);
}

void MulticlassLearner::RawScores(const std::vector<double>& w,
                                  const Prepared& x,
                                  absl::Span<double> out) const {
  ClassScores(w.data(), k_, dim_, x, out.data());
}

void MulticlassLearner::Scores(const Prepared& x,
                               absl::Span<double> out) const {
  switch (algorithm_) {
    case Algorithm::kAveraged: {
      RawScores(w_, x, out);
      if (steps_ == 0) return;
      const double n = static_cast<double>(steps_);
      for (int r = 0; r < k_; ++r) {
        out[r] = ((n + 1) * out[r] - Dot(Block(acc_, r), x)) / n;
      }
      return;
    }
    case Algorithm::kVoted: {
      double s[kMaxClasses];
      for (int r = 0; r < k_; ++r) out[r] = 0;
      RawScores(w_, x, absl::MakeSpan(s, k_));
      out[perceptron::Decide(absl::MakeConstSpan(s, k_)).label] +=
          static_cast<double>(survived_);
      for (const VotedVector& v : past_) {
        RawScores(v.weights, x, absl::MakeSpan(s, k_));
        out[perceptron::Decide(absl::MakeConstSpan(s, k_)).label] +=
            static_cast<double>(v.survived);
      }
      return;
    }
    default:
      RawScores(w_, x, out);
  }
}

absl::StatusOr<Decision> MulticlassLearner::Decide(const Prepared& x) const {
  double s[kMaxClasses];
  Scores(x, absl::MakeSpan(s, k_));
  for (int r = 0; r < k_; ++r) {
    if (!std::isfinite(s[r])) return NonFiniteScore(s[r]);
  }
  return perceptron::Decide(absl::MakeConstSpan(s, k_));
}

double MulticlassLearner::Score(const Prepared& x) const {
  absl::StatusOr<Decision> d = Decide(x);
  return d.ok() ? d->margin : std::numeric_limits<double>::quiet_NaN();
}

absl::StatusOr<bool> MulticlassLearner::Step(const Prepared& x, int y,
                                             absl::Span<const double> s) {
  // r: the highest-scoring class other than y, the lowest index among ties.
  int r = y == 0 ? 1 : 0;
  double highest = s[r];
  for (int c = r + 1; c < k_; ++c) {
    const bool above = c != y && s[c] > highest;  // a select, as in Decide
    r = above ? c : r;
    highest = above ? s[c] : highest;
  }
  const bool update = s[y] <= s[r] && x.norm != 0;
  if (algorithm_ == Algorithm::kVoted && !update) {
    ++survived_;
    return false;
  }
  // The update of example steps_ + 1 adds that many times it to acc_.
  const double a = eta_ * static_cast<double>(steps_ + 1);
  if (update) {
    if (!w_bound_.Covers(eta_, x) &&
        (!AddScaledStaysFinite(eta_, x, Block(w_, y)) ||
         !AddScaledStaysFinite(-eta_, x, Block(w_, r)))) {
      return NonFiniteUpdate("a weight");
    }
    if (algorithm_ == Algorithm::kAveraged && !acc_bound_.Covers(a, x) &&
        (!AddScaledStaysFinite(a, x, Block(acc_, y)) ||
         !AddScaledStaysFinite(-a, x, Block(acc_, r)))) {
      return NonFiniteUpdate("the average's accumulator");
    }
  }
  if (algorithm_ == Algorithm::kAveraged) ++steps_;
  if (!update) return false;
  if (algorithm_ == Algorithm::kVoted) {
    if (survived_ > 0) past_.Push({w_, survived_});
    survived_ = 0;
  }
  // Each coordinate of W changes once (classes y and r are different
  // vectors), so one step of the bound covers both.
  AddScaled(eta_, x, Block(w_, y));
  AddScaled(-eta_, x, Block(w_, r));
  w_bound_.Added(eta_, x);
  dirty_w_.Mark(x, dim_ * y);
  dirty_w_.Mark(x, dim_ * r);
  if (algorithm_ == Algorithm::kAveraged) {
    AddScaled(a, x, Block(acc_, y));
    AddScaled(-a, x, Block(acc_, r));
    acc_bound_.Added(a, x);
    dirty_acc_.Mark(x, dim_ * y);
    dirty_acc_.Mark(x, dim_ * r);
  }
  return true;
}

absl::StatusOr<bool> MulticlassLearner::Learn(const Prepared& x, int y) {
  double s[kMaxClasses];
  RawScores(w_, x, absl::MakeSpan(s, k_));
  for (int r = 0; r < k_; ++r) {
    if (!std::isfinite(s[r])) return NonFiniteScore(s[r]);
  }
  return Step(x, y, absl::MakeConstSpan(s, k_));
}

absl::StatusOr<Decision> MulticlassLearner::DecideAndLearn(const Prepared& x,
                                                           int y,
                                                           bool* updated) {
  double s[kMaxClasses];
  RawScores(w_, x, absl::MakeSpan(s, k_));
  for (int r = 0; r < k_; ++r) {
    if (!std::isfinite(s[r])) return NonFiniteScore(s[r]);
  }
  Decision d;
  if (algorithm_ == Algorithm::kClassic) {
    d = perceptron::Decide(absl::MakeConstSpan(s, k_));
  } else {
    PERCEPTRON_ASSIGN_OR_RETURN(d, Decide(x));
  }
  PERCEPTRON_ASSIGN_OR_RETURN(*updated, Step(x, y, absl::MakeConstSpan(s, k_)));
  return d;
}

absl::StatusOr<double> MulticlassLearner::ScoreAndLearn(const Prepared& x,
                                                        int y, bool* updated) {
  PERCEPTRON_ASSIGN_OR_RETURN(const Decision d, DecideAndLearn(x, y, updated));
  return d.margin;
}

LearnerFigures MulticlassLearner::figures() const {
  LearnerFigures f;
  if (algorithm_ == Algorithm::kVoted) {
    f.voted_vectors = past_.size() + 1;
    f.dropped = past_.dropped();
  }
  return f;
}

LearnerState MulticlassLearner::ExportState() const {
  LearnerState state;
  ExportDoubles(w_, &state.weights, &state.sparse_weights);
  ExportDoubles(acc_, &state.average_accumulator,
                &state.sparse_average_accumulator);
  state.average_steps = steps_;
  state.current_survived = survived_;
  state.voted.assign(past_.begin(), past_.end());
  state.dropped = past_.dropped();
  return state;
}

absl::Status MulticlassLearner::ImportState(LearnerState state) {
  PERCEPTRON_RETURN_IF_ERROR(ImportDoubles("weights", &state.weights,
                                           &state.sparse_weights, w_.size()));
  PERCEPTRON_RETURN_IF_ERROR(
      ImportDoubles("average_accumulator", &state.average_accumulator,
                    &state.sparse_average_accumulator, acc_.size()));
  if (state.voted.size() > past_.cap()) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: ", state.voted.size(),
                     " voted vectors exceed the cap ", past_.cap()));
  }
  for (size_t v = 0; v < state.voted.size(); ++v) {
    PERCEPTRON_RETURN_IF_ERROR(CheckVector(absl::StrCat("voted vector ", v),
                                           state.voted[v].weights, w_.size()));
  }
  if (algorithm_ != Algorithm::kAveraged && state.average_steps != 0) {
    return absl::InvalidArgumentError(
        "state: average_steps for a model that does not average");
  }
  if (algorithm_ != Algorithm::kVoted &&
      (state.current_survived != 0 || state.dropped != 0)) {
    return absl::InvalidArgumentError(
        "state: voting counts for a model that does not vote");
  }
  w_ = OnHugePages(std::move(state.weights));
  w_bound_.Set(w_);
  acc_ = OnHugePages(std::move(state.average_accumulator));
  acc_bound_.Set(acc_);
  steps_ = state.average_steps;
  survived_ = state.current_survived;
  past_.Assign(std::move(state.voted), state.dropped);
  return absl::OkStatus();
}

void MulticlassLearner::Reset() {
  std::fill(w_.begin(), w_.end(), 0.0);
  w_bound_.Clear();
  dirty_w_.MarkAll();
  std::fill(acc_.begin(), acc_.end(), 0.0);
  acc_bound_.Clear();
  dirty_acc_.MarkAll();
  steps_ = 0;
  survived_ = 0;
  past_.Clear();
}

void MulticlassLearner::SetJournaling(bool on) {
  past_.SetJournaling(on);
  if (on) {
    dirty_w_.Enable(w_.size());
    if (!acc_.empty()) dirty_acc_.Enable(acc_.size());
  } else {
    dirty_w_.Disable();
    dirty_acc_.Disable();
  }
}

LearnerDelta MulticlassLearner::TakeDelta() {
  LearnerDelta d;
  d.weights = dirty_w_.Take(w_);
  d.average_accumulator = dirty_acc_.Take(acc_);
  d.average_steps = steps_;
  d.current_survived = survived_;
  d.dropped = past_.dropped();
  d.voted_added = past_.TakeAdded();
  d.voted_removed = past_.TakeRemoved();
  return d;
}

absl::Status MulticlassLearner::ApplyDelta(const LearnerDelta& d) {
  PERCEPTRON_RETURN_IF_ERROR(CheckDelta("weights", d.weights, w_.size()));
  PERCEPTRON_RETURN_IF_ERROR(
      CheckDelta("average_accumulator", d.average_accumulator, acc_.size()));
  for (const VotedVector& v : d.voted_added) {
    PERCEPTRON_RETURN_IF_ERROR(
        CheckVector("voted vector", v.weights, w_.size()));
  }
  if (!past_.Fits(d.voted_added.size(), d.voted_removed)) {
    return absl::InvalidArgumentError("journal: voted vectors do not add up");
  }
  perceptron::ApplyDelta(d.weights, &w_);
  w_bound_.Raise(d.weights);
  perceptron::ApplyDelta(d.average_accumulator, &acc_);
  acc_bound_.Raise(d.average_accumulator);
  steps_ = d.average_steps;
  survived_ = d.current_survived;
  past_.Apply(d.voted_added, d.voted_removed, d.dropped);
  return absl::OkStatus();
}

}  // namespace perceptron
