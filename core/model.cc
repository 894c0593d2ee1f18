#include "core/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <typeinfo>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/kernel_learner.h"
#include "core/linear_learners.h"
#include "core/status_macros.h"

namespace perceptron {
namespace {

absl::Status Prefixed(absl::string_view prefix, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// One step of a linear learner's rule, given s = w . x^ on its current w:
// sets *score and answers 1 (an update), 0 (none) or -1 (refused, nothing
// changed; Refusal is the error). For the classic and margin rules the step
// is the learner's own, inlined (RuleStep); any other linear learner is
// called through Learner::ScoreAndLearnFrom (VirtualStep).
template <typename Rule>
struct RuleStep {
  Rule& rule;
  int operator()(const Prepared& x, int y, double s, double* score) {
    *score = s;
    return rule.TryLearnFromScore(x, y, s);
  }
  absl::Status Refusal(const Prepared& x, int y, double s) const {
    return rule.Refusal(x, y, s);
  }
};

struct VirtualStep {
  Learner& learner;
  absl::Status refusal;
  int operator()(const Prepared& x, int y, double s, double* score) {
    bool updated = false;
    absl::StatusOr<double> r = learner.ScoreAndLearnFrom(x, y, s, &updated);
    if (!r.ok()) {
      refusal = r.status();
      return -1;
    }
    *score = *r;
    return updated ? 1 : 0;
  }
  absl::Status Refusal(const Prepared&, int, double) const { return refusal; }
};

// The dense row i of `values`, rows of `d` values packed one after another;
// the caller knows that there are more than i rows (no check: it is on
// LearnDense's path for every row).
FeatureView DenseRow(absl::Span<const double> values, size_t d, size_t i) {
  return FeatureView::Dense(absl::MakeConstSpan(values.data() + i * d, d));
}

}  // namespace

template <typename F>
decltype(auto) Model::WithDenseStep(F f) {
  if (classic_ != nullptr) {
    RuleStep<ClassicLearner> step{*classic_};
    return f(step);
  }
  if (margin_ != nullptr) {
    RuleStep<MarginLearner> step{*margin_};
    return f(step);
  }
  VirtualStep step{*learner_, absl::OkStatus()};
  return f(step);
}

Model::Model(const ModelConfig& config)
    : config_(config),
      preparer_(config),
      learner_(MakeLearner(config)),
      bound_(config) {
  if (config.hash_bits != 0) {
    hasher_.emplace(config.hash_bits, config.interactions);
    names_.emplace(config.hash_bits, kDefaultNameTableBytes);
  } else if (!config.feature_names.empty()) {
    hasher_ = FeatureHasher::Listed(config.feature_names);
  }
  // By the learner's exact type, not the configured algorithm: the step that
  // WithDenseStep inlines is the one the learner's own Learn takes.
  Learner& learner = *learner_;
  if (typeid(learner) == typeid(ClassicLearner)) {
    classic_ = static_cast<ClassicLearner*>(&learner);
  } else if (typeid(learner) == typeid(MarginLearner)) {
    margin_ = static_cast<MarginLearner*>(&learner);
  } else if (typeid(learner) == typeid(MulticlassLearner)) {
    multi_ = static_cast<MulticlassLearner*>(&learner);
    confusion_.assign(size_t{config.weight_vectors()} * config.weight_vectors(),
                      0);
  }
}

absl::Status Model::CheckLabel(int label) const {
  if (multi_ == nullptr) return ValidateLabel(label);
  if (label >= 0 && label < multi_->classes()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "label ", label, " is not a class index 0..", multi_->classes() - 1,
      " of this model's ", multi_->classes(), " classes"));
}

namespace {

// OK if `confusion` is a k x k matrix (k = `classes`; empty when 0) whose
// counts add up to `examples`; else INVALID_ARGUMENT, `what` naming it.
absl::Status CheckConfusion(absl::string_view what,
                            const std::vector<uint64_t>& confusion, int classes,
                            uint64_t examples) {
  if (confusion.size() != static_cast<size_t>(classes) * classes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": a confusion matrix of ", confusion.size(),
                     " counts for a model of ", classes, " classes"));
  }
  if (classes == 0) return absl::OkStatus();
  uint64_t sum = 0;
  for (const uint64_t c : confusion) {
    if (c > examples - sum) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the confusion matrix counts more than ",
                       examples, " examples"));
    }
    sum += c;
  }
  if (sum != examples) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the confusion matrix counts ", sum,
                     " examples, not ", examples));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Model::Create(
    const ModelConfig& config) {
  PERCEPTRON_RETURN_IF_ERROR(ValidateConfig(config));
  return std::unique_ptr<Model>(new Model(config));
}

