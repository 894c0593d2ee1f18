#include "server/rpc/rpc_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace perceptron::server {
namespace {

namespace prom = ::prometheus;
using Hook = grpc::experimental::InterceptionHookPoints;

constexpr absl::string_view kService = "perceptron.v1.PerceptronService";
constexpr absl::string_view kHealth = "grpc.health.v1.Health";

// In the order of Rpc.
constexpr RpcName kNames[kRpcCount] = {
    {kService, "CreateModel", "unary"},
    {kService, "GetModel", "unary"},
    {kService, "ListModels", "unary"},
    {kService, "DeleteModel", "unary"},
    {kService, "SetMoving", "unary"},
    {kService, "ResetModel", "unary"},
    {kService, "Learn", "bidi_stream"},
    {kService, "Predict", "unary"},
    {kService, "Reveal", "unary"},
    {kService, "Train", "unary"},
    {kService, "GetStatus", "unary"},
    {kService, "WatchStatus", "server_stream"},
    {kService, "GetHistory", "unary"},
    {kService, "GetCertificate", "unary"},
    {kService, "GetWeights", "unary"},
    {kService, "GetWeightsChunks", "server_stream"},
    {kService, "ExportModel", "unary"},
    {kService, "ExportModelChunks", "server_stream"},
    {kService, "ImportModel", "unary"},
    {kService, "ImportModelChunks", "client_stream"},
    {kService, "GetServerStatus", "unary"},
    {kHealth, "Check", "unary"},
    {kHealth, "Watch", "server_stream"},
};

// The methods the interceptor records, by their gRPC path: every one whose
// handler does not record itself.
const absl::flat_hash_map<std::string, Rpc>& Intercepted() {
  static const auto* paths = [] {
    auto* m = new absl::flat_hash_map<std::string, Rpc>;
    for (Rpc rpc :
         {Rpc::kWatchStatus, Rpc::kGetWeightsChunks, Rpc::kExportModelChunks,
          Rpc::kImportModelChunks, Rpc::kHealthCheck, Rpc::kHealthWatch}) {
      const RpcName& n = NameOf(rpc);
      (*m)[absl::StrCat("/", n.service, "/", n.method)] = rpc;
    }
    return m;
  }();
  return *paths;
}

class RpcInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit RpcInterceptor(RpcCounts* counts) : call_(counts) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) &&
        m->GetRecvMessage() != nullptr) {
      call_.Received();
    }
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) call_.Sent();
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      call_.Handled(m->GetSendStatus().error_code());
    }
    m->Proceed();
  }

 private:
  RpcCall call_;
};

class RpcInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcInterceptorFactory(RpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    auto it = Intercepted().find(info->method());
    if (it == Intercepted().end()) return nullptr;
    return new RpcInterceptor(metrics_->counts(it->second));
  }

 private:
  RpcMetrics* metrics_;
};

const char* const kCodeNames[] = {"OK",
                                  "Canceled",
                                  "Unknown",
                                  "InvalidArgument",
                                  "DeadlineExceeded",
                                  "NotFound",
                                  "AlreadyExists",
                                  "PermissionDenied",
                                  "ResourceExhausted",
                                  "FailedPrecondition",
                                  "Aborted",
                                  "OutOfRange",
                                  "Unimplemented",
                                  "Internal",
                                  "Unavailable",
                                  "DataLoss",
                                  "Unauthenticated"};

}  // namespace

const RpcName& NameOf(Rpc rpc) { return kNames[static_cast<int>(rpc)]; }

int RpcCounts::ShardOfThisThread() {
  static std::atomic<int> next{0};
  thread_local const int shard =
      next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shard;
}

void RpcCounts::Handled(int code, double seconds) {
  Shard& s = shards_[ShardOfThisThread()];
  const int c = code >= 0 && code < kCodes ? code : grpc::StatusCode::UNKNOWN;
  s.handled[c].fetch_add(1, std::memory_order_relaxed);
  const size_t bucket =
      std::lower_bound(kBounds.begin(), kBounds.end(), seconds) -
      kBounds.begin();
  s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  s.nanos.fetch_add(static_cast<uint64_t>(std::llround(seconds * 1e9)),
                    std::memory_order_relaxed);
}

