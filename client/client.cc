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

// ---- LearnSession ----

LearnSession::LearnSession(v1::PerceptronService::Stub* stub,
                           std::string model_id, SessionOptions options,
                           uint32_t dimension, const std::string& token)
    : model_id_(std::move(model_id)),
      options_(std::move(options)),
      dimension_(options_.columnar ? dimension : 0),
      as_items_(dimension_ == 0) {
  if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
  context_.AddMetadata(kModelHeader, model_id_);
  stream_ = stub->Learn(&context_);
  reader_ = std::thread([this] { ReadLoop(); });
}

LearnSession::~LearnSession() {
  if (!finished_) {
    context_.TryCancel();
    Finish().IgnoreError();
  }
}

namespace {

bool Bit(const std::string& bits, int k) {
  return static_cast<size_t>(k / 8) < bits.size() &&
         (bits[k / 8] >> (k % 8) & 1);
}

}  // namespace

void LearnSession::Expand(const Sent& sent, v1::LearnResponse* r) const {
  v1::ColumnResults c = std::move(*r->mutable_columns());
  r->clear_columns();
  const int n = c.scores_size();
  const int reveals = static_cast<int>(sent.reveal_ids.size());
  uint64_t next_id = c.first_prediction_id();
  int e = 0;
  r->mutable_results()->Reserve(n);
  for (int k = 0; k < n; ++k) {
    v1::ItemResult* item = r->add_results();
    if (e < c.errors_size() && c.errors(e).item() == static_cast<uint32_t>(k)) {
      *item->mutable_error() =
          std::move(*c.mutable_errors(e++)->mutable_error());
      continue;
    }
    if (k >= reveals && !sent.labeled) {
      v1::PredictionResult* p = item->mutable_prediction();
      p->set_prediction_id(next_id++);
      p->set_label(c.labels(k));
      p->set_score(c.scores(k));
      continue;
    }
    v1::Outcome* o = item->mutable_outcome();
    if (k < reveals) o->set_prediction_id(sent.reveal_ids[k]);
    o->set_label(c.labels(k));
    o->set_score(c.scores(k));
    o->set_mistake(Bit(c.mistakes(), k));
    o->set_updated(Bit(c.updates(), k));
  }
}

void LearnSession::ReadLoop() {
  v1::LearnResponse response;
  while (stream_->Read(&response)) {
    Sent sent;
    {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      if (!sent_.empty()) {
        sent = std::move(sent_.front());
        sent_.pop_front();
      }
      ++summary_.requests;
      if (response.has_columns()) {
        ++summary_.columnar_requests;
        const v1::ColumnResults& c = response.columns();
        summary_.items += c.scores_size();
        if (summary_.item_errors == 0 && c.errors_size() > 0)
          summary_.first_error = c.errors(0).error().message();
        summary_.item_errors += c.errors_size();
      } else {
        summary_.items += response.results_size();
        for (const v1::ItemResult& r : response.results()) {
          if (r.has_error()) {
            if (summary_.item_errors++ == 0)
              summary_.first_error = r.error().message();
          }
        }
      }
      summary_.stats = response.stats();
    }
    if (options_.on_response) {
      if (response.has_columns()) Expand(sent, &response);
      options_.on_response(response);
    }
  }
  absl::MutexLock lock(&mu_);
  reader_done_ = true;
}

absl::Status LearnSession::Flush() {
  if (count_ == 0 && named_) return absl::OkStatus();
  if (finished_)
    return absl::FailedPreconditionError("the session is finished");
  if (!named_) {
    request_.set_model_id(model_id_);
    if (options_.if_examples) request_.set_if_examples(*options_.if_examples);
    named_ = true;
  }
  Sent sent;
  sent.columnar = request_.has_columns();
  if (sent.columnar) {
    sent.labeled = labeled_;
    if (options_.on_response) {
      const auto& ids = request_.columns().reveal_ids();
      sent.reveal_ids.assign(ids.begin(), ids.end());
    }
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
    sent_.push_back(std::move(sent));
  }
  if (!stream_->Write(request_)) {
    return absl::AbortedError("the stream has ended; Finish tells why");
  }
  request_.Clear();
  count_ = 0;
  as_items_ = dimension_ == 0;
  rows_ = Rows::kNone;
  labeled_ = false;
  return absl::OkStatus();
}

absl::Status LearnSession::Queued() {
  if (++count_ >= options_.batch_size) return Flush();
  return absl::OkStatus();
}

bool LearnSession::Fits(Rows rows, bool labeled) const {
  if (rows_ == Rows::kNone) return true;
  return rows == rows_ && labeled == labeled_;
}

void LearnSession::ToItems() {
  as_items_ = true;
  if (!request_.has_columns()) return;
  const v1::Columns c = std::move(*request_.mutable_columns());
  request_.clear_columns();
  for (int k = 0; k < c.reveal_ids_size(); ++k) {
    v1::RevealItem* r = request_.add_items()->mutable_reveal();
    r->set_prediction_id(c.reveal_ids(k));
    r->set_label(c.reveal_labels(k));
  }
  const bool sparse = rows_ == Rows::kSparse;
  const int rows =
      sparse ? c.row_ends_size() : static_cast<int>(c.dense_rows());
  for (int i = 0; i < rows; ++i) {
    v1::LearnItem* item = request_.add_items();
    v1::Features* f;
    if (labeled_) {
      item->mutable_labeled()->set_label(c.labels(i));
      f = item->mutable_labeled()->mutable_features();
    } else {
      f = item->mutable_example();
    }
    if (sparse) {
      const int begin = i == 0 ? 0 : static_cast<int>(c.row_ends(i - 1));
      const int end = static_cast<int>(c.row_ends(i));
      f->mutable_sparse()->mutable_indices()->Add(
          c.fixed_indices().begin() + begin, c.fixed_indices().begin() + end);
      f->mutable_sparse()->mutable_values()->Add(c.values().begin() + begin,
                                                 c.values().begin() + end);
    } else {
      const auto row = c.dense().begin() + int64_t{i} * dimension_;
      f->mutable_dense()->mutable_values()->Add(row, row + dimension_);
    }
  }
}

