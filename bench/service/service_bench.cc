// service_bench: docs/design.md section 7 in one run. Every figure it prints is
// a ratio of two things measured in this run (or a figure of this run beside
// the target it is compared with). docs/benchmarks.md describes the method.
//
// The benchmark is a sequence of parts, each measuring and printing its own
// tables; --parts picks some (in this order whatever the order given):
//
//   paths    W1-W3 through perceptrond (durability none and sync, the
//            certificate on and off, without per-RPC metrics, as columns),
//            through the echo (the transport's limit) and the core in-process
//   refresh  the certificate's refresh in-process at 10^4 to 3x10^5 examples
//   w4       one example at a time, predict then reveal: round trips
//   w5       named features (30 a text-like example, hash_bits 20): by name,
//            hashed before timing, as columns, against the echo
//   w6       a multiclass model (10 classes, d = 64, batches of 64) per item
//            and as columns against the echo; its core epoch against
//            scikit-learn's Perceptron (one against the rest)
//   peers    scikit-learn's Perceptron on the same data, the core beside it
//   python   the Python package: numpy columns against per-item messages
//   memory   10,000 models; durability sync streaming; 1,000 open streams
//   growth   cost as d and the number of models grow
//   proxy    three shards behind nginx against the same shards direct
//   recovery a restart after kill -9 of a model with 10^7 examples (sync)
//   bursts   the server's memory after hostile bursts (burst_bench.py)
//   targets  the targets of section 7, from the parts that ran
//
//   service_bench --bin=build/release [--repeats=3] [--quick] [--parts=...]
//   service_bench --parts=paths --paths=none,nocert --workloads=W1  # profile
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/service/data.h"
#include "bench/service/measure.h"
#include "bench/service/memory.h"
#include "bench/service/options.h"
#include "bench/service/processes.h"
#include "bench/service/proxy.h"
#include "bench/service/recovery.h"
#include "bench/service/refresh.h"
#include "bench/service/targets.h"

ABSL_FLAG(std::string, bin, "build/release",
          "The build directory with the binaries");
ABSL_FLAG(std::string, python, "/usr/bin/python3",
          "Debian's Python (sees python3-sklearn)");
ABSL_FLAG(int, repeats, 3,
          "Repeats of each throughput measurement (medians are shown)");
ABSL_FLAG(bool, quick, false, "Smaller sizes, for a smoke run");
ABSL_FLAG(std::string, parts, "all",
          "The parts to run (comma-separated): paths, refresh, w4, w5, w6, "
          "peers, python, memory, growth, proxy, targets; or all");
ABSL_FLAG(std::string, deploy, "deploy",
          "The deploy directory, for nginx/nginx.conf");
ABSL_FLAG(std::string, workloads, "",
          "With --paths: only these of W1, W2, W3 (comma-separated)");
ABSL_FLAG(std::string, paths, "",
          "Only these paths (comma-separated: none, nocert, echo, sync, "
          "'sync nocert', bare, columnar, 'echo columnar', 'columnar "
          "nocert'): the paths part then prints their rates and server CPU "
          "alone, for profiling one path; w4 goes through the per-item ones");
ABSL_FLAG(std::vector<std::string>, server_flags, {},
          "Flags added to every perceptrond this benchmark starts (comma "
          "separated), e.g. --server_flags=--certificate_model_mb=16");
ABSL_FLAG(std::vector<std::string>, echo_flags, {},
          "Flags added to every echo server this benchmark starts (comma "
          "separated), e.g. --echo_flags=--allocator_huge_pages=false");
ABSL_FLAG(int, in_flight, 64,
          "Batches in flight on a pipelined stream (every path alike)");

namespace perceptron::bench {
namespace {

const std::vector<std::string> kParts = {
    "paths",  "refresh", "w4",    "w5",       "w6",     "peers",  "python",
    "memory", "growth",  "proxy", "recovery", "bursts", "targets"};

// The benchmark's state: the workloads' data, built once, and every figure
// the parts measured, which the targets part reads.
class Benchmark {
 public:
  Benchmark(bool quick, int repeats, std::vector<Workload> workloads,
            std::vector<Path> paths, bool profiling)
      : quick_(quick),
        repeats_(repeats),
        profiling_(profiling),
        workloads_(std::move(workloads)),
        paths_(std::move(paths)) {
    for (const Workload& w : workloads_) {
      data_.push_back(
          Generate(w, static_cast<size_t>(w.batch) * w.pool_batches, 7));
      requests_.push_back(Requests(w, data_.back(), "bench"));
      pools_.push_back(Serialized(requests_.back()));
      columnar_pools_.push_back(
          Serialized(ColumnarRequests(w, data_.back(), "bench")));
    }
  }

