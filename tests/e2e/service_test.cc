// perceptrond over the wire: delayed reveals from other connections, concurrent
// streams, watch, health, every error code with the model unchanged, deletion
// and shutdown of open streams.
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using client::Example;
using client::LearnSession;
using client::SessionOptions;
using ::testing::HasSubstr;
using testing::ServerProcess;

std::unique_ptr<ServerProcess> StartServer(
    const std::vector<std::string>& flags = {}) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(flags);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

Example RandomExample(std::mt19937_64& rng, uint32_t d, bool with_label) {
  std::normal_distribution<double> normal;
  Example e;
  double s = 0;
  for (uint32_t i = 0; i < d; ++i) {
    e.values.push_back(normal(rng));
    s += (i % 2 ? 1 : -1) * e.values.back();
  }
  if (with_label) e.label = (s > 0) == (rng() % 10 != 0) ? 1 : -1;
  return e;
}

FeatureView View(const Example& e) {
  return e.sparse ? FeatureView::Sparse(e.indices, e.values)
                  : FeatureView::Dense(e.values);
}

SessionOptions Batches(size_t n) {
  SessionOptions o;
  o.batch_size = n;
  return o;
}

v1::ModelConfig Config(uint32_t d) {
  v1::ModelConfig c;
  c.set_dimension(d);
  return c;
}

std::string WeightBits(client::Client& c, const std::string& id) {
  absl::StatusOr<v1::Weights> w = c.GetWeights(id);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return "";
  return std::string(reinterpret_cast<const char*>(w->values().data()),
                     w->values_size() * sizeof(double));
}

std::string CoreBits(const Model& m) {
  return std::string(reinterpret_cast<const char*>(m.weights().data()),
                     m.weights().size() * sizeof(double));
}

TEST(ServiceTest, HealthAnswersServing) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->Connect()->CheckHealth(absl::Seconds(10)).ok());
}

