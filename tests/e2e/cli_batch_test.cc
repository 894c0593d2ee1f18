// How many examples the CLI sends a request: --batch if given (a usage error
// over the server's limit of items a request); if not, 64, or 1,024 for plain
// predict, at most that limit; and fewer where their features pass 4 MiB.

#include <algorithm>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli_fixture.h"
#include "tests/e2e/server_process.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using testing::Cli;
using testing::CliTest;
using ::testing::HasSubstr;
using testing::RunCommand;
using testing::ServerProcess;

// The Predict requests the server has answered, from its /metrics.
long PredictRequests(const ServerProcess& server) {
  const std::string metrics = testing::MetricsText(server);
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::StartsWith(line, "grpc_server_handled_total{") ||
        !absl::StrContains(line, "grpc_method=\"Predict\"")) {
      continue;
    }
    long n = 0;
    const size_t space = line.rfind(' ');
    if (space != line.npos && absl::SimpleAtoi(line.substr(space + 1), &n))
      return n;
  }
  return 0;  // none answered yet: the family has no line for it
}

std::string WriteRows(const std::string& path, int rows) {
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i)
    out << (i % 3 == 0 ? "-1" : "+1") << " 1:" << (i % 7) - 3 << " 2:1\n";
  return path;
}

// Without --batch, a command asks the server's limit and keeps within it: a
// server of --max_batch_items=50 takes train's 64 as 50 and plain predict's
// 1,024 as 50; a given --batch over it is still a usage error. Under a server
// of the default limit (10,000) plain predict sends 1,024 a request.
TEST_F(CliTest, DefaultBatchesKeepWithinTheServersItemLimit) {
  const testing::ScopedDir dir("cli-batch");
  const std::string path = WriteRows(dir.path() + "/rows.svm", 120);
  absl::StatusOr<std::unique_ptr<ServerProcess>> small =
      ServerProcess::Start({"--max_batch_items=50"});
  ASSERT_TRUE(small.ok()) << small.status();
  testing::CommandResult r =
      RunCommand(Cli(**small, "train " + path + " --model=s --create --dim=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(": 120 examples in ")) << r.output;
  EXPECT_THAT(r.output, HasSubstr(", 3 requests")) << r.output;
  r = RunCommand(Cli(**small, "predict " + path + " --model=s"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 120);
  EXPECT_EQ(PredictRequests(**small), 3);  // 50, 50, 20
  r = RunCommand(Cli(**small, "predict " + path + " --model=s --issue"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 120);
  r = RunCommand(Cli(**small, "reveal 1:+1 2:-1 --model=s"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* command : {"train", "predict"}) {
    r = RunCommand(Cli(
        **small, absl::StrCat(command, " ", path, " --model=s --batch=64")));
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_THAT(r.output, HasSubstr("--batch=64 is over the server's limit "
                                    "of 50 items a request"))
        << command;
  }
  EXPECT_EQ(small.value()->Stop(SIGTERM), 0);

  const std::string more = WriteRows(dir.path() + "/more.svm", 2100);
  r = RunCommand(
      Cli(*server_, "train " + more + " --model=d --create --dim=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(", 33 requests")) << r.output;  // 64 each
  const long before = PredictRequests(*server_);
  r = RunCommand(Cli(*server_, "predict " + more + " --model=d"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 2100);
  EXPECT_EQ(PredictRequests(*server_) - before, 3);  // 1,024, 1,024, 52
  r = RunCommand(Cli(*server_, "predict " + more + " --model=d --batch=700"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(PredictRequests(*server_) - before, 6);
  // One of a thing is said as one.
  const std::string few = WriteRows(dir.path() + "/few.svm", 5);
  r = RunCommand(
      Cli(*server_, "train " + few + " --model=one --create --dim=2"));
  EXPECT_THAT(r.output, HasSubstr(": 5 examples in ")) << r.output;
  EXPECT_THAT(r.output, HasSubstr(", 1 request (1 as columns)")) << r.output;
  r = RunCommand(Cli(*server_, "fit " + few + " --model=one --max_epochs=1"));
  EXPECT_THAT(r.output, HasSubstr(": 1 pass, ")) << r.output;
}

// Rows of many coordinates: train, predict and predict --issue end a batch
// once its features pass 4 MiB (client::kBatchBytes). 64 rows of d = 140,000
// would be a request of 72 MB, over the message limit of 64 MiB, and failed.
TEST_F(CliTest, WideRowsGoAFewToARequest) {
  const testing::ScopedDir dir("cli-wide");
  const std::string path = dir.path() + "/wide.csv";
  constexpr int kDim = 140000, kRows = 70;
  {
    std::ofstream out(path);
    std::string row;
    for (int i = 0; i < kRows; ++i) {
      row.clear();
      for (int j = 0; j < kDim; ++j) row += j % 997 == i ? "1," : "0,";
      row += i % 2 == 0 ? "1\n" : "-1\n";
      out << row;
    }
  }
  testing::CommandResult r =
      RunCommand(Cli(*server_, "train " + path + " --model=wide --create"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 4 rows of 1.12 MB a request: 17 of them and one of 2.
  EXPECT_THAT(r.output, HasSubstr(": 70 examples in "));
  EXPECT_THAT(r.output, HasSubstr(", 18 requests"));
  EXPECT_EQ(client_->GetStatus("wide")->stats().examples(), 70u);
  r = RunCommand(Cli(*server_, "predict " + path + " --model=wide"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), kRows);
  r = RunCommand(Cli(*server_, "predict " + path + " --model=wide --issue"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), kRows);
  EXPECT_EQ(client_->GetStatus("wide")->stats().pending(), uint64_t{kRows});
}

}  // namespace
}  // namespace perceptron
