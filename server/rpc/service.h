// perceptron.v1.PerceptronService over the gRPC callback API: unary handlers
// call model_ops and finish; Learn and WatchStatus are reactors of their own
// (learn_reactor.h, watch_reactor.h). Thread-safe.
#ifndef PERCEPTRON_SERVER_RPC_SERVICE_H_
#define PERCEPTRON_SERVER_RPC_SERVICE_H_

#include <functional>

#include "perceptron/v1/perceptron.grpc.pb.h"
#include "server/auth/auth.h"
#include "server/model/limits.h"
#include "server/model/registry.h"
#include "server/rpc/rpc_metrics.h"
#include "server/rpc/stream_set.h"
#include "server/storage/persistence.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

class PerceptronServiceImpl final
    : public v1::PerceptronService::CallbackService {
 public:
  // `auth` may be null (no tokens: every call allowed), `rpc_metrics` too (no
  // per-RPC metrics); both must outlive the service. The unary handlers and
  // Learn record their calls in `rpc_metrics`.
  PerceptronServiceImpl(Registry* registry, Persistence* persistence,
                        const Limits& limits, const Authorizer* auth = nullptr,
                        RpcMetrics* rpc_metrics = nullptr)
      : registry_(registry),
        persistence_(persistence),
        limits_(limits),
        auth_(auth),
        rpc_metrics_(rpc_metrics),
        server_id_(NewServerId()) {}

  // The trailing metadata key of GetModel and ListModels that carries the
  // server's instance id (docs/design.md section 10).
  static constexpr char kServerHeader[] = "x-perceptron-server";
  // This server's instance id: 32 hex digits, new at every start.
  const std::string& server_id() const { return server_id_; }

  // Refuses new calls with UNAVAILABLE and ends open streams once their batch
  // is answered.
  void BeginShutdown();
  // After BeginShutdown: true once every call has ended, false at `deadline`.
  bool AwaitIdle(absl::Time deadline) { return streams_.AwaitIdle(deadline); }

  Registry* registry() { return registry_; }
  StreamSet& streams() { return streams_; }

  grpc::ServerUnaryReactor* CreateModel(grpc::CallbackServerContext* context,
                                        const v1::CreateModelRequest* request,
                                        v1::Model* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::Model* response) override;
  grpc::ServerUnaryReactor* ListModels(
      grpc::CallbackServerContext* context,
      const v1::ListModelsRequest* request,
      v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteModel(
      grpc::CallbackServerContext* context,
      const v1::DeleteModelRequest* request,
      v1::DeleteModelResponse* response) override;
  grpc::ServerUnaryReactor* SetMoving(grpc::CallbackServerContext* context,
                                      const v1::SetMovingRequest* request,
                                      v1::Model* response) override;
  grpc::ServerUnaryReactor* ResetModel(grpc::CallbackServerContext* context,
                                       const v1::ResetModelRequest* request,
                                       v1::Model* response) override;
  grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>* Learn(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
  grpc::ServerUnaryReactor* Reveal(grpc::CallbackServerContext* context,
                                   const v1::RevealRequest* request,
                                   v1::RevealResponse* response) override;
  grpc::ServerUnaryReactor* Train(grpc::CallbackServerContext* context,
                                  const v1::TrainRequest* request,
                                  v1::TrainResponse* response) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::GetStatusRequest* request,
                                      v1::ModelStatus* response) override;
  grpc::ServerWriteReactor<v1::ModelStatus>* WatchStatus(
      grpc::CallbackServerContext* context,
      const v1::WatchStatusRequest* request) override;
  grpc::ServerUnaryReactor* GetHistory(grpc::CallbackServerContext* context,
                                       const v1::GetHistoryRequest* request,
                                       v1::History* response) override;
  grpc::ServerUnaryReactor* GetCertificate(
      grpc::CallbackServerContext* context,
      const v1::GetCertificateRequest* request,
      v1::CertificateResponse* response) override;
  grpc::ServerUnaryReactor* GetWeights(grpc::CallbackServerContext* context,
                                       const v1::GetWeightsRequest* request,
                                       v1::Weights* response) override;
  grpc::ServerUnaryReactor* ExportModel(
      grpc::CallbackServerContext* context,
      const v1::ExportModelRequest* request,
      v1::ExportModelResponse* response) override;
  grpc::ServerUnaryReactor* ImportModel(grpc::CallbackServerContext* context,
                                        const v1::ImportModelRequest* request,
                                        v1::Model* response) override;
  grpc::ServerWriteReactor<v1::Weights>* GetWeightsChunks(
      grpc::CallbackServerContext* context,
      const v1::GetWeightsRequest* request) override;
  grpc::ServerWriteReactor<v1::ExportModelResponse>* ExportModelChunks(
      grpc::CallbackServerContext* context,
      const v1::ExportModelRequest* request) override;
  grpc::ServerReadReactor<v1::ImportModelRequest>* ImportModelChunks(
      grpc::CallbackServerContext* context, v1::Model* response) override;
  grpc::ServerUnaryReactor* GetServerStatus(
      grpc::CallbackServerContext* context,
      const v1::GetServerStatusRequest* request,
      v1::ServerStatus* response) override;

  // What GetServerStatus answers, filled by the process that assembles the
  // server (it knows its memory); set before serving. Unset: UNIMPLEMENTED.
  void set_server_status(std::function<void(v1::ServerStatus*)> fill) {
    server_status_ = std::move(fill);
  }

 private:
  // The model named `id`, or NOT_FOUND / UNAVAILABLE (shutting down).
  absl::StatusOr<std::shared_ptr<ModelEntry>> Find(const std::string& id);
  void FillModel(ModelEntry& entry, v1::Model* model);
  // The shape of each unary handler: the call counted while it runs (shutdown
  // waits for it) and recorded as `rpc`, the caller's `role` checked for
  // `model_id` ("": any), UNAVAILABLE once shutting down, then `act()`, whose
  // status is the answer.
  template <typename Act>
  grpc::ServerUnaryReactor* Handle(grpc::CallbackServerContext* context,
                                   Rpc rpc, Role role,
                                   absl::string_view model_id, Act act);
  // The shape of each unary handler on one model: the call counted while it
  // runs (shutdown waits for it), the caller's `role` checked for the model,
  // then `check` (a limit on the request itself), then the model found, then
  // `act(entry)`, whose status is the answer.
  template <typename Request, typename Act>
  grpc::ServerUnaryReactor* OnModel(grpc::CallbackServerContext* context,
                                    Rpc rpc, const Request& request, Role role,
                                    Act act,
                                    absl::Status check = absl::OkStatus());
  // The call's "authorization" metadata ("" if none).
  static std::string Authorization(grpc::CallbackServerContext* context);
  // OK if auth is off, or the call's token has `role` and covers `model_id`.
  absl::Status Allow(grpc::CallbackServerContext* context, Role role,
                     absl::string_view model_id);
  // ImportModel's work for either form: the blob, the id asked for ("" for the
  // blob's own), whether to mark it moving, the model made.
  absl::Status Import(grpc::CallbackServerContext* context,
                      const std::string& blob, const std::string& model_id,
                      bool moving, v1::Model* response);

  Registry* const registry_;
  Persistence* const persistence_;
  const Limits limits_;
  const Authorizer* const auth_;
  RpcMetrics* const rpc_metrics_;
  const std::string server_id_;
  std::function<void(v1::ServerStatus*)> server_status_;
  StreamSet streams_;

  static std::string NewServerId();
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_RPC_SERVICE_H_
