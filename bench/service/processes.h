// Processes the benchmark starts and reads: perceptrond and the echo on free
// ports, and what /proc says of them.
#ifndef PERCEPTRON_BENCH_SERVICE_PROCESSES_H_
#define PERCEPTRON_BENCH_SERVICE_PROCESSES_H_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "bench/service/options.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"
#include "tests/support/launcher.h"

namespace perceptron::bench {

namespace v1 = ::perceptron::v1;

// A server process (tests/support/launcher.h) on a free port, and the data
// directory removed with it.
struct Process {
  std::unique_ptr<launch::Launched> process;
  pid_t pid = 0;
  int port = 0;
  std::string dir;
  std::string target() const { return absl::StrCat("127.0.0.1:", port); }
  ~Process() {
    process.reset();  // SIGTERM, and waits
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

// Starts `argv`, ready at its first line ("... listening on HOST:PORT").
std::unique_ptr<Process> Launch(const std::vector<std::string>& argv,
                                const std::string& dir = "");

// A perceptrond on free ports (gRPC and HTTP) with a fresh data directory.
std::unique_ptr<Process> Perceptrond(const std::string& durability,
                                     bool rpc_metrics = true,
                                     bool certificate = true,
                                     bool names = true);

// The echo server (bench/echo) on a free port with --echo_flags, and `extra`
// flags before them.
std::unique_ptr<Process> EchoServer(const std::vector<std::string>& extra = {},
                                    const std::string& dir = "");

// VmRSS (KiB) and Threads of a process.
std::pair<long, long> RssAndThreads(pid_t pid);

// RssAnon and RssFile (KiB) of a process: its own memory, and the pages of
// files it maps (LevelDB reads its tables through mappings) that are resident.
std::pair<long, long> AnonAndFile(pid_t pid);

// A field of /proc/PID/status in KiB ("VmRSS", "VmHWM": the peak), or 0.
long StatusKiB(pid_t pid, const std::string& field);

// CPU seconds (user + system) used so far by process `pid` ("self": this
// one), from /proc/PID/stat.
double CpuSeconds(const std::string& pid);

// CPU seconds the whole machine has been busy (/proc/stat: every state but
// idle and iowait).
double MachineBusySeconds();

std::shared_ptr<grpc::Channel> Channel(const std::string& target);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_PROCESSES_H_
