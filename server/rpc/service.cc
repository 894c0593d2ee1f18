#include "server/rpc/service.h"

#include <algorithm>
#include <memory>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/certificate.h"
#include "core/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/model/convert.h"
#include "server/ops/model_ops.h"
#include "server/rpc/chunk_reactors.h"
#include "server/rpc/learn_reactor.h"
#include "server/rpc/watch_reactor.h"
#include "server/storage/export.h"

namespace perceptron::server {
namespace {

using google::protobuf::util::TimeUtil;

// OK if a request's `n` items are within `limit`.
absl::Status AtMost(absl::string_view what, int n, size_t limit) {
  if (static_cast<size_t>(n) <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      n, " ", what, " in one request is over the limit of ", limit));
}

// ListModels' page tokens are opaque: web-safe base64 of a marker and the last
// id of the page (one the caller was shown).
constexpr absl::string_view kPageTokenMarker = "p1:";

std::string PageToken(absl::string_view last_id) {
  return absl::WebSafeBase64Escape(absl::StrCat(kPageTokenMarker, last_id));
}

// The id a page starts after; INVALID_ARGUMENT for a token this server did not
// issue.
absl::StatusOr<std::string> PageTokenAfter(const std::string& token) {
  if (token.empty()) return std::string();
  std::string raw;
  absl::string_view id;
  if (absl::WebSafeBase64Unescape(token, &raw)) id = raw;
  if (!absl::ConsumePrefix(&id, kPageTokenMarker)) {
    return absl::InvalidArgumentError(
        "page_token is not one a ListModels response gave");
  }
  return std::string(id);
}

// OK if a model of `config` can always be exported: the weight vectors its
// algorithm keeps at most (k of them a step for k classes) and its comparator,
// with its pending predictions at their limit, stay within a blob (1 MiB is
// left for the rest). The kernel store's size depends on the examples (dense
// or sparse), so it is checked only when exported.
absl::Status FitsAnExport(const ModelConfig& config, size_t max_pending_bytes) {
  const double vector = 8.0 * static_cast<double>(config.weight_count());
  double vectors = 0;
  switch (config.algorithm) {
    case Algorithm::kClassic:
    case Algorithm::kMargin:
      vectors = 1;
      break;
    case Algorithm::kAveraged:
      vectors = 2;
      break;
    case Algorithm::kVoted:
      vectors = static_cast<double>(config.max_voted_vectors) + 1;
      break;
    case Algorithm::kKernel:
      return absl::OkStatus();
  }
  // A comparator travels in the model's configuration: a wide model's as its
  // non-zeros (an index and a value each, ConfigToProto), any other's dense.
  double comparator = 0;
  if (IsWide(config.weight_dimension())) {
    comparator = 12.0 * static_cast<double>(std::count_if(
                            config.comparator.begin(), config.comparator.end(),
                            [](double u) { return u != 0; }));
  } else {
    comparator = 8.0 * static_cast<double>(config.comparator.size());
  }
  const double bytes = vectors * vector + comparator;
  const double most = static_cast<double>(kMaxBlobBytes) - (1 << 20) -
                      static_cast<double>(max_pending_bytes);
  if (bytes <= most) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "config: this %s model of dimension %u keeps up to %.0f vectors of %s "
      "weights%s, %.3f GB, more than the %.3f GB an export can carry beside "
      "--max_pending_bytes; lower %sthe dimension%s",
      AlgorithmName(config.algorithm), config.dimension, vectors,
      config.multiclass()
          ? absl::StrFormat("%u classes x %u", config.weight_vectors(),
                            config.weight_dimension())
          : absl::StrCat(config.weight_dimension()),
      comparator > 0 ? " and a comparator" : "", bytes / 1e9, most / 1e9,
      config.algorithm == Algorithm::kVoted ? "max_voted_vectors or " : "",
      config.multiclass() ? " or the classes" : ""));
}

}  // namespace

void PerceptronServiceImpl::BeginShutdown() { streams_.StopAll(); }

