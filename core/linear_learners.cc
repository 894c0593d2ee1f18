#include "core/linear_learners.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace perceptron {

absl::Status CheckVector(absl::string_view what, const std::vector<double>& v,
                         size_t size) {
  if (v.size() != size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state: ", what, " has ", v.size(), " values; expected ", size));
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state: ", what, " value ", i, " is ", v[i], ", not finite"));
    }
  }
  return absl::OkStatus();
}

void ExportDoubles(const std::vector<double>& v, std::vector<double>* dense,
                   std::optional<SparseDoubles>* sparse) {
  const size_t nonzero = v.size() < kSparseExportSize ? 0 : SparseNonZeros(v);
  if (v.size() < kSparseExportSize || !SparseIsSmaller(v.size(), nonzero)) {
    *dense = v;
    return;
  }
  SparseDoubles& out = sparse->emplace();
  out.size = v.size();
  out.indices.reserve(nonzero);
  out.values.reserve(nonzero);
  for (size_t i = 0; i < v.size(); ++i) {
    if (!SparseNonZero(v[i])) continue;
    out.indices.push_back(static_cast<uint32_t>(i));
    out.values.push_back(v[i]);
  }
}

absl::Status ImportDoubles(absl::string_view what, std::vector<double>* dense,
                           std::optional<SparseDoubles>* sparse, size_t size) {
  if (sparse->has_value()) {
    const SparseDoubles& s = **sparse;
    auto bad = [what](auto... why) {
      return absl::InvalidArgumentError(absl::StrCat("state: ", what, why...));
    };
    if (!dense->empty())
      return bad(" is given both whole and by its non-zeros");
    if (s.size != size) {
      return bad(" has ", s.size, " values; expected ", size);
    }
    if (s.indices.size() != s.values.size()) {
      return bad(": ", s.indices.size(), " indices and ", s.values.size(),
                 " values");
    }
    dense->assign(size, 0.0);
    int64_t last = -1;
    for (size_t k = 0; k < s.indices.size(); ++k) {
      const uint32_t i = s.indices[k];
      if (i >= size || int64_t{i} <= last) {
        return bad(": index ", i, " is past its size ", size,
                   " or not above the one before it");
      }
      (*dense)[i] = s.values[k];
      last = i;
    }
    sparse->reset();
  }
  return CheckVector(what, *dense, size);
}

// ---- ClassicLearner ----

absl::StatusOr<bool> ClassicLearner::LearnFromScore(const Prepared& x, int y,
                                                    double s) {
  const int r = TryLearnFromScore(x, y, s);
  if (r < 0) return Refusal(x, y, s);
  return r == 1;
}

absl::Status ClassicLearner::Refusal(const Prepared& /*x*/, int /*y*/,
                                     double s) const {
  if (!std::isfinite(s)) return NonFiniteScore(s);
  return NonFiniteUpdate("a weight");
}

void ClassicLearner::Update(const Prepared& x, int y) {
  AddScaled(eta_ * y, x, absl::MakeSpan(w_));
  w_bound_.Added(eta_ * y, x);
  dirty_w_.Mark(x);
}

LearnerState ClassicLearner::ExportState() const {
  LearnerState state;
  ExportDoubles(w_, &state.weights, &state.sparse_weights);
  return state;
}

absl::Status ClassicLearner::ImportState(LearnerState state) {
  PERCEPTRON_RETURN_IF_ERROR(ImportDoubles("weights", &state.weights,
                                           &state.sparse_weights, w_.size()));
  w_ = OnHugePages(std::move(state.weights));
  w_bound_.Set(w_);
  return absl::OkStatus();
}

void ClassicLearner::Reset() {
  std::fill(w_.begin(), w_.end(), 0.0);
  w_bound_.Clear();
  dirty_w_.MarkAll();
}

LearnerDelta ClassicLearner::TakeDelta() {
  LearnerDelta d;
  d.weights = dirty_w_.Take(w_);
  return d;
}