absl::StatusOr<std::unique_ptr<Model>> Model::FromState(ModelState state) {
  PERCEPTRON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                              Create(state.config));
  PERCEPTRON_RETURN_IF_ERROR(
      model->learner_->ImportState(std::move(state.learner)));
  PERCEPTRON_RETURN_IF_ERROR(
      model->bound_.Restore(state.td_gamma, state.radius));
  if (state.next_prediction_id == 0) {
    return absl::InvalidArgumentError("state: next_prediction_id must be >= 1");
  }
  // What a real model's counters always satisfy (Reset zeroes the counters
  // but keeps next_prediction_id).
  const Counters& c = state.counters;
  if (c.mistakes > c.examples || c.updates > c.examples) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: ", c.mistakes, " mistakes and ", c.updates,
                     " updates cannot come from ", c.examples, " examples"));
  }
  if (c.predictions > state.next_prediction_id - 1 ||
      c.expired > c.predictions ||
      state.pending.size() > c.predictions - c.expired) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state: ", c.predictions, " predictions issued (next id ",
        state.next_prediction_id, "), ", c.expired, " expired and ",
        state.pending.size(), " pending do not add up"));
  }
  for (PendingPrediction& p : state.pending) {
    if (p.prediction_id == 0 || p.prediction_id >= state.next_prediction_id) {
      return absl::InvalidArgumentError(
          absl::StrCat("state: pending prediction id ", p.prediction_id,
                       " is not below ", state.next_prediction_id));
    }
    if (!std::isfinite(p.score) || !model->IssuedFits(p)) {
      return absl::InvalidArgumentError(
          absl::StrCat("state: pending prediction ", p.prediction_id,
                       " has score ", p.score, " and class ", p.predicted));
    }
    if (absl::Status s = model->ValidateAndPrepare(p.features.view()).status();
        !s.ok()) {
      return Prefixed(
          absl::StrCat("state: pending prediction ", p.prediction_id, ": "), s);
    }
    if (!model->InsertPending(
            p.prediction_id,
            Pending{std::move(p.features), p.score, p.issued_at, p.predicted},
            /*replace=*/false)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state: pending prediction id ", p.prediction_id, " repeated"));
    }
  }
  if (model->names_) {
    PERCEPTRON_RETURN_IF_ERROR(
        Prefixed("state: ", model->names_->Restore(std::move(state.names))));
  } else if (!state.names.names.empty() || state.names.unnamed_slots != 0) {
    return absl::InvalidArgumentError(
        "state: names for a model that hashes none");
  }
  PERCEPTRON_RETURN_IF_ERROR(CheckConfusion(
      "state", state.confusion,
      model->multi_ != nullptr ? model->multi_->classes() : 0, c.examples));
  if (model->multi_ != nullptr) model->confusion_ = std::move(state.confusion);
  model->counters_ = state.counters;
  model->next_prediction_id_ = state.next_prediction_id;
  if (state.certificate) {
    // Kept here, without limits, until EnableCertificate continues it.
    // A certificate that does not fit turns off, saying why (Restore).
    auto tracker =
        model->NewTracker(UINT64_MAX, UINT64_MAX, UINT64_MAX, nullptr);
    tracker->Restore(*state.certificate, model->config_.weight_dimension())
        .IgnoreError();
    model->certificate_ = std::move(tracker);
  }
  return model;
}