std::string PerceptronServiceImpl::Authorization(
    grpc::CallbackServerContext* context) {
  auto it = context->client_metadata().find("authorization");
  if (it == context->client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

absl::Status PerceptronServiceImpl::Allow(grpc::CallbackServerContext* context,
                                          Role role,
                                          absl::string_view model_id) {
  if (auth_ == nullptr) return absl::OkStatus();
  return auth_->CheckHeader(Authorization(context), role, model_id);
}

absl::StatusOr<std::shared_ptr<ModelEntry>> PerceptronServiceImpl::Find(
    const std::string& id) {
  if (streams_.stopped())
    return absl::UnavailableError("the server is shutting down");
  return registry_->Get(id);
}

std::string PerceptronServiceImpl::NewServerId() {
  absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen),
                         absl::Uniform<uint64_t>(gen));
}

void PerceptronServiceImpl::FillModel(ModelEntry& entry, v1::Model* model) {
  model->set_model_id(entry.id);
  absl::MutexLock lock(&entry.mu);
  model->set_moving(entry.moving);
  *model->mutable_config() = ConfigToProto(entry.model->config());
  *model->mutable_created_at() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(entry.created_at));
}

template <typename Act>
grpc::ServerUnaryReactor* PerceptronServiceImpl::Handle(
    grpc::CallbackServerContext* context, Rpc rpc, Role role,
    absl::string_view model_id, Act act) {
  UnaryCall call(&streams_);
  RpcCall record(rpc_metrics_ == nullptr ? nullptr : rpc_metrics_->counts(rpc));
  record.Received();
  absl::Status s = Allow(context, role, model_id);
  if (s.ok() && streams_.stopped()) {
    s = absl::UnavailableError("the server is shutting down");
  }
  if (s.ok()) s = act();
  grpc::Status status = ToGrpc(s);
  if (status.ok()) record.Sent();
  record.Handled(status.error_code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

template <typename Request, typename Act>
grpc::ServerUnaryReactor* PerceptronServiceImpl::OnModel(
    grpc::CallbackServerContext* context, Rpc rpc, const Request& request,
    Role role, Act act, absl::Status check) {
  return Handle(context, rpc, role, request.model_id(), [&]() -> absl::Status {
    PERCEPTRON_RETURN_IF_ERROR(check);
    absl::StatusOr<std::shared_ptr<ModelEntry>> entry =
        Find(request.model_id());
    if (!entry.ok()) return entry.status();
    return act(**entry);
  });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::CreateModel(
    grpc::CallbackServerContext* context, const v1::CreateModelRequest* request,
    v1::Model* response) {
  return Handle(context, Rpc::kCreateModel, Role::kAdmin, request->model_id(),
                [&]() -> absl::Status {
                  absl::StatusOr<ModelConfig> config =
                      ConfigFromProto(request->config(), limits_.max_dimension);
                  if (!config.ok()) return config.status();
                  PERCEPTRON_RETURN_IF_ERROR(
                      FitsAnExport(*config, limits_.max_pending_bytes));
                  absl::StatusOr<std::shared_ptr<ModelEntry>> entry =
                      registry_->Create(request->model_id(), *config);
                  if (!entry.ok()) return entry.status();
                  if (absl::Status s = persistence_->Created(**entry);
                      !s.ok()) {
                    registry_->Remove(*entry);
                    return s;
                  }
                  FillModel(**entry, response);
                  return absl::OkStatus();
                });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::GetModel(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request,
    v1::Model* response) {
  context->AddTrailingMetadata(kServerHeader, server_id_);
  return OnModel(context, Rpc::kGetModel, *request, Role::kRead,
                 [&](ModelEntry& entry) -> absl::Status {
                   FillModel(entry, response);
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::GetServerStatus(
    grpc::CallbackServerContext* context, const v1::GetServerStatusRequest*,
    v1::ServerStatus* response) {
  return Handle(context, Rpc::kGetServerStatus, Role::kRead, "",
                [&]() -> absl::Status {
                  if (!server_status_) {
                    return absl::UnimplementedError("no server status here");
                  }
                  server_status_(response);
                  return absl::OkStatus();
                });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::ListModels(
    grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
    v1::ListModelsResponse* response) {
  context->AddTrailingMetadata(kServerHeader, server_id_);
  return Handle(
      context, Rpc::kListModels, Role::kRead, "", [&]() -> absl::Status {
        const size_t size = request->page_size() == 0
                                ? 100
                                : std::min<size_t>(request->page_size(), 1000);
        absl::StatusOr<std::string> after =
            PageTokenAfter(request->page_token());
        if (!after.ok()) return after.status();
        // Pages over the models this caller may see only, so that neither a
        // page nor its token tells of another. One more than the page tells
        // whether another page follows.
        const std::string token = Authorization(context);
        std::function<bool(absl::string_view)> visible;
        if (auth_ != nullptr) {
          visible = [this, &token](absl::string_view id) {
            return auth_->Covers(token, id);
          };
        }
        std::vector<std::shared_ptr<ModelEntry>> entries =
            registry_->List(*after, size + 1, visible);
        const bool more = entries.size() > size;
        if (more) entries.pop_back();
        for (const auto& e : entries) FillModel(*e, response->add_models());
        if (more) response->set_next_page_token(PageToken(entries.back()->id));
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::DeleteModel(
    grpc::CallbackServerContext* context, const v1::DeleteModelRequest* request,
    v1::DeleteModelResponse* response) {
  return Handle(context, Rpc::kDeleteModel, Role::kAdmin, request->model_id(),
                [&]() -> absl::Status {
                  // Not deleted from memory if it cannot be from the store.
                  PERCEPTRON_RETURN_IF_ERROR(persistence_->Writable());
                  PERCEPTRON_RETURN_IF_ERROR(registry_->Delete(
                      request->model_id(), request->if_moving()));
                  return persistence_->Deleted(request->model_id());
                });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::SetMoving(
    grpc::CallbackServerContext* context, const v1::SetMovingRequest* request,
    v1::Model* response) {
  return OnModel(context, Rpc::kSetMoving, *request, Role::kAdmin,
                 [&](ModelEntry& entry) -> absl::Status {
                   {
                     absl::MutexLock lock(&entry.mu);
                     if (entry.deleted) return entry.GoneStatus();
                     entry.moving = request->moving();
                   }
                   FillModel(entry, response);
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::ResetModel(
    grpc::CallbackServerContext* context, const v1::ResetModelRequest* request,
    v1::Model* response) {
  return OnModel(context, Rpc::kResetModel, *request, Role::kAdmin,
                 [&](ModelEntry& entry) -> absl::Status {
                   PERCEPTRON_RETURN_IF_ERROR(ResetEntry(entry, *persistence_));
                   FillModel(entry, response);
                   return absl::OkStatus();
                 });
}

grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>*
PerceptronServiceImpl::Learn(grpc::CallbackServerContext* context) {
  return new LearnReactor(
      registry_, persistence_, &limits_, &streams_, auth_,
      Authorization(context),
      rpc_metrics_ == nullptr ? nullptr : rpc_metrics_->counts(Rpc::kLearn));
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::Predict(
    grpc::CallbackServerContext* context, const v1::PredictRequest* request,
    v1::PredictResponse* response) {
  return OnModel(
      context, Rpc::kPredict, *request, Role::kRead,
      [&](ModelEntry& entry) -> absl::Status {
        return PredictAll(entry, *request, limits_.max_batch_items, response);
      },
      AtMost("examples", request->examples_size(), limits_.max_batch_items));
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::Reveal(
    grpc::CallbackServerContext* context, const v1::RevealRequest* request,
    v1::RevealResponse* response) {
  return OnModel(
      context, Rpc::kReveal, *request, Role::kLearn,
      [&](ModelEntry& entry) -> absl::Status {
        return ApplyReveals(entry, *persistence_, request->items(),
                            response->mutable_results(),
                            response->mutable_stats());
      },
      AtMost("items", request->items_size(), limits_.max_batch_items));
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::Train(
    grpc::CallbackServerContext* context, const v1::TrainRequest* request,
    v1::TrainResponse* response) {
  return OnModel(
      context, Rpc::kTrain, *request, Role::kLearn,
      [&](ModelEntry& entry) -> absl::Status {
        return TrainOn(entry, *persistence_, *request, limits_, response);
      },
      AtMost("examples", request->examples_size(), limits_.max_batch_items));
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::GetStatus(
    grpc::CallbackServerContext* context, const v1::GetStatusRequest* request,
    v1::ModelStatus* response) {
  return OnModel(context, Rpc::kGetStatus, *request, Role::kRead,
                 [&](ModelEntry& entry) -> absl::Status {
                   return FillStatus(entry, response);
                 });
}

grpc::ServerWriteReactor<v1::ModelStatus>* PerceptronServiceImpl::WatchStatus(
    grpc::CallbackServerContext* context,
    const v1::WatchStatusRequest* request) {
  if (absl::Status a = Allow(context, Role::kRead, request->model_id());
      !a.ok()) {
    return new FailedWatch(ToGrpc(a));
  }
  absl::StatusOr<std::shared_ptr<ModelEntry>> entry = Find(request->model_id());
  if (!entry.ok()) return new FailedWatch(ToGrpc(entry.status()));
  const uint32_t ms = request->min_interval_ms() == 0
                          ? 200
                          : std::max(10u, request->min_interval_ms());
  return new WatchReactor(*std::move(entry), absl::Milliseconds(ms), &streams_);
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::GetHistory(
    grpc::CallbackServerContext* context, const v1::GetHistoryRequest* request,
    v1::History* response) {
  return OnModel(context, Rpc::kGetHistory, *request, Role::kRead,
                 [&](ModelEntry& entry) -> absl::Status {
                   return FillHistory(entry, response);
                 });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::GetCertificate(
    grpc::CallbackServerContext* context,
    const v1::GetCertificateRequest* request,
    v1::CertificateResponse* response) {
  return OnModel(context, Rpc::kGetCertificate, *request, Role::kRead,
                 [&](ModelEntry& entry) -> absl::Status {
                   return FillCertificate(entry, response);
                 });
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::GetWeights(
    grpc::CallbackServerContext* context, const v1::GetWeightsRequest* request,
    v1::Weights* response) {
  return OnModel(
      context, Rpc::kGetWeights, *request, Role::kRead,
      [&](ModelEntry& entry) -> absl::Status {
        PERCEPTRON_RETURN_IF_ERROR(
            FillWeights(entry, response, request->top()));
        if (response->ByteSizeLong() <= limits_.max_message_bytes) {
          return absl::OkStatus();
        }
        return absl::ResourceExhaustedError(absl::StrCat(
            "the weights take ", response->ByteSizeLong(),
            " bytes, over --max_message_bytes (", limits_.max_message_bytes,
            "): read them with GetWeightsChunks"));
      });
}

grpc::ServerWriteReactor<v1::Weights>* PerceptronServiceImpl::GetWeightsChunks(
    grpc::CallbackServerContext* context,
    const v1::GetWeightsRequest* request) {
  if (absl::Status s = Allow(context, Role::kRead, request->model_id());
      !s.ok()) {
    return new FailedWriter<v1::Weights>(s);
  }
  absl::StatusOr<std::shared_ptr<ModelEntry>> entry = Find(request->model_id());
  if (!entry.ok()) return new FailedWriter<v1::Weights>(entry.status());
  // One copy of the vector, taken under the model's lock; the chunks are cut
  // from it as they are sent.
  auto all = std::make_shared<v1::Weights>();
  if (absl::Status s = FillWeights(**entry, all.get(), request->top());
      !s.ok()) {
    return new FailedWriter<v1::Weights>(s);
  }
  static constexpr int kChunk = 1 << 17;
  auto next = [all, at = 0, first = true](v1::Weights* chunk) mutable {
    if (!first && at >= all->values_size()) return false;
    if (first) {
      *chunk->mutable_top() = all->top();
      if (all->has_names()) *chunk->mutable_names() = all->names();
    }
    const int n = std::min(kChunk, all->values_size() - at);
    chunk->mutable_values()->Add(all->values().begin() + at,
                                 all->values().begin() + at + n);
    chunk->set_has_bias(all->has_bias());
    at += n;
    first = false;  // an empty vector is still one message, with has_bias
    return true;
  };
  return new ChunkWriter<v1::Weights>(&streams_, std::move(next));
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::ExportModel(
    grpc::CallbackServerContext* context, const v1::ExportModelRequest* request,
    v1::ExportModelResponse* response) {
  return OnModel(
      context, Rpc::kExportModel, *request, Role::kAdmin,
      [&](ModelEntry& entry) -> absl::Status {
        absl::StatusOr<std::string> blob =
            ExportBlob(entry, limits_.max_message_bytes - 16);
        if (!blob.ok()) return blob.status();
        if (blob->size() + 16 > limits_.max_message_bytes) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "the blob takes ", blob->size(),
              " bytes, over --max_message_bytes (", limits_.max_message_bytes,
              "): export it with ExportModelChunks"));
        }
        response->set_blob(*std::move(blob));
        return absl::OkStatus();
      });
}

grpc::ServerWriteReactor<v1::ExportModelResponse>*
PerceptronServiceImpl::ExportModelChunks(
    grpc::CallbackServerContext* context,
    const v1::ExportModelRequest* request) {
  using Failed = FailedWriter<v1::ExportModelResponse>;
  if (absl::Status s = Allow(context, Role::kAdmin, request->model_id());
      !s.ok()) {
    return new Failed(s);
  }
  absl::StatusOr<std::shared_ptr<ModelEntry>> entry = Find(request->model_id());
  if (!entry.ok()) return new Failed(entry.status());
  absl::StatusOr<std::string> blob = ExportBlob(**entry);
  if (!blob.ok()) return new Failed(blob.status());
  auto all = std::make_shared<std::string>(*std::move(blob));
  static constexpr size_t kChunk = 1 << 20;
  auto next = [all, at = size_t{0}](v1::ExportModelResponse* chunk) mutable {
    if (at >= all->size()) return false;
    const size_t n = std::min(kChunk, all->size() - at);
    chunk->set_blob(all->substr(at, n));
    at += n;
    return true;
  };
  return new ChunkWriter<v1::ExportModelResponse>(&streams_, std::move(next));
}

grpc::ServerUnaryReactor* PerceptronServiceImpl::ImportModel(
    grpc::CallbackServerContext* context, const v1::ImportModelRequest* request,
    v1::Model* response) {
  return Handle(context, Rpc::kImportModel, Role::kAdmin, request->model_id(),
                [&] {
                  return Import(context, request->blob(), request->model_id(),
                                request->moving(), response);
                });
}

grpc::ServerReadReactor<v1::ImportModelRequest>*
PerceptronServiceImpl::ImportModelChunks(grpc::CallbackServerContext* context,
                                         v1::Model* response) {
  using Reader = ChunkReader<v1::ImportModelRequest, v1::Model>;
  return new Reader(
      &streams_, kMaxBlobBytes,
      [](const v1::ImportModelRequest& r) -> const std::string& {
        return r.blob();
      },
      [this, context](const v1::ImportModelRequest& first) {
        return Allow(context, Role::kAdmin, first.model_id());
      },
      [this, context](const v1::ImportModelRequest& first,
                      const std::string& blob, v1::Model* model) {
        return Import(context, blob, first.model_id(), first.moving(), model);
      },
      response);
}

absl::Status PerceptronServiceImpl::Import(grpc::CallbackServerContext* context,
                                           const std::string& blob,
                                           const std::string& model_id,
                                           bool moving, v1::Model* response) {
  if (streams_.stopped()) return absl::UnavailableError("shutting down");
  absl::StatusOr<std::shared_ptr<ModelEntry>> entry =
      ImportBlob(blob, model_id, limits_.max_dimension,
                 /*keep_created_at=*/moving);
  if (!entry.ok()) return entry.status();
  // The id the model gets (the blob's own if the request names none) must be
  // covered too.
  if (absl::Status s = Allow(context, Role::kAdmin, (*entry)->id); !s.ok()) {
    return s;
  }
  if (moving) {
    absl::MutexLock lock(&(*entry)->mu);
    (*entry)->moving = true;
  }
  if (absl::Status s = registry_->Insert(*entry); !s.ok()) return s;
  if (absl::Status s = persistence_->Created(**entry); !s.ok()) {
    registry_->Remove(*entry);
    return s;
  }
  FillModel(**entry, response);
  return absl::OkStatus();
}

}  // namespace perceptron::server