  // Runs part `name` (one of kParts) and prints its tables.
  bool Run(const std::string& name) {
    if (name == "paths") return PathsPart();
    if (name == "refresh") return RefreshPart();
    if (name == "w4") return W4Part();
    if (name == "w5") return W5Part();
    if (name == "w6") return W6Part();
    if (name == "peers") return PeersPart();
    if (name == "python") return PythonPart();
    if (name == "memory") return MemoryPart();
    if (name == "growth") return GrowthPart();
    if (name == "proxy") return ProxyPart();
    if (name == "recovery") return RecoveryPart();
    if (name == "bursts") return BurstsPart();
    if (name == "targets") return TargetsPart();
    return false;
  }

 private:
  double MedianOf(const std::string& key) const {
    auto it = run_.rates.find(key);
    return it == run_.rates.end() ? 0 : Median(it->second);
  }
  bool Has(const std::string& key) const { return run_.rates.contains(key); }
  void PrintLoad() const {
    std::printf(
        "Other processes kept %.2f cores busy during the median measurement "
        "(%.2f at most, of %u).\n\n",
        Median(others_), *std::max_element(others_.begin(), others_.end()),
        std::thread::hardware_concurrency());
  }

  // W1-W3 through every path, a fresh server each, paths interleaved within
  // each repeat; the core in-process beside them.
  bool PathsPart() {
    new_memory_ = MeasureNewMemory();
    for (int r = 0; r < repeats_; ++r) {
      for (size_t k = 0; k < workloads_.size(); ++k) {
        const Workload& w = workloads_[k];
        const int64_t batches = w.examples / w.batch;
        for (const Path& path : paths_) {
          const Measured m = Fresh(
              path, w, path.columnar ? columnar_pools_[k] : pools_[k], batches);
          run_.rates[w.name + " " + path.name].push_back(m.rate);
          server_us_[w.name + " " + path.name].push_back(m.server_us);
          grown_[w.name + " " + path.name].push_back(m.grown_mib);
          ended_[w.name + " " + path.name] = m.certificate;
          others_.push_back(m.others);
        }
        if (!profiling_) {
          run_.rates[w.name + " core"].push_back(
              CoreRate(w, data_[k], w.examples));
        }
      }
    }
    if (profiling_) {
      std::printf(
          "| workload | path | examples/s | server CPU us/example | server "
          "memory grown, MiB | the certificate at the end (last repeat) |\n"
          "|---|---|---|---|---|---|\n");
      for (const Workload& w : workloads_) {
        for (const Path& path : paths_) {
          const std::string key = w.name + " " + path.name;
          std::printf("| %s | %s | %s | %.3f | %.1f | %s |\n", w.name.c_str(),
                      path.name.c_str(), Si(MedianOf(key)).c_str(),
                      Median(server_us_[key]), Median(grown_[key]),
                      ended_[key].c_str());
        }
      }
      PrintLoad();
      PrintNewMemory();
      return true;
    }
    PrintCertificateCost();
    PrintThroughput();
    PrintColumnar();
    PrintRpcMetrics();
    std::fflush(stdout);
    return true;
  }

  void PrintCertificateCost() {
    std::printf(
        "## The certificate's cost (a fresh server each: the model keeps "
        "up to 100,000 distinct rows, within 64 MiB, an example equal to one "
        "of them counting it again, then freezes once a solution converges; "
        "durability sync also journals them)\n\n");
    std::printf(
        "| workload | certificate on | off | on/off | server memory grown, "
        "MiB, on / off | where it ended (last repeat) |\n"
        "|---|---|---|---|---|---|\n");
    for (const std::string durability : {"none", "sync"}) {
      const std::string off_path =
          durability == "none" ? "nocert" : "sync nocert";
      for (const Workload& w : workloads_) {
        if (!Has(w.name + " " + off_path)) continue;
        const std::string on_key = w.name + " " + durability,
                          off_key = w.name + " " + off_path;
        const double on = MedianOf(on_key), off = MedianOf(off_key);
        std::printf(
            "| %s examples/s, durability %s | %s | %s | %.2f | %.1f / %.1f | "
            "%s |\n",
            w.name.c_str(), durability.c_str(), Si(on).c_str(), Si(off).c_str(),
            on / off, Median(grown_[on_key]), Median(grown_[off_key]),
            ended_[on_key].c_str());
      }
    }
    std::printf("\n");
    PrintNewMemory();
  }

  // What memory new to a process costs this machine, and so what the memory
  // each server grew while streaming cost it, in server CPU an example.
  void PrintNewMemory() {
    std::printf(
        "New memory: %.2f ms a MiB the first time a process touches it (64 "
        "MiB on huge pages, as the servers' heaps), %.2f ms when it touches "
        "it again after giving it back.",
        new_memory_.first_ms_per_mib, new_memory_.again_ms_per_mib);
    for (const Workload& w : workloads_) {
      std::string line;
      for (const Path& path : paths_) {
        const std::string key = w.name + " " + path.name;
        if (!grown_.count(key)) continue;
        absl::StrAppend(
            &line, line.empty() ? "" : ", ", path.name, " ",
            absl::StrFormat("%.3f", Median(grown_[key]) *
                                        new_memory_.first_ms_per_mib * 1e3 /
                                        static_cast<double>(w.examples)));
      }
      if (!line.empty()) {
        std::printf(
            " %s, the memory grown at the first rate, us an example: "
            "%s.",
            w.name.c_str(), line.c_str());
      }
    }
    std::printf("\n\n");
  }