absl::Status ClassicLearner::ApplyDelta(const LearnerDelta& d) {
  PERCEPTRON_RETURN_IF_ERROR(CheckDelta("weights", d.weights, w_.size()));
  perceptron::ApplyDelta(d.weights, &w_);
  w_bound_.Raise(d.weights);
  return absl::OkStatus();
}

// ---- MarginLearner ----

MarginLearner::MarginLearner(const ModelConfig& config)
    : WeightVectorLearner(config), half_gamma_(*config.gamma / 2) {}

absl::StatusOr<bool> MarginLearner::LearnFromScore(const Prepared& x, int y,
                                                   double s) {
  const int r = TryLearnFromScore(x, y, s);
  if (r < 0) return Refusal(x, y, s);
  return r == 1;
}

absl::Status MarginLearner::Refusal(const Prepared& x, int y, double s) const {
  if (!std::isfinite(s)) return NonFiniteScore(s);
  if (!std::isfinite(NormSqAfter(eta_ * y, x, s)))
    return NonFiniteUpdate("||w||^2");
  return NonFiniteUpdate("a weight");
}

void MarginLearner::Update(double a, const Prepared& x) {
  AddScaled(a, x, absl::MakeSpan(w_));
  w_bound_.Added(a, x);
  dirty_w_.Mark(x);
}

LearnerState MarginLearner::ExportState() const {
  LearnerState state;
  ExportDoubles(w_, &state.weights, &state.sparse_weights);
  state.weight_norm_sq = norm_sq_;
  return state;
}

absl::Status MarginLearner::ImportState(LearnerState state) {
  PERCEPTRON_RETURN_IF_ERROR(ImportDoubles("weights", &state.weights,
                                           &state.sparse_weights, w_.size()));
  if (!std::isfinite(state.weight_norm_sq) || state.weight_norm_sq < 0) {
    return absl::InvalidArgumentError(absl::StrCat("state: weight_norm_sq ",
                                                   state.weight_norm_sq,
                                                   " is not a squared norm"));
  }
  w_ = OnHugePages(std::move(state.weights));
  w_bound_.Set(w_);
  norm_sq_ = state.weight_norm_sq;
  return absl::OkStatus();
}

void MarginLearner::Reset() {
  std::fill(w_.begin(), w_.end(), 0.0);
  w_bound_.Clear();
  norm_sq_ = 0;
  dirty_w_.MarkAll();
}

LearnerDelta MarginLearner::TakeDelta() {
  LearnerDelta d;
  d.weights = dirty_w_.Take(w_);
  d.weight_norm_sq = norm_sq_;
  return d;
}

absl::Status MarginLearner::ApplyDelta(const LearnerDelta& d) {
  PERCEPTRON_RETURN_IF_ERROR(CheckDelta("weights", d.weights, w_.size()));
  if (!std::isfinite(d.weight_norm_sq) || d.weight_norm_sq < 0) {
    return absl::InvalidArgumentError(
        "journal: weight_norm_sq is not a squared norm");
  }
  perceptron::ApplyDelta(d.weights, &w_);
  w_bound_.Raise(d.weights);
  norm_sq_ = d.weight_norm_sq;
  return absl::OkStatus();
}

// ---- AveragedLearner ----

AveragedLearner::AveragedLearner(const ModelConfig& config)
    : ClassicLearner(config),
      acc_(HugeVector<double>(config.weight_dimension())) {}

double AveragedLearner::AverageScore(double w_dot, const Prepared& x) const {
  if (steps_ == 0) return w_dot;
  const double n = static_cast<double>(steps_);
  return ((n + 1) * w_dot - Dot(acc_, x)) / n;
}