TEST(ServiceTest, DelayedRevealsFromOtherConnectionsMatchTheCoreLibrary) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto a = server->Connect(), b = server->Connect(), c = server->Connect();
  ASSERT_TRUE(a->CreateModel("d", Config(8)).ok());
  ModelConfig config;
  config.dimension = 8;
  auto core = *Model::Create(config);

  std::mt19937_64 rng(11);
  std::vector<Example> issued;
  for (int i = 0; i < 200; ++i) issued.push_back(RandomExample(rng, 8, true));
  std::vector<Example> labeled;
  for (int i = 0; i < 5000; ++i) labeled.push_back(RandomExample(rng, 8, true));

  // Connection A: 200 predictions, then 5000 labeled examples, in one stream.
  std::vector<v1::PredictionResult> predictions;
  SessionOptions so;
  so.on_response = [&](const v1::LearnResponse& r) {
    for (const v1::ItemResult& item : r.results()) {
      if (item.has_prediction()) predictions.push_back(item.prediction());
    }
  };
  std::unique_ptr<LearnSession> s = a->OpenLearnSession("d", so);
  for (const Example& e : issued) ASSERT_TRUE(s->AddExample(e).ok());
  for (const Example& e : labeled) ASSERT_TRUE(s->AddLabeled(e).ok());
  absl::StatusOr<client::SessionSummary> summary = s->Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(predictions.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<Issued> ci = core->Issue(View(issued[i]), 0);
    ASSERT_EQ(predictions[i].prediction_id(), ci->prediction_id);
    ASSERT_EQ(predictions[i].score(), ci->score);
  }
  for (const Example& e : labeled)
    ASSERT_TRUE(core->Learn(View(e), *e.label).ok());

  // Reveal in a shuffled order: half by unary Reveal on connection B, half
  // through a Learn stream on connection C.
  std::vector<int> order(200);
  for (int i = 0; i < 200; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::pair<uint64_t, int>> first;
  for (int k = 0; k < 100; ++k) {
    first.emplace_back(predictions[order[k]].prediction_id(),
                       *issued[order[k]].label);
  }
  absl::StatusOr<v1::RevealResponse> revealed = b->Reveal("d", first);
  ASSERT_TRUE(revealed.ok()) << revealed.status();
  int mistakes_judged_on_issued_score = 0;
  for (int k = 0; k < 100; ++k) {
    const v1::ItemResult& r = revealed->results(k);
    ASSERT_TRUE(r.has_outcome()) << r.error().message();
    absl::StatusOr<Outcome> o = core->Reveal(first[k].first, first[k].second);
    EXPECT_EQ(r.outcome().mistake(), o->mistake);
    EXPECT_EQ(r.outcome().updated(), o->updated);
    EXPECT_EQ(r.outcome().score(), predictions[order[k]].score());
    EXPECT_EQ(r.outcome().mistake(),
              first[k].second * predictions[order[k]].score() <= 0);
    mistakes_judged_on_issued_score += r.outcome().mistake();
  }
  EXPECT_GT(mistakes_judged_on_issued_score, 0);

  std::vector<v1::Outcome> outcomes;
  SessionOptions sc;
  sc.batch_size = 9;
  sc.on_response = [&](const v1::LearnResponse& r) {
    for (const v1::ItemResult& item : r.results()) {
      EXPECT_TRUE(item.has_outcome()) << item.error().message();
      outcomes.push_back(item.outcome());
    }
  };
  std::unique_ptr<LearnSession> sess = c->OpenLearnSession("d", sc);
  for (int k = 100; k < 200; ++k) {
    ASSERT_TRUE(sess->AddReveal(predictions[order[k]].prediction_id(),
                                *issued[order[k]].label)
                    .ok());
  }
  ASSERT_TRUE(sess->Finish().ok());
  ASSERT_EQ(outcomes.size(), 100u);
  for (int k = 100; k < 200; ++k) {
    absl::StatusOr<Outcome> o = core->Reveal(
        predictions[order[k]].prediction_id(), *issued[order[k]].label);
    EXPECT_EQ(outcomes[k - 100].mistake(), o->mistake);
    EXPECT_EQ(outcomes[k - 100].updated(), o->updated);
  }

  // Same weights and counters as the core library, bit for bit.
  EXPECT_EQ(WeightBits(*a, "d"), CoreBits(*core));
  absl::StatusOr<v1::ModelStatus> st = a->GetStatus("d");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->stats().examples(), core->counters().examples);
  EXPECT_EQ(st->stats().mistakes(), core->counters().mistakes);
  EXPECT_EQ(st->stats().updates(), core->counters().updates);
  EXPECT_EQ(st->stats().predictions(), 200u);
  EXPECT_EQ(st->stats().pending(), 0u);

  // Revealing again: NOT_FOUND for that item, nothing changed.
  absl::StatusOr<v1::RevealResponse> again = b->Reveal("d", {first[0]});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->results(0).error().code(),
            static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_THAT(again->results(0).error().message(),
              HasSubstr("already revealed or has expired"));
  EXPECT_EQ(WeightBits(*a, "d"), CoreBits(*core));
}

TEST(ServiceTest, ConcurrentStreamsLoseAndDoubleCountNothing) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto admin = server->Connect();
  constexpr int kShared = 3, kAlone = 3, kPerShared = 3, kExamples = 4000,
                kEvery = 25;
  constexpr int kIssued =
      kExamples / kEvery;  // one prediction issued every kEvery examples
  for (int m = 0; m < kShared + kAlone; ++m) {
    ASSERT_TRUE(admin->CreateModel(absl::StrCat("m", m), Config(16)).ok());
  }
  // Streams 0..8 go three to each shared model; streams 9..11 each have a model
  // alone.
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(kShared * kPerShared + kAlone);
  for (int t = 0; t < kShared * kPerShared + kAlone; ++t) {
    threads.emplace_back([&, t] {
      const std::string model = t < kShared * kPerShared
                                    ? absl::StrCat("m", t % kShared)
                                    : absl::StrCat("m", kShared + t - 9);
      auto c = server->Connect();
      std::mt19937_64 rng(100 + t);
      SessionOptions so;
      so.batch_size = 32 + t;
      so.max_in_flight = 8;
      std::unique_ptr<LearnSession> s = c->OpenLearnSession(model, so);
      for (int i = 0; i < kExamples; ++i) {
        if (!s->AddLabeled(RandomExample(rng, 16, true)).ok()) break;
        if (i % kEvery == 0) {
          if (!s->AddExample(RandomExample(rng, 16, false)).ok()) break;
        }
      }
      absl::StatusOr<client::SessionSummary> sum = s->Finish();
      results[t] = sum.ok() ? (sum->item_errors == 0
                                   ? absl::OkStatus()
                                   : absl::InternalError(sum->first_error))
                            : sum.status();
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& r : results) ASSERT_TRUE(r.ok()) << r;
  for (int m = 0; m < kShared + kAlone; ++m) {
    const int streams = m < kShared ? kPerShared : 1;
    absl::StatusOr<v1::ModelStatus> st = admin->GetStatus(absl::StrCat("m", m));
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->stats().examples(),
              static_cast<uint64_t>(streams * kExamples))
        << m;
    EXPECT_EQ(st->stats().predictions(),
              static_cast<uint64_t>(streams * kIssued))
        << m;
    EXPECT_EQ(st->stats().pending(), static_cast<uint64_t>(streams * kIssued))
        << m;
    EXPECT_LE(st->stats().mistakes(), st->stats().examples());
  }
  // A model with one stream saw its examples in order: it equals the core
  // library's run.
  for (int t = 9; t < 12; ++t) {
    ModelConfig config;
    config.dimension = 16;
    auto core = *Model::Create(config);
    std::mt19937_64 rng(100 + t);
    for (int i = 0; i < kExamples; ++i) {
      const Example e = RandomExample(rng, 16, true);
      ASSERT_TRUE(core->Learn(View(e), *e.label).ok());
      if (i % kEvery == 0) {
        ASSERT_TRUE(core->Issue(View(RandomExample(rng, 16, false)), 0).ok());
      }
    }
    EXPECT_EQ(WeightBits(*admin, absl::StrCat("m", kShared + t - 9)),
              CoreBits(*core));
  }
}

