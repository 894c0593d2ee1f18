// A named-model's learning state: configuration, learner, counters, bound
// accounting and the pending predictions of the predict-then-reveal protocol
// (docs/design.md sections 2, 4, 5).
//
//   absl::StatusOr<std::unique_ptr<perceptron::Model>> model =
//       perceptron::Model::Create(config);
//   // The prequential path: predict, then learn from the label at once.
//   absl::StatusOr<perceptron::Outcome> o =
//       (*model)->Learn(FeatureView::Dense(x), +1);
//   // The delayed path: issue a prediction now, reveal its label later.
//   absl::StatusOr<perceptron::Issued> issued =
//       (*model)->Issue(FeatureView::Dense(x), now);
//   absl::StatusOr<perceptron::Outcome> later =
//       (*model)->Reveal(issued->prediction_id, -1);
//   perceptron::Stats stats = (*model)->stats();
//
// Every method validates its input before changing anything: on error the model
// is unchanged. A Model is not thread-safe; callers serialize access to one
// model. Different models are independent.
#ifndef PERCEPTRON_CORE_MODEL_H_
#define PERCEPTRON_CORE_MODEL_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/bound.h"
#include "core/byte_budget.h"
#include "core/certificate_tracker.h"
#include "core/config.h"
#include "core/example.h"
#include "core/feature_hash.h"
#include "core/learner.h"
#include "core/multiclass_learner.h"
#include "core/name_table.h"
#include "core/prepare.h"

namespace perceptron {

class ClassicLearner;
class MarginLearner;

struct Counters {
  uint64_t examples =
      0;  // labeled examples learned from (reveals and labeled examples)
  uint64_t mistakes = 0;     // of those, y * issued score <= 0
  uint64_t updates = 0;      // times the learner's state changed
  uint64_t predictions = 0;  // predictions issued with an id (Issue)
  uint64_t expired =
      0;  // issued predictions removed unrevealed by ExpirePending
  friend bool operator==(const Counters&, const Counters&) = default;
};

// A prediction issued and not yet revealed.
struct PendingPrediction {
  uint64_t prediction_id = 0;
  Features features;
  double score = 0;       // the issued score, on which the mistake is judged
  int64_t issued_at = 0;  // the caller's clock, as given to Issue
  // A multiclass model's issued class (score is then its margin); 0 for a
  // binary model.
  int predicted = 0;
  friend bool operator==(const PendingPrediction&,
                         const PendingPrediction&) = default;
};

// Everything a model is; Model::FromState(ExportState()) continues
// bit-identically.
struct ModelState {
  ModelConfig config;
  Counters counters;
  double td_gamma = 0;
  double radius = 0;
  LearnerState learner;
  uint64_t next_prediction_id = 1;
  std::vector<PendingPrediction> pending;  // by increasing prediction_id
  // The certificate's tracker, while enabled (its kept examples excepted).
  std::optional<CertificateState> certificate;
  // A hashing model's names (NameTable); empty for any other.
  NameTableState names;
  // A multiclass model's confusion matrix (Model::confusion); empty for a
  // binary one.
  std::vector<uint64_t> confusion;
  friend bool operator==(const ModelState&, const ModelState&) = default;
};

// What a model changed since journaling began or the last TakeJournal: the
// learner's delta, the new scalars, and pending predictions cleared (first),
// added, then removed.
struct Journal {
  LearnerDelta learner;
  Counters counters;
  double td_gamma = 0;
  double radius = 0;
  uint64_t next_prediction_id = 1;
  bool pending_cleared = false;
  std::vector<PendingPrediction> pending_added;
  std::vector<uint64_t> pending_removed;
  // The certificate's tracker now, its candidates only if they changed.
  std::optional<CertificateState> certificate;
  // The examples the certificate kept since the journal before, and whether
  // those it kept before them no longer count (CertificateTracker::TakeRows).
  // Stored beside the log, not in it (server/storage/store.h).
  KeptRows certificate_rows;
  bool certificate_rows_cleared = false;
  // Places of rows kept before (or among certificate_rows) seen again, once
  // each (CertificateTracker::RowsDelta).
  std::vector<uint32_t> certificate_repeats;
  // The names a hashing model kept since the journal before.
  NameTableState names;
  // A multiclass model's confusion matrix now; empty for a binary one.
  std::vector<uint64_t> confusion;
  friend bool operator==(const Journal&, const Journal&) = default;
};

// A multiclass model's score is the predicted class's margin over the best
// other class (>= 0) and its label the class's index (docs/design.md section
// 2.8); a binary model's are w . x^ and +1 or -1.
struct Prediction {
  double score = 0;
  int label = 1;  // +1 if score >= 0, else -1; or a class index
};

struct Issued {
  uint64_t prediction_id = 0;
  double score = 0;
  int label = 1;
};

// The result of learning from one label.
struct Outcome {
  double score = 0;      // the issued score
  int predicted = 1;     // the issued label
  bool mistake = false;  // y * score <= 0; or the class y did not win
  bool updated = false;  // the learner's state changed
};

struct Stats {
  Counters counters;
  uint64_t pending = 0;
  BoundReport bound;
  std::optional<double> gamma;
  // ||w|| (at most the largest double); 0 for the kernel learner.
  double weight_norm = 0;
  LearnerFigures figures;
  // The certificate (docs/design.md section 2.7), without its comparator;
  // absent while not enabled.
  std::optional<CertificateReport> certificate;
  // A multiclass model's confusion matrix (Model::confusion).
  std::vector<uint64_t> confusion;
};

struct LabeledExample {
  FeatureView x;
  int label = 1;
};

struct TrainOptions {
  // Passes over the data at most, >= 1. Default: 100.
  uint32_t max_epochs = 100;
  // Called after every example with the epoch (1-based), the example's index
  // and its outcome. Optional.
  std::function<void(uint32_t epoch, size_t index, const Outcome& outcome)>
      on_example;
};

struct TrainResult {
  uint32_t epochs = 0;     // passes made
  bool converged = false;  // the last pass made no update
  uint64_t updates = 0;    // updates over all passes
  uint64_t mistakes = 0;   // mistakes over all passes
};

class Model {
 public:
  // INVALID_ARGUMENT if `config` is invalid.
  static absl::StatusOr<std::unique_ptr<Model>> Create(
      const ModelConfig& config);

