// The C++ library's Learn session with SessionOptions::retry_for against real
// perceptrond processes: a stream broken by kill -9 and a restart, or refused
// while its model is marked as being moved, is resumed after the examples the
// model holds, and the model ends equal bit for bit to one that learned the
// same examples once, uninterrupted; what cannot be resumed ends the session
// with a status that says why.
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;

constexpr uint32_t kDim = 10;

// `n` labeled dense examples of dimension kDim, noisy around a hyperplane.
std::vector<client::Example> Examples(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<client::Example> out(n);
  for (client::Example& e : out) {
    double s = 0;
    for (uint32_t j = 0; j < kDim; ++j) {
      e.values.push_back(normal(rng));
      s += e.values.back() * (j % 3 == 0 ? 1.0 : -0.5);
    }
    e.label = s + 0.3 * normal(rng) > 0 ? 1 : -1;
  }
  return out;
}

v1::ModelConfig Config() {
  v1::ModelConfig c;
  c.set_dimension(kDim);
  return c;
}

// The model's weights and statistics (its certificate aside), as bytes.
std::string State(client::Client& c, const std::string& id) {
  absl::StatusOr<v1::Weights> w = c.GetWeights(id);
  absl::StatusOr<v1::ModelStatus> s = c.GetStatus(id);
  if (!w.ok() || !s.ok()) return "unreadable";
  return w->SerializeAsString() + testing::StatsBits(s->stats());
}

// A data directory of the test's own, which outlives a server killed on it.
std::string NewDataDir() {
  std::string dir = ::testing::TempDir() + "/resume-XXXXXX";
  return mkdtemp(dir.data()) != nullptr ? dir : "";
}

// The same examples learned by `id` in one session without retry_for.
void LearnOnce(client::Client& c, const std::string& id,
               const std::vector<client::Example>& examples) {
  ASSERT_TRUE(c.CreateModel(id, Config()).ok());
  std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(id, {});
  for (const client::Example& e : examples) ASSERT_TRUE(s->AddLabeled(e).ok());
  absl::StatusOr<client::SessionSummary> done = s->Finish();
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->items, examples.size());
}

struct Resumptions {
  absl::Mutex mu;
  std::vector<client::Resumption> seen;
  // What on_break heard: why each stream ended, and the answers before it.
  std::vector<client::Resumption> breaks;
  size_t count() {
    absl::MutexLock lock(&mu);
    return seen.size();
  }
};

client::SessionOptions Retrying(Resumptions* r, std::atomic<uint64_t>* answers,
                                absl::Duration retry_for = absl::Seconds(60)) {
  client::SessionOptions o;
  o.batch_size = 32;
  o.max_in_flight = 8;
  o.retry_for = retry_for;
  o.on_break = [r](const absl::Status& broke, uint64_t answered) {
    absl::MutexLock lock(&r->mu);
    r->breaks.push_back({broke, answered, 0});
  };
  o.on_resume = [r](const client::Resumption& x) {
    absl::MutexLock lock(&r->mu);
    r->seen.push_back(x);
  };
  o.on_response = [answers](const v1::LearnResponse& response) {
    for (const v1::ItemResult& item : response.results()) {
      if (item.has_outcome()) ++*answers;
    }
  };
  return o;
}

