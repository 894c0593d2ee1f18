#include "server/rpc/rpc_metrics.h"

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::server {
namespace {

TEST(RpcMetricsTest, EveryMethodOfTheServiceHasItsNameAndType) {
  const google::protobuf::ServiceDescriptor* service =
      v1::LearnRequest::descriptor()->file()->FindServiceByName(
          "PerceptronService");
  ASSERT_NE(service, nullptr);
  std::set<std::string> named;
  for (int i = 0; i < kRpcCount; ++i) {
    const RpcName& n = NameOf(static_cast<Rpc>(i));
    EXPECT_TRUE(named.insert(absl::StrCat(n.service, "/", n.method)).second)
        << n.method << " is named twice";
  }
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* m = service->method(i);
    const char* type =
        m->client_streaming()
            ? (m->server_streaming() ? "bidi_stream" : "client_stream")
            : (m->server_streaming() ? "server_stream" : "unary");
    bool found = false;
    for (int r = 0; r < kRpcCount; ++r) {
      const RpcName& n = NameOf(static_cast<Rpc>(r));
      if (n.service == service->full_name() && n.method == m->name()) {
        found = true;
        EXPECT_EQ(n.type, type) << m->name();
      }
    }
    EXPECT_TRUE(found) << m->name() << " has no counts";
  }
  EXPECT_EQ(kRpcCount, service->method_count() + 2);  // and Health's two
}

TEST(RpcMetricsTest, CountsFromManyThreadsAddUpExactly) {
  RpcMetrics metrics(/*enabled=*/true);
  RpcCounts* counts = metrics.counts(Rpc::kLearn);
  constexpr int kThreads = 12, kCalls = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([counts, t] {
      for (int i = 0; i < kCalls; ++i) {
        RpcCall call(counts);
        call.Received();
        call.Received();
        call.Sent();
        call.Handled(t % 2 == 0 ? grpc::StatusCode::OK
                                : grpc::StatusCode::NOT_FOUND);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const RpcCounts::Totals s = counts->Sum();
  EXPECT_EQ(s.started, uint64_t{kThreads} * kCalls);
  EXPECT_EQ(s.received, 2 * uint64_t{kThreads} * kCalls);
  EXPECT_EQ(s.sent, uint64_t{kThreads} * kCalls);
  EXPECT_EQ(s.handled[grpc::StatusCode::OK], uint64_t{kThreads / 2} * kCalls);
  EXPECT_EQ(s.handled[grpc::StatusCode::NOT_FOUND],
            uint64_t{kThreads / 2} * kCalls);
  uint64_t in_buckets = 0;
  for (uint64_t b : s.buckets) in_buckets += b;
  EXPECT_EQ(in_buckets, uint64_t{kThreads} * kCalls);
  // Other methods untouched.
  EXPECT_EQ(metrics.counts(Rpc::kPredict)->Sum().started, 0u);
}

TEST(RpcMetricsTest, AHandlingTimeFallsInTheFirstBucketNotBelowIt) {
  RpcMetrics metrics(/*enabled=*/true);
  RpcCounts* counts = metrics.counts(Rpc::kGetStatus);
  counts->Handled(grpc::StatusCode::OK, 0.0001);  // on a bound: in it (le)
  counts->Handled(grpc::StatusCode::OK, 0.00010001);
  counts->Handled(grpc::StatusCode::OK, 11);  // past the last bound
  counts->Handled(99, 0.5);                   // no gRPC code: as UNKNOWN
  const RpcCounts::Totals s = counts->Sum();
  EXPECT_EQ(s.buckets[0], 1u);
  EXPECT_EQ(s.buckets[1], 1u);
  EXPECT_EQ(s.buckets[RpcCounts::kBounds.size()], 1u);
  EXPECT_EQ(s.buckets[11], 1u);  // 0.5
  EXPECT_EQ(s.handled[grpc::StatusCode::OK], 3u);
  EXPECT_EQ(s.handled[grpc::StatusCode::UNKNOWN], 1u);
  EXPECT_NEAR(s.seconds, 0.0001 + 0.00010001 + 11 + 0.5, 1e-9);
}

TEST(RpcMetricsTest, CollectGivesEveryMethodAndTheCodesSeen) {
  RpcMetrics metrics(/*enabled=*/true);
  RpcCall call(metrics.counts(Rpc::kCreateModel));
  call.Received();
  call.Handled(grpc::StatusCode::ALREADY_EXISTS);
  std::vector<prometheus::MetricFamily> families = metrics.Collect();
  std::set<std::string> names;
  for (const prometheus::MetricFamily& f : families) {
    names.insert(f.name);
    if (f.name == "grpc_server_handled_total") {
      ASSERT_EQ(f.metric.size(), 1u);  // only the code seen
      EXPECT_EQ(f.metric[0].label[0].name, "grpc_code");
      EXPECT_EQ(f.metric[0].label[0].value, "AlreadyExists");
      EXPECT_EQ(f.metric[0].label[1].value, "CreateModel");
      EXPECT_EQ(f.metric[0].counter.value, 1);
    } else {
      EXPECT_EQ(f.metric.size(), static_cast<size_t>(kRpcCount)) << f.name;
    }
    if (f.name == "grpc_server_handling_seconds") {
      for (const prometheus::ClientMetric& m : f.metric) {
        ASSERT_EQ(m.histogram.bucket.size(), RpcCounts::kBounds.size() + 1);
        EXPECT_EQ(m.histogram.bucket.back().cumulative_count,
                  m.histogram.sample_count);
      }
    }
  }
  EXPECT_EQ(names,
            (std::set<std::string>{
                "grpc_server_started_total", "grpc_server_handled_total",
                "grpc_server_msg_received_total", "grpc_server_msg_sent_total",
                "grpc_server_handling_seconds"}));
}

TEST(RpcMetricsTest, OffRecordsNothingAndCollectsNothing) {
  RpcMetrics metrics(/*enabled=*/false);
  EXPECT_EQ(metrics.counts(Rpc::kLearn), nullptr);
  EXPECT_EQ(metrics.InterceptorFactory(), nullptr);
  RpcCall call(nullptr);  // a handler's record with metrics off
  call.Received();
  call.Sent();
  call.Handled(grpc::StatusCode::OK);
  EXPECT_TRUE(metrics.Collect().empty());
}

}  // namespace
}  // namespace perceptron::server