TEST(ServiceTest, WatchStatusPushesChangesWhileAStreamLearns) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  ASSERT_TRUE(c->CreateModel("w", Config(5)).ok());
  absl::Mutex mu;
  std::vector<uint64_t> seen;
  absl::Status watch_status;
  std::thread watcher([&] {
    watch_status = server->Connect()->Watch(
        "w", absl::Milliseconds(10),
        [&](const v1::ModelStatus& st) {
          absl::MutexLock lock(&mu);
          seen.push_back(st.stats().examples());
          return st.stats().examples() < 6000;
        },
        absl::Seconds(60));
  });
  auto reached = [&](uint64_t n) {
    absl::MutexLock lock(&mu);
    auto at_least = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return !seen.empty() && seen.back() >= n;
    };
    return mu.AwaitWithTimeout(absl::Condition(&at_least), absl::Seconds(30));
  };
  ASSERT_TRUE(reached(0));  // the first status comes at once
  std::mt19937_64 rng(3);
  std::unique_ptr<LearnSession> s = c->OpenLearnSession("w", {});
  // Three phases in one open stream; after each, the watcher must see the new
  // count.
  for (int phase = 1; phase <= 3; ++phase) {
    for (int i = 0; i < 2000; ++i)
      ASSERT_TRUE(s->AddLabeled(RandomExample(rng, 5, true)).ok());
    ASSERT_TRUE(s->Flush().ok());
    EXPECT_TRUE(reached(2000 * phase)) << "phase " << phase;
  }
  ASSERT_TRUE(s->Finish().ok());
  watcher.join();
  EXPECT_TRUE(watch_status.ok()) << watch_status;
  absl::MutexLock lock(&mu);
  EXPECT_GE(seen.size(), 4u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 6000u);
}

