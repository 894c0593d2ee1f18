// The per-RPC counts behind /metrics' grpc_server_* series (the gRPC
// ecosystem's server metrics): calls started, messages received and sent,
// calls handled by status code, and the handling time. Recorded without locks
// or lookups: each method's counts are sharded atomics (a thread adds to its
// own shard, a scrape sums them), found by an enum. The unary handlers and the
// Learn stream record their own calls; the other streams and grpc.health.v1
// (cold paths) through a server interceptor (InterceptorFactory), which gRPC
// skips for the calls it does not wrap. Thread-safe.
//
//   RpcMetrics rpc(/*enabled=*/true);
//   RpcCall call(rpc.counts(Rpc::kGetStatus));  // started
//   call.Received(); ... call.Sent(); call.Handled(grpc::StatusCode::OK);
//   RpcCounts::Totals t = rpc.counts(Rpc::kGetStatus)->Sum();
//   std::vector<prometheus::MetricFamily> families = rpc.Collect();
#ifndef PERCEPTRON_SERVER_RPC_RPC_METRICS_H_
#define PERCEPTRON_SERVER_RPC_RPC_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/status.h"
#include "prometheus/metric_family.h"

namespace perceptron::server {

// Every method the server answers.
enum class Rpc {
  kCreateModel,
  kGetModel,
  kListModels,
  kDeleteModel,
  kSetMoving,
  kResetModel,
  kLearn,
  kPredict,
  kReveal,
  kTrain,
  kGetStatus,
  kWatchStatus,
  kGetHistory,
  kGetCertificate,
  kGetWeights,
  kGetWeightsChunks,
  kExportModel,
  kExportModelChunks,
  kImportModel,
  kImportModelChunks,
  kGetServerStatus,
  kHealthCheck,
  kHealthWatch,
};
inline constexpr int kRpcCount = static_cast<int>(Rpc::kHealthWatch) + 1;

// A method's names, as the grpc_server_* labels give them.
struct RpcName {
  absl::string_view service;  // "perceptron.v1.PerceptronService"
  absl::string_view method;   // "Learn"
  absl::string_view type;  // unary, client_stream, server_stream, bidi_stream
};
const RpcName& NameOf(Rpc rpc);

class RpcCounts {
 public:
  static constexpr int kCodes = 17;  // grpc::StatusCode 0..16
  // Upper bounds of the handling-time buckets, seconds: 100 us (a small batch)
  // to 10 s; a last bucket takes the rest.
  static constexpr std::array<double, 16> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

  void Started() { Add(&Shard::started); }
  void Received() { Add(&Shard::received); }
  void Sent() { Add(&Shard::sent); }
  // A call ended with status code `code` after `seconds`. A number outside
  // gRPC's codes counts as UNKNOWN (an int: such a number is no StatusCode).
  void Handled(int code, double seconds);

  struct Totals {
    uint64_t started = 0, received = 0, sent = 0;
    std::array<uint64_t, kCodes> handled{};  // by code; out-of-range as UNKNOWN
    // Calls per bucket (not cumulative); the last one past kBounds.back().
    std::array<uint64_t, kBounds.size() + 1> buckets{};
    double seconds = 0;  // the sum of handling times
  };
  // The counts so far (each one exact; together a moment's view, as any
  // scrape of moving counters).
  Totals Sum() const;

 private:
  using Counter = std::atomic<uint64_t>;
  struct alignas(64) Shard {
    Counter started{0}, received{0}, sent{0}, nanos{0};
    std::array<Counter, kCodes> handled{};
    std::array<Counter, kBounds.size() + 1> buckets{};
  };
  static constexpr int kShards = 8;
  static int ShardOfThisThread();
  void Add(Counter Shard::*counter) {
    (shards_[ShardOfThisThread()].*counter)
        .fetch_add(1, std::memory_order_relaxed);
  }

  std::array<Shard, kShards> shards_;
};

class RpcMetrics {
 public:
  // Off: counts() is null for every method and nothing is recorded.
  explicit RpcMetrics(bool enabled);

  bool enabled() const { return counts_ != nullptr; }
  // The counts of `rpc`; null when off.
  RpcCounts* counts(Rpc rpc) {
    return counts_ == nullptr ? nullptr : &(*counts_)[static_cast<int>(rpc)];
  }
  const RpcCounts* counts(Rpc rpc) const {
    return const_cast<RpcMetrics*>(this)->counts(rpc);
  }

  // The grpc_server_* families (Prometheus): every method's started, received
  // and sent counts and handling-time histogram, and its handled counts by
  // code (the codes seen so far). None when off.
  std::vector<prometheus::MetricFamily> Collect() const;

  // The interceptor that records the methods their handlers do not (the
  // streams other than Learn, and grpc.health.v1); null when off.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  InterceptorFactory();

 private:
  std::unique_ptr<std::array<RpcCounts, kRpcCount>> counts_;
};

// One call's record: started when made; Handled once, at its status.
class RpcCall {
 public:
  explicit RpcCall(RpcCounts* counts)
      : counts_(counts),
        start_(counts == nullptr ? Clock::time_point() : Clock::now()) {
    if (counts_ != nullptr) counts_->Started();
  }
  void Received() {
    if (counts_ != nullptr) counts_->Received();
  }
  void Sent() {
    if (counts_ != nullptr) counts_->Sent();
  }
  void Handled(grpc::StatusCode code) {
    if (counts_ == nullptr) return;
    counts_->Handled(
        static_cast<int>(code),
        std::chrono::duration<double>(Clock::now() - start_).count());
  }

 private:
  using Clock = std::chrono::steady_clock;
  RpcCounts* counts_;
  Clock::time_point start_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_RPC_RPC_METRICS_H_