absl::StatusOr<bool> AveragedLearner::Step(const Prepared& x, int y,
                                           double w_dot) {
  if (!std::isfinite(w_dot)) return NonFiniteScore(w_dot);
  const bool update = Mistaken(x, y, w_dot);
  // The update of example steps_ + 1 adds that many times eta y x^ to acc_.
  const double a = eta_ * y * static_cast<double>(steps_ + 1);
  if (update) {
    if (!UpdateStaysFinite(w_bound_, eta_ * y, x, w_)) {
      return NonFiniteUpdate("a weight");
    }
    if (!UpdateStaysFinite(acc_bound_, a, x, acc_)) {
      return NonFiniteUpdate("the average's accumulator");
    }
  }
  ++steps_;
  if (!update) return false;
  Update(x, y);
  AddScaled(a, x, absl::MakeSpan(acc_));
  acc_bound_.Added(a, x);
  dirty_acc_.Mark(x);
  return true;
}

double AveragedLearner::Score(const Prepared& x) const {
  return AverageScore(Dot(w_, x), x);
}

absl::StatusOr<bool> AveragedLearner::Learn(const Prepared& x, int y) {
  return Step(x, y, Dot(w_, x));
}

absl::StatusOr<double> AveragedLearner::ScoreAndLearn(const Prepared& x, int y,
                                                      bool* updated) {
  return AveragedLearner::ScoreAndLearnFrom(x, y, Dot(w_, x), updated);
}

absl::StatusOr<double> AveragedLearner::ScoreAndLearnFrom(const Prepared& x,
                                                          int y, double w_dot,
                                                          bool* updated) {
  const double score = AverageScore(w_dot, x);
  if (!std::isfinite(score)) return NonFiniteScore(score);
  PERCEPTRON_ASSIGN_OR_RETURN(*updated, Step(x, y, w_dot));
  return score;
}

LearnerState AveragedLearner::ExportState() const {
  LearnerState state = ClassicLearner::ExportState();
  ExportDoubles(acc_, &state.average_accumulator,
                &state.sparse_average_accumulator);
  state.average_steps = steps_;
  return state;
}

absl::Status AveragedLearner::ImportState(LearnerState state) {
  PERCEPTRON_RETURN_IF_ERROR(ImportDoubles("weights", &state.weights,
                                           &state.sparse_weights, w_.size()));
  PERCEPTRON_RETURN_IF_ERROR(
      ImportDoubles("average_accumulator", &state.average_accumulator,
                    &state.sparse_average_accumulator, acc_.size()));
  w_ = OnHugePages(std::move(state.weights));
  w_bound_.Set(w_);
  acc_ = OnHugePages(std::move(state.average_accumulator));
  acc_bound_.Set(acc_);
  steps_ = state.average_steps;
  return absl::OkStatus();
}

void AveragedLearner::Reset() {
  ClassicLearner::Reset();
  std::fill(acc_.begin(), acc_.end(), 0.0);
  acc_bound_.Clear();
  steps_ = 0;
  dirty_acc_.MarkAll();
}

void AveragedLearner::SetJournaling(bool on) {
  ClassicLearner::SetJournaling(on);
  if (on) {
    dirty_acc_.Enable(acc_.size());
  } else {
    dirty_acc_.Disable();
  }
}

LearnerDelta AveragedLearner::TakeDelta() {
  LearnerDelta d = ClassicLearner::TakeDelta();
  d.average_accumulator = dirty_acc_.Take(acc_);
  d.average_steps = steps_;
  return d;
}

absl::Status AveragedLearner::ApplyDelta(const LearnerDelta& d) {
  PERCEPTRON_RETURN_IF_ERROR(CheckDelta("weights", d.weights, w_.size()));
  PERCEPTRON_RETURN_IF_ERROR(
      CheckDelta("average_accumulator", d.average_accumulator, acc_.size()));
  perceptron::ApplyDelta(d.weights, &w_);
  w_bound_.Raise(d.weights);
  perceptron::ApplyDelta(d.average_accumulator, &acc_);
  acc_bound_.Raise(d.average_accumulator);
  steps_ = d.average_steps;
  return absl::OkStatus();
}

}  // namespace perceptron