// Per-item errors and fatal stream errors, each leaving the model exactly as it
// was.
TEST(ServiceTest, EveryErrorCodeOverTheWireLeavesTheModelUnchanged) {
  auto server = StartServer({"--max_batch_items=50", "--max_pending=3",
                             "--max_message_bytes=100000"});
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  v1::ModelConfig config = Config(3);
  config.set_gamma(0.1);
  config.add_comparator(1);
  config.add_comparator(1);
  config.add_comparator(1);
  ASSERT_TRUE(c->CreateModel("e", config).ok());
  std::mt19937_64 rng(5);
  {
    std::unique_ptr<LearnSession> s = c->OpenLearnSession("e", Batches(50));
    for (int i = 0; i < 100; ++i)
      ASSERT_TRUE(s->AddLabeled(RandomExample(rng, 3, true)).ok());
    ASSERT_TRUE(s->AddExample(RandomExample(rng, 3, false))
                    .ok());  // one pending prediction
    ASSERT_TRUE(s->Finish().ok());
  }
  const std::string weights = WeightBits(*c, "e");
  const v1::ModelStatus before = *c->GetStatus("e");
  auto unchanged = [&](const std::string& what) {
    EXPECT_EQ(WeightBits(*c, "e"), weights) << what;
    v1::ModelStatus now = *c->GetStatus("e");
    EXPECT_EQ(testing::StatsBits(now.stats()),
              testing::StatsBits(before.stats()))
        << what;
  };
  auto code = [](const absl::Status& s) { return s.code(); };

  // Unary errors.
  EXPECT_EQ(code(c->CreateModel("e", Config(3)).status()),
            absl::StatusCode::kAlreadyExists);
  absl::Status s = c->CreateModel("bad id!", Config(3)).status();
  EXPECT_EQ(code(s), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("model_id has character 0x20 at position 3"));
  EXPECT_EQ(code(c->CreateModel("z", Config(0)).status()),
            absl::StatusCode::kInvalidArgument);
  v1::ModelConfig wrong = Config(3);
  wrong.set_gamma(0.1);
  wrong.add_comparator(1);
  s = c->CreateModel("z", wrong).status();
  EXPECT_EQ(code(s), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("comparator has 1 values; expected 3 or 4"));
  EXPECT_EQ(code(c->GetStatus("nosuch").status()), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(c->GetWeights("nosuch").status()),
            absl::StatusCode::kNotFound);
  Example nan_example;
  nan_example.values = {1, NAN, 0};
  s = c->Predict("e", {RandomExample(rng, 3, false), nan_example}).status();
  EXPECT_EQ(code(s), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("item 1: features: value at position 1 is nan"));
  Example labeled = RandomExample(rng, 3, true);
  Example bad_label = labeled;
  bad_label.label = 0;
  s = c->Train("e", {labeled, labeled, bad_label}, 5).status();
  EXPECT_EQ(code(s), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("example 2: label 0 must be -1 or +1"));
  // Over the message size limit: gRPC refuses it before the service sees it.
  Example huge;
  huge.values.assign(20000, 1.0);
  EXPECT_EQ(code(c->Predict("e", {huge}).status()),
            absl::StatusCode::kResourceExhausted);
  unchanged("unary errors");

  // Per-item errors in a Learn stream: each names its item; the stream goes on.
  std::vector<v1::ItemResult> results;
  SessionOptions so;
  so.batch_size = 1000;
  so.on_response = [&](const v1::LearnResponse& r) {
    results.assign(r.results().begin(), r.results().end());
  };
  std::unique_ptr<LearnSession> session = c->OpenLearnSession("e", so);
  Example short_x;
  short_x.values = {1, 2};
  Example out_of_range;
  out_of_range.sparse = true;
  out_of_range.indices = {0, 3};
  out_of_range.values = {1, 1};
  Example duplicate = out_of_range;
  duplicate.indices = {1, 1};
  Example inf_x;
  inf_x.values = {INFINITY, 0, 0};
  Example zero;
  zero.values = {0, 0, 0};
  Example labeled2 = RandomExample(rng, 3, false);
  labeled2.label = 3;
  ASSERT_TRUE(session->AddExample(nan_example).ok());
  ASSERT_TRUE(session->AddExample(short_x).ok());
  ASSERT_TRUE(session->AddExample(out_of_range).ok());
  ASSERT_TRUE(session->AddExample(duplicate).ok());
  ASSERT_TRUE(session->AddExample(inf_x).ok());
  ASSERT_TRUE(session->AddLabeled(labeled2).ok());
  ASSERT_TRUE(session->AddReveal(12345, 1).ok());
  ASSERT_TRUE(session->AddReveal(1, 5).ok());
  absl::StatusOr<client::SessionSummary> sum = session->Finish();
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(results.size(), 8u);
  const std::vector<std::pair<absl::StatusCode, std::string>> expected = {
      {absl::StatusCode::kInvalidArgument,
       "item 0: features: value at position 1 is nan"},
      {absl::StatusCode::kInvalidArgument,
       "item 1: features: dense vector has 2 values"},
      {absl::StatusCode::kInvalidArgument,
       "item 2: features: index 3 at position 1 is out of range"},
      {absl::StatusCode::kInvalidArgument,
       "item 3: features: index 1 repeated at positions 0 and 1"},
      {absl::StatusCode::kInvalidArgument,
       "item 4: features: value at position 0 is inf"},
      {absl::StatusCode::kInvalidArgument, "item 5: label 3 must be -1 or +1"},
      {absl::StatusCode::kNotFound,
       "item 6: prediction 12345 was never issued"},
      {absl::StatusCode::kInvalidArgument, "item 7: label 5 must be -1 or +1"},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(results[i].has_error()) << i;
    EXPECT_EQ(results[i].error().code(), static_cast<int>(expected[i].first))
        << i;
    EXPECT_THAT(results[i].error().message(), HasSubstr(expected[i].second));
  }
  EXPECT_EQ(sum->item_errors, 8u);
  unchanged("per-item errors");

  // Fatal stream errors.
  auto fatal = [&](const std::string& model, int items) {
    std::unique_ptr<LearnSession> s2 =
        c->OpenLearnSession(model, Batches(1000));
    for (int i = 0; i < items; ++i)
      EXPECT_TRUE(s2->AddLabeled(RandomExample(rng, 3, true)).ok());
    return s2->Finish().status();
  };
  s = fatal("nosuch", 1);
  EXPECT_EQ(code(s), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("model nosuch not found"));
  s = fatal("", 1);
  EXPECT_EQ(code(s), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("must name the model"));
  s = fatal("e", 51);
  EXPECT_EQ(code(s), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("a batch of 51 items is over the limit of 50"));
  unchanged("fatal stream errors");

  // The pending limit: RESOURCE_EXHAUSTED per item once 3 predictions are
  // pending.
  std::unique_ptr<LearnSession> s3 = c->OpenLearnSession("e", so);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(s3->AddExample(RandomExample(rng, 3, false)).ok());
  ASSERT_TRUE(s3->Finish().ok());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].has_prediction());
  EXPECT_TRUE(results[1].has_prediction());
  EXPECT_EQ(results[2].error().code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(results[2].error().message(),
              HasSubstr("item 2: the model holds its maximum of 3"));
  EXPECT_EQ(WeightBits(*c, "e"), weights);
}