absl::StatusOr<Prepared> Model::ValidateAndPrepare(const FeatureView& x) const {
  PERCEPTRON_RETURN_IF_ERROR(ValidateStructure(x, config_.dimension));
  return preparer_.Prepare(
      x);  // finds non-finite values in the same pass as the norm
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void Model::Account(const Prepared& x,
                                                        int label, double score,
                                                        bool updated,
                                                        double hinge,
                                                        Outcome* o) {
  // Field by field: a whole Outcome built aside and copied in would be read
  // back before its parts are stored, which stalls the processor.
  const bool mistake = label * score <= 0;
  o->score = score;
  o->predicted = PredictedLabel(score);
  o->mistake = mistake;
  o->updated = updated;
  ++counters_.examples;
  counters_.mistakes += mistake;
  counters_.updates += updated;
  bound_.Observe(x, hinge);
  if (certificate_) certificate_->Observe(x, label);
}

void Model::AccountClass(const Prepared& x, int label, const Decision& d,
                         bool updated, double hinge, Outcome* o) {
  const bool mistake = MulticlassMistake(d, label);
  o->score = d.margin;
  o->predicted = d.label;
  o->mistake = mistake;
  o->updated = updated;
  ++counters_.examples;
  counters_.mistakes += mistake;
  counters_.updates += updated;
  ++confusion_[static_cast<size_t>(label) * multi_->classes() + d.label];
  bound_.Observe(x, hinge);
  if (certificate_) certificate_->Observe(x, label);
}

absl::StatusOr<Decision> Model::FiniteDecision(const Prepared& p) const {
  return multi_->Decide(p);
}

bool Model::IssuedFits(const PendingPrediction& p) const {
  if (multi_ == nullptr) return p.predicted == 0;
  return p.score >= 0 && p.predicted >= 0 && p.predicted < multi_->classes();
}

absl::StatusOr<double> Model::FiniteScore(const Prepared& p) const {
  const double score = learner_->Score(p);
  if (!std::isfinite(score)) return NonFiniteScore(score);
  return score;
}

absl::StatusOr<Prediction> Model::Predict(const FeatureView& x) const {
  PERCEPTRON_ASSIGN_OR_RETURN(Prepared p, ValidateAndPrepare(x));
  if (multi_ != nullptr) {
    PERCEPTRON_ASSIGN_OR_RETURN(const Decision d, FiniteDecision(p));
    return Prediction{d.margin, d.label};
  }
  PERCEPTRON_ASSIGN_OR_RETURN(const double score, FiniteScore(p));
  return Prediction{score, PredictedLabel(score)};
}

absl::StatusOr<std::vector<double>> Model::Scores(const FeatureView& x) const {
  PERCEPTRON_ASSIGN_OR_RETURN(Prepared p, ValidateAndPrepare(x));
  if (multi_ == nullptr) {
    PERCEPTRON_ASSIGN_OR_RETURN(const double score, FiniteScore(p));
    return std::vector<double>{score};
  }
  std::vector<double> s(multi_->classes());
  multi_->Scores(p, absl::MakeSpan(s));
  for (const double v : s) {
    if (!std::isfinite(v)) return NonFiniteScore(v);
  }
  return s;
}

absl::StatusOr<Issued> Model::Issue(const FeatureView& x, int64_t now) {
  PERCEPTRON_ASSIGN_OR_RETURN(Prepared p, ValidateAndPrepare(x));
  Decision d;
  if (multi_ != nullptr) {
    PERCEPTRON_ASSIGN_OR_RETURN(d, FiniteDecision(p));
  } else {
    PERCEPTRON_ASSIGN_OR_RETURN(d.margin, FiniteScore(p));
    d.label = PredictedLabel(d.margin);
  }
  if (next_prediction_id_ == std::numeric_limits<uint64_t>::max()) {
    return absl::ResourceExhaustedError(
        "the model has issued every prediction id");
  }
  PERCEPTRON_RETURN_IF_ERROR(HoldPending(x));
  const int predicted = multi_ != nullptr ? d.label : 0;
  const uint64_t id = next_prediction_id_++;
  InsertPending(id, Pending{Features::Copy(x), d.margin, now, predicted},
                /*replace=*/false, /*taken=*/true);
  if (journaling_) {
    pending_delta_.added.push_back(
        {id, pending_.find(id)->second.features, d.margin, now, predicted});
  }
  ++counters_.predictions;
  return Issued{id, d.margin, d.label};
}

absl::StatusOr<Outcome> Model::Reveal(uint64_t prediction_id, int label) {
  PERCEPTRON_RETURN_IF_ERROR(CheckLabel(label));
  auto it = pending_.find(prediction_id);
  if (it == pending_.end()) {
    return absl::NotFoundError(
        absl::StrCat("prediction ", prediction_id,
                     prediction_id > 0 && prediction_id < next_prediction_id_
                         ? " was already revealed or has expired"
                         : " was never issued by this model"));
  }
  // The features were validated and prepared when issued; preparing them again
  // gives the same x^.
  absl::StatusOr<Prepared> p = preparer_.Prepare(it->second.features.view());
  if (!p.ok()) return p.status();
  const double hinge = bound_.Hinge(*p, label);
  PERCEPTRON_RETURN_IF_ERROR(bound_.CheckObserve(*p, hinge));
  // On error the prediction stays pending and nothing changes.
  PERCEPTRON_ASSIGN_OR_RETURN(const bool updated, learner_->Learn(*p, label));
  Outcome o;
  if (multi_ != nullptr) {
    AccountClass(*p, label, Decision{it->second.predicted, it->second.score},
                 updated, hinge, &o);
  } else {
    Account(*p, label, it->second.score, updated, hinge, &o);
  }
  ErasePending(it);
  if (journaling_) pending_delta_.removed.push_back(prediction_id);
  return o;
}

void Model::Prefetch(const FeatureView& x) const {
  if (!x.sparse) return;
  // The comparator's entries too (u . x^ is summed for every labeled
  // example), and what a wide model's certificate reads to score x
  // (CertificateTracker::Prefetch): a frozen one learned in half the time
  // (RunFrozen/W3_certificate/16384, 410 ns an example against 215,
  // 2026-12-07).
  if (!bound_.comparator().empty()) PrefetchAt(bound_.comparator(), x);
  if (certificate_) certificate_->Prefetch(x);
  learner_->Prefetch(x);
}

absl::StatusOr<Outcome> Model::Learn(const FeatureView& x, int label) {
  if (!IsModelLabel(label)) return CheckLabel(label);
  const std::vector<double>* w = learner_->dot_weights();
  if (multi_ != nullptr) {
    PERCEPTRON_ASSIGN_OR_RETURN(Prepared p, ValidateAndPrepare(x));
    const double hinge = bound_.Hinge(p, label);
    PERCEPTRON_RETURN_IF_ERROR(bound_.CheckObserve(p, hinge));
    bool updated = false;
    PERCEPTRON_ASSIGN_OR_RETURN(const Decision d,
                                multi_->DecideAndLearn(p, label, &updated));
    Outcome o;
    AccountClass(p, label, d, updated, hinge, &o);
    return o;
  }
  if (w == nullptr || x.sparse) {
    PERCEPTRON_ASSIGN_OR_RETURN(Prepared p, ValidateAndPrepare(x));
    const double hinge = bound_.Hinge(p, label);
    PERCEPTRON_RETURN_IF_ERROR(bound_.CheckObserve(p, hinge));
    bool updated = false;
    PERCEPTRON_ASSIGN_OR_RETURN(const double score,
                                learner_->ScoreAndLearn(p, label, &updated));
    Outcome o;
    Account(p, label, score, updated, hinge, &o);
    return o;
  }
  // A dense x and a linear learner: w . x and ||x||^2 in one pass, each summed
  // as Dot and Prepare sum them.
  if (x.values.size() != config_.dimension)
    return ValidateStructure(x, config_.dimension);
  double w_dot_x = 0, x_dot_x = 0;
  DenseDots(w->data(), x.values.data(), x.values.size(), &w_dot_x, &x_dot_x);
  Prepared p;
  const bool prepared = preparer_.TryPrepare(x, x_dot_x, &p);
  Outcome o;
  PERCEPTRON_RETURN_IF_ERROR(WithDenseStep([&](auto& step) {
    return LearnDenseFrom(step, p, prepared, x_dot_x, w_dot_x, *w, label, &o);
  }));
  return o;
}

template <typename Step>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status Model::LearnDenseFrom(
    Step& step, Prepared& p, bool prepared, double x_dot_x, double w_dot_x,
    const std::vector<double>& w, int label, Outcome* o) {
  if (!prepared) {
    PERCEPTRON_ASSIGN_OR_RETURN(p, preparer_.Prepare(p.x, x_dot_x));
  }
  const double hinge = bound_.Hinge(p, label);
  if (!bound_.CanObserve(p, hinge)) return bound_.CheckObserve(p, hinge);
  const double s = DotFrom(w_dot_x, w, p);
  double score;
  const int updated = step(p, label, s, &score);
  if (updated < 0) return step.Refusal(p, label, s);
  Account(p, label, score, updated == 1, hinge, o);
  return absl::OkStatus();
}

absl::Status Model::LearnDense(
    absl::Span<const double> values, absl::Span<const int> labels,
    absl::FunctionRef<void(size_t i, const absl::StatusOr<Outcome>& r)> each) {
  const size_t d = config_.dimension, n = labels.size();
  if (values.size() != n * d) {
    return absl::InvalidArgumentError(
        absl::StrCat("a dense batch of ", values.size(), " values and ", n,
                     " labels does not fit ", n, " rows of dimension ", d));
  }
  if (multi_ != nullptr) {
    LearnClassRows(values, labels, each);
    return absl::OkStatus();
  }
  const std::vector<double>* w = learner_->dot_weights();
  if (w == nullptr) {
    for (size_t i = 0; i < n; ++i)
      each(i, Learn(DenseRow(values, d, i), labels[i]));
    return absl::OkStatus();
  }
  WithDenseStep([&](auto& step) {
    LearnDenseRows(step, *w, values, labels, each);
    return 0;
  });
  return absl::OkStatus();
}

template <typename Step>
void Model::LearnDenseRows(
    Step& step, const std::vector<double>& w, absl::Span<const double> values,
    absl::Span<const int> labels,
    absl::FunctionRef<void(size_t i, const absl::StatusOr<Outcome>& r)> each) {
  const size_t d = config_.dimension, n = labels.size();
  // Learn's dense path. For short rows, the squared norms and preparations
  // (which do not depend on w) of a block of rows are done before the block
  // is learned: their square roots and divisions then overlap one another
  // instead of each waiting on the learning before it (DenseSquares sums
  // each x . x in DenseDots' order, the same bits, in one call for the
  // block). Long rows are summed as Learn sums them, w . x and x . x in one
  // pass: there the pass costs more than the division.
  constexpr size_t kBlock = 8, kLongRow = 64;
  const bool ahead = d < kLongRow;
  Prepared slot[kBlock];
  double sum_squares[kBlock];
  bool prepared[kBlock];
  absl::StatusOr<Outcome> r;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t m = std::min(kBlock, n - begin);
    if (ahead) DenseSquares(values.data() + begin * d, m, d, sum_squares);
    for (size_t k = 0; ahead && k < m; ++k) {
      prepared[k] = preparer_.TryPrepare(DenseRow(values, d, begin + k),
                                         sum_squares[k], &slot[k]);
    }
    for (size_t k = 0; k < m; ++k) {
      const size_t i = begin + k;
      const int label = labels.data()[i];  // i < n: no check
      if (!IsLabel(label)) {
        r = ValidateLabel(label);
        each(i, r);
        continue;
      }
      const double* x = values.data() + i * d;
      double w_dot_x = 0;
      if (ahead) {
        w_dot_x = DenseDot(w.data(), x, d);
      } else {
        DenseDots(w.data(), x, d, &w_dot_x, &sum_squares[k]);
        prepared[k] = preparer_.TryPrepare(DenseRow(values, d, i),
                                           sum_squares[k], &slot[k]);
      }
      // Filled in place: an Outcome built aside and copied in would be read
      // back before its parts are stored, which stalls the processor.
      Outcome& o = r.emplace();
      absl::Status s = LearnDenseFrom(step, slot[k], prepared[k],
                                      sum_squares[k], w_dot_x, w, label, &o);
      if (!s.ok()) r = std::move(s);
      each(i, r);
    }
  }
}

