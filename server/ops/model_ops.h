// What the RPCs do to a model entry, independent of the transport: each takes
// the entry's lock, validates, applies, and notifies listeners after releasing
// it. Thread-safe.
#ifndef PERCEPTRON_SERVER_OPS_MODEL_OPS_H_
#define PERCEPTRON_SERVER_OPS_MODEL_OPS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "google/protobuf/repeated_field.h"
#include "perceptron/v1/perceptron.pb.h"
#include "server/model/limits.h"
#include "server/model/registry.h"
#include "server/storage/persistence.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

// Applies a batch of Learn items in order: one result per item; a bad item gets
// an error naming its index and changes nothing. Fills `stats` after the batch
// and `commit` with the batch's log record: answer only once it is committed
// (persistence.h). NOT_FOUND (nothing applied) if the model has been deleted;
// FAILED_PRECONDITION (nothing applied) if `if_examples` is given and the
// model's labeled examples are not that many (LearnRequest.if_examples).
// Unlike the functions below, it does not wait.
absl::Status ApplyLearnItems(
    ModelEntry& entry, Persistence& persistence,
    const google::protobuf::RepeatedPtrField<v1::LearnItem>& items,
    google::protobuf::RepeatedPtrField<v1::ItemResult>* results,
    v1::ModelStats* stats, CommitHandle* commit,
    std::optional<uint64_t> if_examples = std::nullopt);

// Applies a batch given as columns (LearnRequest.columns) as ApplyLearnItems
// applies the equivalent items: the reveals, then the rows. INVALID_ARGUMENT
// (nothing applied) if the arrays' lengths do not agree, RESOURCE_EXHAUSTED if
// the items are over the batch limit.
absl::Status ApplyLearnColumns(
    ModelEntry& entry, Persistence& persistence, const v1::Columns& columns,
    const Limits& limits, v1::ColumnResults* results, v1::ModelStats* stats,
    CommitHandle* commit, std::optional<uint64_t> if_examples = std::nullopt);

// Applies reveal items (the Reveal RPC), as ApplyLearnItems does.
absl::Status ApplyReveals(
    ModelEntry& entry, Persistence& persistence,
    const google::protobuf::RepeatedPtrField<v1::RevealItem>& items,
    google::protobuf::RepeatedPtrField<v1::ItemResult>* results,
    v1::ModelStats* stats);

// Scores every example (or every row of the request's columns, at most
// `limit`: RESOURCE_EXHAUSTED past it), or INVALID_ARGUMENT naming the first
// bad one.
absl::Status PredictAll(ModelEntry& entry, const v1::PredictRequest& request,
                        size_t limit, v1::PredictResponse* response);

// Cyclic training (Model::Train) over the request's examples.
absl::Status TrainOn(ModelEntry& entry, Persistence& persistence,
                     const v1::TrainRequest& request, const Limits& limits,
                     v1::TrainResponse* response);

// Zeroes the model's state.
absl::Status ResetEntry(ModelEntry& entry, Persistence& persistence);

// The full status.
absl::Status FillStatus(ModelEntry& entry, v1::ModelStatus* status);

// The most coordinates GetWeightsRequest.top may ask for.
inline constexpr uint32_t kMaxTopFeatures = 10000;
// The weights, or with `top` > 0 the heaviest coordinates with their names.
absl::Status FillWeights(ModelEntry& entry, v1::Weights* weights,
                         uint32_t top = 0);

// The learning curve, ending with the model now.
absl::Status FillHistory(ModelEntry& entry, v1::History* history);
// The certificate with its comparator (GetCertificate).
absl::Status FillCertificate(ModelEntry& entry, v1::CertificateResponse* out);

// Expires pending predictions issued before now - ttl; notifies listeners if
// any expired.
void ExpirePending(ModelEntry& entry, Persistence& persistence,
                   absl::Duration ttl);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_OPS_MODEL_OPS_H_
