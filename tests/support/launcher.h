// Real processes of the project's binaries, for the end-to-end tests and the
// benchmarks alike: started with their output on a pipe, ready once they have
// printed their first lines (so no sleeping), stopped with a signal.
//
//   absl::StatusOr<std::unique_ptr<Launched>> p =
//       Launched::Start({"/path/perceptrond", "--port=0"}, "err.txt", 1);
//   absl::StatusOr<int> port = PortAtEnd((*p)->ready_lines()[0]);
//   int code = (*p)->Stop();  // 0 for a clean exit
#ifndef PERCEPTRON_TESTS_SUPPORT_LAUNCHER_H_
#define PERCEPTRON_TESTS_SUPPORT_LAUNCHER_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace perceptron::launch {

class Launched {
 public:
  // Runs `argv` (argv[0] a path) with standard error appended to
  // `stderr_path` ("": discarded) and waits for `ready_lines` lines on
  // standard output, at most `timeout`; DEADLINE_EXCEEDED or INTERNAL (the
  // process ended first) otherwise, the process then killed.
  static absl::StatusOr<std::unique_ptr<Launched>> Start(
      const std::vector<std::string>& argv, const std::string& stderr_path,
      int ready_lines, absl::Duration timeout = absl::Seconds(60));
  // Stops the process with SIGTERM if it still runs.
  ~Launched();

  // The lines it printed first, without their newlines.
  const std::vector<std::string>& ready_lines() const { return lines_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // Sends `signal` and waits: the exit status, or -1 if a signal ended it
  // (or it was already stopped).
  int Stop(int signal = SIGTERM);

 private:
  Launched(pid_t pid, std::FILE* out) : pid_(pid), out_(out) {}

  pid_t pid_;
  std::FILE* out_;
  std::vector<std::string> lines_;
};

// The port at the end of a line such as "perceptrond listening on
// 127.0.0.1:41235"; INVALID_ARGUMENT naming the line otherwise.
absl::StatusOr<int> PortAtEnd(const std::string& line);

}  // namespace perceptron::launch

#endif  // PERCEPTRON_TESTS_SUPPORT_LAUNCHER_H_