void Model::LearnClassRows(
    absl::Span<const double> values, absl::Span<const int> labels,
    absl::FunctionRef<void(size_t i, const absl::StatusOr<Outcome>& r)> each) {
  const size_t d = config_.dimension, n = labels.size();
  // Learn's path for a multiclass model, with the squared norms and
  // preparations of a block of rows (which do not depend on W) done before
  // the block is learned, as LearnDenseRows does: their square roots and
  // divisions overlap. DenseSquares sums each x . x as Prepare does (the same
  // bits), so each row's outcome and the state after it are Learn's.
  constexpr size_t kBlock = 8;
  Prepared slot[kBlock];
  double sum_squares[kBlock];
  bool prepared[kBlock];
  absl::StatusOr<Outcome> r;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t m = std::min(kBlock, n - begin);
    DenseSquares(values.data() + begin * d, m, d, sum_squares);
    for (size_t k = 0; k < m; ++k) {
      prepared[k] = preparer_.TryPrepare(DenseRow(values, d, begin + k),
                                         sum_squares[k], &slot[k]);
    }
    for (size_t k = 0; k < m; ++k) {
      const size_t i = begin + k;
      const int label = labels.data()[i];  // i < n: no check
      if (!IsModelLabel(label)) {
        r = CheckLabel(label);
        each(i, r);
        continue;
      }
      Outcome& o = r.emplace();
      absl::Status s =
          LearnClassFrom(slot[k], prepared[k], sum_squares[k], label, &o);
      if (!s.ok()) r = std::move(s);
      each(i, r);
    }
  }
}

