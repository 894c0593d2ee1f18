#include "tests/support/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace perceptron::launch {

absl::StatusOr<std::unique_ptr<Launched>> Launched::Start(
    const std::vector<std::string>& argv, const std::string& stderr_path,
    int ready_lines, absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("nothing to run");
  int out[2];
  if (pipe(out) != 0) return absl::InternalError("pipe failed");
  // Built before fork: the child calls only async-signal-safe functions.
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string err = stderr_path.empty() ? "/dev/null" : stderr_path;
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) dup2(fd, STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::unique_ptr<Launched> p(new Launched(pid, fdopen(out[0], "r")));
  // Unbuffered, so that a line read leaves the next on the pipe, where poll
  // sees it.
  setvbuf(p->out_, nullptr, _IONBF, 0);
  const absl::Time deadline = absl::Now() + timeout;
  char line[1024];
  while (static_cast<int>(p->lines_.size()) < ready_lines) {
    pollfd ready{fileno(p->out_), POLLIN, 0};
    const int ms = static_cast<int>(std::max<int64_t>(
        0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (poll(&ready, 1, ms) != 1) {
      p->Stop(SIGKILL);
      return absl::DeadlineExceededError(absl::StrCat(
          argv[0], " printed ", p->lines_.size(), " of ", ready_lines,
          " lines within ", absl::FormatDuration(timeout)));
    }
    if (fgets(line, sizeof line, p->out_) == nullptr) {
      const int code = p->Stop(SIGKILL);
      return absl::InternalError(absl::StrCat(argv[0], " exited (status ", code,
                                              ") before it was ready"));
    }
    std::string text = line;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    p->lines_.push_back(std::move(text));
  }
  return p;
}

Launched::~Launched() {
  if (pid_ > 0) Stop();
  if (out_ != nullptr) std::fclose(out_);
}

int Launched::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

absl::StatusOr<int> PortAtEnd(const std::string& line) {
  const size_t colon = line.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(colon + 1)),
                        &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("no port at the end of \"", line, "\""));
  }
  return port;
}

}  // namespace perceptron::launch
