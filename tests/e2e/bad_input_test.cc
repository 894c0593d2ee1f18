// Bad input over the wire (docs/design.md section 6), one table: each case
// asserts the status code, that the message names the item or value, and that
// the model's weights and counters are unchanged. The server runs with small
// limits so that every limit can be hit.
#include <random>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using absl::StatusCode;
using ::testing::HasSubstr;

template <typename T>
void Put(google::protobuf::RepeatedField<T>* field,
         std::initializer_list<T> values) {
  field->Add(values.begin(), values.end());
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = *testing::ServerProcess::Start(
        {"--max_batch_items=50", "--max_pending=5", "--max_dimension=1000",
         "--max_message_bytes=1000000", "--max_train_epochs=100"});
    client_ = server_->Connect();
    channel_ = client_->channel();
    stub_ = v1::PerceptronService::NewStub(channel_);
    v1::ModelConfig c;
    c.set_dimension(3);
    c.set_gamma(0.1);
    c.add_comparator(1);
    c.add_comparator(1);
    c.add_comparator(-1);
    ASSERT_TRUE(client_->CreateModel("m", c).ok());
    // Some history, and one pending prediction (id 1) that a case reveals.
    v1::LearnRequest r;
    r.set_model_id("m");
    std::mt19937_64 rng(1);
    std::normal_distribution<double> normal;
    Dense(r.add_items()->mutable_example(), {0.5, 0.5, 0.5});
    for (int i = 0; i < 40; ++i) {
      v1::LabeledExample* l = r.add_items()->mutable_labeled();
      Dense(l->mutable_features(), {normal(rng), normal(rng), normal(rng)});
      l->set_label(i % 3 ? 1 : -1);
    }
    ASSERT_TRUE(LearnOnce(r).status.ok());
  }

  static void Dense(v1::Features* f, std::vector<double> v) {
    f->mutable_dense()->mutable_values()->Add(v.begin(), v.end());
  }

  // The model's weights and counters, to compare before and after.
  std::string State(const std::string& id = "m") {
    absl::StatusOr<v1::Weights> w = client_->GetWeights(id);
    absl::StatusOr<v1::ModelStatus> s = client_->GetStatus(id);
    EXPECT_TRUE(w.ok() && s.ok());
    return w->SerializeAsString() + testing::StatsBits(s->stats());
  }

  struct Answer {
    grpc::Status status;  // the stream's
    std::vector<v1::LearnResponse> responses;
  };
  // Sends requests on one Learn stream and collects the answers.
  Answer LearnOnce(const std::vector<v1::LearnRequest>& requests) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    auto stream = stub_->Learn(&context);
    for (const auto& r : requests) stream->Write(r);
    stream->WritesDone();
    Answer a;
    v1::LearnResponse resp;
    while (stream->Read(&resp)) a.responses.push_back(resp);
    a.status = stream->Finish();
    return a;
  }
  Answer LearnOnce(const v1::LearnRequest& r) {
    return LearnOnce(std::vector<v1::LearnRequest>{r});
  }

  // The first item's error in a one-request stream on "m", as a status.
  absl::Status ItemError(const std::function<void(v1::LearnItem*)>& make) {
    v1::LearnRequest r;
    r.set_model_id("m");
    make(r.add_items());
    Answer a = LearnOnce(r);
    if (!a.status.ok()) return client::FromGrpc(a.status);
    if (a.responses.size() != 1 || a.responses[0].results_size() != 1) {
      return absl::InternalError("unexpected answer");
    }
    const v1::ItemResult& res = a.responses[0].results(0);
    if (!res.has_error()) return absl::OkStatus();
    return absl::Status(static_cast<absl::StatusCode>(res.error().code()),
                        res.error().message());
  }

  std::unique_ptr<testing::ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PerceptronService::Stub> stub_;
};

struct Case {
  std::string name;
  std::function<absl::Status()> run;
  StatusCode code;
  std::string message;
};

