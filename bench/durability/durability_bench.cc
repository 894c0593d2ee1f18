// Learn throughput and latency for each durability mode, relative to `none`,
// measured in one run (docs/design.md section 7), and the restart time of a
// model with a long history.
//
//   build/release/bench/durability/durability_bench [--examples=400000]
//   [--repeats=3]
//
// W1 shape: dense d=20, batches of 64 labeled examples, pipelined (64 in
// flight) over loopback gRPC to an in-process perceptrond with its data
// directory under /tmp. Latency: one batch of 64 at a time, round trip.
// Concurrency: 4 streams to 4 models at once (they share fsyncs in sync mode).
// Modes are interleaved within each repeat; the table shows medians.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "server/server.h"

ABSL_FLAG(uint64_t, examples, 400000, "Examples per throughput measurement");
ABSL_FLAG(int, repeats, 3, "Repeats of each measurement (medians are shown)");
ABSL_FLAG(uint64_t, history, 2000000,
          "Examples in the long-history model for the restart");

namespace perceptron {
namespace {

using client::Example;
using server::Durability;

constexpr uint32_t kDim = 20;

std::vector<Example> Data(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<Example> out(n);
  for (Example& e : out) {
    double s = 0;
    for (uint32_t i = 0; i < kDim; ++i)
      s += (i % 3 ? 1 : -1) * e.values.emplace_back(normal(rng));
    e.label = (s > 0) == (rng() % 20 != 0) ? 1 : -1;
  }
  return out;
}

struct Server {
  std::string dir;
  std::unique_ptr<server::PerceptronServer> server;
  std::unique_ptr<client::Client> client;
};

Server Start(Durability mode, const std::string& dir,
             uint64_t snapshot_every = 1000) {
  server::ServerOptions o;
  o.port = 0;
  o.persistence.durability = mode;
  o.persistence.data_dir = dir;
  o.persistence.snapshot_every = snapshot_every;
  Server s;
  s.dir = dir;
  absl::StatusOr<std::unique_ptr<server::PerceptronServer>> started =
      server::PerceptronServer::Start(o);
  if (!started.ok()) {
    std::fprintf(stderr, "cannot start: %s\n",
                 std::string(started.status().message()).c_str());
    std::exit(1);
  }
  s.server = *std::move(started);
  client::ClientOptions co;
  co.target = absl::StrCat("127.0.0.1:", s.server->port());
  s.client = client::Client::Connect(co);
  return s;
}

void Create(client::Client& c, const std::string& id) {
  v1::ModelConfig config;
  config.set_dimension(kDim);
  if (!c.CreateModel(id, config).ok()) std::exit(1);
}

double StreamRate(client::Client& c, const std::string& id,
                  const std::vector<Example>& data, size_t in_flight) {
  client::SessionOptions so;
  so.batch_size = 64;
  so.max_in_flight = in_flight;
  const absl::Time start = absl::Now();
  std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(id, so);
  for (const Example& e : data) s->AddLabeled(e).IgnoreError();
  if (!s->Finish().ok()) std::exit(1);
  return data.size() / absl::ToDoubleSeconds(absl::Now() - start);
}

// p50 and p99 of round trips of one batch of 64.
std::pair<double, double> Latency(client::Client& c, const std::string& id,
                                  const std::vector<Example>& data,
                                  int batches) {
  client::SessionOptions so;
  so.batch_size = 64;
  so.max_in_flight = 1;
  absl::Mutex mu;
  int answered = 0;
  so.on_response = [&](const v1::LearnResponse&) {
    absl::MutexLock lock(&mu);
    ++answered;
  };
  std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(id, so);
  std::vector<double> us;
  for (int b = 0; b < batches; ++b) {
    const absl::Time t = absl::Now();
    for (int i = 0; i < 64; ++i)
      s->AddLabeled(data[(b * 64 + i) % data.size()]).IgnoreError();
    absl::MutexLock lock(&mu);
    auto done = [&]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return answered > b; };
    mu.Await(absl::Condition(&done));
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t));
  }
  s->Finish().IgnoreError();
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

double Concurrent(client::Client& c, const std::vector<Example>& data,
                  int streams) {
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int k = 0; k < streams; ++k) {
    threads.emplace_back(
        [&, k] { StreamRate(c, absl::StrCat("c", k), data, 64); });
  }
  for (std::thread& t : threads) t.join();
  return streams * data.size() / absl::ToDoubleSeconds(absl::Now() - start);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace perceptron

