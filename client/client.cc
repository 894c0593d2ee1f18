#include "client/client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace perceptron::client {

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

namespace {

template <typename T>
absl::StatusOr<T> Result(const grpc::Status& s, T value) {
  if (!s.ok()) return FromGrpc(s);
  return value;
}

}  // namespace

std::unique_ptr<Client> Client::Connect(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.own_connection)
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options.tls_root_certs.empty()) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = options.tls_root_certs;
    tls.pem_cert_chain = options.tls_cert_chain;
    tls.pem_private_key = options.tls_private_key;
    credentials = grpc::SslCredentials(tls);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.target, credentials, args);
  if (options.connect_timeout > absl::ZeroDuration()) {
    channel->WaitForConnected(
        absl::ToChronoTime(absl::Now() + options.connect_timeout));
  }
  auto client = std::make_unique<Client>(std::move(channel), options);
  client->by_target_ = true;
  return client;
}

std::unique_ptr<Client> Client::Another() const {
  if (!by_target_) return std::make_unique<Client>(channel_, options_);
  ClientOptions o = options_;
  o.own_connection = true;
  return Connect(o);
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(v1::PerceptronService::NewStub(channel_)) {}

bool IsHeaderValue(absl::string_view v) {
  return std::all_of(v.begin(), v.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e; });
}

void Client::SetDeadline(grpc::ClientContext* context,
                         const std::string& model) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  AddToken(context);
  if (!model.empty() && IsHeaderValue(model)) {
    context->AddMetadata(kModelHeader, model);
  }
}

void Client::AddToken(grpc::ClientContext* context) const {
  if (!options_.token.empty() && IsHeaderValue(options_.token)) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
}

template <typename Request, typename Response>
absl::StatusOr<Response> Client::Unary(
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                 Response*),
    const std::string& model, const Request& request) {
  grpc::ClientContext context;
  SetDeadline(&context, model);
  Response response;
  const grpc::Status s = (stub_.get()->*method)(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::Status Client::CheckHealth(absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  std::unique_ptr<grpc::health::v1::Health::Stub> health =
      grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status s = health->Check(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat("the server is ",
                     grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                         response.status())));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Model> Client::CreateModel(const std::string& id,
                                              const v1::ModelConfig& config) {
  v1::CreateModelRequest request;
  request.set_model_id(id);
  *request.mutable_config() = config;
  return Unary(&Stub::CreateModel, id, request);
}

absl::StatusOr<v1::ServerStatus> Client::GetServerStatus(
    const std::string& route_by) {
  return Unary(&Stub::GetServerStatus, route_by, v1::GetServerStatusRequest());
}

absl::StatusOr<v1::Model> Client::GetModel(const std::string& id) {
  v1::GetModelRequest request;
  request.set_model_id(id);
  return Unary(&Stub::GetModel, id, request);
}

absl::StatusOr<std::vector<v1::Model>> Client::ListModels() {
  std::vector<v1::Model> out;
  std::string token;
  do {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ListModelsRequest request;
    request.set_page_size(1000);
    request.set_page_token(token);
    v1::ListModelsResponse response;
    const grpc::Status s = stub_->ListModels(&context, request, &response);
    if (!s.ok()) return FromGrpc(s);
    for (v1::Model& m : *response.mutable_models()) out.push_back(std::move(m));
    token = response.next_page_token();
  } while (!token.empty());
  return out;
}

absl::Status Client::DeleteModel(const std::string& id, bool if_moving) {
  v1::DeleteModelRequest request;
  request.set_model_id(id);
  request.set_if_moving(if_moving);
  return Unary(&Stub::DeleteModel, id, request).status();
}

absl::StatusOr<v1::Model> Client::SetMoving(const std::string& id,
                                            bool moving) {
  v1::SetMovingRequest request;
  request.set_model_id(id);
  request.set_moving(moving);
  return Unary(&Stub::SetMoving, id, request);
}

namespace {

// The server's instance id from a call's trailing metadata; else the call's
// status, or UNAVAILABLE if it succeeded without one (not a perceptrond).
absl::StatusOr<std::string> ServerIdOf(const grpc::ClientContext& context,
                                       const grpc::Status& s) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kServerHeader);
  if (it != trailers.end())
    return std::string(it->second.data(), it->second.size());
  if (!s.ok()) return FromGrpc(s);
  return absl::UnavailableError(
      absl::StrCat("the answer carries no ", kServerHeader,
                   " (a server of another version?)"));
}

}  // namespace