RpcCounts::Totals RpcCounts::Sum() const {
  Totals t;
  uint64_t nanos = 0;
  for (const Shard& s : shards_) {
    t.started += s.started.load(std::memory_order_relaxed);
    t.received += s.received.load(std::memory_order_relaxed);
    t.sent += s.sent.load(std::memory_order_relaxed);
    nanos += s.nanos.load(std::memory_order_relaxed);
    for (int c = 0; c < kCodes; ++c) {
      t.handled[c] += s.handled[c].load(std::memory_order_relaxed);
    }
    for (size_t b = 0; b < t.buckets.size(); ++b) {
      t.buckets[b] += s.buckets[b].load(std::memory_order_relaxed);
    }
  }
  t.seconds = static_cast<double>(nanos) / 1e9;
  return t;
}

RpcMetrics::RpcMetrics(bool enabled) {
  if (enabled) counts_ = std::make_unique<std::array<RpcCounts, kRpcCount>>();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RpcMetrics::InterceptorFactory() {
  if (!enabled()) return nullptr;
  return std::make_unique<RpcInterceptorFactory>(this);
}

std::vector<prom::MetricFamily> RpcMetrics::Collect() const {
  std::vector<prom::MetricFamily> families;
  if (!enabled()) return families;
  using T = prom::MetricType;
  prom::MetricFamily started{"grpc_server_started_total",
                             "RPCs started on the server",
                             T::Counter,
                             {}};
  prom::MetricFamily handled{"grpc_server_handled_total",
                             "RPCs completed on the server, by status code",
                             T::Counter,
                             {}};
  prom::MetricFamily received{"grpc_server_msg_received_total",
                              "Request messages received",
                              T::Counter,
                              {}};
  prom::MetricFamily sent{
      "grpc_server_msg_sent_total", "Response messages sent", T::Counter, {}};
  prom::MetricFamily seconds{"grpc_server_handling_seconds",
                             "Time from an RPC's start to its status, seconds",
                             T::Histogram,
                             {}};
  for (int i = 0; i < kRpcCount; ++i) {
    const Rpc r = static_cast<Rpc>(i);
    const RpcName& name = NameOf(r);
    const RpcCounts::Totals t = counts(r)->Sum();
    std::vector<prom::ClientMetric::Label> labels = {
        {"grpc_method", std::string(name.method)},
        {"grpc_service", std::string(name.service)},
        {"grpc_type", std::string(name.type)}};
    auto add = [&](prom::MetricFamily& f, double v) {
      prom::ClientMetric m;
      m.label = labels;
      m.counter.value = v;
      f.metric.push_back(std::move(m));
    };
    add(started, static_cast<double>(t.started));
    add(received, static_cast<double>(t.received));
    add(sent, static_cast<double>(t.sent));
    for (int c = 0; c < RpcCounts::kCodes; ++c) {
      if (t.handled[c] == 0) continue;
      prom::ClientMetric m;
      m.label = labels;
      m.label.insert(m.label.begin(), {"grpc_code", kCodeNames[c]});
      m.counter.value = static_cast<double>(t.handled[c]);
      handled.metric.push_back(std::move(m));
    }
    prom::ClientMetric h;
    h.label = labels;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < t.buckets.size(); ++b) {
      cumulative += t.buckets[b];
      h.histogram.bucket.push_back(
          {cumulative, b < RpcCounts::kBounds.size()
                           ? RpcCounts::kBounds[b]
                           : std::numeric_limits<double>::infinity()});
    }
    h.histogram.sample_count = cumulative;
    h.histogram.sample_sum = t.seconds;
    seconds.metric.push_back(std::move(h));
  }
  for (prom::MetricFamily* f :
       {&started, &handled, &received, &sent, &seconds}) {
    families.push_back(std::move(*f));
  }
  return families;
}

}  // namespace perceptron::server