  // Rebuilds a model from ExportState's output. INVALID_ARGUMENT, naming the
  // field, if the state is inconsistent with its configuration or itself.
  static absl::StatusOr<std::unique_ptr<Model>> FromState(ModelState state);

  // The score and label for `x`; nothing is kept or learned.
  absl::StatusOr<Prediction> Predict(const FeatureView& x) const;
  // A multiclass model's k scores for `x` (those it decides on: the
  // averaged ones, or the votes); a binary model's one score.
  absl::StatusOr<std::vector<double>> Scores(const FeatureView& x) const;

  // Predicts `x`, keeps it pending under a new prediction id (unique in this
  // model, increasing) and returns the id and issued score. `now` is the
  // caller's clock, used by ExpirePending.
  absl::StatusOr<Issued> Issue(const FeatureView& x, int64_t now);

  // Reveals the label of a pending prediction: the mistake is judged on the
  // issued score, the learning rule applied to the current state. NOT_FOUND if
  // the id is unknown, expired or already revealed; INVALID_ARGUMENT if the
  // label is not +-1 (a class index 0..k-1 for a multiclass model).
  absl::StatusOr<Outcome> Reveal(uint64_t prediction_id, int label);

  // A labeled example: predict, then reveal at once (the prequential path).
  absl::StatusOr<Outcome> Learn(const FeatureView& x, int label);

  // A batch of labeled dense examples: `values` holds labels.size() rows of
  // config().dimension values each, one after another. Learns from them in
  // order exactly as Learn(FeatureView::Dense(row i), labels[i]) would for
  // each i, and after each calls each(i, r) with what that call would return:
  // the same state (the model as it is right after row i), outcomes and
  // errors, bit for bit. Faster than those calls for a linear learner: the
  // norms of short rows, which do not depend on the weights, are computed
  // ahead. INVALID_ARGUMENT, with nothing changed and `each` not called, if
  // the sizes do not fit.
  absl::Status LearnDense(
      absl::Span<const double> values, absl::Span<const int> labels,
      absl::FunctionRef<void(size_t i, const absl::StatusOr<Outcome>& r)> each);