absl::StatusOr<std::string> Client::ServerId() {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListModelsRequest request;
  request.set_page_size(1);
  v1::ListModelsResponse response;
  const grpc::Status s = stub_->ListModels(&context, request, &response);
  return ServerIdOf(context, s);
}

absl::StatusOr<std::string> Client::ServerFor(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::GetModelRequest request;
  request.set_model_id(id);
  v1::Model response;
  // Whatever the status (NOT_FOUND, or UNAVAILABLE for a model moved away),
  // a perceptrond names itself; a proxy's own error does not.
  const grpc::Status s = stub_->GetModel(&context, request, &response);
  return ServerIdOf(context, s);
}

absl::StatusOr<v1::Model> Client::ResetModel(const std::string& id) {
  v1::ResetModelRequest request;
  request.set_model_id(id);
  return Unary(&Stub::ResetModel, id, request);
}

absl::StatusOr<v1::ModelStatus> Client::GetStatus(const std::string& id) {
  v1::GetStatusRequest request;
  request.set_model_id(id);
  return Unary(&Stub::GetStatus, id, request);
}

absl::StatusOr<v1::Weights> Client::GetWeights(const std::string& id,
                                               uint32_t top) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::GetWeightsRequest request;
  request.set_model_id(id);
  request.set_top(top);
  std::unique_ptr<grpc::ClientReader<v1::Weights>> reader =
      stub_->GetWeightsChunks(&context, request);
  v1::Weights all, chunk;
  while (reader->Read(&chunk)) {
    all.mutable_values()->Add(chunk.values().begin(), chunk.values().end());
    all.set_has_bias(chunk.has_bias());
    all.mutable_top()->Add(chunk.top().begin(), chunk.top().end());
    if (chunk.has_names()) *all.mutable_names() = chunk.names();
  }
  const grpc::Status s = reader->Finish();
  return Result(s, std::move(all));
}

absl::StatusOr<v1::History> Client::GetHistory(const std::string& id) {
  v1::GetHistoryRequest request;
  request.set_model_id(id);
  return Unary(&Stub::GetHistory, id, request);
}

absl::StatusOr<v1::CertificateResponse> Client::GetCertificate(
    const std::string& id) {
  v1::GetCertificateRequest request;
  request.set_model_id(id);
  return Unary(&Stub::GetCertificate, id, request);
}

absl::StatusOr<v1::PredictResponse> Client::Predict(
    const std::string& id, const std::vector<Example>& examples) {
  v1::PredictRequest request;
  request.set_model_id(id);
  for (const Example& e : examples) FeaturesToProto(e, request.add_examples());
  return Unary(&Stub::Predict, id, request);
}

absl::StatusOr<v1::RevealResponse> Client::Reveal(
    const std::string& id,
    const std::vector<std::pair<uint64_t, int>>& labels) {
  v1::RevealRequest request;
  request.set_model_id(id);
  for (const auto& [pid, label] : labels) {
    v1::RevealItem* item = request.add_items();
    item->set_prediction_id(pid);
    item->set_label(label);
  }
  return Unary(&Stub::Reveal, id, request);
}

v1::TrainRequest TrainRequestOf(const std::string& id,
                                const std::vector<Example>& examples,
                                uint32_t max_epochs) {
  v1::TrainRequest request;
  request.set_model_id(id);
  request.set_max_epochs(max_epochs);
  for (const Example& e : examples) {
    v1::LabeledExample* l = request.add_examples();
    FeaturesToProto(e, l->mutable_features());
    l->set_label(e.label.value_or(0));
  }
  return request;
}

