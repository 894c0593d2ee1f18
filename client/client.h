// The C++ client library of perceptrond. It never prints; every call returns
// absl::Status or absl::StatusOr with the server's code and message.
//
//   ClientOptions options;
//   options.target = "127.0.0.1:50051";
//   std::unique_ptr<Client> client = Client::Connect(options);
//   v1::ModelConfig config;
//   config.set_dimension(30);
//   absl::StatusOr<v1::Model> m = client->CreateModel("spam", config);
//
//   SessionOptions so;  // batches of 64, up to 64 in flight
//   std::unique_ptr<LearnSession> s = client->OpenLearnSession("spam", so);
//   for (const Example& e : examples) s->AddLabeled(e);
//   absl::StatusOr<SessionSummary> summary = s->Finish();
//
// A Client is thread-safe; a LearnSession is used by one thread at a time.
#ifndef PERCEPTRON_CLIENT_CLIENT_H_
#define PERCEPTRON_CLIENT_CLIENT_H_

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/example.h"
#include "client/learn_session.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::client {

namespace v1 = ::perceptron::v1;

// Every call that names a model carries its id in this request header (a
// Learn stream, when it opens), so that a proxy in front of several servers
// can route by it (docs/design.md section 10).
inline constexpr char kModelHeader[] = "x-perceptron-model";

// Whether `v` can be a gRPC header's value: printable ASCII (0x20..0x7e).
// Anything else makes gRPC refuse the call, so a model id that is not (the
// server refuses it anyway, naming the byte) goes without its routing header.
bool IsHeaderValue(absl::string_view v);
// GetModel and ListModels answer with the server's instance id in this
// trailing metadata key, whatever their status.
inline constexpr char kServerHeader[] = "x-perceptron-server";

struct ClientOptions {
  // host:port of the server. Default: "127.0.0.1:50051".
  std::string target = "127.0.0.1:50051";
  // Deadline of each unary call. Default: 60 s.
  absl::Duration timeout = absl::Seconds(60);
  // Largest message sent or received. Default: 64 MiB.
  int max_message_bytes = 64 << 20;
  // A bearer token sent with every call ("authorization: Bearer ..."):
  // printable ASCII, as a header's value must be (IsHeaderValue); any other is
  // not sent, and a server that needs one then answers UNAUTHENTICATED.
  // Default: none.
  std::string token;
  // TLS: PEM of the CA that signed the server's certificate. Empty: plaintext.
  std::string tls_root_certs;
  // Mutual TLS: PEM of this client's certificate chain and private key.
  // Default: none.
  std::string tls_cert_chain;
  std::string tls_private_key;
  // How long Connect waits for the channel to be ready before returning;
  // calls then fail fast with the channel's last error if it is not. A
  // failed connection attempt is retried by gRPC after a backoff of about
  // 1 s, so a wait of a few seconds lets one failed attempt be retried.
  // Default: 0 (no wait; calls fail at the first failed attempt).
  absl::Duration connect_timeout = absl::ZeroDuration();
  // Whether the client opens a connection of its own instead of sharing the
  // one gRPC keeps for every channel of the process to the same target. A
  // proxy reloaded with a new configuration (nginx) serves the connections
  // opened before the reload by the old one for as long as they stay open.
  // Default: false (shared).
  bool own_connection = false;
};

// The Train request of `examples` (labeled) for model `id`, as Client::Train
// sends it.
v1::TrainRequest TrainRequestOf(const std::string& id,
                                const std::vector<Example>& examples,
                                uint32_t max_epochs);