TEST_F(BadInputTest, EveryCaseIsRefusedWithItsCodeAndChangesNothing) {
  auto config = [](std::function<void(v1::ModelConfig&)> edit) {
    v1::ModelConfig c;
    c.set_dimension(3);
    edit(c);
    return c;
  };
  auto create = [this](const std::string& id, const v1::ModelConfig& c) {
    return client_->CreateModel(id, c).status();
  };
  auto predict = [this](std::function<void(v1::PredictRequest&)> fill) {
    grpc::ClientContext ctx;
    v1::PredictRequest req;
    req.set_model_id("m");
    fill(req);
    v1::PredictResponse resp;
    return client::FromGrpc(stub_->Predict(&ctx, req, &resp));
  };
  auto reveal = [this](uint64_t id, int label) -> absl::Status {
    absl::StatusOr<v1::RevealResponse> r = client_->Reveal("m", {{id, label}});
    if (!r.ok()) return r.status();
    const v1::ItemResult& res = r->results(0);
    if (!res.has_error()) return absl::OkStatus();
    return absl::Status(static_cast<StatusCode>(res.error().code()),
                        res.error().message());
  };
  auto fatal = [this](std::vector<v1::LearnRequest> rs) {
    return client::FromGrpc(LearnOnce(rs).status);
  };
  auto request = [](const std::string& model, int items) {
    v1::LearnRequest r;
    r.set_model_id(model);
    for (int i = 0; i < items; ++i) {
      v1::LabeledExample* l = r.add_items()->mutable_labeled();
      Put(l->mutable_features()->mutable_dense()->mutable_values(),
          {1.0, 2.0, 3.0});
      l->set_label(1);
    }
    return r;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();

  const std::vector<Case> cases = {
      // CreateModel: ids and configs.
      {"duplicate id", [&] { return create("m", config([](auto&) {})); },
       StatusCode::kAlreadyExists, "model m already exists"},
      {"empty id", [&] { return create("", config([](auto&) {})); },
       StatusCode::kInvalidArgument, "model_id is empty"},
      {"id with a space", [&] { return create("a b", config([](auto&) {})); },
       StatusCode::kInvalidArgument, "character 0x20 at position 1"},
      {"id too long",
       [&] { return create(std::string(129, 'x'), config([](auto&) {})); },
       StatusCode::kInvalidArgument, "129 characters; at most 128"},
      {"dimension 0",
       [&] { return create("x", config([](auto& c) { c.set_dimension(0); })); },
       StatusCode::kInvalidArgument, "dimension 0 is out of range"},
      {"dimension over the limit",
       [&] {
         return create("x", config([](auto& c) { c.set_dimension(1001); }));
       },
       StatusCode::kInvalidArgument,
       "dimension 1001 is over the server's limit 1000"},
      {"negative gamma",
       [&] { return create("x", config([](auto& c) { c.set_gamma(-1); })); },
       StatusCode::kInvalidArgument,
       "gamma -1 is out of range [1e-100, 1e+100]"},
      {"NaN eta",
       [&] { return create("x", config([&](auto& c) { c.set_eta(nan); })); },
       StatusCode::kInvalidArgument, "eta nan"},
      {"comparator of the wrong length",
       [&] {
         return create("x", config([](auto& c) {
                         c.set_gamma(0.1);
                         c.add_comparator(1);
                       }));
       },
       StatusCode::kInvalidArgument,
       "comparator has 1 values; expected 3 or 4"},
      {"zero comparator",
       [&] {
         return create("x", config([](auto& c) {
                         c.set_gamma(0.1);
                         Put(c.mutable_comparator(), {0.0, 0.0, 0.0});
                       }));
       },
       StatusCode::kInvalidArgument, "comparator is zero"},
      {"margin rule without gamma",
       [&] {
         return create("x",
                       config([](auto& c) { c.set_algorithm(v1::MARGIN); }));
       },
       StatusCode::kInvalidArgument, "gamma is required by the margin rule"},
      {"unknown algorithm",
       [&] {
         return create("x", config([](auto& c) {
                         c.set_algorithm(static_cast<v1::Algorithm>(42));
                       }));
       },
       StatusCode::kInvalidArgument, "algorithm 42 is unknown"},
      // Unknown models.
      {"status of an unknown model",
       [&] { return client_->GetStatus("nosuch").status(); },
       StatusCode::kNotFound, "model nosuch not found"},
      {"delete an unknown model",
       [&] { return client_->DeleteModel("nosuch"); }, StatusCode::kNotFound,
       "model nosuch not found"},
      // Predict.
      {"predict NaN",
       [&] {
         return predict([&](auto& r) {
           Dense(r.add_examples(), {1, 2, 3});
           Dense(r.add_examples(), {1, nan, 3});
         });
       },
       StatusCode::kInvalidArgument,
       "item 1: features: value at position 1 is nan"},
      {"predict wrong dimension",
       [&] {
         return predict([](auto& r) { Dense(r.add_examples(), {1, 2}); });
       },
       StatusCode::kInvalidArgument,
       "item 0: features: dense vector has 2 values"},
      {"predict features unset",
       [&] { return predict([](auto& r) { r.add_examples(); }); },
       StatusCode::kInvalidArgument,
       "item 0: features: none of dense, sparse and named is set"},
      {"predict over the batch limit",
       [&] {
         return predict([](auto& r) {
           for (int i = 0; i < 51; ++i) Dense(r.add_examples(), {1, 2, 3});
         });
       },
       StatusCode::kResourceExhausted,
       "51 examples in one request is over the limit of 50"},
      {"oversized message",
       [&] {
         return predict([](auto& r) {
           r.add_examples()->mutable_dense()->mutable_values()->Resize(200000,
                                                                       1.0);
         });
       },
       StatusCode::kResourceExhausted, ""},
      // Train.
      {"train with label 0",
       [&] {
         client::Example ok, bad;
         ok.values = bad.values = {1, 2, 3};
         ok.label = 1;
         bad.label = 0;
         return client_->Train("m", {ok, bad}, 5).status();
       },
       StatusCode::kInvalidArgument, "example 1: label 0 must be -1 or +1"},
      {"train over the epoch limit",
       [&] {
         client::Example ok;
         ok.values = {1, 2, 3};
         ok.label = 1;
         return client_->Train("m", {ok}, 101).status();
       },
       StatusCode::kInvalidArgument,
       "max_epochs 101 is over the server's limit 100"},
      // Reveal.
      {"reveal an id never issued", [&] { return reveal(777, 1); },
       StatusCode::kNotFound, "item 0: prediction 777 was never issued"},
      {"reveal with label 2", [&] { return reveal(1, 2); },
       StatusCode::kInvalidArgument, "item 0: label 2 must be -1 or +1"},
      // Learn items.
      {"learn Inf",
       [&] {
         return ItemError([&](auto* i) {
           Dense(i->mutable_example(), {inf, 0, 0});
         });
       },
       StatusCode::kInvalidArgument,
       "item 0: features: value at position 0 is inf"},
      {"learn index out of range",
       [&] {
         return ItemError([](auto* i) {
           auto* s = i->mutable_example()->mutable_sparse();
           s->add_indices(9);
           s->add_values(1);
         });
       },
       StatusCode::kInvalidArgument,
       "item 0: features: index 9 at position 0 is out of range"},
      {"learn repeated index",
       [&] {
         return ItemError([](auto* i) {
           auto* s = i->mutable_example()->mutable_sparse();
           Put<uint32_t>(s->mutable_indices(), {2, 2});
           Put(s->mutable_values(), {1.0, 1.0});
         });
       },
       StatusCode::kInvalidArgument,
       "item 0: features: index 2 repeated at positions 0 and 1"},
      {"learn indices and values of different counts",
       [&] {
         return ItemError([](auto* i) {
           auto* s = i->mutable_example()->mutable_sparse();
           Put<uint32_t>(s->mutable_indices(), {0, 1});
           s->add_values(1);
         });
       },
       StatusCode::kInvalidArgument,
       "item 0: features: sparse vector has 2 indices but 1"},
      {"learn a labeled example with label 5",
       [&] {
         return ItemError([&](auto* i) {
           Dense(i->mutable_labeled()->mutable_features(), {1, 2, 3});
           i->mutable_labeled()->set_label(5);
         });
       },
       StatusCode::kInvalidArgument, "item 0: label 5 must be -1 or +1"},
      {"learn an empty item", [&] { return ItemError([](auto*) {}); },
       StatusCode::kInvalidArgument, "item 0: the item is empty"},
      {"learn a reveal of an unknown id",
       [&] {
         return ItemError([](auto* i) {
           i->mutable_reveal()->set_prediction_id(4242);
           i->mutable_reveal()->set_label(1);
         });
       },
       StatusCode::kNotFound, "item 0: prediction 4242 was never issued"},
      // Learn streams that end.
      {"first request names no model", [&] { return fatal({request("", 1)}); },
       StatusCode::kInvalidArgument, "must name the model"},
      {"stream on an unknown model",
       [&] { return fatal({request("nosuch", 1)}); }, StatusCode::kNotFound,
       "model nosuch not found"},
      {"batch over the limit", [&] { return fatal({request("m", 51)}); },
       StatusCode::kResourceExhausted,
       "a batch of 51 items is over the limit of 50"},
      {"a later request names another model",
       [&] {
         return fatal({request("m", 0), request("other", 0)});
       },
       StatusCode::kInvalidArgument,
       "this stream is for model m; a request named other"},
  };
  ASSERT_GE(cases.size(), 30u);
  const std::string before = State();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s = c.run();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(State(), before) << "the model changed";
  }
  // The server still serves.
  EXPECT_TRUE(client_->CheckHealth(absl::Seconds(10)).ok());
  std::cout << "[ bad input ] " << cases.size()
            << " cases, each refused with nothing changed\n";
}

