#include "client/client.h"

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

// ---- LearnSession ----

LearnSession::LearnSession(v1::PerceptronService::Stub* stub,
                           std::string model_id, SessionOptions options,
                           const std::string& token)
    : model_id_(std::move(model_id)), options_(std::move(options)) {
  if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
  stream_ = stub->Learn(&context_);
  reader_ = std::thread([this] { ReadLoop(); });
}

LearnSession::~LearnSession() {
  if (!finished_) {
    context_.TryCancel();
    Finish().IgnoreError();
  }
}

void LearnSession::ReadLoop() {
  v1::LearnResponse response;
  while (stream_->Read(&response)) {
    {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      ++summary_.requests;
      summary_.items += response.results_size();
      for (const v1::ItemResult& r : response.results()) {
        if (r.has_error()) {
          if (summary_.item_errors++ == 0)
            summary_.first_error = r.error().message();
        }
      }
      summary_.stats = response.stats();
    }
    if (options_.on_response) options_.on_response(response);
  }
  absl::MutexLock lock(&mu_);
  reader_done_ = true;
}

absl::Status LearnSession::Flush() {
  if (request_.items_size() == 0 && named_) return absl::OkStatus();
  if (finished_)
    return absl::FailedPreconditionError("the session is finished");
  if (!named_) {
    request_.set_model_id(model_id_);
    named_ = true;
  }
  {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_ < options_.max_in_flight || reader_done_;
    };
    mu_.Await(absl::Condition(&room));
    if (reader_done_)
      return absl::AbortedError("the stream has ended; Finish tells why");
    ++in_flight_;
  }
  if (!stream_->Write(request_)) {
    return absl::AbortedError("the stream has ended; Finish tells why");
  }
  request_.Clear();
  return absl::OkStatus();
}

absl::Status LearnSession::Queued() {
  if (static_cast<size_t>(request_.items_size()) >= options_.batch_size)
    return Flush();
  return absl::OkStatus();
}

absl::Status LearnSession::AddLabeled(const Example& e) {
  if (!e.label)
    return absl::InvalidArgumentError("AddLabeled: the example has no label");
  v1::LabeledExample* l = request_.add_items()->mutable_labeled();
  FeaturesToProto(e, l->mutable_features());
  l->set_label(*e.label);
  return Queued();
}

absl::Status LearnSession::AddExample(const Example& e) {
  FeaturesToProto(e, request_.add_items()->mutable_example());
  return Queued();
}

absl::Status LearnSession::AddReveal(uint64_t prediction_id, int label) {
  v1::RevealItem* r = request_.add_items()->mutable_reveal();
  r->set_prediction_id(prediction_id);
  r->set_label(label);
  return Queued();
}

absl::StatusOr<SessionSummary> LearnSession::Finish() {
  if (finished_)
    return absl::FailedPreconditionError("the session is already finished");
  absl::Status flushed =
      request_.items_size() > 0 || !named_ ? Flush() : absl::OkStatus();
  finished_ = true;
  stream_->WritesDone();
  reader_.join();
  const grpc::Status s = stream_->Finish();
  if (!s.ok()) return FromGrpc(s);
  if (!flushed.ok()) return flushed;
  absl::MutexLock lock(&mu_);
  return summary_;
}

// ---- Client ----

std::unique_ptr<Client> Client::Connect(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
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
  return std::make_unique<Client>(std::move(channel), options);
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(v1::PerceptronService::NewStub(channel_)) {}

void Client::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  AddToken(context);
}