// Killed with SIGKILL after half the examples were added (and some answered),
// then restarted on its data directory and port: the session waits for it,
// resumes after the examples it holds, and the model ends as one that learned
// them once.
TEST(LearnSessionResumeTest, ResumesAfterTheServerIsKilledAndRestarted) {
  const std::vector<client::Example> examples = Examples(6000, 1);
  const std::vector<std::string> flags = {"--durability=sync"};
  const std::string dir = NewDataDir();
  ASSERT_FALSE(dir.empty());
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(flags, dir);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::unique_ptr<client::Client> c = (*server)->Connect();
  ASSERT_TRUE(c->CreateModel("resumed", Config()).ok());
  // The model held examples before the session: its count starts after them.
  {
    std::unique_ptr<client::LearnSession> s =
        c->OpenLearnSession("resumed", {});
    for (size_t i = 0; i < 100; ++i)
      ASSERT_TRUE(s->AddLabeled(examples[i]).ok());
    ASSERT_TRUE(s->Finish().ok());
  }

  Resumptions resumptions;
  std::atomic<uint64_t> answers{0};
  std::unique_ptr<client::LearnSession> session =
      c->OpenLearnSession("resumed", Retrying(&resumptions, &answers));
  const size_t half = examples.size() / 2;
  for (size_t i = 100; i < half; ++i) {
    ASSERT_TRUE(session->AddLabeled(examples[i]).ok());
  }
  ASSERT_TRUE(session->Flush().ok());
  ASSERT_EQ((*server)->Stop(SIGKILL), -1);
  server->reset();
  // Restarted while the session goes on (it waits for the model to answer).
  std::unique_ptr<ServerProcess> again;
  std::thread restart([&] {
    std::vector<std::string> f = flags;
    f.push_back(absl::StrCat("--port=", port));
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(f, dir);
    ASSERT_TRUE(s.ok()) << s.status();
    again = *std::move(s);
  });
  absl::Status added;
  for (size_t i = half; i < examples.size() && added.ok(); ++i) {
    added = session->AddLabeled(examples[i]);
  }
  absl::StatusOr<client::SessionSummary> summary = session->Finish();
  restart.join();
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(added.ok()) << added;
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_GE(summary->resumed, 1);
  ASSERT_EQ(resumptions.count(), static_cast<size_t>(summary->resumed));
  // Each break was heard before its wait, as its resumption says it.
  ASSERT_EQ(resumptions.breaks.size(), resumptions.seen.size());
  for (size_t i = 0; i < resumptions.seen.size(); ++i) {
    const client::Resumption& r = resumptions.seen[i];
    EXPECT_TRUE(client::ResumableLearnEnd(r.broke.code())) << r.broke;
    EXPECT_LE(r.answered, r.held);
    EXPECT_EQ(resumptions.breaks[i].broke, r.broke);
    EXPECT_EQ(resumptions.breaks[i].answered, r.answered);
  }
  // Every example of the session was answered once, or learned without an
  // answer in the stream that broke.
  EXPECT_EQ(summary->items + summary->unanswered, examples.size() - 100);
  EXPECT_EQ(answers.load(), summary->items);
  EXPECT_EQ(summary->stats.examples(), examples.size());

  std::unique_ptr<client::Client> d = again->Connect();
  LearnOnce(*d, "once", examples);
  EXPECT_EQ(State(*d, "resumed"), State(*d, "once"));
  if (::testing::Test::HasFailure()) {
    ADD_FAILURE() << "the server wrote:\n" << again->StderrText();
  }
  std::error_code ignored;
  again.reset();
  std::filesystem::remove_all(dir, ignored);
}

// A model marked as being moved refuses every batch (UNAVAILABLE) until the
// mark is lifted: the session retries with growing pauses and goes on once
// it is, and the model ends as one that learned the examples once.
TEST(LearnSessionResumeTest, WaitsOutAModelBeingMoved) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<client::Client> c = (*server)->Connect();
  const std::vector<client::Example> examples = Examples(3000, 2);
  ASSERT_TRUE(c->CreateModel("moved", Config()).ok());

  Resumptions resumptions;
  std::atomic<uint64_t> answers{0};
  client::SessionOptions o = Retrying(&resumptions, &answers);
  // The mark is lifted once the session has met it three times.
  std::unique_ptr<client::Client> admin = (*server)->Connect();
  auto on_resume = o.on_resume;
  o.on_resume = [&](const client::Resumption& r) {
    on_resume(r);
    if (resumptions.count() == 3) {
      absl::StatusOr<v1::Model> lifted = admin->SetMoving("moved", false);
      EXPECT_TRUE(lifted.ok()) << lifted.status();
    }
  };
  std::unique_ptr<client::LearnSession> session =
      c->OpenLearnSession("moved", o);
  const size_t half = examples.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    ASSERT_TRUE(session->AddLabeled(examples[i]).ok());
  }
  ASSERT_TRUE(session->Flush().ok());
  ASSERT_TRUE(c->SetMoving("moved", true).ok());
  for (size_t i = half; i < examples.size(); ++i) {
    ASSERT_TRUE(session->AddLabeled(examples[i]).ok());
  }
  absl::StatusOr<client::SessionSummary> summary = session->Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_GE(summary->resumed, 3);
  {
    absl::MutexLock lock(&resumptions.mu);
    for (const client::Resumption& r : resumptions.seen) {
      EXPECT_EQ(r.broke.code(), absl::StatusCode::kUnavailable) << r.broke;
      EXPECT_THAT(r.broke.message(), HasSubstr("being moved"));
    }
  }
  EXPECT_EQ(summary->items + summary->unanswered, examples.size());
  EXPECT_EQ(summary->stats.examples(), examples.size());
  LearnOnce(*c, "once", examples);
  EXPECT_EQ(State(*c, "moved"), State(*c, "once"));
}