  void PrintThroughput() {
    std::printf(
        "## Throughput, examples/s (the client sends bytes serialized before "
        "timing; a fresh server each)\n\n");
    PrintLoad();
    std::printf(
        "| workload | echo (transport) | perceptrond none | none/echo | "
        "perceptrond sync | sync/echo | core in-process "
        "|\n|---|---|---|---|---|---|---|\n");
    for (const Workload& w : workloads_) {
      const double e = MedianOf(w.name + " echo"),
                   n = MedianOf(w.name + " none"),
                   s = MedianOf(w.name + " sync"),
                   c = MedianOf(w.name + " core");
      std::printf("| %s | %s | %s | %.2f | %s | %.2f | %s |\n", w.name.c_str(),
                  Si(e).c_str(), Si(n).c_str(), n / e, Si(s).c_str(), s / e,
                  Si(c).c_str());
    }
    std::printf(
        "\nServer CPU per example, microseconds (user + system, all its "
        "threads):\n\n| workload | echo | none | sync |\n|---|---|---|---|\n");
    for (const Workload& w : workloads_) {
      std::printf("| %s | %.3f | %.3f | %.3f |\n", w.name.c_str(),
                  Median(server_us_[w.name + " echo"]),
                  Median(server_us_[w.name + " none"]),
                  Median(server_us_[w.name + " sync"]));
    }
  }

  void PrintColumnar() {
    std::printf(
        "\n## Columnar batches (durability none; the same batches as columns)"
        "\n\n| workload | per-item | columnar | columnar/per-item | echo of "
        "the columns | columnar/echo | columnar/core | server CPU us/example, "
        "per-item | columnar |\n|---|---|---|---|---|---|---|---|---|\n");
    for (const Workload& w : workloads_) {
      const double item = MedianOf(w.name + " none"),
                   col = MedianOf(w.name + " columnar"),
                   echo_col = MedianOf(w.name + " echo columnar"),
                   core = MedianOf(w.name + " core");
      std::printf("| %s | %s | %s | %.2f | %s | %.2f | %.2f | %.3f | %.3f |\n",
                  w.name.c_str(), Si(item).c_str(), Si(col).c_str(), col / item,
                  Si(echo_col).c_str(), col / echo_col, col / core,
                  Median(server_us_[w.name + " none"]),
                  Median(server_us_[w.name + " columnar"]));
    }
  }

  void PrintRpcMetrics() {
    std::printf(
        "\n## The per-RPC metrics (durability none, with and without "
        "--rpc_metrics)\n\n| workload | with | without | with/without "
        "|\n|---|---|---|---|\n");
    for (const Workload& w : workloads_) {
      const double n = MedianOf(w.name + " none"),
                   b = MedianOf(w.name + " bare");
      std::printf("| %s examples/s | %s | %s | %.2f |\n", w.name.c_str(),
                  Si(n).c_str(), Si(b).c_str(), n / b);
    }
  }

  bool RefreshPart() {
    run_.refresh = RefreshTable(repeats_);
    std::fflush(stdout);
    return true;
  }

