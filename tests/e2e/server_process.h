// A real perceptrond process for end-to-end tests: started on an ephemeral
// loopback port (read from its "listening on" line, so no sleeping), stopped
// with SIGTERM.
#ifndef PERCEPTRON_TESTS_E2E_SERVER_PROCESS_H_
#define PERCEPTRON_TESTS_E2E_SERVER_PROCESS_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/support/launcher.h"

namespace perceptron::testing {

class ServerProcess {
 public:
  // Starts perceptrond with `flags` and, unless `data_dir` is given, a new
  // temporary data directory that is removed with this object.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::vector<std::string>& flags = {},
      const std::string& data_dir = "") {
    std::string dir = data_dir;
    bool owned = false;
    if (dir.empty()) {
      std::string tmpl = ::testing::TempDir() + "/perceptrond-XXXXXX";
      if (mkdtemp(tmpl.data()) == nullptr)
        return absl::InternalError("mkdtemp failed");
      dir = tmpl;
      owned = true;
    }
    std::vector<std::string> argv = {PERCEPTROND_PATH, "--port=0",
                                     "--data_dir=" + dir};
    // The HTTP port too, on a free port, unless the test sets it.
    const bool http_set = std::any_of(
        flags.begin(), flags.end(),
        [](const std::string& f) { return f.rfind("--http_port", 0) == 0; });
    if (!http_set) argv.push_back("--http_port=0");
    argv.insert(argv.end(), flags.begin(), flags.end());
    const bool http_off =
        std::find(flags.begin(), flags.end(), "--http_port=-1") != flags.end();
    // Ready when it has printed its "listening on" line (and the HTTP one):
    // a server that hangs at start fails the test within a minute.
    absl::StatusOr<std::unique_ptr<launch::Launched>> launched =
        launch::Launched::Start(argv, dir + "/perceptrond.stderr",
                                http_off ? 1 : 2);
    if (!launched.ok()) return launched.status();
    std::unique_ptr<ServerProcess> p(new ServerProcess(*std::move(launched)));
    p->data_dir_ = dir;
    p->owns_data_dir_ = owned;
    const std::vector<std::string>& lines = p->process_->ready_lines();
    if (lines[0].find("listening on") == std::string::npos) {
      return absl::InternalError(
          absl::StrCat("unexpected first line: ", lines[0]));
    }
    absl::StatusOr<int> port = launch::PortAtEnd(lines[0]);
    if (!port.ok()) return port.status();
    p->port_ = *port;
    if (!http_off) {
      if (lines[1].find("http on") == std::string::npos &&
          lines[1].find("https on") == std::string::npos) {
        return absl::InternalError(
            absl::StrCat("unexpected second line: ", lines[1]));
      }
      absl::StatusOr<int> http = launch::PortAtEnd(lines[1]);
      if (!http.ok()) return http.status();
      p->http_port_ = *http;
    }
    return p;
  }

  ~ServerProcess() {
    // A clean shutdown exits 0; anything else (a sanitizer's report, a crash)
    // fails the test.
    if (process_->running()) {
      const int code = Stop();
      EXPECT_EQ(code, 0) << "perceptrond exited with " << code
                         << "; it wrote:\n"
                         << StderrText();
    }
    if (owns_data_dir_) {
      std::error_code ignored;
      std::filesystem::remove_all(data_dir_, ignored);
    }
  }

  const std::string& data_dir() const { return data_dir_; }
  // What the server wrote to standard error (all its runs on this data
  // directory).
  std::string StderrText() const {
    std::ifstream in(data_dir_ + "/perceptrond.stderr");
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  }
  pid_t pid() const { return process_->pid(); }

  int port() const { return port_; }
  // The HTTP port, or -1 if it is off.
  int http_port() const { return http_port_; }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }

  std::unique_ptr<client::Client> Connect() const {
    client::ClientOptions o;
    o.target = target();
    // The server is listening, so a failed connection attempt is transient
    // (a loaded machine; gRPC's client can misreport a pending connect as
    // failed); wait for the retry rather than fail the first call.
    o.connect_timeout = absl::Seconds(10);
    return client::Client::Connect(o);
  }

  // Sends `signal` and waits; the exit status (-1 if killed by a signal).
  int Stop(int signal = SIGTERM) { return process_->Stop(signal); }

 private:
  explicit ServerProcess(std::unique_ptr<launch::Launched> process)
      : process_(std::move(process)) {}

  std::unique_ptr<launch::Launched> process_;
  int port_ = 0;
  int http_port_ = -1;
  std::string data_dir_;
  bool owns_data_dir_ = false;
};

// A model's statistics without its certificate, serialized for comparison:
// the server computes the certificate in the background (it moves while
// nothing else does) and does not carry it over a restart, an export or an
// import (docs/design.md section 5).
inline std::string StatsBits(const v1::ModelStats& stats) {
  v1::ModelStats s = stats;
  s.clear_certificate();
  return s.SerializeAsString();
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // standard output and standard error
};

// Runs a shell command and collects what it prints.
inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The text of `server`'s /metrics (Prometheus' text format), read with
// Python's urllib; what went wrong instead if it could not be read.
inline std::string MetricsText(const ServerProcess& server) {
  return RunCommand(
             absl::StrCat(PERCEPTRON_PYTHON,
                          " -c \"import urllib.request; "
                          "print(urllib.request.urlopen('http://127.0.0.1:",
                          server.http_port(), "/metrics').read().decode())\""))
      .output;
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_E2E_SERVER_PROCESS_H_
