// The HTTP port beside gRPC, served by civetweb:
//   GET /healthz                       200 SERVING, or 503 NOT_SERVING once
//                                      shutting down (no token needed)
//   GET /metrics                       Prometheus text format (metrics.h)
//   GET /api/v1/models                 {"models": [ModelStatus...]} as JSON
//   GET /api/v1/models/ID              ModelStatus as JSON
//   GET /api/v1/models/ID/history      History as JSON (the learning curve)
//   GET /                              the live page: per model, cumulative
//                                      mistakes and the bound against examples
// JSON is the proto3 mapping of perceptron.proto with its field names. With
// tokens, every path but /healthz needs "Authorization: Bearer TOKEN" of any
// role (401 without one, 403 outside the token's prefixes); lists show only
// the token's models. Plain HTTP: bind it to loopback or put it behind a
// TLS-terminating proxy when it leaves the machine. Thread-safe.
#ifndef PERCEPTRON_SERVER_HTTP_H_
#define PERCEPTRON_SERVER_HTTP_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/registry.h"

class CivetServer;
class CivetHandler;

namespace perceptron::server {

class HttpServer {
 public:
  // `auth` may be null (every request allowed). `registry`, `metrics` and
  // `auth` must outlive the server. `port` 0 picks a free one. UNAVAILABLE if
  // the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& host, int port, Registry* registry, Metrics* metrics,
      const Authorizer* auth);
  ~HttpServer();

  int port() const { return port_; }
  // /healthz answers 503 from now on.
  void SetNotServing() { serving_ = false; }
  bool serving() const { return serving_; }

  Registry* registry() { return registry_; }
  Metrics* metrics() { return metrics_; }
  const Authorizer* auth() const { return auth_; }

 private:
  HttpServer(Registry* registry, Metrics* metrics, const Authorizer* auth);

  Registry* registry_;
  Metrics* metrics_;
  const Authorizer* auth_;
  std::atomic<bool> serving_{true};
  std::vector<std::unique_ptr<CivetHandler>> handlers_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HTTP_H_