  // Asks the processor to fetch the weights (and the comparator's entries) a
  // sparse `x` will touch, so that a loop over a batch may call it for the
  // next example while it learns this one. Changes nothing; does nothing for
  // a dense `x`.
  void Prefetch(const FeatureView& x) const;

  // Cyclic training to separation (docs/design.md section 2, 3): passes over
  // `data` in order, each example a labeled example as in Learn, until a pass
  // makes no update or max_epochs passes are made. Every example is validated
  // first; on error (naming the example's index) nothing changes.
  absl::StatusOr<TrainResult> Train(absl::Span<const LabeledExample> data,
                                    const TrainOptions& options = {});

  // Removes pending predictions issued before `cutoff`, counting them as
  // expired; returns how many. Expects non-decreasing `now` across Issue calls:
  // it stops at the first younger one.
  size_t ExpirePending(int64_t cutoff);

  // Zeroes the state (weights, counters, bound, pending); keeps the
  // configuration.
  void Reset();

  ModelState ExportState() const;

  // While journaling, the model records what it changes (see journal.h). Costs
  // a flag per weight and copies of issued examples; off by default.
  void SetJournaling(bool on);
  // The changes since journaling began or the last TakeJournal; starts over.
  Journal TakeJournal();
  // Applies a journal taken from a model of the same configuration and state,
  // leaving this model equal to that one bit for bit. INVALID_ARGUMENT, with
  // nothing changed, if it does not fit.
  absl::Status ApplyJournal(const Journal& journal);

  // Starts the certificate of docs/design.md section 2.7: from now on every
  // labeled example goes to the tracker, which keeps up to `limit` of them
  // (and `slack` more while freezing). A model rebuilt from a state or journal
  // that carried a certificate continues it (CertificateTracker::Restore); any
  // other that has learned from examples already starts with its certificate
  // off until the next Reset, since those examples were not kept. Off until
  // called. The bytes of kept rows count against `limit_bytes` and `budget`
  // (shared with other models), if given. A kernel model keeps at most
  // kKernelCertificateLimit examples. A linear model whose vectors
  // (CertificateTracker::VectorBytes) would pass `limit_bytes` gets no
  // certificate: the tracker is off for good, saying so.
  void EnableCertificate(uint64_t limit, uint64_t slack,
                         uint64_t limit_bytes = UINT64_MAX,
                         std::shared_ptr<CertificateBudget> budget = nullptr);
  // Drops the certificate, including one a state or journal carried.
  void DisableCertificate() {
    certificate_.reset();
    certificate_rows_dropped_ = true;
  }
  // After FromState and ApplyJournal: gives the certificate the examples it
  // kept (CertificateTracker::AttachRows), so that one that was keeping
  // goes on keeping. False, and nothing changed, if it needs none or they
  // are not the ones it kept.
  bool AttachCertificateRows(KeptRows rows) {
    return certificate_ != nullptr && certificate_->AttachRows(std::move(rows));
  }
  // The tracker, or null while the certificate is not enabled.
  CertificateTracker* certificate() { return certificate_.get(); }
  const CertificateTracker* certificate() const { return certificate_.get(); }
  // The certificate's figures now (with the comparator u if `with_u`, and the
  // margin rule's bound for a margin model); none while not enabled.
  std::optional<CertificateReport> CertificateNow(bool with_u) const;
  // The radius R of the certificate: the model's, or for a kernel model its
  // feature space's (FeatureRadius).
  double CertificateRadius() const;

