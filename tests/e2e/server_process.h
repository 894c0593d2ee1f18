// A real perceptrond process for end-to-end tests: started on an ephemeral
// loopback port (read from its "listening on" line, so no sleeping), stopped
// with SIGTERM.
#ifndef PERCEPTRON_TESTS_E2E_SERVER_PROCESS_H_
#define PERCEPTRON_TESTS_E2E_SERVER_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
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
    int out[2];
    if (pipe(out) != 0) return absl::InternalError("pipe failed");
    std::vector<std::string> argv = {PERCEPTROND_PATH, "--port=0",
                                     "--data_dir=" + dir};
    // The HTTP port too, on a free port, unless the test sets it.
    const bool http_set = std::any_of(
        flags.begin(), flags.end(),
        [](const std::string& f) { return f.rfind("--http_port", 0) == 0; });
    if (!http_set) argv.push_back("--http_port=0");
    argv.insert(argv.end(), flags.begin(), flags.end());
    // Built before fork: the child calls only async-signal-safe functions.
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    const std::string err_path = dir + "/perceptrond.stderr";
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      const int err =
          open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (err >= 0) dup2(err, STDERR_FILENO);
      close(out[0]);
      close(out[1]);
      execv(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    std::unique_ptr<ServerProcess> p(
        new ServerProcess(pid, fdopen(out[0], "r")));
    p->data_dir_ = dir;
    p->owns_data_dir_ = owned;
    // Wait for the first line, at most a minute: a server that hangs at start
    // fails the test.
    pollfd ready{fileno(p->out_), POLLIN, 0};
    if (poll(&ready, 1, 60000) != 1) {
      return absl::DeadlineExceededError(
          "perceptrond printed nothing within 60 s of starting");
    }
    char line[256];
    if (fgets(line, sizeof line, p->out_) == nullptr) {
      return absl::InternalError("perceptrond exited before listening");
    }
    const std::string text = line;
    const size_t colon = text.rfind(':');
    if (text.find("listening on") == std::string::npos ||
        colon == std::string::npos ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(text.substr(colon + 1)),
                          &p->port_)) {
      return absl::InternalError(absl::StrCat("unexpected first line: ", text));
    }
    const bool http_off =
        std::find(flags.begin(), flags.end(), "--http_port=-1") != flags.end();
    if (!http_off) {
      if (fgets(line, sizeof line, p->out_) == nullptr) {
        return absl::InternalError("perceptrond printed no http line");
      }
      const std::string http = line;
      const size_t c = http.rfind(':');
      if ((http.find("http on") == std::string::npos &&
           http.find("https on") == std::string::npos) ||
          c == std::string::npos ||
          !absl::SimpleAtoi(absl::StripAsciiWhitespace(http.substr(c + 1)),
                            &p->http_port_)) {
        return absl::InternalError(
            absl::StrCat("unexpected second line: ", http));
      }
    }
    return p;
  }

  ~ServerProcess() {
    // A clean shutdown exits 0; anything else (a sanitizer's report, a crash)
    // fails the test.
    if (pid_ > 0) {
      const int code = Stop();
      EXPECT_EQ(code, 0) << "perceptrond exited with " << code
                         << "; it wrote:\n"
                         << StderrText();
    }
    if (out_ != nullptr) fclose(out_);
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
  pid_t pid() const { return pid_; }

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
  int Stop(int signal = SIGTERM) {
    if (pid_ <= 0) return -1;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  ServerProcess(pid_t pid, FILE* out) : pid_(pid), out_(out) {}

  pid_t pid_;
  FILE* out_;
  int port_ = 0;
  int http_port_ = -1;
  std::string data_dir_;
  bool owns_data_dir_ = false;
};

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

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_E2E_SERVER_PROCESS_H_