// Still marked after retry_for: the session ends with the refusal's code,
// saying it made no progress, and the model holds what was learned before.
TEST(LearnSessionResumeTest, EndsWhenNoProgressIsMadeWithinRetryFor) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<client::Client> c = (*server)->Connect();
  const std::vector<client::Example> examples = Examples(200, 3);
  ASSERT_TRUE(c->CreateModel("stuck", Config()).ok());
  Resumptions resumptions;
  std::atomic<uint64_t> answers{0};
  std::unique_ptr<client::LearnSession> session = c->OpenLearnSession(
      "stuck", Retrying(&resumptions, &answers, absl::Milliseconds(700)));
  for (size_t i = 0; i < 64; ++i) {
    ASSERT_TRUE(session->AddLabeled(examples[i]).ok());
  }
  ASSERT_TRUE(session->Flush().ok());
  ASSERT_TRUE(c->SetMoving("stuck", true).ok());
  for (size_t i = 64; i < examples.size(); ++i) {
    if (!session->AddLabeled(examples[i]).ok()) break;
  }
  absl::StatusOr<client::SessionSummary> summary = session->Finish();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(summary.status().message(), HasSubstr("stuck: no progress for"));
  EXPECT_GE(resumptions.count(), 1u);
  // Further use says the session has ended.
  EXPECT_FALSE(session->AddLabeled(examples[0]).ok());
  absl::StatusOr<v1::ModelStatus> st = c->GetStatus("stuck");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->stats().examples(), answers.load());
}

// An example the server refuses ends a resuming session (where to go on is
// counted in examples the model holds), naming it; AddExample and AddReveal
// are refused with nothing sent.
TEST(LearnSessionResumeTest, ARefusedExampleEndsTheSessionAndNamesIt) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<client::Client> c = (*server)->Connect();
  std::vector<client::Example> examples = Examples(100, 4);
  examples[70].values[3] = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(c->CreateModel("refuses", Config()).ok());
  Resumptions resumptions;
  std::atomic<uint64_t> answers{0};
  std::unique_ptr<client::LearnSession> session =
      c->OpenLearnSession("refuses", Retrying(&resumptions, &answers));
  const absl::Status example = session->AddExample(examples[0]);
  EXPECT_EQ(example.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(example.message(), HasSubstr("labeled examples only"));
  EXPECT_EQ(session->AddReveal(1, 1).code(),
            absl::StatusCode::kInvalidArgument);
  for (const client::Example& e : examples) {
    if (!session->AddLabeled(e).ok()) break;
  }
  absl::StatusOr<client::SessionSummary> summary = session->Finish();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kInvalidArgument)
      << summary.status();
  EXPECT_THAT(summary.status().message(),
              HasSubstr("example 70 of the session was refused"));
  EXPECT_EQ(resumptions.count(), 0u);
  absl::StatusOr<v1::ModelStatus> st = c->GetStatus("refuses");
  ASSERT_TRUE(st.ok());
  // The batches before the refused example's were learned; its own batch up
  // to it too (the server applies a batch's items in order).
  EXPECT_GE(st->stats().examples(), 64u);
  EXPECT_LE(st->stats().examples(), 99u);
}

// A server without durability restarted holds none of the answered examples:
// the session does not resume (NOT_FOUND: the model is gone with it).
TEST(LearnSessionResumeTest, AModelGoneWithItsServerEndsTheSession) {
  const std::string dir = NewDataDir();
  ASSERT_FALSE(dir.empty());
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--durability=none"}, dir);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::unique_ptr<client::Client> c = (*server)->Connect();
  const std::vector<client::Example> examples = Examples(400, 5);
  ASSERT_TRUE(c->CreateModel("lost", Config()).ok());
  Resumptions resumptions;
  std::atomic<uint64_t> answers{0};
  std::unique_ptr<client::LearnSession> session =
      c->OpenLearnSession("lost", Retrying(&resumptions, &answers));
  for (size_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(session->AddLabeled(examples[i]).ok());
  }
  ASSERT_TRUE(session->Flush().ok());
  ASSERT_EQ((*server)->Stop(SIGKILL), -1);
  server->reset();
  absl::StatusOr<std::unique_ptr<ServerProcess>> again = ServerProcess::Start(
      {"--durability=none", absl::StrCat("--port=", port)}, dir);
  ASSERT_TRUE(again.ok()) << again.status();
  for (size_t i = 200; i < examples.size(); ++i) {
    if (!session->AddLabeled(examples[i]).ok()) break;
  }
  absl::StatusOr<client::SessionSummary> summary = session->Finish();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kNotFound)
      << summary.status();
  EXPECT_THAT(summary.status().message(),
              HasSubstr("the status of lost after the stream broke"));
  EXPECT_EQ(resumptions.count(), 0u);
  std::error_code ignored;
  again->reset();
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace perceptron