int main(int argc, char** argv) {
  using namespace perceptron;
  absl::ParseCommandLine(argc, argv);
  const std::vector<client::Example> data =
      Data(absl::GetFlag(FLAGS_examples), 1);
  const std::vector<client::Example> quarter(data.begin(),
                                             data.begin() + data.size() / 4);
  const Durability modes[] = {Durability::kNone, Durability::kAsync,
                              Durability::kSync};
  std::map<int, std::vector<double>> rate, p50, p99, conc;
  const std::string root =
      std::filesystem::temp_directory_path() / "perceptrond-bench";
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    for (Durability m : modes) {
      const std::string dir = absl::StrCat(root, "-", static_cast<int>(m));
      std::filesystem::remove_all(dir);
      {
        Server s = Start(m, dir);
        Create(*s.client, "w1");
        Create(*s.client, "lat");
        for (int k = 0; k < 4; ++k) Create(*s.client, absl::StrCat("c", k));
        rate[static_cast<int>(m)].push_back(
            StreamRate(*s.client, "w1", data, 64));
        auto [a, b] = Latency(*s.client, "lat", data, 2000);
        p50[static_cast<int>(m)].push_back(a);
        p99[static_cast<int>(m)].push_back(b);
        conc[static_cast<int>(m)].push_back(Concurrent(*s.client, quarter, 4));
        s.server->Shutdown();
      }  // the store closed (LevelDB's compactions done) before its files go
      std::filesystem::remove_all(dir);
    }
  }
  const int none = static_cast<int>(Durability::kNone);
  std::printf(
      "W1 (dense d=20, batches of 64), %zu examples, medians of %d repeats\n\n",
      data.size(), absl::GetFlag(FLAGS_repeats));
  std::printf(
      "| durability | 1 stream ex/s | vs none | p50 batch us | vs none | p99 "
      "batch us | "
      "vs none | 4 streams ex/s | vs none "
      "|\n|---|---|---|---|---|---|---|---|---|\n");
  for (Durability m : modes) {
    const int k = static_cast<int>(m);
    std::printf(
        "| %s | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f |\n",
        std::string(server::DurabilityName(m)).c_str(), Median(rate[k]),
        Median(rate[k]) / Median(rate[none]), Median(p50[k]),
        Median(p50[k]) / Median(p50[none]), Median(p99[k]),
        Median(p99[k]) / Median(p99[none]), Median(conc[k]),
        Median(conc[k]) / Median(conc[none]));
  }

  // Restart time of a model with a long history, with snapshots (default) and
  // from the log alone.
  const std::vector<client::Example> history =
      Data(absl::GetFlag(FLAGS_history), 2);
  for (uint64_t every : {uint64_t{1000}, uint64_t{1} << 40}) {
    const std::string dir = root + "-restart";
    std::filesystem::remove_all(dir);
    {
      Server s = Start(Durability::kSync, dir, every);
      Create(*s.client, "long");
      StreamRate(*s.client, "long", history, 64);
      s.server->Shutdown();
    }
    uintmax_t bytes = 0;
    for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
      if (f.is_regular_file()) bytes += f.file_size();
    }
    const double per_million =
        static_cast<double>(bytes) / (1 << 20) / (history.size() / 1e6);
    const absl::Time t = absl::Now();
    std::optional<Server> s(Start(Durability::kSync, dir, every));
    const double took = absl::ToDoubleMilliseconds(absl::Now() - t);
    const server::RecoveryReport& rep = s->server->recovery();
    std::printf(
        "\nrestart, %s: a model with %zu examples (%.0f log records; the "
        "data directory %.1f MiB, %.2f MiB per 10^6 examples): start %.1f ms, "
        "recovery %.1f ms, %llu records replayed\n",
        every == 1000 ? "snapshot every 1000 batches"
                      : "no snapshot (log only)",
        history.size(), history.size() / 64.0,
        static_cast<double>(bytes) / (1 << 20), per_million, took,
        absl::ToDoubleMilliseconds(rep.took),
        static_cast<unsigned long long>(rep.records_applied));
    s->server->Shutdown();
    s.reset();
    std::filesystem::remove_all(dir);
  }
  return 0;
}