class Client {
 public:
  static std::unique_ptr<Client> Connect(const ClientOptions& options);
  // Connects to an existing channel (tests).
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options);

  // The server's health (grpc.health.v1) for the whole server: OK if SERVING,
  // UNAVAILABLE with the status otherwise. Waits up to `timeout` for a
  // connection.
  absl::Status CheckHealth(absl::Duration timeout);
  // The server itself: its models, its store, its memory, its limits
  // (GetServerStatus). With `route_by` (a model id), the call carries that id
  // in the routing header, so that behind a shard proxy it reaches the shard
  // that owns the model (whose limits a stream to it meets); a proxy refuses
  // the call without it.
  absl::StatusOr<v1::ServerStatus> GetServerStatus(
      const std::string& route_by = "");

  absl::StatusOr<v1::Model> CreateModel(const std::string& id,
                                        const v1::ModelConfig& config);
  absl::StatusOr<v1::Model> GetModel(const std::string& id);
  // Every model, following pages.
  absl::StatusOr<std::vector<v1::Model>> ListModels();
  // With `if_moving`, only a model marked moving (FAILED_PRECONDITION if not).
  absl::Status DeleteModel(const std::string& id, bool if_moving = false);
  // Marks the model as being moved to another shard, or lifts the mark: while
  // marked, changes are refused with UNAVAILABLE (SetMoving).
  absl::StatusOr<v1::Model> SetMoving(const std::string& id, bool moving);
  // The instance id of the server this client reaches (x-perceptron-server).
  absl::StatusOr<std::string> ServerId();
  // The instance id of the server that answers for model `id`, whether it
  // holds the model or not: through a proxy, the shard the proxy routes `id`
  // to.
  absl::StatusOr<std::string> ServerFor(const std::string& id);
  absl::StatusOr<v1::Model> ResetModel(const std::string& id);
  absl::StatusOr<v1::ModelStatus> GetStatus(const std::string& id);
  // The weight vector, whatever its size (GetWeightsChunks); with `top` > 0
  // the heaviest coordinates with their names instead (Weights.top).
  absl::StatusOr<v1::Weights> GetWeights(const std::string& id,
                                         uint32_t top = 0);
  // The learning curve (points of examples, mistakes, updates, bound).
  absl::StatusOr<v1::History> GetHistory(const std::string& id);
  // The certificate with the comparator attaining its bound.
  absl::StatusOr<v1::CertificateResponse> GetCertificate(const std::string& id);
  absl::StatusOr<v1::PredictResponse> Predict(
      const std::string& id, const std::vector<Example>& examples);
  absl::StatusOr<v1::RevealResponse> Reveal(
      const std::string& id,
      const std::vector<std::pair<uint64_t, int>>& labels);
  absl::StatusOr<v1::TrainResponse> Train(const std::string& id,
                                          const std::vector<Example>& examples,
                                          uint32_t max_epochs);
  // The same of a request built by TrainRequestOf (to weigh it first).
  absl::StatusOr<v1::TrainResponse> Train(const v1::TrainRequest& request);
  // Calls `on_status` with each status pushed until it returns false (then OK)
  // or the stream ends (its status; DEADLINE_EXCEEDED after `timeout`).
  absl::Status Watch(
      const std::string& id, absl::Duration min_interval,
      const std::function<bool(const v1::ModelStatus&)>& on_status,
      absl::Duration timeout = absl::InfiniteDuration());

  // The model as a portable blob, whatever its size (ExportModelChunks).
  absl::StatusOr<std::string> ExportModel(const std::string& id);
  // A model from a blob, under `id` or, if empty, the blob's own
  // (ImportModelChunks); with `moving`, marked moving (SetMoving).
  absl::StatusOr<v1::Model> ImportModel(const std::string& blob,
                                        const std::string& id,
                                        bool moving = false);

  // The session's calls go through this client, which must outlive it (with
  // SessionOptions::retry_for, the first is the model's status when it opens,
  // waited for as after a break).
  std::unique_ptr<LearnSession> OpenLearnSession(const std::string& id,
                                                 const SessionOptions& options);
  // A client with this one's options on a connection of its own
  // (ClientOptions::own_connection); for a client made from a channel, one on
  // that channel.
  std::unique_ptr<Client> Another() const;

  std::shared_ptr<grpc::Channel> channel() { return channel_; }

 private:
  friend class LearnSession;
  // Sets the deadline of a call and adds the token, if any, and the model's
  // routing header, if the call names one.
  void SetDeadline(grpc::ClientContext* context,
                   const std::string& model = "") const;
  void AddToken(grpc::ClientContext* context) const;
  using Stub = v1::PerceptronService::Stub;
  // One unary call of the stub's `method` naming `model` (routed by it), with
  // the deadline and the token: the response, or the call's status.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(
      grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                   Response*),
      const std::string& model, const Request& request);

  const ClientOptions options_;
  // Made by Connect (from options_.target), not from a channel.
  bool by_target_ = false;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PerceptronService::Stub> stub_;
};

// A model and the server that holds it.
struct PlacedModel {
  std::string target;
  v1::Model model;
};

// Every model of every shard (docs/design.md section 10: ListModels names no
// model, so a proxy cannot route it), by id, then target: a model on two
// shards appears twice. `options.target` is ignored. The first failing
// shard's status, its target named, if any fails.
absl::StatusOr<std::vector<PlacedModel>> ListModelsAcross(
    const std::vector<std::string>& targets, const ClientOptions& options);

// absl::Status from a gRPC status (the codes are shared).
absl::Status FromGrpc(const grpc::Status& s);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_CLIENT_H_