TEST_F(BadInputTest, UndecodableBytesAreRefusedAndTheServerGoesOn) {
  grpc::GenericStub generic(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  const char garbage[] = "\xff\xff\xff\xff\xff not a protobuf message";
  grpc::Slice slice(garbage, sizeof garbage);
  grpc::ByteBuffer request(&slice, 1), response;
  absl::Notification done;
  grpc::Status status;
  const std::string before = State();
  generic.UnaryCall(&ctx, "/perceptron.v1.PerceptronService/Predict",
                    grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) {
                      status = s;
                      done.Notify();
                    });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(State(), before);
  EXPECT_TRUE(client_->GetStatus("m").ok());
}

TEST_F(BadInputTest, PendingLimitAndAlreadyRevealedPredictions) {
  // The pending limit: model "m" holds 1 pending; 4 more fit, the 5th item is
  // refused.
  v1::LearnRequest r;
  r.set_model_id("m");
  for (int i = 0; i < 5; ++i)
    Dense(r.add_items()->mutable_example(), {1, 1, 1});
  Answer a = LearnOnce(r);
  ASSERT_TRUE(a.status.ok());
  ASSERT_EQ(a.responses[0].results_size(), 5);
  EXPECT_TRUE(a.responses[0].results(3).has_prediction());
  EXPECT_EQ(a.responses[0].results(4).error().code(),
            static_cast<int>(StatusCode::kResourceExhausted));
  EXPECT_THAT(
      a.responses[0].results(4).error().message(),
      HasSubstr(
          "item 4: the model holds its maximum of 5 pending predictions"));
  // Already revealed.
  ASSERT_TRUE(client_->Reveal("m", {{2, 1}})->results(0).has_outcome());
  std::string before = State();
  absl::StatusOr<v1::RevealResponse> again = client_->Reveal("m", {{2, 1}});
  EXPECT_EQ(again->results(0).error().code(),
            static_cast<int>(StatusCode::kNotFound));
  EXPECT_THAT(again->results(0).error().message(),
              HasSubstr("already revealed or has expired"));
  EXPECT_EQ(State(), before);
}