void LearnSession::AddRow(const Example& e, bool labeled) {
  Rows rows = Rows::kNone;  // not a row columns can hold
  if (!e.sparse && e.values.size() == dimension_) rows = Rows::kDense;
  if (e.sparse && e.values.size() == e.indices.size()) rows = Rows::kSparse;
  if (!as_items_ && (rows == Rows::kNone || !Fits(rows, labeled))) ToItems();
  if (as_items_) {
    v1::LearnItem* item = request_.add_items();
    if (labeled) {
      FeaturesToProto(e, item->mutable_labeled()->mutable_features());
      item->mutable_labeled()->set_label(*e.label);
    } else {
      FeaturesToProto(e, item->mutable_example());
    }
    return;
  }
  rows_ = rows;
  labeled_ = labeled;
  v1::Columns* c = request_.mutable_columns();
  if (labeled) c->add_labels(*e.label);
  if (rows == Rows::kDense) {
    c->mutable_dense()->Add(e.values.begin(), e.values.end());
    c->set_dense_rows(c->dense_rows() + 1);
  } else {
    c->mutable_fixed_indices()->Add(e.indices.begin(), e.indices.end());
    c->mutable_values()->Add(e.values.begin(), e.values.end());
    c->add_row_ends(static_cast<uint32_t>(c->fixed_indices_size()));
  }
}

absl::Status LearnSession::AddLabeled(const Example& e) {
  if (!e.label)
    return absl::InvalidArgumentError("AddLabeled: the example has no label");
  AddRow(e, /*labeled=*/true);
  return Queued();
}

absl::Status LearnSession::AddExample(const Example& e) {
  AddRow(e, /*labeled=*/false);
  return Queued();
}

absl::Status LearnSession::AddReveal(uint64_t prediction_id, int label) {
  if (!as_items_ && rows_ != Rows::kNone) ToItems();
  if (as_items_) {
    v1::RevealItem* r = request_.add_items()->mutable_reveal();
    r->set_prediction_id(prediction_id);
    r->set_label(label);
  } else {
    v1::Columns* c = request_.mutable_columns();
    c->add_reveal_ids(prediction_id);
    c->add_reveal_labels(label);
  }
  return Queued();
}

absl::StatusOr<SessionSummary> LearnSession::Finish() {
  if (finished_)
    return absl::FailedPreconditionError("the session is already finished");
  absl::Status flushed = count_ > 0 || !named_ ? Flush() : absl::OkStatus();
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
  return std::make_unique<Client>(std::move(channel), options);
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(v1::PerceptronService::NewStub(channel_)) {}

void Client::SetDeadline(grpc::ClientContext* context,
                         const std::string& model) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  AddToken(context);
  if (!model.empty()) context->AddMetadata(kModelHeader, model);
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
  SetDeadline(&context, id);
  v1::CreateModelRequest request;
  request.set_model_id(id);
  *request.mutable_config() = config;
  v1::Model response;
  const grpc::Status s = stub_->CreateModel(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::Model> Client::GetModel(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
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

absl::Status Client::DeleteModel(const std::string& id, bool if_moving) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::DeleteModelRequest request;
  request.set_model_id(id);
  request.set_if_moving(if_moving);
  v1::DeleteModelResponse response;
  return FromGrpc(stub_->DeleteModel(&context, request, &response));
}

absl::StatusOr<v1::Model> Client::SetMoving(const std::string& id,
                                            bool moving) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::SetMovingRequest request;
  request.set_model_id(id);
  request.set_moving(moving);
  v1::Model response;
  const grpc::Status s = stub_->SetMoving(&context, request, &response);
  return Result(s, std::move(response));
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
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::ResetModelRequest request;
  request.set_model_id(id);
  v1::Model response;
  const grpc::Status s = stub_->ResetModel(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::ModelStatus> Client::GetStatus(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::GetStatusRequest request;
  request.set_model_id(id);
  v1::ModelStatus response;
  const grpc::Status s = stub_->GetStatus(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::Weights> Client::GetWeights(const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
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
  SetDeadline(&context, id);
  v1::GetHistoryRequest request;
  request.set_model_id(id);
  v1::History response;
  const grpc::Status s = stub_->GetHistory(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::CertificateResponse> Client::GetCertificate(
    const std::string& id) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
  v1::GetCertificateRequest request;
  request.set_model_id(id);
  v1::CertificateResponse response;
  const grpc::Status s = stub_->GetCertificate(&context, request, &response);
  return Result(s, std::move(response));
}

absl::StatusOr<v1::PredictResponse> Client::Predict(
    const std::string& id, const std::vector<Example>& examples) {
  grpc::ClientContext context;
  SetDeadline(&context, id);
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
  SetDeadline(&context, id);
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
  SetDeadline(&context, id);
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
  context.AddMetadata(kModelHeader, id);
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
  return std::unique_ptr<LearnSession>(new LearnSession(
      stub_.get(), id, std::move(o), dimension, options_.token));
}

}  // namespace perceptron::client