// Pending memory is bounded in bytes as well as in count: large sparse
// examples cannot grow a model without bound. Each example below holds 1,000
// values (12,000 bytes of values and indices), so 3 fit under 40,000 bytes.
TEST(ServiceTest, PendingPredictionsAreBoundedInBytes) {
  auto server = StartServer({"--max_pending_bytes=40000"});
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  ASSERT_TRUE(c->CreateModel("p", Config(1u << 20)).ok());
  Example big;
  big.sparse = true;
  for (uint32_t i = 0; i < 1000; ++i) {
    big.indices.push_back(i * 1000);
    big.values.push_back(1.0);
  }
  std::vector<v1::ItemResult> results;
  SessionOptions so;
  so.batch_size = 1000;
  so.on_response = [&](const v1::LearnResponse& r) {
    results.assign(r.results().begin(), r.results().end());
  };
  auto issue = [&](int n) {
    std::unique_ptr<LearnSession> s = c->OpenLearnSession("p", so);
    for (int i = 0; i < n; ++i) EXPECT_TRUE(s->AddExample(big).ok());
    EXPECT_TRUE(s->Finish().ok());
  };
  issue(4);
  ASSERT_EQ(results.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(results[i].has_prediction()) << i;
  EXPECT_EQ(results[3].error().code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(
      results[3].error().message(),
      HasSubstr("would pass the maximum of 40000 (--max_pending_bytes)"));
  EXPECT_EQ(c->GetStatus("p")->stats().pending(), 3u);
  // Revealing one makes room for one.
  {
    std::unique_ptr<LearnSession> s = c->OpenLearnSession("p", so);
    ASSERT_TRUE(s->AddReveal(results[0].prediction().prediction_id(), 1).ok());
    ASSERT_TRUE(s->Finish().ok());
  }
  issue(2);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].has_prediction());
  EXPECT_EQ(results[1].error().code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(c->GetStatus("p")->stats().pending(), 3u);
}

TEST(ServiceTest, IfExamplesAppliesAStreamOnlyAtThatCount) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  ASSERT_TRUE(c->CreateModel("cas", Config(3)).ok());
  std::mt19937_64 rng(4);
  std::vector<Example> examples;
  for (int t = 0; t < 40; ++t) examples.push_back(RandomExample(rng, 3, true));
  auto send = [&](std::optional<uint64_t> if_examples, bool columnar, int from,
                  int to) {
    SessionOptions so = Batches(8);
    so.columnar = columnar;
    so.if_examples = if_examples;
    std::unique_ptr<LearnSession> s = c->OpenLearnSession("cas", so);
    for (int t = from; t < to; ++t) s->AddLabeled(examples[t]).IgnoreError();
    return s->Finish();
  };
  ASSERT_TRUE(send(0, true, 0, 10).ok());
  const std::string before = WeightBits(*c, "cas");
  // A count that is not the model's: the stream ends, nothing applied, in
  // either encoding.
  for (bool columnar : {true, false}) {
    for (uint64_t wrong : {0, 9, 11}) {
      absl::StatusOr<client::SessionSummary> r = send(wrong, columnar, 10, 20);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition)
          << r.status();
      EXPECT_THAT(r.status().message(), HasSubstr("learned from 10"));
      EXPECT_EQ(c->GetStatus("cas")->stats().examples(), 10u);
      EXPECT_EQ(WeightBits(*c, "cas"), before);
    }
  }
  // The model's own count: applied, and the later batches of the stream too.
  ASSERT_TRUE(send(10, false, 10, 30).ok());
  ASSERT_TRUE(send(std::nullopt, true, 30, 40).ok());
  EXPECT_EQ(c->GetStatus("cas")->stats().examples(), 40u);
  ModelConfig config;
  config.dimension = 3;
  auto core = *Model::Create(config);
  for (const Example& e : examples)
    ASSERT_TRUE(core->Learn(View(e), *e.label).ok());
  EXPECT_EQ(WeightBits(*c, "cas"), CoreBits(*core));
}