// Expired predictions, on a server whose time-to-live is 200 ms (the other
// tests' server keeps them an hour, so that none expires while they run).
TEST_F(BadInputTest, AnExpiredPredictionCannotBeRevealed) {
  auto fast = *testing::ServerProcess::Start(
      {"--pending_ttl=200ms", "--expiry_interval=20ms"});
  auto client = fast->Connect();
  v1::ModelConfig c;
  c.set_dimension(3);
  ASSERT_TRUE(client->CreateModel("m", c).ok());
  v1::LearnRequest r;
  r.set_model_id("m");
  Dense(r.add_items()->mutable_example(), {1, 1, 1});
  {
    grpc::ClientContext context;
    auto stub = v1::PerceptronService::NewStub(client->channel());
    auto stream = stub->Learn(&context);
    ASSERT_TRUE(stream->Write(r));
    stream->WritesDone();
    v1::LearnResponse response;
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_TRUE(response.results(0).has_prediction());
    ASSERT_TRUE(stream->Finish().ok());
  }
  // Wait, by watching, until the server counts it expired.
  ASSERT_TRUE(
      client
          ->Watch(
              "m", absl::Milliseconds(10),
              [](const v1::ModelStatus& s) { return s.stats().pending() != 0; },
              absl::Seconds(30))
          .ok());
  const v1::ModelStatus before = *client->GetStatus("m");
  EXPECT_EQ(before.stats().expired(), 1u);
  absl::StatusOr<v1::RevealResponse> late = client->Reveal("m", {{1, 1}});
  EXPECT_EQ(late->results(0).error().code(),
            static_cast<int>(StatusCode::kNotFound));
  EXPECT_THAT(late->results(0).error().message(),
              HasSubstr("prediction 1 was already revealed or has expired"));
  EXPECT_EQ(testing::StatsBits(client->GetStatus("m")->stats()),
            testing::StatsBits(before.stats()));
}

