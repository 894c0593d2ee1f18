// The perceptron CLI with wide models (hashing ones, of more than 2^16
// coordinates a vector) against a real perceptrond: `weights` lists their
// non-zeros as "index:value", `certificate --out` writes the comparator's
// non-zeros so, and `create --comparator_file` reads both back, binary and
// multiclass, to the same bound; bad comparator files are refused with their
// file and line, and no model is made. Vowpal Wabbit's -q names interactions.
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli_fixture.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using testing::Cli;
using testing::CliTest;
using ::testing::HasSubstr;
using testing::RunCommand;

// A VW file of `n` lines, each three words of 40 in namespace a, labeled by
// the sign of a random score of its words (or, with `classes`, the class of
// the highest of three such scores).
void WriteVw(const std::string& path, int n, bool classes) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> word(0, 39);
  std::normal_distribution<double> normal(0, 1);
  double score[3][40];
  for (auto& row : score) {
    for (double& s : row) s = normal(rng);
  }
  std::ofstream out(path);
  for (int t = 0; t < n; ++t) {
    const int w[3] = {word(rng), word(rng), word(rng)};
    double total[3] = {0, 0, 0};
    for (int c = 0; c < 3; ++c) {
      for (int k : w) total[c] += score[c][k];
    }
    std::string label;
    if (classes) {
      const int best = total[0] >= total[1] && total[0] >= total[2] ? 0
                       : total[1] >= total[2]                       ? 1
                                                                    : 2;
      label = std::string(1, static_cast<char>('x' + best));
    } else {
      label = total[0] > 0 ? "1" : "-1";
    }
    out << label << " |a w" << w[0] << " w" << w[1] << " w" << w[2] << "\n";
  }
}

// `weights` of a wide model: its header line and each "index:value" line,
// class lines ("# class NAME") kept in order as keys -1, -2, ...
struct WideWeights {
  std::string header;
  std::map<long long, double> values;
  std::vector<std::string> classes;
};

WideWeights ParseWide(const std::string& output) {
  WideWeights w;
  std::istringstream in(output);
  std::string line;
  std::getline(in, w.header);
  while (std::getline(in, line)) {
    if (line.rfind("# class ", 0) == 0) {
      w.classes.push_back(line.substr(8));
      continue;
    }
    const std::vector<std::string> parts = absl::StrSplit(line, ':');
    long long index;
    double value;
    EXPECT_EQ(parts.size(), 2u) << line;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &index) ||
        !absl::SimpleAtod(parts[1], &value)) {
      ADD_FAILURE() << "not index:value: " << line;
      continue;
    }
    EXPECT_TRUE(w.values.emplace(index, value).second) << line;
  }
  return w;
}

// The non-zeros of `values` by index.
template <typename Values>
std::map<long long, double> NonZeros(const Values& values) {
  std::map<long long, double> out;
  for (int i = 0; i < values.size(); ++i) {
    if (values[i] != 0) out[i] = values[i];
  }
  return out;
}

// The comparator `id` was created with (as given: the server scales a copy to
// unit length), against `expected` by index, to the bit (the files hold
// shortest round-trip numbers): every other coordinate 0. The configuration
// holds a wide model's as its non-zeros at their coordinates.
void ExpectComparator(client::Client& client, const std::string& id,
                      const std::map<long long, double>& expected,
                      size_t coordinates) {
  absl::StatusOr<v1::Model> m = client.GetModel(id);
  ASSERT_TRUE(m.ok()) << m.status();
  const v1::ModelConfig& c = m->config();
  ASSERT_EQ(c.comparator_indices_size(), c.comparator_size());
  std::map<long long, double> given;
  for (int k = 0; k < c.comparator_size(); ++k) {
    ASSERT_LT(c.comparator_indices(k), coordinates);
    given[c.comparator_indices(k)] = c.comparator(k);
  }
  EXPECT_EQ(given, expected);
}