TEST(ServiceTest, AModelMarkedMovingRefusesChangesAndIsDeletedOnlyWhileMarked) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  ASSERT_TRUE(c->CreateModel("mv", Config(3)).ok());
  std::mt19937_64 rng(6);
  std::vector<Example> examples;
  for (int t = 0; t < 30; ++t) examples.push_back(RandomExample(rng, 3, true));
  auto send = [&](bool columnar, int from, int to) {
    SessionOptions so = Batches(5);
    so.columnar = columnar;
    std::unique_ptr<LearnSession> s = c->OpenLearnSession("mv", so);
    for (int t = from; t < to; ++t) s->AddLabeled(examples[t]).IgnoreError();
    return s->Finish();
  };
  ASSERT_TRUE(send(true, 0, 10).ok());
  // A prediction issued before the mark, revealed while it stands.
  {
    SessionOptions so;
    so.columnar = false;
    uint64_t id = 0;
    so.on_response = [&](const v1::LearnResponse& r) {
      for (const v1::ItemResult& item : r.results()) {
        if (item.has_prediction()) id = item.prediction().prediction_id();
      }
    };
    std::unique_ptr<LearnSession> s = c->OpenLearnSession("mv", so);
    Example unlabeled = examples[10];
    unlabeled.label.reset();
    ASSERT_TRUE(s->AddExample(unlabeled).ok());
    ASSERT_TRUE(s->Finish().ok());
    ASSERT_NE(id, 0u);
    // A model not marked is not deleted by a move's last step.
    absl::Status d = c->DeleteModel("mv", /*if_moving=*/true);
    EXPECT_EQ(d.code(), absl::StatusCode::kFailedPrecondition) << d;
    EXPECT_THAT(d.message(), HasSubstr("not marked moving"));
    absl::StatusOr<v1::Model> marked = c->SetMoving("mv", true);
    ASSERT_TRUE(marked.ok()) << marked.status();
    EXPECT_TRUE(marked->moving());
    EXPECT_TRUE(c->GetModel("mv")->moving());
    const std::string before = WeightBits(*c, "mv");
    const std::string blob = *c->ExportModel("mv");
    // Every change is refused with UNAVAILABLE, nothing applied: Learn in
    // both encodings, Reveal, Train, ResetModel.
    for (bool columnar : {true, false}) {
      absl::StatusOr<client::SessionSummary> r = send(columnar, 10, 20);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable)
          << r.status();
      EXPECT_THAT(r.status().message(), HasSubstr("being moved"));
    }
    absl::StatusOr<v1::RevealResponse> reveal =
        c->Reveal("mv", {{id, *examples[10].label}});
    EXPECT_EQ(reveal.status().code(), absl::StatusCode::kUnavailable)
        << reveal.status();
    absl::StatusOr<v1::TrainResponse> train =
        c->Train("mv", {examples.begin(), examples.begin() + 5}, 1);
    EXPECT_EQ(train.status().code(), absl::StatusCode::kUnavailable)
        << train.status();
    absl::StatusOr<v1::Model> reset = c->ResetModel("mv");
    EXPECT_EQ(reset.status().code(), absl::StatusCode::kUnavailable)
        << reset.status();
    // Reads are answered, and the model is what it was.
    EXPECT_EQ(c->GetStatus("mv")->stats().examples(), 10u);
    EXPECT_TRUE(c->Predict("mv", {examples[0]}).ok());
    EXPECT_EQ(WeightBits(*c, "mv"), before);
    EXPECT_EQ(*c->ExportModel("mv"), blob);
    // Its copy, imported marked too, keeps its created_at: equal byte for
    // byte, and refusing changes as well.
    auto other = StartServer();
    ASSERT_NE(other, nullptr);
    auto o = other->Connect();
    absl::StatusOr<v1::Model> copy = o->ImportModel(blob, "mv", true);
    ASSERT_TRUE(copy.ok()) << copy.status();
    EXPECT_TRUE(copy->moving());
    EXPECT_EQ(*o->ExportModel("mv"), blob);
    EXPECT_EQ(o->ResetModel("mv").status().code(),
              absl::StatusCode::kUnavailable);
    // Each server says which it is, whatever the status of the call.
    absl::StatusOr<std::string> here = c->ServerId();
    absl::StatusOr<std::string> there = o->ServerId();
    ASSERT_TRUE(here.ok() && there.ok());
    EXPECT_NE(*here, *there);
    EXPECT_EQ(*c->ServerFor("mv"), *here);
    EXPECT_EQ(*o->ServerFor("no-such-model"), *there);
    // The mark lifted: changes apply again, the reveal included.
    ASSERT_FALSE(c->SetMoving("mv", false)->moving());
    ASSERT_TRUE(c->Reveal("mv", {{id, *examples[10].label}}).ok());
    ASSERT_TRUE(send(false, 11, 30).ok());
    EXPECT_EQ(c->GetStatus("mv")->stats().examples(), 30u);
    ModelConfig config;
    config.dimension = 3;
    auto core = *Model::Create(config);
    for (const Example& e : examples)
      ASSERT_TRUE(core->Learn(View(e), *e.label).ok());
    EXPECT_EQ(WeightBits(*c, "mv"), CoreBits(*core));
    // Marked again, the move's last step deletes it; from then on calls
    // naming it (a proxy's old connection may still route them here) are
    // told to retry, until a model of that id is created here again.
    ASSERT_TRUE(c->SetMoving("mv", true).ok());
    ASSERT_TRUE(c->DeleteModel("mv", /*if_moving=*/true).ok());
    absl::Status moved = c->GetModel("mv").status();
    EXPECT_EQ(moved.code(), absl::StatusCode::kUnavailable) << moved;
    EXPECT_THAT(moved.message(), HasSubstr("moved to another shard"));
    EXPECT_EQ(c->GetStatus("mv").status().code(),
              absl::StatusCode::kUnavailable);
    EXPECT_EQ(send(true, 0, 5).status().code(), absl::StatusCode::kUnavailable);
    ASSERT_TRUE(c->ImportModel(blob, "mv").ok());
    EXPECT_EQ(c->GetStatus("mv")->stats().examples(), 10u);
    ASSERT_TRUE(c->DeleteModel("mv").ok());
    EXPECT_EQ(c->GetModel("mv").status().code(), absl::StatusCode::kNotFound);
  }
}