  // Counters, bound and figures; ||w|| too unless `with_weight_norm` is false
  // (it costs O(d)).
  Stats stats(bool with_weight_norm = true) const;
  const ModelConfig& config() const { return config_; }
  // The mapping of named features to coordinates; null unless
  // config().hash_bits or feature_names is set.
  const FeatureHasher* hasher() const { return hasher_ ? &*hasher_ : nullptr; }
  // The names a hashing model has seen (config().hash_bits set), or null.
  // Its caller records them (NameTable::Record) after the model learned from
  // or issued the example; Reset keeps them.
  NameTable* names() { return names_ ? &*names_ : nullptr; }
  const NameTable* names() const { return names_ ? &*names_ : nullptr; }
  // The primal weights (weight dimension entries; empty for the kernel
  // learner).
  absl::Span<const double> weights() const { return learner_->weights(); }
  const Counters& counters() const { return counters_; }
  // A multiclass model's confusion matrix: k x k counts of labeled examples,
  // row y (the true class) and column p (the class issued for it) at
  // y * k + p; empty for a binary model.
  const std::vector<uint64_t>& confusion() const { return confusion_; }
  // OK if `label` is one of this model's labels: -1 or +1, or a class index
  // 0..k-1 for a multiclass model; else INVALID_ARGUMENT naming it.
  absl::Status CheckLabel(int label) const;
  size_t pending_count() const { return pending_.size(); }
  // The memory the pending predictions hold, as counted by PendingBytes.
  size_t pending_bytes() const { return pending_bytes_.held(); }
  // What one pending prediction of `x` counts toward pending_bytes(): its
  // values and indices plus a fixed cost for its entry.
  static size_t PendingBytes(size_t values, size_t indices);
  // What the pending predictions may hold. Issue is refused
  // (RESOURCE_EXHAUSTED, naming the limit) when one more would pass one of
  // them; what a model holds already stays whether or not it fits (a
  // recovered or imported model keeps its predictions).
  struct PendingLimits {
    uint64_t count = std::numeric_limits<uint64_t>::max();
    uint64_t bytes = std::numeric_limits<uint64_t>::max();
    // How the error names `bytes` (a server's flag), if it is set.
    std::string bytes_name{};
    // The memory for pending predictions this model shares with others (a
    // server's --max_pending_mb; the error gives its reason): what the model
    // holds is counted there from now on. Null: none.
    std::shared_ptr<ByteBudget> budget{};
  };
  void set_pending_limits(PendingLimits limits);
  // The memory a kernel model's stored mistakes take is counted in `budget`
  // from now on (null: none); a server's models share it with their weights
  // (--max_models_mb). StoreRoom: OK, or RESOURCE_EXHAUSTED once the budget
  // is past its limit, and learning that may store more is to be refused (a
  // batch passes the limit by at most its own examples). Other models hold
  // nothing that grows: always OK.
  void set_store_budget(std::shared_ptr<ByteBudget> budget) {
    learner_->set_store_budget(std::move(budget));
  }
  absl::Status StoreRoom() const { return learner_->StoreRoom(); }
  // The bytes of a kernel model's stored mistakes (0 for other models).
  uint64_t store_bytes() const { return learner_->store_bytes(); }

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

 private:
  struct Pending {
    Features features;
    double score;
    int64_t issued_at;
    int predicted;  // a multiclass model's issued class
  };

