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
// outcome), reads the rest without answering them, and ends the stream OK.
// GetModel is left unimplemented: the session then sends items, not columns.
class CutShort final : public v1::PerceptronService::Service {
 public:
  explicit CutShort(int answered) : answered_(answered) {}

  grpc::Status Learn(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::LearnResponse, v1::LearnRequest>* stream)
      override {
    v1::LearnRequest request;
    for (int n = 0; stream->Read(&request); ++n) {
      if (n >= answered_) continue;
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
};

struct Served {
  explicit Served(int answered) : service(answered) {
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

// Ten labeled examples in batches of four: three requests.
absl::StatusOr<SessionSummary> LearnTen(Client& client) {
  SessionOptions options;
  options.batch_size = 4;
  std::unique_ptr<LearnSession> session =
      client.OpenLearnSession("model", options);
  Example e;
  e.values = {1.0, -2.0};
  e.label = 1;
  for (int i = 0; i < 10; ++i) {
    if (absl::Status s = session->AddLabeled(e); !s.ok()) return s;
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

}  // namespace
}  // namespace perceptron::client