absl::Status Model::LearnClassFrom(Prepared& p, bool prepared, double x_dot_x,
                                   int label, Outcome* o) {
  if (!prepared) {
    PERCEPTRON_ASSIGN_OR_RETURN(p, preparer_.Prepare(p.x, x_dot_x));
  }
  const double hinge = bound_.Hinge(p, label);
  if (!bound_.CanObserve(p, hinge)) return bound_.CheckObserve(p, hinge);
  bool updated = false;
  PERCEPTRON_ASSIGN_OR_RETURN(const Decision d,
                              multi_->DecideAndLearn(p, label, &updated));
  AccountClass(p, label, d, updated, hinge, o);
  return absl::OkStatus();
}

absl::StatusOr<TrainResult> Model::Train(absl::Span<const LabeledExample> data,
                                         const TrainOptions& options) {
  if (options.max_epochs == 0)
    return absl::InvalidArgumentError("train: max_epochs must be >= 1");
  std::vector<Prepared> prepared;
  prepared.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    absl::Status s = CheckLabel(data[i].label);
    absl::StatusOr<Prepared> p = s.ok() ? ValidateAndPrepare(data[i].x) : s;
    if (!p.ok()) return Prefixed(absl::StrCat("example ", i, ": "), p.status());
    prepared.push_back(*p);
  }
  // A dry run on a copy first: an example refused midway (a number that would
  // not be finite) then leaves this model as it was. The real run repeats the
  // same arithmetic, so it cannot fail.
  PERCEPTRON_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy,
                              FromState(ExportState()));
  TrainOptions quiet = options;
  quiet.on_example = nullptr;
  PERCEPTRON_RETURN_IF_ERROR(copy->RunTrain(prepared, data, quiet).status());
  return RunTrain(prepared, data, options);
}

