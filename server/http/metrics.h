// The server's Prometheus metrics: per-model figures read
// from the registry at scrape time, so they equal GetStatus's, and per-RPC
// counters and latencies in the names of the gRPC ecosystem's server metrics
// (grpc_server_started_total, grpc_server_handled_total{grpc_code}, ...),
// which the RPC layer counts (server/rpc/rpc_metrics.h) and hands over at
// scrape time, and the data directory's commit figures (server.cc).
// Thread-safe.
//
//   Metrics metrics(&registry, [&rpc] { return rpc.Collect(); });
//   std::string text = metrics.Render(nullptr);  // Prometheus text format
#ifndef PERCEPTRON_SERVER_HTTP_METRICS_H_
#define PERCEPTRON_SERVER_HTTP_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "server/model/registry.h"

namespace perceptron::server {

class Metrics {
 public:
  // Families from elsewhere, collected at each scrape.
  using Families = std::function<std::vector<prometheus::MetricFamily>()>;

  // `registry` must outlive this; `more` (may be empty) gives the families
  // rendered beside the models' (the grpc_server_* series).
  Metrics(Registry* registry, Families more);

  // The metrics in Prometheus text format (0.0.4). `visible`, if set, says
  // which models to include (a token's prefixes).
  std::string Render(
      const std::function<bool(absl::string_view)>& visible) const;

  // Counts one HTTP request by path and status code.
  void CountHttp(absl::string_view handler, int code);

 private:
  Registry* registry_;
  const Families more_;
  std::shared_ptr<prometheus::Registry> prom_;
  prometheus::Family<prometheus::Counter>& http_;
  prometheus::Gauge& start_time_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HTTP_METRICS_H_
