#include "bench/service/processes.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/certificate.h"
#include "core/model.h"
#include "core/prepare.h"
#include "echo.grpc.pb.h"

namespace perceptron::bench {

std::unique_ptr<Process> Launch(const std::vector<std::string>& argv,
                                const std::string& dir) {
  auto p = std::make_unique<Process>();
  p->dir = dir;
  absl::StatusOr<std::unique_ptr<launch::Launched>> launched =
      launch::Launched::Start(argv, "", 1);
  absl::StatusOr<int> port =
      launched.ok() ? launch::PortAtEnd((*launched)->ready_lines()[0])
                    : launched.status();
  if (!port.ok()) {
    std::fprintf(stderr, "%s did not start: %s\n", argv[0].c_str(),
                 std::string(port.status().message()).c_str());
    std::exit(1);
  }
  p->process = *std::move(launched);
  p->pid = p->process->pid();
  p->port = *port;
  return p;
}

std::unique_ptr<Process> Perceptrond(const std::string& durability,
                                     bool rpc_metrics, bool certificate,
                                     bool names) {
  std::string dir =
      std::filesystem::temp_directory_path() / "perceptrond-bench-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) std::exit(1);
  std::vector<std::string> argv = {
      Options().bin + "/server/perceptrond",
      "--port=0",
      "--http_port=0",
      "--durability=" + durability,
      "--data_dir=" + dir,
      rpc_metrics ? "--rpc_metrics=true" : "--rpc_metrics=false",
      certificate ? "--certificate_examples=100000"
                  : "--certificate_examples=0",
      names ? "--name_table_mb=8" : "--name_table_mb=0"};
  for (const std::string& flag : Options().server_flags) {
    argv.push_back(flag);
  }
  return Launch(argv, dir);
}

std::unique_ptr<Process> EchoServer(const std::vector<std::string>& extra,
                                    const std::string& dir) {
  std::vector<std::string> argv = {Options().bin + "/bench/echo/echo_server",
                                   "--port=0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), Options().echo_flags.begin(),
              Options().echo_flags.end());
  return Launch(argv, dir);
}

namespace {

// If `line` of /proc/PID/status is field `name` ("VmRSS:"), reads its number
// into *out ("VmRSS:\t  123456 kB": the kB dropped; "Threads:\t17").
void StatusField(const std::string& line, absl::string_view name, long* out) {
  absl::string_view rest = line;
  if (!absl::ConsumePrefix(&rest, name)) return;
  if (absl::EndsWith(rest, " kB")) rest.remove_suffix(3);
  absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), out);
}

}  // namespace

std::pair<long, long> RssAndThreads(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  long rss = 0, threads = 0;
  while (std::getline(in, line)) {
    StatusField(line, "VmRSS:", &rss);
    StatusField(line, "Threads:", &threads);
  }
  return {rss, threads};
}

std::pair<long, long> AnonAndFile(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  long anon = 0, file = 0;
  while (std::getline(in, line)) {
    StatusField(line, "RssAnon:", &anon);
    StatusField(line, "RssFile:", &file);
  }
  return {anon, file};
}

long StatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  long kib = 0;
  while (std::getline(in, line)) StatusField(line, field + ":", &kib);
  return kib;
}

double CpuSeconds(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command may hold spaces
  if (close == std::string::npos) return 0;
  // From the state (field 3) on: utime and stime are fields 14 and 15.
  std::vector<std::string> f = absl::StrSplit(text.substr(close + 2), ' ');
  double user = 0, system = 0;
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &user) ||
      !absl::SimpleAtod(f[12], &system)) {
    return 0;
  }
  return (user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double v[8] = {};
  in >> cpu;
  for (double& x : v) in >> x;
  const double busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return busy / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::shared_ptr<grpc::Channel> Channel(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  // A channel per measurement: a new connection each time.
  args.SetInt("bench.channel",
              static_cast<int>(absl::ToUnixNanos(absl::Now()) & 0x7fffffff));
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

}  // namespace perceptron::bench