absl::StatusOr<TrainResult> Model::RunTrain(
    absl::Span<const Prepared> prepared, absl::Span<const LabeledExample> data,
    const TrainOptions& options) {
  TrainResult result;
  while (result.epochs < options.max_epochs && !result.converged) {
    ++result.epochs;
    uint64_t epoch_updates = 0;
    for (size_t i = 0; i < prepared.size(); ++i) {
      const int y = data[i].label;
      const double hinge = bound_.Hinge(prepared[i], y);
      bool updated = false;
      absl::Status checked = bound_.CheckObserve(prepared[i], hinge);
      absl::StatusOr<Decision> d = Decision();
      if (!checked.ok()) {
        d = checked;
      } else if (multi_ != nullptr) {
        d = multi_->DecideAndLearn(prepared[i], y, &updated);
      } else {
        absl::StatusOr<double> score =
            learner_->ScoreAndLearn(prepared[i], y, &updated);
        if (score.ok()) {
          d = Decision{0, *score};
        } else {
          d = score.status();
        }
      }
      if (!d.ok()) {
        return Prefixed(
            absl::StrCat("epoch ", result.epochs, ", example ", i, ": "),
            d.status());
      }
      Outcome o;
      if (multi_ != nullptr) {
        AccountClass(prepared[i], y, *d, updated, hinge, &o);
      } else {
        Account(prepared[i], y, d->margin, updated, hinge, &o);
      }
      result.mistakes += o.mistake;
      epoch_updates += o.updated;
      if (options.on_example) options.on_example(result.epochs, i, o);
    }
    result.updates += epoch_updates;
    result.converged = epoch_updates == 0;
  }
  return result;
}

size_t Model::ExpirePending(int64_t cutoff) {
  size_t n = 0;
  for (auto it = pending_.begin();
       it != pending_.end() && it->second.issued_at < cutoff;) {
    if (journaling_) pending_delta_.removed.push_back(it->first);
    it = ErasePending(it);
    ++n;
  }
  counters_.expired += n;
  return n;
}