  // W4 with the defaults: the certificate on, items one at a time.
  // W5: the same text-like examples by name (the server hashes), hashed by
  // the client before timing (sparse items, and columns), each against an
  // echo of its own bytes; a fresh server each, interleaved.
  bool W5Part() {
    const Workload w{"W5", 1u << 20, 30, 256, 64, quick_ ? 50000 : 200000, 20};
    const NamedData d =
        GenerateNamed(static_cast<size_t>(w.batch) * w.pool_batches, 11);
    const std::vector<grpc::ByteBuffer> named =
        Serialized(NamedRequests(w, d, "bench"));
    const std::vector<grpc::ByteBuffer> named_columns =
        Serialized(NamedColumnarRequests(w, d, "bench"));
    const Data sparse = Hashed(w, d);
    const std::vector<grpc::ByteBuffer> hashed =
        Serialized(Requests(w, sparse, "bench"));
    const std::vector<grpc::ByteBuffer> columns =
        Serialized(ColumnarRequests(w, sparse, "bench"));
    size_t named_bytes = 0, hashed_bytes = 0, named_columns_bytes = 0;
    for (const grpc::ByteBuffer& b : named) named_bytes += b.Length();
    for (const grpc::ByteBuffer& b : named_columns) {
      named_columns_bytes += b.Length();
    }
    for (const grpc::ByteBuffer& b : hashed) hashed_bytes += b.Length();
    struct Row {
      std::string name;
      Path path;
      const std::vector<grpc::ByteBuffer>* pool;
    };
    const std::vector<Row> rows = {
        {"by name", {"none"}, &named},
        {"by name, certificate off",
         {"nocert", false, "none", true, false},
         &named},
        {"by name, no name table",
         {"nonames", false, "none", true, true, false, false},
         &named},
        {"echo of the names", {"echo", true}, &named},
        {"by name, columns",
         {"named columnar", false, "none", true, true, true},
         &named_columns},
        {"echo of the named columns", {"echo columnar", true}, &named_columns},
        {"hashed before", {"none"}, &hashed},
        {"echo of the hashed", {"echo", true}, &hashed},
        {"hashed, columns",
         {"columnar", false, "none", true, true, true},
         &columns},
        {"echo of the columns", {"echo columnar", true}, &columns},
    };
    std::map<std::string, std::vector<double>> rate, us;
    std::string ended, names;
    for (int r = 0; r < repeats_; ++r) {
      for (const Row& row : rows) {
        const Measured m = Fresh(row.path, w, *row.pool, w.examples / w.batch);
        rate[row.name].push_back(m.rate);
        us[row.name].push_back(m.server_us);
        if (row.name == "by name") {
          ended = m.certificate;
          names = m.names;
        }
      }
    }
    std::printf(
        "\n## W5: 30 named features in 3 namespaces, hash_bits 20, batches of "
        "256 (%.0f bytes an example by name, %.0f by name in columns, %.0f "
        "hashed)\n\n| path | "
        "examples/s | server CPU us/example |\n|---|---|---|\n",
        static_cast<double>(named_bytes) / (w.batch * w.pool_batches),
        static_cast<double>(named_columns_bytes) / (w.batch * w.pool_batches),
        static_cast<double>(hashed_bytes) / (w.batch * w.pool_batches));
    for (const Row& row : rows) {
      std::printf("| %s | %s | %.3f |\n", row.name.c_str(),
                  Si(Median(rate[row.name])).c_str(), Median(us[row.name]));
    }
    auto ratio = [&](const char* a, const char* b) {
      return Median(rate[a]) / Median(rate[b]);
    };
    run_.w5 = {
        {"by name / echo", ratio("by name", "echo of the names")},
        {"by name, columns / echo",
         ratio("by name, columns", "echo of the named columns")},
        {"hashed / echo", ratio("hashed before", "echo of the hashed")},
        {"columns / echo", ratio("hashed, columns", "echo of the columns")},
        {"by name / hashed", ratio("by name", "hashed before")},
        {"certificate on / off", ratio("by name", "by name, certificate off")},
        {"name table on / off", ratio("by name", "by name, no name table")}};
    std::printf("\n| ratio | value |\n|---|---|\n");
    for (const auto& [name, value] : run_.w5) {
      std::printf("| %s | %.2f |\n", name.c_str(), value);
    }
    std::printf("\nThe certificate (by name): %s\n", ended.c_str());
    std::printf("The name table (by name): %s\n", names.c_str());
    run_.hash_ns = HashNsPerFeature(d, w.hash_bits, quick_ ? 3 : 9);
    std::printf(
        "In-process, the core's FeatureHasher over the same %zu examples "
        "(medians of %d passes): %.1f ns a feature.\n",
        d.labels.size(), quick_ ? 3 : 9, run_.hash_ns);
    std::fflush(stdout);
    return true;
  }

