// The perceptron CLI against a real perceptrond: training through the CLI
// equals the core library run on the same data in the same order, exactly.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <tuple>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "client/data_reader.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli_fixture.h"
#include "tests/e2e/server_process.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using testing::Cli;
using testing::CliTest;
using ::testing::ContainsRegex;
using testing::CoreRun;
using testing::ExpectSameModel;
using ::testing::HasSubstr;
using testing::RunCommand;
using testing::ServerProcess;

// Whether this build runs under a sanitizer (whose quarantine and shadow
// memory make a process's resident size say nothing of its own).
constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// `command` (a program and its arguments, split by the shell) run from a
// small process of its own, Debian's Python, which prints the command's peak
// resident size in kB after it as "peak_kb N" (its resource module counts the
// one child it waited for). Run from this process, a child's peak would count
// this process's pages, which it shares until it execs; and getrusage's
// RUSAGE_CHILDREN here is the largest of every child so far, a server's
// included.
testing::CommandResult RunMeasured(const std::string& command) {
  return RunCommand(
      "/usr/bin/python3 -c 'import resource, subprocess, sys; "
      "rc = subprocess.call(sys.argv[1:]); "
      "print(\"peak_kb\", resource.getrusage(resource.RUSAGE_CHILDREN)"
      ".ru_maxrss, file=sys.stderr); sys.exit(rc)' " +
      command);
}

// The peak RunMeasured printed, or -1.
long PeakKb(const std::string& output) {
  const size_t at = output.rfind("peak_kb ");
  long kb = -1;
  if (at == std::string::npos ||
      !absl::SimpleAtoi(
          absl::StripAsciiWhitespace(absl::string_view(output).substr(at + 8)),
          &kb)) {
    return -1;
  }
  return kb;
}