// A model deleted ends its open streams and watches with NOT_FOUND; one
// deleted because it moved to another shard (marked moving, then deleted with
// if_moving, as `perceptron rebalance` does) with UNAVAILABLE, as a new call
// naming it is answered, so that a writer resumes through the proxy.
class DeletingTest : public ::testing::TestWithParam<bool> {};

TEST_P(DeletingTest, AModelEndsItsStreamsAndWatches) {
  const bool moved = GetParam();
  const absl::StatusCode code =
      moved ? absl::StatusCode::kUnavailable : absl::StatusCode::kNotFound;
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  ASSERT_TRUE(c->CreateModel("gone", Config(2)).ok());
  absl::Notification answered;
  SessionOptions so;
  so.batch_size = 1;
  so.on_response = [&](const v1::LearnResponse&) {
    if (!answered.HasBeenNotified()) answered.Notify();
  };
  std::unique_ptr<LearnSession> s = c->OpenLearnSession("gone", so);
  std::mt19937_64 rng(1);
  ASSERT_TRUE(s->AddLabeled(RandomExample(rng, 2, true)).ok());
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::Status watch;
  std::thread watcher([&] {
    watch = server->Connect()->Watch(
        "gone", absl::Milliseconds(10),
        [](const v1::ModelStatus&) { return true; }, absl::Seconds(60));
  });
  if (moved) {
    ASSERT_TRUE(c->SetMoving("gone", true).ok());
  }
  ASSERT_TRUE(c->DeleteModel("gone", /*if_moving=*/moved).ok());
  s->AddLabeled(RandomExample(rng, 2, true)).IgnoreError();
  absl::Status end = s->Finish().status();
  EXPECT_EQ(end.code(), code) << end;
  if (moved) {
    EXPECT_THAT(end.message(), HasSubstr("moved to another shard"));
  }
  watcher.join();
  EXPECT_EQ(watch.code(), code) << watch;
  EXPECT_EQ(c->GetStatus("gone").status().code(), code);
}
INSTANTIATE_TEST_SUITE_P(ServiceTest, DeletingTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "MovedAway" : "Deleted";
                         });