void Model::Reset() {
  learner_->Reset();
  bound_.Reset();
  if (certificate_) certificate_->Reset();
  counters_ = Counters();
  std::fill(confusion_.begin(), confusion_.end(), 0);
  ClearPending();
  if (journaling_) {
    pending_delta_.cleared = true;
    pending_delta_.added.clear();
    pending_delta_.removed.clear();
  }
  // Ids stay unique for the model's life, so a stale id from before the reset
  // is never matched.
}

ModelState Model::ExportState() const {
  ModelState s;
  s.config = config_;
  s.counters = counters_;
  s.td_gamma = bound_.td_gamma();
  s.radius = bound_.radius();
  s.learner = learner_->ExportState();
  s.next_prediction_id = next_prediction_id_;
  s.pending.reserve(pending_.size());
  for (const auto& [id, p] : pending_) {
    s.pending.push_back({id, p.features, p.score, p.issued_at, p.predicted});
  }
  s.confusion = confusion_;
  if (certificate_) s.certificate = certificate_->Save();
  if (names_) s.names = names_->State();
  return s;
}

void Model::SetJournaling(bool on) {
  journaling_ = on;
  pending_delta_ = PendingDelta();
  learner_->SetJournaling(on);
  if (certificate_) certificate_->SetJournaling(on);
  if (names_) names_->StartJournal();
}

Journal Model::TakeJournal() {
  Journal j;
  j.pending_cleared = pending_delta_.cleared;
  j.pending_added = std::move(pending_delta_.added);
  j.pending_removed = std::move(pending_delta_.removed);
  pending_delta_ = PendingDelta();
  j.learner = learner_->TakeDelta();
  j.counters = counters_;
  j.confusion = confusion_;
  j.td_gamma = bound_.td_gamma();
  j.radius = bound_.radius();
  j.next_prediction_id = next_prediction_id_;
  j.certificate_rows_cleared = std::exchange(certificate_rows_dropped_, false);
  if (names_ && journaling_) j.names = names_->TakeAdded();
  if (certificate_) {
    j.certificate = certificate_->Save(certificate_->TakeCandidatesChanged());
    CertificateTracker::RowsDelta rows = certificate_->TakeRows();
    j.certificate_rows = std::move(rows.rows);
    j.certificate_repeats = std::move(rows.repeats);
    j.certificate_rows_cleared |= rows.cleared;
  }
  return j;
}

absl::Status Model::ApplyJournal(const Journal& j) {
  if (j.next_prediction_id < next_prediction_id_ && !j.pending_cleared) {
    return absl::InvalidArgumentError("journal: prediction ids go backwards");
  }
  for (const PendingPrediction& p : j.pending_added) {
    if (p.prediction_id == 0 || p.prediction_id >= j.next_prediction_id ||
        !std::isfinite(p.score) || !IssuedFits(p)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "journal: pending prediction ", p.prediction_id, " is malformed"));
    }
    if (absl::Status s = ValidateAndPrepare(p.features.view()).status();
        !s.ok()) {
      return Prefixed(
          absl::StrCat("journal: pending prediction ", p.prediction_id, ": "),
          s);
    }
  }
  if (!std::isfinite(j.td_gamma) || j.td_gamma < 0 ||
      !std::isfinite(j.radius) || j.radius < 0) {
    return absl::InvalidArgumentError(
        "journal: td_gamma or radius is not finite and >= 0");
  }
  PERCEPTRON_RETURN_IF_ERROR(CheckConfusion(
      "journal", j.confusion, multi_ != nullptr ? multi_->classes() : 0,
      j.counters.examples));
  if (!names_ && (!j.names.names.empty() || j.names.unnamed_slots != 0)) {
    return absl::InvalidArgumentError(
        "journal: names for a model that hashes none");
  }
  if (names_) {
    PERCEPTRON_RETURN_IF_ERROR(
        Prefixed("journal: ", names_->CheckAdded(j.names)));
  }
  PERCEPTRON_RETURN_IF_ERROR(learner_->ApplyDelta(j.learner));
  if (names_) names_->Apply(j.names).IgnoreError();    // checked above
  bound_.Restore(j.td_gamma, j.radius).IgnoreError();  // checked above
  counters_ = j.counters;
  if (multi_ != nullptr) confusion_ = j.confusion;
  next_prediction_id_ = j.next_prediction_id;
  if (j.pending_cleared) ClearPending();
  for (const PendingPrediction& p : j.pending_added) {
    InsertPending(p.prediction_id,
                  Pending{p.features, p.score, p.issued_at, p.predicted},
                  /*replace=*/true);
  }
  for (uint64_t id : j.pending_removed) {
    if (auto it = pending_.find(id); it != pending_.end()) ErasePending(it);
  }
  if (j.certificate) {
    // A certificate that does not fit turns off, saying why, rather than
    // losing the batch (Restore).
    if (certificate_ == nullptr) {
      certificate_ = NewTracker(UINT64_MAX, UINT64_MAX, UINT64_MAX, nullptr);
      certificate_->SetJournaling(journaling_);
    }
    certificate_->Restore(*j.certificate, config_.weight_dimension())
        .IgnoreError();
  }
  if (certificate_ && certificate_->observed() != counters_.examples) {
    // A journal (the log's replay) carries no examples to keep.
    certificate_->TurnOff(absl::StrCat(
        "the ", counters_.examples,
        " labeled examples learned before the certificate started were not "
        "kept"));
  }
  return absl::OkStatus();
}

