// perceptrond as an object: the gRPC server with the perceptron service, the
// standard health and reflection services, and a background thread that expires
// pending predictions.
//
//   ServerOptions options;
//   options.port = 0;  // pick a free port
//   absl::StatusOr<std::unique_ptr<PerceptronServer>> server =
//       PerceptronServer::Start(options);
//   int port = (*server)->port();
//   ...
//   (*server)->Shutdown();  // answers in-flight batches, ends streams
//                           // with UNAVAILABLE
//
// Thread-safe.
#ifndef PERCEPTRON_SERVER_SERVER_H_
#define PERCEPTRON_SERVER_SERVER_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/auth.h"
#include "server/http/http.h"
#include "server/http/metrics.h"
#include "server/model/limits.h"
#include "server/model/registry.h"
#include "server/ops/certificate_refresher.h"
#include "server/rpc/service.h"
#include "server/storage/persistence.h"

namespace perceptron::server {

// gRPC health's named service for the store: SERVING while it writes,
// NOT_SERVING while a failed write keeps changes refused (checked every
// second). The server's own ("") stays SERVING: reads go on.
inline constexpr char kStoreHealthService[] = "perceptrond.store";

struct ServerOptions {
  // Address to listen on. Default: loopback only.
  std::string host = "127.0.0.1";
  // TCP port; 0 picks a free one (see PerceptronServer::port). Default: 50051.
  int port = 50051;
  Limits limits;
  // How often pending predictions are checked for expiry (and idle models,
  // and the allocator's free memory). Default: 1 s.
  absl::Duration expiry_interval = absl::Seconds(1);
  // Once the allocator holds this many bytes free, they are given back to
  // the system (checked every expiry_interval); 0 never. Default: 16 MiB.
  uint64_t memory_release_bytes = 16u << 20;
  // How long Shutdown waits for calls to end before cancelling them. Default: 5
  // s.
  absl::Duration shutdown_grace = absl::Seconds(5);
  // The data directory and durability mode.
  PersistenceOptions persistence;
  // TLS: PEM of the server's certificate chain and private key, for the gRPC
  // port and the HTTP port (HTTPS). Empty:
  // plaintext.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Mutual TLS: PEM of the CA that client certificates must chain to. Empty:
  // clients are not asked for certificates.
  std::string tls_client_ca_pem;
  // Bearer tokens with roles (auth.h). Empty: every call is allowed.
  std::string tokens_file;
  // The HTTP port for /metrics, /healthz, JSON status and the live page
  // (http.h), on `host`; 0 picks a free one, -1 serves no HTTP. Default: -1.
  int http_port = -1;
  // Its worker threads, each serving any number of connections. Default: 4.
  int http_threads = 4;
  // Per-RPC metrics (grpc_server_*; server/rpc/rpc_metrics.h). Off: nothing
  // recorded, no interceptor and no grpc_server_* series.
  bool rpc_metrics = true;
};

class PerceptronServer {
 public:
  // UNAVAILABLE if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<PerceptronServer>> Start(
      const ServerOptions& options);
  ~PerceptronServer();

  // The port actually bound.
  int port() const { return port_; }
  // The HTTP port bound, or -1 without one.
  int http_port() const { return http_ == nullptr ? -1 : http_->port(); }
  // The HTTP port speaks HTTPS (the server has a certificate).
  bool http_tls() const { return http_ != nullptr && http_->tls(); }
  const RecoveryReport& recovery() const { return recovery_; }
  Registry& registry() { return registry_; }

  // Refuses new calls, lets in-flight batches finish and be answered, ends open
  // streams with UNAVAILABLE, then stops. Idempotent.
  void Shutdown();

 private:
  PerceptronServer(const ServerOptions& options,
                   std::unique_ptr<Persistence> persistence,
                   std::unique_ptr<Authorizer> auth);
  void ExpiryLoop();
  // Gives the allocator's free memory back once it reaches
  // memory_release_bytes.
  void ReleaseMemory();
  // GetServerStatus's and /api/v1/server's answer.
  void FillServerStatus(v1::ServerStatus* status);

  const ServerOptions options_;
  Registry registry_;
  std::unique_ptr<Persistence> persistence_;
  std::unique_ptr<Authorizer> auth_;
  RecoveryReport recovery_;
  RpcMetrics rpc_metrics_;
  PerceptronServiceImpl service_;
  Metrics metrics_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  absl::Notification stop_;
  std::thread expiry_;
  std::atomic<uint64_t> memory_releases_{0};
  const absl::Time started_at_ = absl::Now();
  CertificateRefresher refresher_;
  std::once_flag shutdown_once_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_SERVER_H_
