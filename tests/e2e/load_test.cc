// Load and soak (issue 6): 1,000 concurrent Learn streams over 50 models, a
// million examples in all, with watchers and status pollers; every acknowledged
// example is counted exactly once, the server's memory stays bounded, and
// SIGTERM in the middle of a round, then a restart, loses nothing acknowledged.
// The certificates' memory is set below what the examples would take: the
// budget holds, and every certificate stays a valid bound or says why not.
#include <atomic>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using Stream = grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>;

constexpr int kModels = 50;
constexpr int kStreams = 1000;
constexpr int kBatch = 100;
constexpr int kRounds =
    10;  // 1000 streams x 10 rounds x 100 = 1,000,000 examples
// About a fifth of the rows the million examples would keep (181 bytes each,
// CertificateTracker::RowBytes of 8 values and the bias).
constexpr int kCertificateMb = 40;

long RssKb(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  long kb = 0;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0 &&
        !absl::SimpleAtoi(
            absl::StripAsciiWhitespace(line.substr(6, line.size() - 9)), &kb)) {
      kb = 0;  // an unreadable line reads as no figure
    }
  }
  return kb;
}

v1::LearnRequest Batch(const std::string& model, int stream, int round) {
  v1::LearnRequest r;
  r.set_model_id(model);
  for (int i = 0; i < kBatch; ++i) {
    v1::LabeledExample* l = r.add_items()->mutable_labeled();
    auto* v = l->mutable_features()->mutable_dense()->mutable_values();
    double s = 0;
    for (int k = 0; k < 8; ++k) {
      // Distinct examples (an equal one would count a kept row again).
      const double x =
          ((stream * 1000003 + round * 10007 + i * 101 + k * 13) % 9973) /
              4986.0 -
          1.0;
      v->Add(x);
      s += (k % 2 ? 1 : -1) * x;
    }
    l->set_label(s >= 0 ? 1 : -1);
  }
  return r;
}

struct Load {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<uint64_t> sent, acked;  // examples per model
};

// Opens the streams, spread over 10 connections.
void Open(const testing::ServerProcess& server, Load* load) {
  for (int c = 0; c < 10; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("load.channel", c);  // distinct connections
    load->channels.push_back(grpc::CreateCustomChannel(
        server.target(), grpc::InsecureChannelCredentials(), args));
  }
  load->sent.assign(kModels, 0);
  load->acked.assign(kModels, 0);
  for (int s = 0; s < kStreams; ++s) {
    auto stub = v1::PerceptronService::NewStub(load->channels[s % 10]);
    load->contexts.push_back(std::make_unique<grpc::ClientContext>());
    load->streams.push_back(stub->Learn(load->contexts.back().get()));
  }
}

// One round: a batch written on every stream, then every answer read.
// `after_writes` runs between the writes and the reads. Returns the streams
// that answered.
int Round(Load* load, int round,
          const std::function<void()>& after_writes = nullptr) {
  std::vector<bool> written(kStreams, false);
  for (int s = 0; s < kStreams; ++s) {
    const int m = s % kModels;
    if (load->streams[s] &&
        load->streams[s]->Write(Batch(absl::StrCat("load-", m), s, round))) {
      written[s] = true;
      load->sent[m] += kBatch;
    }
  }
  if (after_writes) after_writes();
  int answered = 0;
  v1::LearnResponse r;
  for (int s = 0; s < kStreams; ++s) {
    if (!written[s]) continue;
    if (load->streams[s]->Read(&r)) {
      EXPECT_EQ(r.results_size(), kBatch);
      load->acked[s % kModels] += r.results_size();
      ++answered;
    }
  }
  return answered;
}