  // W6 (docs/design.md section 7): a multiclass model of 10 classes, dense
  // rows of d = 64 in batches of 64, per item and as columns, each against an
  // echo of its own bytes (a fresh server each, interleaved); and the core's
  // multiclass epoch against scikit-learn's Perceptron's (one against the
  // rest, ten binary models) on the same rows, in-process.
  bool W6Part() {
    const Workload w{"W6", 64, 0, 64, 64, quick_ ? 50000 : 400000, 0, 10};
    const Data d =
        Generate(w, static_cast<size_t>(w.batch) * w.pool_batches, 13);
    const std::vector<grpc::ByteBuffer> items =
        Serialized(Requests(w, d, "bench"));
    const std::vector<grpc::ByteBuffer> columns =
        Serialized(ColumnarRequests(w, d, "bench"));
    struct Row {
      std::string name;
      Path path;
      const std::vector<grpc::ByteBuffer>* pool;
    };
    const std::vector<Row> rows = {
        {"per item", {"none"}, &items},
        {"per item, certificate off",
         {"nocert", false, "none", true, false},
         &items},
        {"echo of the items", {"echo", true}, &items},
        {"columns", {"columnar", false, "none", true, true, true}, &columns},
        {"echo of the columns", {"echo columnar", true}, &columns},
    };
    std::map<std::string, std::vector<double>> rate, us;
    std::string ended;
    for (int r = 0; r < repeats_; ++r) {
      for (const Row& row : rows) {
        const Measured m = Fresh(row.path, w, *row.pool, w.examples / w.batch);
        rate[row.name].push_back(m.rate);
        us[row.name].push_back(m.server_us);
        if (row.name == "per item") ended = m.certificate;
      }
    }
    // In-process: scikit-learn's epoch, then the core's, on the same rows.
    std::string dir =
        std::filesystem::temp_directory_path() / "perceptron-w6-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) return false;
    const int in_process_repeats = quick_ ? 1 : 9;
    WriteForSklearn(dir, w, d);
    const std::string cmd = absl::StrCat(
        Options().python, " ",
        std::filesystem::path(__FILE__).parent_path().string(),
        "/sklearn_bench.py ", dir, " ", in_process_repeats, " ", w.name);
    double sk_epoch = 0;
    const bool ran = ForEachOutputLine(
        cmd, [&](const std::vector<std::string>& f, double v) {
          if (f.size() == 3 && f[1] == "epoch") sk_epoch = v;
        });
    std::filesystem::remove_all(dir);
    if (!ran || sk_epoch == 0) {
      std::fprintf(stderr, "the scikit-learn benchmark failed: %s\n",
                   cmd.c_str());
      return false;
    }
    std::vector<double> core;
    for (int r = 0; r < in_process_repeats; ++r) {
      core.push_back(
          CoreRate(w, d, static_cast<int64_t>(d.labels.size()) * 20));
    }
    std::printf(
        "\n## W6: a multiclass model of 10 classes, d = 64 dense, batches of "
        "64\n\n| path | examples/s | server CPU us/example |\n|---|---|---|\n");
    for (const Row& row : rows) {
      std::printf("| %s | %s | %.3f |\n", row.name.c_str(),
                  Si(Median(rate[row.name])).c_str(), Median(us[row.name]));
    }
    auto ratio = [&](const char* a, const char* b) {
      return Median(rate[a]) / Median(rate[b]);
    };
    run_.w6 = {{"per item / echo", ratio("per item", "echo of the items")},
               {"columns / echo", ratio("columns", "echo of the columns")},
               {"certificate on / off (per item)",
                ratio("per item", "per item, certificate off")},
               {"core epoch / scikit-learn epoch", Median(core) / sk_epoch}};
    std::printf(
        "\nIn-process, the same %zu rows (medians of %d): the core %s, "
        "scikit-learn's Perceptron (one against the rest) %s an epoch.\n",
        d.labels.size(), in_process_repeats, Si(Median(core)).c_str(),
        Si(sk_epoch).c_str());
    std::printf("The certificate (per item, last repeat): %s\n", ended.c_str());
    std::printf("\n| ratio | value |\n|---|---|\n");
    for (const auto& [name, value] : run_.w6) {
      std::printf("| %s | %.2f |\n", name.c_str(), value);
    }
    std::fflush(stdout);
    return true;
  }

  bool W4Part() {
    std::vector<Path> w4_paths;
    for (const Path& path : paths_) {
      // The certificate's share of the latency: nocert and sync nocert
      // beside none and sync.
      if ((path.certificate || path.name == "nocert" ||
           path.name == "sync nocert") &&
          !path.columnar)
        w4_paths.push_back(path);
    }
    std::tie(run_.p50, p99_) = W4Latencies(w4_paths, repeats_, quick_);
    std::printf(
        "\n## W4: one example at a time, predict then reveal (round trip per "
        "request)\n\n| path | p50 us | p50 vs echo | p99 us | p99 vs echo "
        "|\n|---|---|---|---|---|\n");
    const bool with_echo = run_.p50.contains("echo");
    for (const auto& [name, p50] : run_.p50) {
      const double p99 = Median(p99_.at(name));
      std::printf("| %s | %.0f | %.2f | %.0f | %.2f |\n", name.c_str(),
                  Median(p50),
                  with_echo ? Median(p50) / Median(run_.p50.at("echo")) : 0,
                  p99, with_echo ? p99 / Median(p99_.at("echo")) : 0);
    }
    if (run_.p50.contains("none") && run_.p50.contains("bare")) {
      std::printf(
          "\nW4 p50 with the per-RPC metrics / without: %.0f us / %.0f us = "
          "%.2f\n",
          Median(run_.p50["none"]), Median(run_.p50["bare"]),
          Median(run_.p50["none"]) / Median(run_.p50["bare"]));
    }
    std::fflush(stdout);
    return true;
  }

