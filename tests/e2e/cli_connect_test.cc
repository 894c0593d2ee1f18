// The CLI's --connect_timeout: with no server it fails with UNAVAILABLE once
// the timeout has passed, and a call waits for a server that starts within it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunCommand;
using testing::ServerProcess;

// A loopback port reserved by a bound, unlistening socket: connections to it
// are refused until the socket is closed. It is below Linux's ephemeral range
// (32768 up), so a client's connection to it cannot be given it as its own
// source port and connect to itself. Close-on-exec, so that the CLI started
// meanwhile does not inherit it and keep it bound.
struct ReservedPort {
  ReservedPort() {
    std::mt19937 random(std::random_device{}());
    for (int tries = 0; tries < 1000 && fd < 0; ++tries) {
      const int candidate = 20000 + static_cast<int>(random() % 12000);
      fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(candidate);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        port = candidate;
      } else {
        close(fd);
        fd = -1;
      }
    }
    if (fd < 0) ADD_FAILURE() << "cannot reserve a port below 32000";
  }
  ~ReservedPort() { Release(); }
  void Release() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  int fd = -1;
  int port = 0;
};

TEST(CliConnectTest, NoServerFailsWithUnavailableAfterTheConnectTimeout) {
  ReservedPort closed;
  const std::string cli =
      absl::StrCat(PERCEPTRON_CLI_PATH, " --server=127.0.0.1:", closed.port);
  absl::Time start = absl::Now();
  testing::CommandResult r = RunCommand(cli + " --connect_timeout=0 status m");
  const absl::Duration at_once = absl::Now() - start;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("UNAVAILABLE"));
  start = absl::Now();
  r = RunCommand(cli + " --connect_timeout=2s status m");
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("UNAVAILABLE"));
  EXPECT_GE(waited, absl::Seconds(2)) << "it did not wait for a connection";
  std::printf("no server: %s with --connect_timeout=0, %s with 2s\n",
              absl::FormatDuration(at_once).c_str(),
              absl::FormatDuration(waited).c_str());
}

TEST(CliConnectTest, AnAddressThatIsNotHostAndPortIsRefusedAtOnce) {
  struct Case {
    std::string flags, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--server=", "--server is empty"},
           {"--server=localhost", "--server=\"localhost\" is not HOST:PORT"},
           {"--server=localhost:0", "the port is a number from 1 to 65535"},
           {"--server=[::1", "an IPv6 address goes in brackets"},
           {"--server=::1:50051", "an IPv6 address goes in brackets"},
           {"--shards=127.0.0.1:1,bad", "--shards=\"bad\" is not HOST:PORT"},
       }) {
    const absl::Time start = absl::Now();
    const testing::CommandResult r = RunCommand(absl::StrCat(
        PERCEPTRON_CLI_PATH, " ", c.flags, " --connect_timeout=60s list"));
    EXPECT_EQ(r.exit_code, 2) << c.flags << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.says)) << c.flags;
    // Said before any connection: no wait, and none of gRPC's own logs.
    EXPECT_LT(absl::Now() - start, absl::Seconds(30)) << c.flags;
    EXPECT_THAT(r.output, Not(ContainsRegex("(^|\n)E[0-9]{4} "))) << c.flags;
  }
}

TEST(CliConnectTest, ACallWaitsForAServerThatStartsWithinTheConnectTimeout) {
  ReservedPort port;
  testing::CommandResult r;
  const absl::Time start = absl::Now();
  std::thread cli([&] {
    r = RunCommand(absl::StrCat(PERCEPTRON_CLI_PATH,
                                " --server=127.0.0.1:", port.port,
                                " --connect_timeout=60s create late --dim=2"));
  });
  port.Release();
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({absl::StrCat("--port=", port.port)});
  cli.join();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::Model> m = (*server)->Connect()->GetModel("late");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config().dimension(), 2u);
  std::printf("the CLI's call completed %s after it started\n",
              absl::FormatDuration(absl::Now() - start).c_str());
}

}  // namespace
}  // namespace perceptron
