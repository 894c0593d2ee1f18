// The server's Prometheus metrics: per-model figures read
// from the registry at scrape time, so they equal GetStatus's, and per-RPC
// counters and latencies in the names of the gRPC ecosystem's server metrics
// (grpc_server_started_total, grpc_server_handled_total{grpc_code}, ...),
// recorded by a server interceptor. Thread-safe.
//
//   Metrics metrics(&registry, /*rpc_metrics=*/true);
//   interceptors.push_back(metrics.InterceptorFactory());
//   builder.experimental().SetInterceptorCreators(std::move(interceptors));
//   std::string text = metrics.Render(nullptr);  // Prometheus text format
#ifndef PERCEPTRON_SERVER_HTTP_METRICS_H_
#define PERCEPTRON_SERVER_HTTP_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/model/registry.h"

namespace perceptron::server {

class Metrics {
 public:
  // `rpc_metrics`: whether RPCs are recorded (an interceptor) and the
  // grpc_server_* families shown.
  Metrics(Registry* registry, bool rpc_metrics);

  // The metrics in Prometheus text format (0.0.4). `visible`, if set, says
  // which models to include (a token's prefixes).
  std::string Render(
      const std::function<bool(absl::string_view)>& visible) const;

  // A factory for the gRPC server interceptor that records the RPC metrics;
  // null when RPC metrics are off.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  InterceptorFactory();

  // Counts one HTTP request by path and status code.
  void CountHttp(absl::string_view handler, int code);

  // The counters one RPC method records into (created at start for the
  // service's methods, so every series exists from the first scrape).
  struct Method {
    prometheus::Counter* started;
    prometheus::Counter* received;
    prometheus::Counter* sent;
    prometheus::Histogram* seconds;
    std::string type, service, name;
  };
  Method* FindMethod(absl::string_view full_name);
  void CountHandled(Method& method, int code);

 private:
  Registry* registry_;
  bool rpc_metrics_;
  std::shared_ptr<prometheus::Registry> prom_;
  prometheus::Family<prometheus::Counter>& started_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Counter>& received_;
  prometheus::Family<prometheus::Counter>& sent_;
  prometheus::Family<prometheus::Histogram>& seconds_;
  prometheus::Family<prometheus::Counter>& http_;
  prometheus::Gauge& start_time_;
  absl::flat_hash_map<std::string, std::unique_ptr<Method>> methods_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HTTP_METRICS_H_