  // Each workload's scikit-learn run, then the core's on the same data right
  // after it, so that the two sides of core/sklearn are seconds apart. Each
  // side is the median of nine runs (one with --quick): a run takes
  // milliseconds, short enough for one hiccup of the machine to move a median
  // of three.
  bool PeersPart() {
    std::string dir =
        std::filesystem::temp_directory_path() / "perceptron-sklearn-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) return false;
    const int in_process_repeats = quick_ ? 1 : 9;
    for (size_t k = 0; k < workloads_.size(); ++k) {
      WriteForSklearn(dir, workloads_[k], data_[k]);
    }
    for (size_t k = 0; k < workloads_.size(); ++k) {
      const Workload& w = workloads_[k];
      const std::string cmd = absl::StrCat(
          Options().python, " ",
          std::filesystem::path(__FILE__).parent_path().string(),
          "/sklearn_bench.py ", dir, " ", in_process_repeats, " ", w.name);
      const bool ran = ForEachOutputLine(
          cmd, [&](const std::vector<std::string>& f, double v) {
            if (f.size() == 3)
              (f[1] == "epoch" ? run_.sk_epoch : sk_partial_)[f[0]] = v;
          });
      if (!ran || !run_.sk_epoch.contains(w.name)) {
        std::fprintf(stderr, "the scikit-learn benchmark failed: %s\n",
                     cmd.c_str());
        return false;
      }
      std::vector<double> rates;
      for (int r = 0; r < in_process_repeats; ++r) {
        rates.push_back(CoreRate(w, data_[k], w.examples));
      }
      run_.core_same[w.name] = Median(rates);
    }
    std::filesystem::remove_all(dir);
    std::printf(
        "\n## The core against scikit-learn's Perceptron (in-process, the "
        "same data; each side the median of %d runs, the core's right after "
        "scikit-learn's)\n\n| workload | core | sklearn epoch | core/sklearn "
        "epoch | sklearn partial_fit | core/partial_fit |\n"
        "|---|---|---|---|---|---|\n",
        in_process_repeats);
    for (const Workload& w : workloads_) {
      const double c = run_.core_same[w.name];
      std::printf("| %s | %s | %s | %.1f | %s | %.0f |\n", w.name.c_str(),
                  Si(c).c_str(), Si(run_.sk_epoch[w.name]).c_str(),
                  c / run_.sk_epoch[w.name], Si(sk_partial_[w.name]).c_str(),
                  c / sk_partial_[w.name]);
    }
    std::fflush(stdout);
    return true;
  }

  // numpy columns against per-item messages built in Python, and a DataFrame
  // by name against a list of dicts (python_bench.py), a fresh server each
  // repeat. 10^6 rows: 2 x 10^5 rows
  // as columns take about a tenth of a second, which the kernel's clearing of
  // the pages a fresh server's heap grows into can double on this machine.
  bool PythonPart() {
    const std::string here =
        std::filesystem::path(__FILE__).parent_path().string();
    for (int r = 0; r < repeats_; ++r) {
      auto server = Perceptrond("none");
      const std::string py_cmd = absl::StrCat(
          "PYTHONPATH=", here, "/../../client/python:", Options().bin,
          "/python ", Options().python, " ", here, "/python_bench.py ",
          server->target(), " ", quick_ ? 100000 : 1000000);
      const bool ran = ForEachOutputLine(
          py_cmd, [&](const std::vector<std::string>& f, double v) {
            if (f.size() != 2) return;
            if (f[0] == "items") run_.py_items.push_back(v);
            if (f[0] == "columns") run_.py_columns.push_back(v);
            if (f[0] == "dicts") py_dicts_.push_back(v);
            if (f[0] == "frame") py_frame_.push_back(v);
          });
      const size_t runs = static_cast<size_t>(r + 1);
      if (!ran || run_.py_items.size() != runs ||
          run_.py_columns.size() != runs || py_dicts_.size() != runs ||
          py_frame_.size() != runs) {
        std::fprintf(stderr, "the Python client benchmark failed: %s\n",
                     py_cmd.c_str());
        return false;
      }
    }
    std::printf(
        "\n## The Python package (W1's shape, d=20, %s rows, durability "
        "none, a fresh server each; examples/s, the messages built while "
        "streaming)\n\n"
        "| per-item messages, batches of 64 | numpy columns, the package's "
        "default batches (8,192 rows at d=20) | columns / per-item |\n"
        "|---|---|---|\n"
        "| %s | %s | %.1f |\n",
        quick_ ? "10^5" : "10^6", Si(Median(run_.py_items)).c_str(),
        Si(Median(run_.py_columns)).c_str(),
        Median(run_.py_columns) / Median(run_.py_items));
    std::printf(
        "\nBy name (%s rows of 16 numbers and 4 categorical columns of 10 "
        "values, hash_bits 18; the input made before timing):\n\n"
        "| a list of dicts | a pandas DataFrame | DataFrame / dicts |\n"
        "|---|---|---|\n| %s | %s | %.1f |\n",
        quick_ ? "2 x 10^4" : "2 x 10^5", Si(Median(py_dicts_)).c_str(),
        Si(Median(py_frame_)).c_str(), Median(py_frame_) / Median(py_dicts_));
    std::fflush(stdout);
    return true;
  }

  bool MemoryPart() {
    run_.memory = Memory(pools_[0], requests_[0], quick_, true);
    std::fflush(stdout);
    return true;
  }

