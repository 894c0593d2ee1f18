// The HTTP port beside gRPC, served by libmicrohttpd:
//   GET /healthz                       200 SERVING, or 503 NOT_SERVING once
//                                      shutting down (no token needed); a
//                                      line more if the store cannot write
//   GET /metrics                       Prometheus text format (metrics.h)
//   GET /api/v1/server                 ServerStatus as JSON (the store, memory)
//   GET /api/v1/models                 {"models": [ModelStatus...]} as JSON
//   GET /api/v1/models/ID              ModelStatus as JSON
//   GET /api/v1/models/ID/history      History as JSON (the learning curve)
//   GET /                              the live page: per model, cumulative
//                                      mistakes and the bound against examples
// JSON is the proto3 mapping of perceptron.proto with its field names. With
// tokens, every path but /healthz needs "Authorization: Bearer TOKEN" of any
// role (401 without one, 403 outside the token's prefixes); lists show only
// the token's models.
//
// With a certificate (HttpOptions::tls_cert_pem) the port speaks HTTPS only,
// with the gRPC port's certificate and, given a client CA, the same client
// certificate check; without one it is plain HTTP (bind it to loopback or put
// it behind a TLS-terminating proxy when tokens cross a network).
//
// Connections are multiplexed with epoll over a few worker threads, so idle
// keep-alive connections and slow clients hold no thread and cannot starve
// /healthz or /metrics (docs/design.md section 8); a connection idle for 60 s
// is closed. Thread-safe.
#ifndef PERCEPTRON_SERVER_HTTP_HTTP_H_
#define PERCEPTRON_SERVER_HTTP_HTTP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "perceptron/v1/perceptron.pb.h"
#include "server/auth/auth.h"
#include "server/http/metrics.h"
#include "server/model/registry.h"

struct MHD_Daemon;

namespace perceptron::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  // 0 picks a free one.
  int port = 0;
  // Worker threads, each serving any number of connections. Default: 4.
  int threads = 4;
  // PEM of the certificate chain and private key: HTTPS. Empty: plain HTTP.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // PEM of the CA client certificates must chain to (HTTPS only). Empty:
  // clients are not asked for certificates.
  std::string tls_client_ca_pem;
  // What /healthz adds after SERVING, called for each request: empty while
  // all is well (a store that cannot write says so here). May be null.
  std::function<std::string()> health_note;
  // GET /api/v1/server's answer. Null: 404.
  std::function<void(v1::ServerStatus*)> server_status;
};

class HttpServer {
 public:
  // `auth` may be null (every request allowed). `registry`, `metrics` and
  // `auth` must outlive the server. UNAVAILABLE if the address cannot be bound
  // or the certificate not used.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpOptions& options, Registry* registry, Metrics* metrics,
      const Authorizer* auth);
  ~HttpServer();

  int port() const { return port_; }
  bool tls() const { return tls_; }
  // /healthz answers 503 from now on.
  void SetNotServing() { serving_ = false; }
  bool serving() const { return serving_; }
  // HttpOptions::server_status; false if none.
  bool FillServerStatus(v1::ServerStatus* status) const {
    if (!server_status_) return false;
    server_status_(status);
    return true;
  }
  // HttpOptions::health_note's text ("" if none).
  std::string health_note() const {
    return health_note_ ? health_note_() : std::string();
  }

  Registry* registry() { return registry_; }
  Metrics* metrics() { return metrics_; }
  const Authorizer* auth() const { return auth_; }
  bool verify_clients() const { return !tls_client_ca_pem_.empty(); }
  // libmicrohttpd's log: the first message is kept.
  void KeepFirstError(const std::string& message);

 private:
  HttpServer(Registry* registry, Metrics* metrics, const Authorizer* auth);

  std::function<std::string()> health_note_;  // set before serving
  std::function<void(v1::ServerStatus*)> server_status_;

  Registry* registry_;
  Metrics* metrics_;
  const Authorizer* auth_;
  std::atomic<bool> serving_{true};
  // The PEM strings, NUL-terminated, live as long as the daemon.
  std::string tls_cert_pem_, tls_key_pem_, tls_client_ca_pem_;
  MHD_Daemon* daemon_ = nullptr;
  std::string first_error();
  absl::Mutex log_mu_;
  std::string first_error_ ABSL_GUARDED_BY(log_mu_);
  int port_ = 0;
  bool tls_ = false;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HTTP_HTTP_H_