void Client::AddToken(grpc::ClientContext* context) const {
  if (!options_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
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
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::CreateModelRequest request;
  request.set_model_id(id);
  *request.mutable_config() = config;
  v1::Model response;
  const grpc::Status s = stub_->CreateModel(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::Model> Client::GetModel(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetModelRequest request;
  request.set_model_id(id);
  v1::Model response;
  const grpc::Status s = stub_->GetModel(&context, request, &response);
  return Result(s, std::move(response));
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

absl::Status Client::DeleteModel(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::DeleteModelRequest request;
  request.set_model_id(id);
  v1::DeleteModelResponse response;
  return FromGrpc(stub_->DeleteModel(&context, request, &response));
}

absl::StatusOr<v1::Model> Client::ResetModel(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ResetModelRequest request;
  request.set_model_id(id);
  v1::Model response;
  const grpc::Status s = stub_->ResetModel(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::ModelStatus> Client::GetStatus(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetStatusRequest request;
  request.set_model_id(id);
  v1::ModelStatus response;
  const grpc::Status s = stub_->GetStatus(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::Weights> Client::GetWeights(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetWeightsRequest request;
  request.set_model_id(id);
  std::unique_ptr<grpc::ClientReader<v1::Weights>> reader =
      stub_->GetWeightsChunks(&context, request);
  v1::Weights all, chunk;
  while (reader->Read(&chunk)) {
    all.mutable_values()->Add(chunk.values().begin(), chunk.values().end());
    all.set_has_bias(chunk.has_bias());
  }
  const grpc::Status s = reader->Finish();
  return Result(s, std::move(all));
}

absl::StatusOr<v1::History> Client::GetHistory(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetHistoryRequest request;
  request.set_model_id(id);
  v1::History response;
  const grpc::Status s = stub_->GetHistory(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::CertificateResponse> Client::GetCertificate(
    const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetCertificateRequest request;
  request.set_model_id(id);
  v1::CertificateResponse response;
  const grpc::Status s = stub_->GetCertificate(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::PredictResponse> Client::Predict(
    const std::string& id, const std::vector<Example>& examples) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::PredictRequest request;
  request.set_model_id(id);
  for (const Example& e : examples) FeaturesToProto(e, request.add_examples());
  v1::PredictResponse response;
  const grpc::Status s = stub_->Predict(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::RevealResponse> Client::Reveal(
    const std::string& id,
    const std::vector<std::pair<uint64_t, int>>& labels) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::RevealRequest request;
  request.set_model_id(id);
  for (const auto& [pid, label] : labels) {
    v1::RevealItem* item = request.add_items();
    item->set_prediction_id(pid);
    item->set_label(label);
  }
  v1::RevealResponse response;
  const grpc::Status s = stub_->Reveal(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::TrainResponse> Client::Train(
    const std::string& id, const std::vector<Example>& examples,
    uint32_t max_epochs) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::TrainRequest request;
  request.set_model_id(id);
  request.set_max_epochs(max_epochs);
  for (const Example& e : examples) {
    v1::LabeledExample* l = request.add_examples();
    FeaturesToProto(e, l->mutable_features());
    l->set_label(e.label.value_or(0));
  }
  v1::TrainResponse response;
  const grpc::Status s = stub_->Train(&context, request, &response);
  return Result(s, std::move(response));
}

absl::Status Client::Watch(
    const std::string& id, absl::Duration min_interval,
    const std::function<bool(const v1::ModelStatus&)>& on_status,
    absl::Duration timeout) {
  grpc::ClientContext context;
  AddToken(&context);
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
  SetDeadline(&context);
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
                                              const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::Model response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportModelRequest>> writer =
      stub_->ImportModelChunks(&context, &response);
  constexpr size_t kChunk = 1 << 20;
  size_t at = 0;
  do {  // an empty blob is still one message, for the server to refuse
    v1::ImportModelRequest request;
    if (at == 0) request.set_model_id(id);
    const size_t n = std::min(kChunk, blob.size() - at);
    request.set_blob(blob.substr(at, n));
    at += n;
    if (!writer->Write(request)) break;  // the server ended the call
  } while (at < blob.size());
  writer->WritesDone();
  const grpc::Status s = writer->Finish();
  return Result(s, std::move(response));
}

std::unique_ptr<LearnSession> Client::OpenLearnSession(
    const std::string& id, const SessionOptions& options) {
  SessionOptions o = options;
  if (o.batch_size == 0) o.batch_size = 1;
  if (o.max_in_flight == 0) o.max_in_flight = 1;
  return std::unique_ptr<LearnSession>(
      new LearnSession(stub_.get(), id, std::move(o), options_.token));
}

}  // namespace perceptron::client