TEST_F(BadInputTest, AClientThatVanishesMidStreamLeavesWholeBatches) {
  const uint64_t examples = client_->GetStatus("m")->stats().examples();
  {
    grpc::ClientContext context;
    auto stream = stub_->Learn(&context);
    v1::LearnRequest r;
    r.set_model_id("m");
    for (int i = 0; i < 50; ++i) {
      v1::LabeledExample* l = r.add_items()->mutable_labeled();
      Dense(l->mutable_features(), {1.0 * i, 1, -1});
      l->set_label(i % 2 ? 1 : -1);
    }
    stream->Write(r);
    context.TryCancel();  // gone, before reading any answer
  }
  // The batch was applied whole or not at all, and the server serves on.
  const uint64_t after = client_->GetStatus("m")->stats().examples();
  EXPECT_TRUE(after == examples || after == examples + 50) << after - examples;
  EXPECT_TRUE(ItemError([](v1::LearnItem* i) {
                Dense(i->mutable_labeled()->mutable_features(), {1, 2, 3});
                i->mutable_labeled()->set_label(1);
              }).ok());
}

TEST_F(BadInputTest, DeletingAModelUnderAnOpenStreamEndsItWithNotFound) {
  v1::ModelConfig c;
  c.set_dimension(3);
  ASSERT_TRUE(client_->CreateModel("doomed", c).ok());
  grpc::ClientContext context;
  auto stream = stub_->Learn(&context);
  v1::LearnRequest r;
  r.set_model_id("doomed");
  ASSERT_TRUE(stream->Write(r));
  v1::LearnResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(client_->DeleteModel("doomed").ok());
  v1::LearnRequest next;
  v1::LabeledExample* l = next.add_items()->mutable_labeled();
  Dense(l->mutable_features(), {1, 2, 3});
  l->set_label(1);
  stream->Write(next);
  stream->WritesDone();
  while (stream->Read(&resp)) {
  }
  const grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("model doomed was deleted"));
}

}  // namespace
}  // namespace perceptron
