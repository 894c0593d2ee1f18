// What the CLI's commands share: how they fail, connect, and print.
#ifndef PERCEPTRON_CLIENT_CLI_COMMON_H_
#define PERCEPTRON_CLIENT_CLI_COMMON_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"

namespace perceptron::client::cli {

// A command: its arguments (after the command's name); the exit status.
using Args = std::vector<std::string>;

// A failure from the server: its code and message; returns 1.
int Fail(const absl::Status& s);
// A local failure (a file, the data): the message alone, no gRPC code;
// returns 1.
int FailLocal(const absl::Status& s);
// The reason the last system call failed, as text.
std::string Errno();
// A usage error: one line, and where the usage is (the command's, once
// SetUsageCommand has named it); returns 2.
int Usage(const std::string& why);
void SetUsageCommand(const std::string& command);
// True if the flag `name` was given on the command line (main says which
// were): what tells a flag given as 0 from one not given.
bool FlagGiven(const std::string& name);
void SetFlagGiven(const std::string& name);
// The whole of a small file, or exits with a message.
std::string ReadSmallFile(const std::string& path);
// A client for --server, with TLS and the token from the flags; with
// `own_connection`, on a connection of its own (not one another client of
// the process holds).
std::unique_ptr<Client> Connect(bool own_connection = false);
// The client's options from the flags (--server, TLS, token).
ClientOptions Options();

const char* AlgorithmText(v1::Algorithm a);
// A model's NOT_FOUND with the hint that `verb --create` makes it; any
// other status as it is.
absl::Status WithCreateHint(const absl::Status& s, absl::string_view verb);
// What a model takes: "d=30", "d=64, 10 classes", "hash_bits=18, -q ab",
// "d=12 by name" (a list of names).
std::string ShapeText(const v1::ModelConfig& c);
// The bound; with no comparator, the certificate's U ("U 123.4
// (certificate)"); else "n/a", or "n/a yet" while its first solve runs.
std::string BoundText(const v1::ModelStats& s);
// `stats`, or, while the certificate is the only bound and its last solution
// is not a converged one over every example yet (its first solve, or one
// over the examples that came since, still running), the model's stats once
// it is (at most `timeout` later): a summary then says the bound `perceptron
// status` will, not one of a solution the next replaced.
v1::ModelStats AwaitCertificate(Client& client, const std::string& model,
                                const v1::ModelStats& stats,
                                absl::Duration timeout);
// BoundText, and when it is n/a, why ("n/a (no comparator; ...)").
std::string BoundSaid(const v1::ModelStats& s);
// The shortest text that reads back as `v`.
std::string Shortest(double v);
// A size in bytes, KiB, MiB or GiB, whichever reads best ("12.5 KiB").
std::string SizeText(uint64_t bytes);
// Whether to draw progress (--progress; auto: standard error is a terminal).
bool ShowProgress();

// One progress line on standard error, redrawn at most ten times a second.
class ProgressLine {
 public:
  explicit ProgressLine(bool on) : on_(on) {}
  ~ProgressLine() { End(); }

  // `done` of `total` (0: not known), then the text `text()` returns (built
  // only when drawn, every 100 ms at most: callers draw once a line);
  // `force` draws now.
  template <typename Text>
  void Draw(uint64_t done, uint64_t total, Text text, bool force = false) {
    if (!on_) return;
    const absl::Time now = absl::Now();
    if (!force && now - last_ < absl::Milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    DrawText(done, total, text());
  }
  void End() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  void DrawText(uint64_t done, uint64_t total, const std::string& text) {
    const int width = 30;
    if (total > 0) {
      const int filled =
          static_cast<int>(width * std::min(done, total) / total);
      std::fprintf(stderr, "\r[%s%s] %3.0f%% %s ",
                   std::string(filled, '=').c_str(),
                   std::string(width - filled, ' ').c_str(),
                   100.0 * std::min(done, total) / total, text.c_str());
    } else {
      std::fprintf(stderr, "\r%s ", text.c_str());
    }
  }

  const bool on_;
  bool drawn_ = false;
  absl::Time last_ = absl::InfinitePast();
};

}  // namespace perceptron::client::cli

#endif  // PERCEPTRON_CLIENT_CLI_COMMON_H_