  // How cost grows with d (one stream, durability none) and with the number
  // of models.
  bool GrowthPart() {
    std::printf(
        "\n## Growth with d (durability none, one pipelined stream)\n\n"
        "| d | examples | batch | examples/s | server RSS after, MB "
        "|\n|---|---|---|---|---|\n");
    const std::vector<Workload> by_d = {
        {"d10", 10, 0, 64, 128, 200000},
        {"d100", 100, 0, 64, 128, 200000},
        {"d1e3", 1000, 0, 64, 64, 50000},
        {"d1e4", 10000, 0, 16, 16, 10000},
        {"d1e4s", 10000, 32, 256, 64, 200000},
        {"d1e5s", 100000, 32, 256, 64, 200000},
        {"d1e6s", 1000000, 32, 256, 64, 200000}};
    for (const Workload& w : by_d) {
      auto p = Perceptrond("none");
      CreateModel(p->target(), w.name, w.dimension);
      const Data d =
          Generate(w, static_cast<size_t>(w.batch) * w.pool_batches, 11);
      const double rate = ServiceRate(
          p->target(), Serialized(Requests(w, d, w.name)),
          (quick_ ? w.examples / 5 : w.examples) / w.batch, w.batch);
      std::printf("| %u%s | %s | %d | %s | %.1f |\n", w.dimension,
                  w.nonzeros ? " (sparse, 32 non-zeros)" : " (dense)",
                  Si(w.examples).c_str(), w.batch, Si(rate).c_str(),
                  RssAndThreads(p->pid).first / 1024.0);
      std::fflush(stdout);
    }
    std::printf(
        "\n## Growth with the number of models (d=20, durability none)\n\n"
        "| models | create/s | server RSS, MB | W1 examples/s on one of them "
        "|\n|---|---|---|---|\n");
    auto p = Perceptrond("none");
    int created = 0;
    for (int target : {1, 10, 100, 1000, 10000, quick_ ? 10000 : 100000}) {
      const absl::Time start = absl::Now();
      const int before = created;
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
          auto stub = v1::PerceptronService::NewStub(Channel(p->target()));
          for (int i = before + t; i < target; i += 4) {
            CreateModel(*stub, absl::StrCat("n", i), 20);
          }
        });
      }
      for (std::thread& t : threads) t.join();
      created = target;
      const double rate =
          (target - before) / absl::ToDoubleSeconds(absl::Now() - start);
      std::vector<v1::LearnRequest> pool = requests_[0];
      for (auto& req : pool) req.set_model_id("n0");
      const double w1 = ServiceRate(p->target(), Serialized(pool), 2000, 64);
      std::printf("| %d | %s | %.1f | %s |\n", target, Si(rate).c_str(),
                  RssAndThreads(p->pid).first / 1024.0, Si(w1).c_str());
      std::fflush(stdout);
    }
    return true;
  }

  bool ProxyPart() {
    std::printf("\n");
    ProxyTable(workloads_[0], repeats_);
    return true;
  }

  // W1 streamed with durability sync into one model, the server killed with
  // SIGKILL and started again on its data directory.
  bool RecoveryPart() {
    const Workload w1 = {"W1", 20, 0, 64, 512, 0};
    const std::vector<grpc::ByteBuffer> pool =
        Serialized(Requests(w1, Generate(w1, 64 * 512, 7), "bench"));
    const uint64_t examples = quick_ ? 1000000 : 10000000;
    const Recovery r = MeasureRecovery(w1, pool, examples);
    run_.recovery = r;
    if (!r.ok) {
      std::fprintf(stderr, "the recovery part failed: %s\n", r.error.c_str());
      return false;
    }
    std::printf(
        "\n## Restart after kill -9 (W1, durability sync, the server's "
        "defaults)\n\n%llu examples acknowledged in %.1f s, then SIGKILL; "
        "the data directory %.1f MiB (%.2f MiB per 10^6 examples); started "
        "again: listening after %.3f s, the model's status answered after "
        "%.3f s with %llu examples.\n",
        static_cast<unsigned long long>(r.acknowledged), r.stream_s, r.dir_mib,
        r.dir_mib * 1e6 / static_cast<double>(r.acknowledged), r.start_s,
        r.ready_s, static_cast<unsigned long long>(r.restored));
    std::fflush(stdout);
    return true;
  }

  // burst_bench.py: RSS at the baseline and after each of three bursts.
  bool BurstsPart() {
    const Bursts b = MeasureBursts(quick_ ? 10 : 30, 3);
    run_.bursts = b;
    if (!b.ok) {
      std::fprintf(stderr, "the bursts part failed: %s\n", b.error.c_str());
      return false;
    }
    std::printf(
        "\n## Memory after bursts (bench/service/burst_bench.py, durability "
        "sync)\n\n| baseline | after burst 1 | after burst 2 | after burst 3 "
        "|\n|---|---|---|---|\n| %.1f MB |",
        b.baseline_mb);
    for (double mb : b.after_mb) {
      std::printf(" %.1f MB (%+.1f) |", mb, mb - b.baseline_mb);
    }
    std::printf("\n\nRSS %.0f s after each burst ended.\n", b.seconds);
    std::fflush(stdout);
    return true;
  }

  // The targets of docs/design.md section 7 and of the issues, each from
  // this run (bench/service/targets.h).
  bool TargetsPart() {
    run_.quick = quick_;
    PrintTargets(run_);
    return true;
  }

  const bool quick_;
  const int repeats_;
  const bool profiling_;  // --paths: the paths part prints rates alone
  const std::vector<Workload> workloads_;
  const std::vector<Path> paths_;
  std::vector<Data> data_;
  std::vector<std::vector<v1::LearnRequest>> requests_;
  std::vector<std::vector<grpc::ByteBuffer>> pools_, columnar_pools_;

  // What the parts measured, by "WORKLOAD PATH" (and "WORKLOAD core").
  RunFigures run_;
  std::map<std::string, std::vector<double>> server_us_;
  // The server's memory grown while streaming, MiB, by "workload path".
  std::map<std::string, std::vector<double>> grown_;
  // What memory new to a process costs this machine (the paths part's).
  NewMemoryCost new_memory_;
  std::map<std::string, std::string> ended_;  // the last repeat's certificate
  std::vector<double> others_;
  std::map<std::string, std::vector<double>> p99_;
  std::map<std::string, double> sk_partial_;
  // The Python package's rates by name (python_bench.py), each repeat's.
  std::vector<double> py_dicts_, py_frame_;
};

}  // namespace
}  // namespace perceptron::bench