TEST_F(CliTest, TrainingOnBreastCancerEqualsTheCoreLibraryExactly) {
  const std::string csv = PERCEPTRON_BREAST_CANCER_CSV;
  absl::StatusOr<client::Dataset> data = client::ReadDataFile(csv, {});
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->examples.size(), 569u);

  // The peer-check configuration: bias, no normalization.
  testing::CommandResult r = RunCommand(
      Cli(*server_, "train " + csv + " --model=bc --create --normalize=false"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("569 examples, 168 mistakes, 168 updates"));
  // With no comparator the summary's bound is the certificate's converged
  // solution over all 569 examples, the one status shows (not one of a
  // solve that the next replaced).
  absl::StatusOr<v1::ModelStatus> st = client_->GetStatus("bc");
  ASSERT_TRUE(st.ok()) << st.status();
  const v1::Certificate& certificate = st->stats().certificate();
  EXPECT_TRUE(certificate.converged());
  EXPECT_EQ(certificate.solved(), 569u);
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrFormat("model now: 569 examples, 168 "
                                        "mistakes, 168 updates, bound U %.1f "
                                        "(certificate)",
                                        certificate.upper())));
  ModelConfig config;
  config.dimension = 30;
  config.normalize = false;
  ExpectSameModel(*client_, "bc", *CoreRun(*data, config, 1));

  // Defaults (normalized), averaged, three passes, small batches.
  r = RunCommand(Cli(
      *server_,
      "train " + csv +
          " --model=bc3 --create --algorithm=averaged --epochs=3 --batch=7"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ModelConfig averaged;
  averaged.dimension = 30;
  averaged.algorithm = Algorithm::kAveraged;
  ExpectSameModel(*client_, "bc3", *CoreRun(*data, averaged, 3));
}

TEST_F(CliTest, GeneratedStreamWithItsSeparatorReportsTheBound) {
  // A directory of its own: another run of the suite may share TempDir().
  const testing::ScopedDir scoped("cli-generate");
  const std::string dir = scoped.path();
  const std::string data = dir + "/gen.svm", u = dir + "/u.txt";
  testing::CommandResult r = RunCommand(Cli(
      *server_,
      absl::StrCat(
          "generate --dim=10 --count=20000 --margin=0.1 --noise=0.01 --out=",
          data, " --separator_out=", u)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(
      Cli(*server_, "create gen --dim=10 --gamma=0.1 --comparator_file=" + u));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "train " + data + " --model=gen"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::ModelStatus> st = client_->GetStatus("gen");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->stats().examples(), 20000u);
  EXPECT_TRUE(st->stats().bound_available());
  EXPECT_GT(st->stats().updates(), 0u);
  EXPECT_LE(st->stats().updates(), st->stats().bound());
  // The stream is separable by u with margin 0.1 before noise: TD_gamma comes
  // from the flips only.
  EXPECT_GT(st->stats().td_gamma(), 0);

  r = RunCommand(Cli(*server_, "status gen"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("examples       20000"));
  EXPECT_THAT(r.output, HasSubstr("updates/bound"));
  r = RunCommand(Cli(*server_, "watch gen --count=1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("perceptron watch gen"));

  // Once the certificate is solved over every example and converged (so it
  // stays as it is), watch and plot show it too.
  const v1::ModelStatus solved = testing::SolvedStatus(*client_, "gen");
  const v1::Certificate& cert = solved.stats().certificate();
  ASSERT_TRUE(cert.available()) << cert.DebugString();
  r = RunCommand(Cli(*server_, "watch gen --count=1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("updates/U      ["));
  EXPECT_THAT(r.output, HasSubstr(absl::StrFormat("U %.6g", cert.upper())));
  const std::string svg_path = dir + "/gen.svg";
  const absl::StatusOr<v1::History> history = client_->GetHistory("gen");
  ASSERT_TRUE(history.ok()) << history.status();
  r = RunCommand(Cli(*server_, "plot gen --out=" + svg_path));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrFormat("certificate U %.6g", cert.upper())));
  std::ifstream in(svg_path);
  const std::string svg((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  // U as the stream grew, its last point the certificate now.
  EXPECT_THAT(svg, HasSubstr(absl::StrFormat(
                       "class=\"certificate\" data-count=\"%d\" "
                       "data-last=\"%.17g\"",
                       absl::c_count_if(history->points(),
                                        [](const v1::HistoryPoint& p) {
                                          return p.has_certificate_upper();
                                        }),
                       cert.upper())));
  EXPECT_THAT(svg, HasSubstr(">certificate U</text>"));
  EXPECT_THAT(svg, HasSubstr(">L: no bound below it</text>"));
}

// A kernel model's certificate: status shows U, and `certificate --out`
// writes its comparator as terms "coefficient index:value ..." of the
// expansion u = sum coefficient * phi(x^).
TEST_F(CliTest, AKernelModelsCertificateIsWrittenAsAnExpansion) {
  const testing::ScopedDir scoped("cli-kernel");
  const std::string data = scoped.path() + "/k.svm";
  const std::string terms = scoped.path() + "/u.txt";
  testing::CommandResult r = RunCommand(Cli(
      *server_,
      "generate --dim=4 --count=600 --margin=0.05 --noise=0.05 --out=" + data));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(
      Cli(*server_, "create kc --dim=4 --algorithm=kernel --kernel=rbf"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "train " + data + " --model=kc"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const v1::ModelStatus solved = testing::SolvedStatus(*client_, "kc");
  const v1::Certificate& cert = solved.stats().certificate();
  r = RunCommand(Cli(*server_, "status kc"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrFormat("certificate    U %.6g",
                                                  cert.upper())));
  r = RunCommand(Cli(*server_, "weights kc --top=5"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("kc is a kernel model: its w is a sum"));
  r = RunCommand(Cli(*server_, "certificate kc --out=" + terms));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("u = sum coefficient * phi(x^)"));
  absl::StatusOr<v1::CertificateResponse> full = client_->GetCertificate("kc");
  ASSERT_TRUE(full.ok());
  std::ifstream in(terms);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(lines, full->expansion_size());
    const v1::KernelTerm& t = full->expansion(lines++);
    std::string want = absl::StrFormat("%.17g", t.coefficient());
    for (int k = 0; k < t.indices_size(); ++k) {
      absl::StrAppend(&want,
                      absl::StrFormat(" %u:%.17g", t.indices(k), t.values(k)));
    }
    EXPECT_EQ(line, want);
  }
  EXPECT_EQ(lines, full->expansion_size());
  EXPECT_GT(lines, 0);
}

// Files the model cannot take: a wider one is refused before anything is sent,
// naming the file, line and index; a rejected example stops the stream unless
// --skip_rejected; class names work as CSV labels; a file with no example
// fails.
TEST_F(CliTest, FilesTheModelCannotTakeAreNamedByLine) {
  const testing::ScopedDir dir("cli-files");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() + "/" + name) << text;
    return dir.path() + "/" + name;
  };
  const std::string wide =
      write("wide.svm", "+1 1:1 2:1\n-1 3:1\n+1 1:0.5 13:2\n-1 2:1\n");
  testing::CommandResult r = RunCommand(Cli(*server_, "create w --dim=10"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "train " + wide + " --model=w"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              HasSubstr("wide.svm:3: index 13 is past the model's dimension "
                        "10 (indices 1 to 10)"));
  EXPECT_EQ(client_->GetStatus("w")->stats().examples(), 0u);

  // eta 1e10 on 1e300: the first example's update would overflow.
  const std::string huge =
      write("huge.svm", "+1 1:1e300\n+1 2:1\n-1 3:1\n+1 2:1\n");
  r = RunCommand(
      Cli(*server_, "create o --dim=3 --normalize=false --eta=1e10"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(
      Cli(*server_, "train " + huge + " --model=o --batch=4 --skip_rejected"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("huge.svm:1: rejected: learning this "
                                  "example would make a weight overflow"));
  EXPECT_THAT(r.output, HasSubstr("1 example(s) rejected and skipped"));
  EXPECT_EQ(client_->GetStatus("o")->stats().examples(), 3u);
  r = RunCommand(Cli(*server_, "train " + huge + " --model=o --batch=4"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("sending stopped there"));

  const std::string yn = write("yn.csv", "a,b,label\n1,2,yes\n3,4,no\n");
  r = RunCommand(
      Cli(*server_, "train " + yn + " --model=yn --create --positive=yes"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(client_->GetStatus("yn")->stats().examples(), 2u);
  const std::string empty = write("empty.csv", "a,b,label\n");
  r = RunCommand(Cli(*server_, "train " + empty + " --model=yn"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("empty.csv:1: no examples in the file"));
}

// Examples that contradict each other (the same x with both labels): the
// best bound is the trivial one, 2 an example, and status says so; a
// separable stream's is not.
TEST_F(CliTest, StatusSaysWhenOnlyTheTrivialBoundHolds) {
  const testing::ScopedDir scoped("cli-trivial");
  std::string contradictory, separable;
  for (int i = 0; i < 50; ++i) {
    absl::StrAppend(&contradictory, "+1 1:1\n-1 1:1\n");
    absl::StrAppend(&separable, "+1 1:1\n-1 1:-1\n");
  }
  std::ofstream(scoped.path() + "/c.svm") << contradictory;
  std::ofstream(scoped.path() + "/s.svm") << separable;
  for (const char* name : {"c", "s"}) {
    testing::CommandResult r = RunCommand(
        Cli(*server_, absl::StrCat("train ", scoped.path(), "/", name,
                                   ".svm --model=", name, " --create")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    testing::SolvedStatus(*client_, name);
    r = RunCommand(Cli(*server_, absl::StrCat("status ", name)));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const bool trivial = name[0] == 'c';
    EXPECT_EQ(absl::StrContains(r.output,
                                "no comparator does better than the "
                                "trivial bound, 2 a covered example"),
              trivial)
        << r.output;
    if (trivial) {
      EXPECT_THAT(r.output, HasSubstr("certificate    U 200, L 200"));
    }
  }
}

TEST_F(CliTest, ErrorsExitNonZeroWithTheServersMessage) {
  testing::CommandResult r = RunCommand(Cli(*server_, "status nosuch"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("NOT_FOUND: model nosuch not found"));
  // An id a header cannot carry: the server's answer, not gRPC's abort; a
  // token a header cannot carry: refused before any call.
  r = RunCommand(Cli(*server_, "create caf\xc3\xa9 --dim=3"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("INVALID_ARGUMENT: model_id has character "
                                  "0xc3 at position 3"));
  r = RunCommand("PERCEPTRON_TOKEN=t\xc3\xb6ken " + Cli(*server_, "list"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("holds a byte that is not printable ASCII"));
  // train and fit of a model not there say how to make it.
  const testing::ScopedDir scoped("cli-nosuch");
  std::ofstream(scoped.path() + "/a.svm") << "+1 1:1\n";
  for (const char* verb : {"train", "fit"}) {
    r = RunCommand(Cli(*server_, absl::StrCat(verb, " ", scoped.path(),
                                              "/a.svm --model=nosuch")));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output,
                HasSubstr(absl::StrCat("NOT_FOUND: model nosuch not found (",
                                       verb, " --create makes it)")));
  }
  // A batch over the server's item limit (10,000, as its status says) is a
  // usage error before anything is sent, for each command that sends
  // batches; none is a usage error too.
  {
    std::ofstream big(scoped.path() + "/big.svm");
    for (int i = 0; i < 10001; ++i) big << "+1 1:1\n";
  }
  for (const std::string command :
       {"train big.svm --create", "predict big.svm", "reveal 1:+1"}) {
    r = RunCommand(
        absl::StrCat("cd ", scoped.path(), " && ",
                     Cli(*server_, command + " --model=b --batch=20000")));
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_THAT(r.output, HasSubstr("--batch=20000 is over the server's limit "
                                    "of 10000 items a request (perceptrond "
                                    "--max_batch_items): --batch=10000 or "
                                    "less"))
        << command;
  }
  // fit sends the file in one request: over the item limit, it says so and
  // what streams a file of any size, before anything is created.
  r = RunCommand(absl::StrCat("cd ", scoped.path(), " && ",
                              Cli(*server_, "fit big.svm --model=b --create")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("big.svm: 10001 examples, over the "
                                  "server's limit of 10000 items a request "
                                  "(perceptrond --max_batch_items); fit sends "
                                  "the whole file in one request: train FILE "
                                  "--epochs=N streams a file of any size"));
  r = RunCommand(Cli(*server_, "get b"));
  EXPECT_THAT(r.output, HasSubstr("NOT_FOUND")) << r.output;
  // And over the server's limit on a request's bytes.
  {
    absl::StatusOr<std::unique_ptr<ServerProcess>> small =
        ServerProcess::Start({"--max_message_bytes=100000"});
    ASSERT_TRUE(small.ok()) << small.status();
    r = RunCommand(
        Cli(**small, absl::StrCat("fit ", PERCEPTRON_BREAST_CANCER_CSV,
                                  " --model=b --create")));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output,
                ContainsRegex("breast_cancer.csv: 569 examples take [0-9]+ "
                              "bytes as a request, over the server's limit "
                              "of 100000 bytes a request \\(perceptrond "
                              "--max_message_bytes\\)"));
    r = RunCommand(Cli(**small, "get b"));
    EXPECT_THAT(r.output, HasSubstr("NOT_FOUND")) << r.output;
  }
  for (const char* flag : {"--batch", "--in_flight", "--max_epochs"}) {
    r = RunCommand(
        Cli(*server_, absl::StrCat("train ", scoped.path(), "/a.svm --model=b ",
                                   flag, "=0")));
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat(flag, " must be at least 1")));
  }
  r = RunCommand(Cli(*server_, "create m"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("create needs --dim"));
  r = RunCommand(
      Cli(*server_, "create m --dim=3 --algorithm=margin --gamma=-1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("INVALID_ARGUMENT: config: gamma -1"));
  // A usage error is one line that points at --help; an unknown command is
  // named as one.
  r = RunCommand(Cli(*server_, "bogus"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "perceptron: unknown command \"bogus\" (perceptron --help shows "
            "the commands and flags)\n");
  r = RunCommand(Cli(*server_, "get"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("get takes one MODEL"));
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1);
  // get prints the configuration as status prints figures, numbers in their
  // shortest round-trip form.
  r = RunCommand(
      Cli(*server_, "create g --dim=4 --algorithm=margin --gamma=0.1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "get g"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("model          g (margin, d=4)\n"));
  EXPECT_THAT(r.output, HasSubstr("gamma          0.1\n"));
  EXPECT_THAT(r.output, HasSubstr("comparator     none"));
  r = RunCommand(Cli(*server_, "health"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("SERVING\n"));
  // The server's own status: its models, durability and memory.
  EXPECT_THAT(r.output,
              ContainsRegex("\n[0-9]+ models, durability [a-z]+; "
                            "resident memory [0-9.]+ MiB \\([a-z]+\\)\n"));
  // And what its memory bounds leave: no prediction is pending here.
  EXPECT_THAT(r.output,
              ContainsRegex("\nmodels [0-9.]+ [A-Za-z]+ of [0-9.]+ [A-Za-z]+ "
                            "\\(--max_models_mb\\), pending predictions 0 "
                            "bytes of 1.0 GiB \\(--max_pending_mb\\), "
                            "feature names 0 bytes of 1.0 GiB "
                            "\\(--name_tables_mb\\)\n"));
}

// train streams: from a file (checked whole first, then read again for each
// pass) or from standard input, holding only the batches in flight; the model
// equals the core library's on the same examples.
TEST_F(CliTest, TrainStreamsAFileOrStandardInputInBoundedMemory) {
  const testing::ScopedDir dir("cli-stream");
  const std::string path = dir.path() + "/big.svm";
  constexpr int kExamples = 50000, kDim = 40;
  {
    std::ofstream out(path);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> x(-1, 1);
    for (int k = 0; k < kExamples; ++k) {
      std::string line = (k % 3 == 0) ? "-1" : "+1";
      for (int i = 1; i <= kDim; ++i) {
        absl::StrAppend(&line, " ", i, ":", absl::StrFormat("%.4f", x(rng)));
      }
      out << line << "\n";
    }
  }
  testing::CommandResult r = RunMeasured(
      Cli(*server_, "train " + path + " --model=twice --create --epochs=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("100000 examples in"));
  const long peak_kb = PeakKb(r.output);
  ASSERT_GT(peak_kb, 0) << r.output;
  std::cout << "[ cli ] train's peak resident size " << peak_kb / 1024
            << " MB\n";
  // The file is 20 MB of text; its examples as vectors are more. Holding
  // them all took about 45 MB here; streaming holds the batches in flight
  // (the CLI's peak is about 18 MB, most of it the gRPC library).
  if (!kSanitized) {
    EXPECT_LT(peak_kb, 32 * 1024) << "the CLI's peak resident size";
  }
  absl::StatusOr<client::Dataset> data = client::ReadDataFile(path, {});
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->examples.size(), static_cast<size_t>(kExamples));
  ModelConfig config;
  config.dimension = kDim;
  const auto core = CoreRun(*data, config, 2);
  ExpectSameModel(*client_, "twice", *core);

  // The same examples from standard input, twice over: a pipe cannot be
  // read twice, so each pass is its own run.
  r = RunCommand(
      Cli(*server_, "train - --model=piped --create --dim=40 < " + path));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("on standard input: 50000 examples"));
  r = RunCommand("cat " + path + " | " +
                 Cli(*server_, "train - --model=piped"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectSameModel(*client_, "piped", *core);
  r = RunCommand("cat " + path + " | " +
                 Cli(*server_, "train - --model=piped --epochs=2"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--epochs above 1 needs a file"));
  r = RunCommand("cat " + path + " | " +
                 Cli(*server_, "train - --model=new --create"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("from standard input needs --dim"));

  // A bad line in a file: nothing is sent. In a pipe: what came before it
  // was sent, and the message says so.
  const std::string bad = dir.path() + "/bad.svm";
  std::ofstream(bad) << "+1 1:1\n-1 2:1\n+1 1:x\n-1 3:1\n";
  r = RunCommand(Cli(*server_, "create small --dim=3"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "train " + bad + " --model=small"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("bad.svm:3: cannot read \"1:x\""));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("INVALID_ARGUMENT")));
  EXPECT_EQ(client_->GetStatus("small")->stats().examples(), 0u);
  r = RunCommand(Cli(*server_, "train - --model=small < " + bad));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("standard input:3: cannot read"));
  EXPECT_THAT(r.output, HasSubstr("the 2 examples before it were applied"));
  EXPECT_EQ(client_->GetStatus("small")->stats().examples(), 2u);
}

// Files the CLI reads or writes itself fail with the file's name and the
// system's reason, never a gRPC code; a failed export leaves no file, and an
// existing one untouched.
TEST_F(CliTest, LocalFileErrorsNameTheFileAndTheReason) {
  const testing::ScopedDir dir("cli-local");
  ASSERT_EQ(RunCommand(Cli(*server_, "create e --dim=2")).exit_code, 0);
  testing::CommandResult r =
      RunCommand(Cli(*server_, "export e /nonexistent/dir/x.blob"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "perceptron: cannot write /nonexistent/dir/x.blob: No such file "
            "or directory\n");
  const std::string kept = dir.path() + "/kept.blob";
  std::ofstream(kept) << "kept";
  r = RunCommand(Cli(*server_, "export nosuch " + kept));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("NOT_FOUND: model nosuch not found"));
  std::ifstream in(kept);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in),
                        std::istreambuf_iterator<char>()),
            "kept");
  EXPECT_NE(access((kept + ".partial").c_str(), F_OK), 0);
  r = RunCommand(Cli(*server_, "import /nonexistent/x.blob"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "perceptron: cannot read /nonexistent/x.blob: No such file or "
            "directory\n");
  r = RunCommand(Cli(*server_, "train /nonexistent/x.svm --model=e"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot read /nonexistent/x.svm: No such"));
  r = RunCommand(Cli(*server_, "plot e --out=/nonexistent/p.svg"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot write /nonexistent/p.svg: No such"));
  // A full disk while generating (/dev/full): said, not "wrote".
  r = RunCommand(Cli(*server_, "generate --dim=3 --count=5 --out=/dev/full"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "perceptron: cannot write /dev/full: No space left on device\n");
  // (Its message then goes where standard error does: here, with the output.)
  r = RunCommand(Cli(*server_, "generate --dim=3 --count=5 > /dev/full"));
  EXPECT_EQ(r.exit_code, 1);
  // So is any command's output that does not reach standard output.
  r = RunCommand(Cli(*server_, "list > /dev/full"));
  EXPECT_EQ(r.exit_code, 1);
  r = RunCommand(Cli(*server_, "weights e > /dev/full"));
  EXPECT_EQ(r.exit_code, 1);
  // A FILE that is not a regular file (here a pipe) is written as it is,
  // never replaced by a file renamed over it.
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  r = RunCommand("cat " + fifo + " > " + dir.path() + "/piped.blob & " +
                 Cli(*server_, "export e " + fifo) + "; wait");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  struct stat st;
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  r = RunCommand(Cli(*server_, "import " + dir.path() + "/piped.blob --as=e3"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // "-": export to standard output, import from standard input.
  r = RunCommand(Cli(*server_, "export e - | ") +
                 Cli(*server_, "import - --as=e2"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("imported e2 (classic, d=2) from standard "
                                  "input"));
  // Imported again under an id that exists: ALREADY_EXISTS, and the flag that
  // gives another.
  r = RunCommand(Cli(*server_, "import " + dir.path() + "/piped.blob --as=e3"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("ALREADY_EXISTS: model e3 already exists "
                                  "(--as=NEW_ID imports the blob under another "
                                  "id)"));
  // A model that has learned nothing has no heaviest weight to list.
  ASSERT_EQ(RunCommand(Cli(*server_, "create blank --dim=2")).exit_code, 0);
  r = RunCommand(Cli(*server_, "weights blank --top=3"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "# no weight is non-zero yet\n");
}

// --help lists each binary's flags with their defaults; --version names the
// release and the wire contract.
TEST(CliHelpTest, HelpListsEveryFlagAndVersionNamesTheRelease) {
  for (const std::string binary : {PERCEPTRON_CLI_PATH, PERCEPTROND_PATH}) {
    testing::CommandResult r = RunCommand(binary + " --help");
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("No flags matched")))
        << binary;
    EXPECT_THAT(r.output, HasSubstr("--help lists every flag")) << binary;
    r = RunCommand(binary + " --version");
    EXPECT_THAT(r.output, HasSubstr(" 0.1.0 (wire contract "
                                    "perceptron.v1.PerceptronService)"))
        << binary;
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("Debug build"))) << binary;
  }
  testing::CommandResult r =
      RunCommand(std::string(PERCEPTRON_CLI_PATH) + " --help");
  EXPECT_THAT(r.output, HasSubstr("--server (host:port of perceptrond); "
                                  "default: \"127.0.0.1:50051\";"));
  r = RunCommand(std::string(PERCEPTROND_PATH) + " --help");
  EXPECT_THAT(r.output, HasSubstr("--max_pending_bytes"));
  EXPECT_THAT(r.output, HasSubstr("default: 8080;"));
}

// What a new user meets first (issue 50's list): one command's help, the
// server's address from the environment, several models deleted at once, a
// gamma that would do nothing refused, status as JSON, a fresh model's status.
TEST_F(CliTest, HelpEnvironmentAndSmallCommandsAsANewUserMeetsThem) {
  testing::CommandResult r =
      RunCommand(std::string(PERCEPTRON_CLI_PATH) + " --help");
  EXPECT_EQ(r.output.rfind("perceptron: the command-line client of "
                           "perceptrond\n",
                           0),
            0u)
      << r.output;
  for (const std::string how : {" help train", " train --help"}) {
    r = RunCommand(std::string(PERCEPTRON_CLI_PATH) + how);
    EXPECT_EQ(r.exit_code, 0) << how;
    EXPECT_EQ(r.output.rfind("perceptron train FILE --model=MODEL", 0), 0u)
        << r.output;
    EXPECT_THAT(r.output, HasSubstr("  --epochs (train: passes over the "
                                    "file); default: 1\n"));
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("--sigma"))) << how;
  }
  // create's help lists every flag a configuration is read from.
  r = RunCommand(std::string(PERCEPTRON_CLI_PATH) + " help create");
  EXPECT_THAT(r.output, HasSubstr("  --idle_expiry (create: delete the model"));
  EXPECT_THAT(r.output, HasSubstr("  --sigma (create: rbf width)"));
  r = RunCommand(std::string(PERCEPTRON_CLI_PATH) + " help nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("no command \"nosuch\" to help with"));

  // PERCEPTRON_SERVER when --server is not given; --server wins.
  const std::string env =
      absl::StrCat("PERCEPTRON_SERVER=", server_->target(), " ");
  r = RunCommand(env + PERCEPTRON_CLI_PATH + " create a --dim=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(env + PERCEPTRON_CLI_PATH + " create b --dim=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand("PERCEPTRON_SERVER=127.0.0.1:1 " + Cli(*server_, "list"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("a\t"));

  // A fresh model's status: no rate of no examples; as JSON, the HTTP API's.
  r = RunCommand(Cli(*server_, "status a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mistakes       0\n"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("of the last 0")));
  r = RunCommand(Cli(*server_, "status a --format=json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"model_id\":\"a\""));
  EXPECT_THAT(r.output, HasSubstr("\"bound_available\":false"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("\"bound\":")));
  r = RunCommand(Cli(*server_, "status a --format=xml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("status --format=xml is not text or json"));

  // --gamma with nothing to be the margin of is refused, nothing created.
  r = RunCommand(Cli(*server_, "create c --dim=2 --gamma=0.1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--gamma without --comparator_file does "
                                  "nothing"));
  EXPECT_EQ(RunCommand(Cli(*server_, "get c")).exit_code, 1);

  // A model made for a while: --idle_expiry (the server deletes it once idle).
  r = RunCommand(Cli(*server_, "create t --dim=2 --idle_expiry=90m"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "created t (classic, d=2, deleted once idle for 1h30m)\n");
  absl::StatusOr<v1::Model> t = client_->GetModel("t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->config().idle_expiry_seconds(), 5400);
  r = RunCommand(Cli(*server_, "create u --dim=2 --idle_expiry=-1s"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--idle_expiry=-1s is negative"));
  EXPECT_EQ(RunCommand(Cli(*server_, "get u")).exit_code, 1);

  // A flag the command does not read is a usage error, named as written,
  // before anything is done (create's flags are train's with --create); any
  // other usage error once the command is known points at its help.
  // generate's --dim and --count are 20 and 10000 when not given, and 0 given
  // is refused.
  constexpr absl::string_view kLists = " lists the flags it reads)\n";
  constexpr absl::string_view kShows = " shows its usage and flags)\n";
  for (const auto& [command, why, help] :
       {std::tuple{"generate --count=3 --gamma=0.1",
                   "generate does not read --gamma", kLists},
        std::tuple{"status a --top=3", "status does not read --top", kLists},
        std::tuple{"delete a --nobias", "delete does not read --nobias",
                   kLists},
        std::tuple{"generate --dim=0", "--dim must be at least 1", kShows},
        std::tuple{"generate --count 0", "--count must be at least 1", kShows},
        std::tuple{"create", "create takes one MODEL", kShows}}) {
    r = RunCommand(Cli(*server_, command));
    EXPECT_EQ(r.exit_code, 2) << command;
    const absl::string_view name = command;
    EXPECT_EQ(r.output, absl::StrCat("perceptron: ", why, " (perceptron help ",
                                     name.substr(0, name.find(' ')), help));
  }
  r = RunCommand(Cli(*server_, "generate --seed=3"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 10000);
  EXPECT_THAT(r.output.substr(0, r.output.find('\n')), HasSubstr(" 20:"));
  const testing::ScopedDir scoped("cli-unread");
  const std::string tiny = scoped.path() + "/tiny.svm";
  std::ofstream(tiny) << "+1 1:1\n-1 1:-1\n";
  r = RunCommand(Cli(*server_, absl::StrCat("train ", tiny,
                                            " --model=v --create --dim=1 "
                                            "--nobias --algorithm=averaged "
                                            "--progress=no")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::Model> v = client_->GetModel("v");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->config().bias());
  EXPECT_EQ(v->config().algorithm(), v1::AVERAGED);

  r = RunCommand(Cli(*server_, "delete a b"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "deleted a\ndeleted b\n");
  // One not there is said, and the others go all the same (as rm does).
  ASSERT_EQ(RunCommand(Cli(*server_, "create c --dim=2")).exit_code, 0);
  r = RunCommand(Cli(*server_, "delete a c"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("NOT_FOUND: model a not found"));
  EXPECT_THAT(r.output, HasSubstr("deleted c\n"));
  EXPECT_EQ(RunCommand(Cli(*server_, "get c")).exit_code, 1);
  r = RunCommand(Cli(*server_, "list"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("a\t")));
}

// A file an example of which the model cannot take: train and predict name
// its line (as the file counts lines and indices) before anything is sent or
// printed, NaN, infinities and zero rows a model cannot normalize included.
TEST_F(CliTest, BadRowsAreNamedByLineBeforeAnythingIsSent) {
  const testing::ScopedDir dir("cli-bad-rows");
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  };
  ASSERT_EQ(RunCommand(Cli(*server_, "create p --dim=3")).exit_code, 0);
  const std::string wide = write("wide.svm", "+1 1:1 3:1\n-1 2:1\n+1 4:1\n");
  testing::CommandResult r =
      RunCommand(Cli(*server_, "predict " + wide + " --model=p --batch=2"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "perceptron: " + wide +
                          ":3: index 4 is past the model's dimension 3 "
                          "(indices 1 to 3)\n");
  r = RunCommand("cat " + wide + " | " +
                 Cli(*server_, "predict - --model=p --batch=2"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("standard input:3: index 4 is past"));

  const std::string nan =
      write("nan.csv", "a,b,c,label\n1,2,3,1\n1,nan,3,0\n4,5,6,1\n");
  r = RunCommand(Cli(*server_, "train " + nan + " --model=p"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "perceptron: " + nan +
                          ":3: feature 2 of 3 has the value nan, not a finite "
                          "number\n");
  const std::string inf = write("inf.svm", "+1 1:1\n-1 2:inf\n");
  r = RunCommand(Cli(*server_, "train " + inf + " --model=p"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              HasSubstr(":2: feature index 2 has the value inf, not a finite"));
  EXPECT_EQ(client_->GetStatus("p")->stats().examples(), 0u);

  // Zeros: refused by a model that normalizes without a bias, taken by one
  // with a bias.
  const std::string zero = write("zero.svm", "+1 1:1\n-1 2:0\n");
  r = RunCommand(Cli(*server_, "train " + zero +
                                   " --model=z --create --dim=3 --nobias "
                                   "--normalize"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr(zero + ":2: every feature is 0, and the "
                                         "model normalizes without a bias"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("trained")));
  r = RunCommand(Cli(*server_, "train " + zero + " --model=p"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("trained p on " + zero + ": 2 examples"));
}

TEST_F(CliTest, PredictIssueAndRevealThroughTheCli) {
  const testing::ScopedDir scoped("cli-reveal");
  const std::string dir = scoped.path();
  ASSERT_EQ(RunCommand(Cli(*server_, "create p --dim=2")).exit_code, 0);
  {
    FILE* f = fopen((dir + "/two.svm").c_str(), "w");
    fputs("1:1 2:0\n1:0 2:1\n", f);
    fclose(f);
  }
  testing::CommandResult r = RunCommand(
      Cli(*server_, "predict " + dir + "/two.svm --model=p --issue"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1 +1 0\n2 +1 0\n"));
  r = RunCommand(Cli(*server_, "reveal --model=p 2:-1 1:+1 9:1"));
  EXPECT_EQ(r.exit_code, 1);  // id 9 was never issued
  EXPECT_THAT(
      r.output,
      HasSubstr("2: issued +1, a mistake; the model learned from it\n"));
  EXPECT_THAT(
      r.output,
      HasSubstr("1: issued +1, a mistake; the model learned from it\n"));
  EXPECT_THAT(r.output,
              HasSubstr("perceptron: argument 9:1: prediction 9 was never "
                        "issued"));

  // What predict --issue prints, with the true label written over the
  // predicted one (0 for -1, as data files write it), is what reveal reads,
  // from a file or standard input.
  r = RunCommand(
      Cli(*server_, "predict - --model=p --issue < " + dir + "/two.svm"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::StartsWith("3 "));
  EXPECT_THAT(r.output, HasSubstr("\n4 "));
  {
    FILE* f = fopen((dir + "/truth.txt").c_str(), "w");
    fputs("# id label score\n3 0 0.5\n", f);
    fclose(f);
  }
  r = RunCommand(Cli(*server_, "reveal --model=p " + dir + "/truth.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("3: issued "));
  // Revealed again: the file's line names which.
  r = RunCommand(Cli(*server_, "reveal --model=p " + dir + "/truth.txt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("perceptron: " + dir +
                                  "/truth.txt:2: prediction 3 was already "
                                  "revealed or has expired\n"));
  r = RunCommand("printf '4 +1 0.25\\n' | " +
                 Cli(*server_, "reveal --model=p -"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("4: issued "));
  EXPECT_EQ(client_->GetStatus("p")->stats().pending(), 0u);
  r = RunCommand("printf '5 +1\\n6 yes\\n' | " +
                 Cli(*server_, "reveal --model=p -"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("standard input:2: \"6 yes\" is not \"ID "
                                  "LABEL\""));
  r = RunCommand(Cli(*server_, "reveal --model=p 7:2"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("\"7:2\" is not ID:LABEL"));
}

}  // namespace
}  // namespace perceptron