TEST_F(CliTest, AWideModelsWeightsAndComparatorGoAsNonZerosAndComeBack) {
  const testing::ScopedDir scoped("cli-wide");
  const std::string vw = scoped.path() + "/words.vw";
  WriteVw(vw, 300, false);
  testing::CommandResult r = RunCommand(
      Cli(*server_, "train " + vw + " --model=m --create --hash_bits=18"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  constexpr size_t kCoordinates = (size_t{1} << 18) + 1;  // with the bias
  // status says the model's shape as it was made.
  r = RunCommand(Cli(*server_, "status m"));
  EXPECT_THAT(r.output,
              HasSubstr("model          m (classic, hash_bits=18)\n"));

  // weights: the non-zeros of the server's vector, each once, to the bit.
  r = RunCommand(Cli(*server_, "weights m"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const WideWeights printed = ParseWide(r.output);
  absl::StatusOr<v1::Weights> w = client_->GetWeights("m");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(static_cast<size_t>(w->values_size()), kCoordinates);
  const std::map<long long, double> nonzero = NonZeros(w->values());
  ASSERT_GT(nonzero.size(), 10u);
  EXPECT_EQ(printed.header,
            absl::StrCat("# ", nonzero.size(), " of ", kCoordinates,
                         " weights are non-zero: \"index:value\" a line"));
  EXPECT_EQ(printed.values, nonzero);
  EXPECT_TRUE(printed.classes.empty());

  // ... read back as a comparator.
  const std::string weights = scoped.path() + "/w.txt";
  std::ofstream(weights) << r.output;
  r = RunCommand(Cli(*server_,
                     "create mw --hash_bits=18 --gamma=0.1 "
                     "--comparator_file=" +
                         weights));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "created mw (classic, hash_bits=18, with comparator)\n");
  ExpectComparator(*client_, "mw", nonzero, kCoordinates);

  // certificate --out: the comparator's non-zeros, as the server gives them;
  // set as a model's comparator with the certificate's gamma, the same
  // examples give the bound U.
  const v1::Certificate cert =
      testing::SolvedStatus(*client_, "m").stats().certificate();
  ASSERT_TRUE(cert.available()) << cert.DebugString();
  const std::string u = scoped.path() + "/u.txt";
  r = RunCommand(Cli(*server_, "certificate m --out=" + u));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::CertificateResponse> full = client_->GetCertificate("m");
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->comparator_indices_size(), full->comparator_size());
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("(", full->comparator_size(),
                                     " non-zeros \"index:value\"; gamma ")));
  std::map<long long, double> attained;
  for (int k = 0; k < full->comparator_size(); ++k) {
    // Its support's coordinates, some of which may hold 0.
    if (full->comparator(k) != 0) {
      attained[full->comparator_indices(k)] = full->comparator(k);
    }
  }
  r = RunCommand(
      Cli(*server_, absl::StrFormat("create mu --hash_bits=18 --gamma=%.17g "
                                    "--comparator_file=%s",
                                    full->certificate().gamma(), u)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectComparator(*client_, "mu", attained, kCoordinates);
  r = RunCommand(Cli(*server_, "train " + vw + " --model=mu"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::ModelStatus> st = client_->GetStatus("mu");
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE(st->stats().bound_available());
  EXPECT_NEAR(st->stats().bound(), cert.upper(), 1e-9 * cert.upper());

  // A model of vectors keeps one number a line.
  r = RunCommand(Cli(*server_, "create small --dim=3"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "weights small"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "0\n0\n0\n0\n");
}

TEST_F(CliTest, AWideMulticlassModelsVectorsAreCountedAcrossItsClasses) {
  const testing::ScopedDir scoped("cli-wide-classes");
  const std::string vw = scoped.path() + "/words.vw";
  WriteVw(vw, 300, true);
  testing::CommandResult r = RunCommand(
      Cli(*server_, "train " + vw + " --model=m --create --hash_bits=17"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes of m: x,y,z"));
  constexpr long long kBlock = (1 << 17) + 1;
  r = RunCommand(Cli(*server_, "weights m"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const WideWeights printed = ParseWide(r.output);
  EXPECT_EQ(printed.classes, (std::vector<std::string>{"x", "y", "z"}));
  absl::StatusOr<v1::Weights> w = client_->GetWeights("m");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->values_size(), 3 * kBlock);
  const std::map<long long, double> nonzero = NonZeros(w->values());
  EXPECT_EQ(printed.values, nonzero);
  // Each class's non-zeros follow its own "# class" line.
  {
    std::istringstream in(r.output);
    std::string line;
    long long block = -1;
    while (std::getline(in, line)) {
      if (line.rfind("# class ", 0) == 0) {
        ++block;
      } else if (line[0] != '#') {
        const long long index = std::stoll(line.substr(0, line.find(':')));
        EXPECT_EQ(index / kBlock, block) << line;
      }
    }
    EXPECT_EQ(block, 2);
  }
  const std::string weights = scoped.path() + "/w.txt";
  std::ofstream(weights) << r.output;
  r = RunCommand(Cli(*server_,
                     "create mw --hash_bits=17 --classes=x,y,z "
                     "--gamma=0.1 --comparator_file=" +
                         weights));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectComparator(*client_, "mw", nonzero, 3 * kBlock);

  // The certificate's comparator, read back with the classes the file gives
  // (train --create): the same bound U on the same examples.
  const v1::Certificate cert =
      testing::SolvedStatus(*client_, "m").stats().certificate();
  ASSERT_TRUE(cert.available()) << cert.DebugString();
  const std::string u = scoped.path() + "/u.txt";
  r = RunCommand(Cli(*server_, "certificate m --out=" + u));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(
      *server_, absl::StrFormat("train %s --model=mu --create --hash_bits=17 "
                                "--gamma=%.17g --comparator_file=%s",
                                vw, cert.gamma(), u)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::ModelStatus> st = client_->GetStatus("mu");
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE(st->stats().bound_available());
  EXPECT_NEAR(st->stats().bound(), cert.upper(), 1e-9 * cert.upper());
}

TEST_F(CliTest, ABadComparatorFileIsRefusedWithItsLineAndNothingIsMade) {
  const testing::ScopedDir scoped("cli-wide-bad");
  struct Case {
    std::string text, flags, message;
  };
  const Case cases[] = {
      {"1:0.5\n3\n", "--hash_bits=18",
       "u.txt:2: \"3\" is a number alone, after index:value pairs (from line "
       "1): a comparator file is one form or the other"},
      {"0.5\n# a comment\n7:1\n", "--dim=3",
       "u.txt:3: \"7:1\" is index:value, after numbers alone (from line 1)"},
      {"5:1\n262145:2\n", "--hash_bits=18",
       "u.txt:2: index 262145 is past the model's 262145 weight coordinates "
       "(0 to 262144)"},
      {"3:1\n4:1\n3:2\n", "--hash_bits=18",
       "u.txt: index 3 is given twice (lines 1 and 3)"},
      {"x:1\n", "--hash_bits=18",
       "u.txt:1: \"x:1\" is not index:value (a coordinate from 0 and a "
       "number)"},
      {"4:nope\n", "--hash_bits=18", "u.txt:1: \"4:nope\" is not index:value"},
      // Three classes of 2^17 + 1: 393219 coordinates.
      {"393219:1\n", "--hash_bits=17 --classes=a,b,c",
       "index 393219 is past the model's 393219 weight coordinates"},
  };
  for (const Case& c : cases) {
    const std::string u = scoped.path() + "/u.txt";
    std::ofstream(u) << c.text;
    testing::CommandResult r =
        RunCommand(Cli(*server_, "create bad " + c.flags +
                                     " --gamma=0.1 --comparator_file=" + u));
    EXPECT_EQ(r.exit_code, 1) << c.text << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.text;
    EXPECT_EQ(client_->GetModel("bad").status().code(),
              absl::StatusCode::kNotFound)
        << c.text;
  }
  // The last coordinate of the three classes is in range.
  std::ofstream(scoped.path() + "/u.txt") << "393218:1\n";
  testing::CommandResult r =
      RunCommand(Cli(*server_,
                     "create good --hash_bits=17 --classes=a,b,c --gamma=0.1 "
                     "--comparator_file=" +
                         scoped.path() + "/u.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ExpectComparator(*client_, "good", {{393218, 1.0}}, 3 * ((1 << 17) + 1));
  // 2^24 coordinates: the comparator goes as its non-zeros (spread over every
  // coordinate it would take 128 MiB, more than a request's 64).
  std::ofstream(scoped.path() + "/u.txt") << "1:1\n16777216:-2\n";
  r = RunCommand(Cli(*server_,
                     "create big --hash_bits=24 --gamma=0.1 "
                     "--comparator_file=" +
                         scoped.path() + "/u.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ExpectComparator(*client_, "big", {{1, 1.0}, {16777216, -2.0}},
                   (size_t{1} << 24) + 1);
  EXPECT_TRUE(client_->DeleteModel("big").ok());
}

// `-q ab` as Vowpal Wabbit writes it (also -qab, --quadratic, repeated) adds
// to --interactions, for create and for train --create; a -q without its pair
// is a usage error, and a command that makes no model does not read it.
TEST_F(CliTest, VowpalWabbitsDashQNamesInteractions) {
  const testing::ScopedDir scoped("cli-wide-q");
  const auto interactions = [&](const std::string& id) {
    absl::StatusOr<v1::Model> m = client_->GetModel(id);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::vector<std::string>(m->config().interactions().begin(),
                                             m->config().interactions().end())
                  : std::vector<std::string>{};
  };
  testing::CommandResult r = RunCommand(Cli(
      *server_, "create q1 --hash_bits=12 -q ab -qac --quadratic=bc -q=cd"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "created q1 (classic, hash_bits=12, -q ab,ac,bc,cd)\n");
  EXPECT_EQ(interactions("q1"),
            (std::vector<std::string>{"ab", "ac", "bc", "cd"}));
  r = RunCommand(Cli(*server_,
                     "create q2 --interactions=ab,ba --hash_bits=12 "
                     "--quadratic cc"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(interactions("q2"), (std::vector<std::string>{"ab", "ba", "cc"}));

  const std::string vw = scoped.path() + "/words.vw";
  WriteVw(vw, 50, false);
  r = RunCommand(Cli(
      *server_, "train " + vw + " --model=q3 --create --hash_bits=12 -q aa"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(interactions("q3"), std::vector<std::string>{"aa"});

  r = RunCommand(Cli(*server_, "create q4 --hash_bits=12 -q"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("-q takes a pair of namespaces (-q ab, as "
                                  "Vowpal Wabbit writes it)"));
  EXPECT_EQ(client_->GetModel("q4").status().code(),
            absl::StatusCode::kNotFound);
  r = RunCommand(Cli(*server_, "predict " + vw + " --model=q3 -q ab"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("predict does not read -q"));
}

}  // namespace
}  // namespace perceptron