  explicit Model(const ModelConfig& config);
  absl::StatusOr<Prepared> ValidateAndPrepare(const FeatureView& x) const;
  // Train's passes over prepared examples, on this model; stops at the first
  // example refused.
  absl::StatusOr<TrainResult> RunTrain(absl::Span<const Prepared> prepared,
                                       absl::Span<const LabeledExample> data,
                                       const TrainOptions& options);
  // Calls f(step) with a step of this model's linear learner's rule (model.cc)
  // and returns what f returns.
  template <typename F>
  decltype(auto) WithDenseStep(F f);
  // Learn's dense path for a linear learner (dot_weights() == &w) once x's
  // squared norm and w . x are summed: `prepared` is TryPrepare's answer, p
  // what it filled; `step` learns. Sets *o unless it fails.
  template <typename Step>
  absl::Status LearnDenseFrom(Step& step, Prepared& p, bool prepared,
                              double x_dot_x, double w_dot_x,
                              const std::vector<double>& w, int label,
                              Outcome* o);
  // LearnDense's rows for a multiclass model, once checked.
  void LearnClassRows(
      absl::Span<const double> values, absl::Span<const int> labels,
      absl::FunctionRef<void(size_t i, const absl::StatusOr<Outcome>& r)> each);
  // Learn's path for a multiclass model once x's squared norm is summed:
  // `prepared` is TryPrepare's answer, p what it filled. Sets *o unless it
  // fails.
  absl::Status LearnClassFrom(Prepared& p, bool prepared, double x_dot_x,
                              int label, Outcome* o);
  // LearnDense's rows for a linear learner with weights w, once checked.
  template <typename Step>
  void LearnDenseRows(
      Step& step, const std::vector<double>& w, absl::Span<const double> values,
      absl::Span<const int> labels,
      absl::FunctionRef<void(size_t i, const absl::StatusOr<Outcome>& r)> each);
  // The learner's score for x^; INVALID_ARGUMENT if it is not finite.
  absl::StatusOr<double> FiniteScore(const Prepared& p) const;
  // Counts a labeled example whose learning succeeded; `hinge` is
  // bound_.Hinge(x, label), already checked. Sets *o.
  void Account(const Prepared& x, int label, double score, bool updated,
               double hinge, Outcome* o);
  // The same for a multiclass model, whose decision was d.
  void AccountClass(const Prepared& x, int label, const Decision& d,
                    bool updated, double hinge, Outcome* o);
  // A multiclass model's decision for x^; INVALID_ARGUMENT if a score is not
  // finite.
  absl::StatusOr<Decision> FiniteDecision(const Prepared& p) const;
  // Whether an issued prediction's class and score fit this model.
  bool IssuedFits(const PendingPrediction& p) const;
  bool IsModelLabel(int label) const {
    return multi_ != nullptr ? label >= 0 && label < multi_->classes()
                             : IsLabel(label);
  }

  ModelConfig config_;
  std::optional<FeatureHasher> hasher_;
  std::optional<NameTable> names_;
  Preparer preparer_;
  std::unique_ptr<Learner> learner_;
  // learner_ itself when it is exactly a ClassicLearner or a MarginLearner
  // (not a class derived from one, as AveragedLearner is), else null: the
  // learners whose step WithDenseStep inlines. Set by the constructor, the
  // only place learner_ is set: code that ever replaces learner_ must set
  // these again.
  ClassicLearner* classic_ = nullptr;
  MarginLearner* margin_ = nullptr;
  // learner_ itself for a multiclass model, else null.
  MulticlassLearner* multi_ = nullptr;
  std::vector<uint64_t> confusion_;  // k x k for a multiclass model
  BoundTracker bound_;
  std::unique_ptr<CertificateTracker> certificate_;
  // A tracker for this model's algorithm (a kernel model's works in the
  // kernel's feature space).
  std::unique_ptr<CertificateTracker> NewTracker(
      uint64_t limit, uint64_t slack, uint64_t limit_bytes,
      std::shared_ptr<CertificateBudget> budget) const;
  Counters counters_;
  uint64_t next_prediction_id_ = 1;
  // Adds what a prediction of `x` holds to pending_bytes_ if it is within
  // pending_limits_; else RESOURCE_EXHAUSTED naming the limit.
  absl::Status HoldPending(const FeatureView& x);
  // Every change to pending_ goes through these, which keep pending_bytes_
  // (`taken`: the caller added the bytes there already).
  bool InsertPending(uint64_t id, Pending p, bool replace, bool taken = false);
  absl::btree_map<uint64_t, Pending>::iterator ErasePending(
      absl::btree_map<uint64_t, Pending>::iterator it);
  void ClearPending();

  absl::btree_map<uint64_t, Pending> pending_;
  HeldBytes pending_bytes_;
  PendingLimits pending_limits_;
  bool journaling_ = false;
  // The certificate was disabled: the next journal says its rows are void.
  bool certificate_rows_dropped_ = false;
  // The pending part of the next journal, while journaling (a Journal's
  // three fields, not a whole Journal: a model is kept for every id).
  struct PendingDelta {
    bool cleared = false;
    std::vector<PendingPrediction> added;
    std::vector<uint64_t> removed;
  };
  PendingDelta pending_delta_;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_MODEL_H_