int main(int argc, char** argv) {
  using namespace perceptron::bench;
  absl::ParseCommandLine(argc, argv);
  BenchOptions& options = Options();
  options.bin = absl::GetFlag(FLAGS_bin);
  options.python = absl::GetFlag(FLAGS_python);
  options.deploy = absl::GetFlag(FLAGS_deploy);
  options.server_flags = absl::GetFlag(FLAGS_server_flags);
  options.echo_flags = absl::GetFlag(FLAGS_echo_flags);
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  const bool quick = absl::GetFlag(FLAGS_quick);
  const int repeats = quick ? 1 : absl::GetFlag(FLAGS_repeats);

  std::vector<std::string> parts;
  const std::vector<std::string> asked =
      absl::StrSplit(absl::GetFlag(FLAGS_parts), ',', absl::SkipEmpty());
  for (const std::string& p : asked) {
    if (p != "all" &&
        std::find(kParts.begin(), kParts.end(), p) == kParts.end()) {
      std::fprintf(stderr, "--parts: no part \"%s\" (%s)\n", p.c_str(),
                   absl::StrJoin(kParts, ", ").c_str());
      return 2;
    }
  }
  for (const std::string& p : kParts) {
    if (std::find(asked.begin(), asked.end(), "all") != asked.end() ||
        std::find(asked.begin(), asked.end(), p) != asked.end()) {
      parts.push_back(p);
    }
  }

  std::vector<Workload> workloads = {
      {"W1", 20, 0, 64, 512, quick ? 200000 : 1000000},
      {"W2", 1000, 0, 64, 64, quick ? 20000 : 100000},
      {"W3", 1u << 20, 32, 256, 128, quick ? 100000 : 500000},
  };
  const std::string only_paths = absl::GetFlag(FLAGS_paths);
  if (const std::string only = absl::GetFlag(FLAGS_workloads); !only.empty()) {
    if (only_paths.empty()) {
      std::fprintf(stderr, "--workloads goes with --paths\n");
      return 2;
    }
    const std::vector<std::string> names = absl::StrSplit(only, ',');
    std::erase_if(workloads, [&](const Workload& w) {
      return std::find(names.begin(), names.end(), w.name) == names.end();
    });
  }
  // Every measurement on a fresh server; paths interleaved within a repeat.
  std::vector<Path> paths = {
      {"none"},
      {"nocert", false, "none", true, false},
      {"echo", true},
      {"sync", false, "sync"},
      {"sync nocert", false, "sync", true, false},
      {"bare", false, "none", false},
      {"columnar", false, "none", true, true, true},
      {"echo columnar", true, "none", true, true, true},
  };
  if (!only_paths.empty()) {
    paths.push_back({"columnar nocert", false, "none", true, false, true});
    const std::vector<std::string> names = absl::StrSplit(only_paths, ',');
    std::erase_if(paths, [&](const Path& p) {
      return std::find(names.begin(), names.end(), p.name) == names.end();
    });
  }

  std::printf("# perceptrond benchmark (docs/design.md section 7)\n\n");
  std::printf(
      "machine: %u cores; medians of %d repeats, modes and paths "
      "interleaved; parts: %s\n\n",
      std::thread::hardware_concurrency(), repeats,
      absl::StrJoin(parts, ", ").c_str());
  Benchmark benchmark(quick, repeats, std::move(workloads), std::move(paths),
                      !only_paths.empty());
  for (const std::string& part : parts) {
    if (!benchmark.Run(part)) return 1;
  }
  return 0;
}
