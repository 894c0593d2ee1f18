// The C++ client's Learn session against a gRPC server of the test's own,
// which answers as a proxy that cuts a stream short might.
#include "client/learn_session.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::client {
namespace {

using ::testing::HasSubstr;

// Learn answers the first `answered` requests of a stream (each item an
// outcome), reads the rest without answering them (or, `at_once`, does not
// wait for them), and ends the stream OK. GetModel is left unimplemented:
// the session then sends items, not columns.
class CutShort final : public v1::PerceptronService::Service {
 public:
  CutShort(int answered, bool at_once)
      : answered_(answered), at_once_(at_once) {}

  grpc::Status Learn(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::LearnResponse, v1::LearnRequest>* stream)
      override {
    v1::LearnRequest request;
    for (int n = 0; stream->Read(&request); ++n) {
      if (n >= answered_) {
        if (at_once_) break;
        continue;
      }
      v1::LearnResponse response;
      for (int i = 0; i < request.items_size(); ++i) {
        v1::Outcome* o = response.add_results()->mutable_outcome();
        o->set_label(1);
        o->set_score(1.0);
      }
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

 private:
  const int answered_;
  const bool at_once_;
};

struct Served {
  explicit Served(int answered, bool at_once = false)
      : service(answered, at_once) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~Served() {
    if (server != nullptr) server->Shutdown();
  }
  std::unique_ptr<Client> Connect() const {
    return std::make_unique<Client>(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                            grpc::InsecureChannelCredentials()),
        ClientOptions());
  }

  CutShort service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

// Ten labeled examples in batches of four: three requests, at most
// `in_flight` of them unanswered at a time.
absl::StatusOr<SessionSummary> LearnTen(Client& client, size_t in_flight = 64) {
  SessionOptions options;
  options.batch_size = 4;
  options.max_in_flight = in_flight;
  std::unique_ptr<LearnSession> session =
      client.OpenLearnSession("model", options);
  Example e;
  e.values = {1.0, -2.0};
  e.label = 1;
  // A failed add (the stream has ended) leaves Finish to say why.
  for (int i = 0; i < 10 && session->AddLabeled(e).ok(); ++i) {
  }
  return session->Finish();
}

TEST(LearnSessionTest, AStreamEndedOkWithEveryRequestAnsweredIsAResult) {
  Served served(/*answered=*/1000);
  ASSERT_NE(served.server, nullptr);
  std::unique_ptr<Client> client = served.Connect();
  absl::StatusOr<SessionSummary> summary = LearnTen(*client);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->requests, 3u);
  EXPECT_EQ(summary->items, 10u);
}

TEST(LearnSessionTest, AStreamEndedOkWithRequestsUnansweredIsUnavailable) {
  Served served(/*answered=*/1);
  ASSERT_NE(served.server, nullptr);
  std::unique_ptr<Client> client = served.Connect();
  absl::StatusOr<SessionSummary> summary = LearnTen(*client);
  ASSERT_FALSE(summary.ok()) << "answered " << summary->requests
                             << " requests of 3, and called that a result";
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(summary.status().message(),
              HasSubstr("ended without an error but with 2 of its requests "
                        "unanswered"));
}

// One request in flight at a time: the second is sent and unanswered when
// the stream ends, and the third cannot be sent; the session says the stream
// broke (UNAVAILABLE, which retry_for resumes), not that a write failed.
TEST(LearnSessionTest, AStreamEndedOkBeforeItsLastRequestWasSentIsUnavailable) {
  Served served(/*answered=*/1, /*at_once=*/true);
  ASSERT_NE(served.server, nullptr);
  std::unique_ptr<Client> client = served.Connect();
  absl::StatusOr<SessionSummary> summary = LearnTen(*client, /*in_flight=*/1);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kUnavailable)
      << summary.status();
  EXPECT_THAT(summary.status().message(),
              HasSubstr("the Learn stream ended without an error"));
}

}  // namespace
}  // namespace perceptron::client