size_t Model::PendingBytes(size_t values, size_t indices) {
  return sizeof(uint64_t) + sizeof(Pending) + values * sizeof(double) +
         indices * sizeof(uint32_t);
}

absl::Status Model::HoldPending(const FeatureView& x) {
  const PendingLimits& limits = pending_limits_;
  if (pending_.size() >= limits.count) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the model holds its maximum of ", limits.count,
                     " pending predictions"));
  }
  const size_t bytes = PendingBytes(x.values.size(), x.indices.size());
  const uint64_t held = pending_bytes_.held();
  if (bytes > limits.bytes || held > limits.bytes - bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the model's pending predictions hold ", held, " bytes; this one (",
        bytes, ") would pass the maximum of ", limits.bytes,
        limits.bytes_name.empty() ? "" : " (", limits.bytes_name,
        limits.bytes_name.empty() ? "" : ")"));
  }
  if (!pending_bytes_.TryAdd(bytes)) {
    const ByteBudget& budget = *pending_bytes_.budget();
    return absl::ResourceExhaustedError(absl::StrCat(
        budget.reason(), ": ", budget.used(), " of ", budget.limit(),
        " bytes held, and this prediction needs ", bytes));
  }
  return absl::OkStatus();
}

bool Model::InsertPending(uint64_t id, Pending p, bool replace, bool taken) {
  const size_t bytes =
      PendingBytes(p.features.values.size(), p.features.indices.size());
  auto it = pending_.find(id);
  if (it != pending_.end()) {
    if (!replace) {
      if (taken) pending_bytes_.Remove(bytes);
      return false;
    }
    ErasePending(it);
  }
  pending_.emplace(id, std::move(p));
  if (!taken) pending_bytes_.Add(bytes);
  return true;
}

absl::btree_map<uint64_t, Model::Pending>::iterator Model::ErasePending(
    absl::btree_map<uint64_t, Pending>::iterator it) {
  pending_bytes_.Remove(PendingBytes(it->second.features.values.size(),
                                     it->second.features.indices.size()));
  return pending_.erase(it);
}

void Model::ClearPending() {
  pending_.clear();
  pending_bytes_.Clear();
}

void Model::set_pending_limits(PendingLimits limits) {
  pending_bytes_.set_budget(limits.budget);
  pending_limits_ = std::move(limits);
}

Stats Model::stats(bool with_weight_norm) const {
  Stats s;
  s.counters = counters_;
  s.pending = pending_.size();
  s.figures = learner_->figures();
  s.bound = bound_.Report(config_, s.figures);
  s.gamma = config_.gamma;
  s.confusion = confusion_;
  if (certificate_) {
    s.certificate = CertificateNow(/*with_u=*/false);
  }
  if (!with_weight_norm) return s;
  absl::Span<const double> w = learner_->weights();
  s.weight_norm = std::sqrt(DenseDot(w.data(), w.data(), w.size()));
  if (!std::isfinite(s.weight_norm)) {
    // The squares overflow: the same norm, scaled by the largest entry (and
    // the largest double if even that is too large to represent).
    double m = 0;
    for (double v : w) m = std::max(m, std::abs(v));
    double sum = 0;
    for (double v : w) sum += (v / m) * (v / m);
    s.weight_norm =
        std::min(m * std::sqrt(sum), std::numeric_limits<double>::max());
  }
  return s;
}

}  // namespace perceptron