absl::StatusOr<v1::TrainResponse> Client::Train(
    const std::string& id, const std::vector<Example>& examples,
    uint32_t max_epochs) {
  return Train(TrainRequestOf(id, examples, max_epochs));
}

absl::StatusOr<v1::TrainResponse> Client::Train(
    const v1::TrainRequest& request) {
  return Unary(&Stub::Train, request.model_id(), request);
}

absl::Status Client::Watch(
    const std::string& id, absl::Duration min_interval,
    const std::function<bool(const v1::ModelStatus&)>& on_status,
    absl::Duration timeout) {
  grpc::ClientContext context;
  AddToken(&context);
  if (IsHeaderValue(id)) context.AddMetadata(kModelHeader, id);
  if (timeout != absl::InfiniteDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
  v1::WatchStatusRequest request;
  request.set_model_id(id);
  request.set_min_interval_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(min_interval)));
  std::unique_ptr<grpc::ClientReader<v1::ModelStatus>> reader =
      stub_->WatchStatus(&context, request);
  v1::ModelStatus status;
  while (reader->Read(&status)) {
    if (!on_status(status)) {
      context.TryCancel();
      while (reader->Read(&status)) {
      }
      reader->Finish().ok();
      return absl::OkStatus();
    }
  }
  return FromGrpc(reader->Finish());
}

absl::StatusOr<std::string> Client::ExportModel(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::ExportModelRequest request;
  request.set_model_id(id);
  std::unique_ptr<grpc::ClientReader<v1::ExportModelResponse>> reader =
      stub_->ExportModelChunks(&context, request);
  std::string blob;
  v1::ExportModelResponse chunk;
  while (reader->Read(&chunk)) blob.append(chunk.blob());
  const grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpc(s);
  return blob;
}

absl::StatusOr<v1::Model> Client::ImportModel(const std::string& blob,
                                              const std::string& id,
                                              bool moving) {
  grpc::ClientContext context;
  SetDeadline(&context, id);  // no routing header for the blob's own id
  v1::Model response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportModelRequest>> writer =
      stub_->ImportModelChunks(&context, &response);
  constexpr size_t kChunk = 1 << 20;
  size_t at = 0;
  do {  // an empty blob is still one message, for the server to refuse
    v1::ImportModelRequest request;
    if (at == 0) {
      request.set_model_id(id);
      request.set_moving(moving);
    }
    const size_t n = std::min(kChunk, blob.size() - at);
    request.set_blob(blob.substr(at, n));
    at += n;
    if (!writer->Write(request)) break;  // the server ended the call
  } while (at < blob.size());
  writer->WritesDone();
  const grpc::Status s = writer->Finish();
  return Result(s, std::move(response));
}

absl::StatusOr<std::vector<PlacedModel>> ListModelsAcross(
    const std::vector<std::string>& targets, const ClientOptions& options) {
  std::vector<PlacedModel> out;
  for (const std::string& target : targets) {
    ClientOptions o = options;
    o.target = target;
    absl::StatusOr<std::vector<v1::Model>> models =
        Client::Connect(o)->ListModels();
    if (!models.ok()) {
      return absl::Status(
          models.status().code(),
          absl::StrCat("shard ", target, ": ", models.status().message()));
    }
    for (v1::Model& m : *models) out.push_back({target, std::move(m)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PlacedModel& a, const PlacedModel& b) {
                     return a.model.model_id() < b.model.model_id();
                   });
  return out;
}

std::unique_ptr<LearnSession> Client::OpenLearnSession(
    const std::string& id, const SessionOptions& options) {
  SessionOptions o = options;
  if (o.batch_size == 0) o.batch_size = 1;
  if (o.max_in_flight == 0) o.max_in_flight = 1;
  uint32_t dimension = 0;  // unknown: the batches go as items
  if (o.columnar) {
    absl::StatusOr<v1::Model> m = GetModel(id);
    if (m.ok()) dimension = m->config().dimension();
  }
  return std::unique_ptr<LearnSession>(
      new LearnSession(this, id, std::move(o), dimension));
}

}  // namespace perceptron::client