TEST(ServiceTest, ShutdownAnswersInFlightBatchesAndEndsStreamsWithUnavailable) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  ASSERT_TRUE(c->CreateModel("s", Config(2)).ok());
  absl::Notification answered;
  SessionOptions so;
  so.batch_size = 10;
  so.on_response = [&](const v1::LearnResponse&) {
    if (!answered.HasBeenNotified()) answered.Notify();
  };
  std::unique_ptr<LearnSession> s = c->OpenLearnSession("s", so);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(s->AddLabeled(RandomExample(rng, 2, true)).ok());
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::Notification watching;
  absl::Status watch;
  std::thread watcher([&] {
    watch = server->Connect()->Watch(
        "s", absl::Milliseconds(10),
        [&](const v1::ModelStatus&) {
          if (!watching.HasBeenNotified()) watching.Notify();
          return true;
        },
        absl::Seconds(60));
  });
  ASSERT_TRUE(watching.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(server->Stop(SIGTERM), 0);
  absl::Status end = s->Finish().status();
  EXPECT_EQ(end.code(), absl::StatusCode::kUnavailable) << end;
  watcher.join();
  EXPECT_EQ(watch.code(), absl::StatusCode::kUnavailable) << watch;
}

// Flags a server cannot run with stop it before it starts, saying which:
// a port out of range (not a free port picked instead), a data directory
// that is a file (not "in use by another perceptrond").
TEST(ServiceTest, FlagsItCannotRunWithAreNamedBeforeItStarts) {
  for (const char* port : {"--port=99999", "--port=-5"}) {
    testing::CommandResult r =
        testing::RunCommand(absl::StrCat(PERCEPTROND_PATH, " ", port,
                                         " --http_port=-1 "
                                         "--durability=none"));
    EXPECT_EQ(r.exit_code, 2) << port;
    EXPECT_THAT(r.output, ::testing::HasSubstr("--port must be 0 to 65535"));
  }
  // Limits that would refuse every request, an interval that would spin, a
  // word that is no flag.
  for (const auto& [flag, why] :
       std::vector<std::pair<std::string, std::string>>{
           {"--max_batch_items=0", "--max_batch_items must be at least 1"},
           {"--max_models=0", "--max_models must be at least 1"},
           {"--max_dimension=0", "--max_dimension must be at least 1"},
           {"--max_message_bytes=10", "--max_message_bytes must be at least"},
           {"--expiry_interval=-1s", "--expiry_interval must be positive"},
           {"--async_interval=0s", "--async_interval must be positive"},
           {"--pending_ttl=0s", "--pending_ttl must be positive"},
           {"serve", "takes flags only; \"serve\" is not one"}}) {
    testing::CommandResult r = testing::RunCommand(absl::StrCat(
        PERCEPTROND_PATH, " --port=0 --http_port=-1 --durability=none ", flag));
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_THAT(r.output, ::testing::HasSubstr(why)) << flag;
  }
  const testing::ScopedDir dir("service-flags");
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  testing::CommandResult r = testing::RunCommand(absl::StrCat(
      PERCEPTROND_PATH, " --port=0 --http_port=-1 --data_dir=", file));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("a-file is not a directory"));
}

}  // namespace
}  // namespace perceptron
