// libFuzzer target: Learn requests from raw bytes, applied to live models of
// several algorithms and of named features (hashed, listed) as the server
// applies them (model_ops.h), then Predict and
// Reveal with the same items, and the request's columns. The results must match
// the items one for one, and no input may crash or corrupt a model.
#include <cstdint>
#include <cstdlib>

#include "server/ops/model_ops.h"

namespace perceptron::server {
namespace {

struct World {
  Limits limits;
  Registry registry{limits};
  std::unique_ptr<Persistence> none;
  World() {
    limits.max_pending = 64;
    PersistenceOptions o;
    o.durability = Durability::kNone;
    none = *Persistence::Open(o);
    Reset();
  }
  void Reset() {
    for (const auto& e : registry.All()) registry.Delete(e->id).IgnoreError();
    ModelConfig c;
    c.dimension = 8;
    c.gamma = 0.1;
    c.comparator.assign(8, 1.0);
    registry.Create("classic", c).IgnoreError();
    c.algorithm = Algorithm::kAveraged;
    registry.Create("averaged", c).IgnoreError();
    c.algorithm = Algorithm::kVoted;
    c.max_voted_vectors = 8;
    registry.Create("voted", c).IgnoreError();
    c.algorithm = Algorithm::kKernel;
    c.kernel.type = KernelType::kRbf;
    c.kernel_budget = 16;
    registry.Create("kernel", c).IgnoreError();
    c.algorithm = Algorithm::kMargin;
    registry.Create("margin", c).IgnoreError();
    // Features by name: hashed with interactions, and from a list.
    ModelConfig named;
    named.hash_bits = 6;
    named.dimension = 64;
    named.interactions = {"ab", "  "};
    registry.Create("hashed", named).IgnoreError();
    ModelConfig listed;
    listed.feature_names = {"a", "b", "n^c", "d=e"};
    listed.dimension = 4;
    registry.Create("listed", listed).IgnoreError();
  }
};

}  // namespace
}  // namespace perceptron::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perceptron::server;
  static World* world = new World();
  static int runs = 0;
  if (++runs % 2000 == 0) world->Reset();
  perceptron::v1::LearnRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (request.items_size() > 256) return 0;
  static const char* kModels[] = {"classic", "averaged", "voted", "kernel",
                                  "margin",  "hashed",   "listed"};
  const std::string id = kModels[request.model_id().size() % 7];
  std::shared_ptr<ModelEntry> entry = *world->registry.Get(id);

  perceptron::v1::LearnResponse response;
  CommitHandle commit;
  if (!ApplyLearnItems(*entry, *world->none, request.items(),
                       response.mutable_results(), response.mutable_stats(),
                       &commit)
           .ok() ||
      response.results_size() != request.items_size()) {
    std::abort();
  }
  perceptron::v1::PredictRequest predict;
  perceptron::v1::RevealRequest reveal;
  for (const auto& item : request.items()) {
    if (item.has_example()) *predict.add_examples() = item.example();
    if (item.has_labeled()) *predict.add_examples() = item.labeled().features();
    if (item.has_reveal()) *reveal.add_items() = item.reveal();
  }
  perceptron::v1::PredictResponse predicted;
  const absl::Status p =
      PredictAll(*entry, predict, world->limits.max_batch_items, &predicted);
  if (p.ok() && predicted.predictions_size() != predict.examples_size())
    std::abort();
  perceptron::v1::RevealResponse revealed;
  if (!ApplyReveals(*entry, *world->none, reveal.items(),
                    revealed.mutable_results(), revealed.mutable_stats())
           .ok() ||
      revealed.results_size() != reveal.items_size()) {
    std::abort();
  }
  // The same request's columns, as the server applies them: refused whole
  // (INVALID_ARGUMENT, RESOURCE_EXHAUSTED) or answered item by item.
  if (request.has_columns()) {
    perceptron::v1::LearnResponse columnar;
    CommitHandle applied;
    const absl::Status s = ApplyLearnColumns(
        *entry, *world->none, request.columns(), world->limits,
        columnar.mutable_columns(), columnar.mutable_stats(), &applied);
    const perceptron::v1::ColumnResults& r = columnar.columns();
    const size_t n = r.scores_size();
    if (s.ok()) {
      if (static_cast<size_t>(r.labels_size()) != n ||
          r.mistakes().size() != (n + 7) / 8 ||
          r.updates().size() != (n + 7) / 8) {
        std::abort();
      }
      int64_t last = -1;
      for (const perceptron::v1::ColumnError& e : r.errors()) {
        if (e.item() >= n || static_cast<int64_t>(e.item()) <= last) {
          std::abort();
        }
        last = e.item();
      }
    } else if (s.code() != absl::StatusCode::kInvalidArgument &&
               s.code() != absl::StatusCode::kResourceExhausted) {
      std::abort();
    }
    // Its rows predicted as columns: refused whole, or a label and a score
    // (and with all_scores a multiclass model's k scores) a row.
    perceptron::v1::PredictRequest rows;
    *rows.mutable_columns() = request.columns();
    rows.mutable_columns()->clear_labels();
    rows.mutable_columns()->clear_reveal_ids();
    rows.mutable_columns()->clear_reveal_labels();
    rows.set_all_scores(true);
    perceptron::v1::PredictResponse answered;
    const absl::Status q =
        PredictAll(*entry, rows, world->limits.max_batch_items, &answered);
    const perceptron::v1::PredictColumns& c = answered.columns();
    size_t k = 0;
    {
      absl::MutexLock lock(&entry->mu);
      k = entry->model->config().classes.size();
    }
    if (q.ok()) {
      if (c.labels_size() != c.scores_size() ||
          static_cast<size_t>(c.class_scores_size()) != k * c.scores_size() ||
          answered.predictions_size() != 0) {
        std::abort();
      }
    } else if ((q.code() != absl::StatusCode::kInvalidArgument &&
                q.code() != absl::StatusCode::kResourceExhausted) ||
               c.scores_size() != 0) {
      std::abort();
    }
  }
  perceptron::v1::ModelStatus status;
  if (!FillStatus(*entry, &status).ok()) std::abort();
  return 0;
}