TEST(LoadTest,
     AThousandStreamsAMillionExamplesAndSigtermLoseNothingAcknowledged) {
  const testing::ScopedDir dir("load");
  auto server = *testing::ServerProcess::Start(
      {absl::StrCat("--certificate_memory_mb=", kCertificateMb)}, dir.path());
  auto admin = server->Connect();
  v1::ModelConfig config;
  config.set_dimension(8);
  for (int m = 0; m < kModels; ++m) {
    ASSERT_TRUE(admin->CreateModel(absl::StrCat("load-", m), config).ok());
  }
  const long rss_start = RssKb(server->pid());

  // Watchers and status pollers run throughout.
  std::atomic<bool> done{false};
  std::atomic<uint64_t> pushes{0}, polls{0};
  std::vector<std::thread> side;
  for (int w = 0; w < 10; ++w) {
    side.emplace_back([&, w] {
      auto c = server->Connect();
      c->Watch(
           absl::StrCat("load-", w), absl::Milliseconds(20),
           [&](const v1::ModelStatus&) {
             ++pushes;
             return !done;
           },
           absl::Seconds(300))
          .IgnoreError();
    });
  }
  for (int p = 0; p < 2; ++p) {
    side.emplace_back([&, p] {
      auto c = server->Connect();
      for (int i = 0; !done; ++i) {
        if (c->GetStatus(absl::StrCat("load-", (i + p) % kModels)).ok())
          ++polls;
      }
    });
  }

  Load load;
  Open(*server, &load);
  long rss_peak = 0;
  const absl::Time start = absl::Now();
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_EQ(Round(&load, round), kStreams) << "round " << round;
    rss_peak = std::max(rss_peak, RssKb(server->pid()));
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  uint64_t total = 0;
  int budget_reached = 0;
  uint64_t kept_bytes = 0;  // held, as the budget counts them (d = 8, bias)
  for (int m = 0; m < kModels; ++m) {
    absl::StatusOr<v1::ModelStatus> st =
        admin->GetStatus(absl::StrCat("load-", m));
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->stats().examples(), load.acked[m]) << "model " << m;
    EXPECT_EQ(load.acked[m], load.sent[m]);
    total += st->stats().examples();
    const v1::Certificate& cert = st->stats().certificate();
    if (cert.state() == v1::Certificate::OFF) {
      EXPECT_THAT(cert.reason(),
                  ::testing::HasSubstr("--certificate_memory_mb"))
          << "model " << m;
      ++budget_reached;
      continue;
    }
    // Keeping with no solution yet (the refresher has a CPU share) reports
    // no figure; any figure reported bounds the updates.
    if (cert.available()) {
      EXPECT_LE(static_cast<double>(st->stats().updates()), cert.upper())
          << "model " << m;
    } else {
      EXPECT_EQ(cert.state(), v1::Certificate::KEEPING) << "model " << m;
    }
    if (cert.state() == v1::Certificate::FROZEN) {
      ++budget_reached;  // its rows are given back
    } else {
      kept_bytes += cert.kept_rows() * 181;
    }
  }
  EXPECT_GT(budget_reached, 0) << "the budget was never reached";
  EXPECT_LE(kept_bytes, uint64_t{kCertificateMb} << 20);
  EXPECT_EQ(total, uint64_t{kStreams} * kRounds * kBatch);
  EXPECT_LT(rss_peak, 1024 * 1024) << "over 1 GB";

  // One more round, with SIGTERM after every batch is written and before any is
  // read: the server answers what it applied and ends the streams; a restart
  // must hold every answered batch (and at most the unanswered ones).
  Round(&load, kRounds, [&] { kill(server->pid(), SIGTERM); });
  done = true;
  for (auto& s : load.streams) {
    s->WritesDone();
    s->Finish().ok();
  }
  for (std::thread& t : side) t.join();
  EXPECT_EQ(server->Stop(SIGTERM), 0)  // already stopping; waits for the exit
      << server->StderrText();
  server.reset();
  auto again = *testing::ServerProcess::Start({}, dir.path());
  auto c = again->Connect();
  uint64_t kept = 0, acked = 0, sent = 0;
  for (int m = 0; m < kModels; ++m) {
    absl::StatusOr<v1::ModelStatus> st = c->GetStatus(absl::StrCat("load-", m));
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_GE(st->stats().examples(), load.acked[m])
        << "model " << m << " lost answered examples";
    EXPECT_LE(st->stats().examples(), load.sent[m]) << "model " << m;
    kept += st->stats().examples();
    acked += load.acked[m];
    sent += load.sent[m];
  }
  std::cout << "[ load ] " << kStreams << " streams, " << kModels << " models, "
            << total << " examples in " << seconds << " s (" << total / seconds
            << " examples/s); server RSS " << rss_start / 1024
            << " MB at start, peak " << rss_peak / 1024 << " MB; " << pushes
            << " watch pushes, " << polls << " status polls; " << budget_reached
            << " certificates stopped at the budget; SIGTERM round: " << acked
            << " answered, " << kept << " kept after restart, " << sent
            << " sent\n";
}

}  // namespace
}  // namespace perceptron
