// The perceptron CLI with multiclass models against a real perceptrond:
// class names from the file, learning as the core library does, and what
// status, weights, predict and a gzip-compressed file give.
#include <zlib.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/data_reader.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli_fixture.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using testing::Cli;
using testing::CliTest;
using testing::CoreRun;
using testing::ExpectSameModel;
using ::testing::HasSubstr;
using testing::RunCommand;

TEST_F(CliTest, AFileOfClassNamesMakesAMulticlassModelAsTheCoreLearnsIt) {
  const testing::ScopedDir scoped("cli-multiclass");
  const std::string csv = scoped.path() + "/flowers.csv";
  {
    // Three classes by name around three centres; a header row.
    std::ofstream out(csv);
    out << "a,b,c,species\n";
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0, 0.4);
    const char* names[] = {"rose", "iris", "lily"};
    for (int t = 0; t < 300; ++t) {
      const int y = (t * 7) % 3;
      out << absl::StrFormat("%.6f,%.6f,%.6f,%s\n", y + noise(rng),
                             2 * (y == 1) + noise(rng), noise(rng), names[y]);
    }
  }
  testing::CommandResult r = RunCommand(
      Cli(*server_, "train " + csv + " --model=fl --create --epochs=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Names in byte order: iris, lily, rose.
  // The label the last column for want of another: said, with the flag
  // that chooses another.
  EXPECT_THAT(r.output,
              HasSubstr("classes of fl: iris,lily,rose (the labels of column 3 "
                        "(species), the last; --label_column=NAME for "
                        "another)\n"));
  client::ReadOptions options;
  options.classes = {"iris", "lily", "rose"};
  absl::StatusOr<client::Dataset> data = client::ReadDataFile(csv, options);
  ASSERT_TRUE(data.ok()) << data.status();
  ModelConfig config;
  config.dimension = 3;
  config.classes = options.classes;
  const std::unique_ptr<Model> core = CoreRun(*data, config, 2);
  ExpectSameModel(*client_, "fl", *core);
  {
    // The label first: found by the header's name "Label", or by
    // --label_column=NAME; either learns as the label last did.
    std::ifstream in(csv);
    std::ofstream by_default(scoped.path() + "/first.csv"),
        by_name(scoped.path() + "/named.csv");
    std::string line;
    for (bool header = true; std::getline(in, line); header = false) {
      const size_t comma = line.rfind(',');
      const std::string rest = line.substr(0, comma);
      by_default << (header ? "Label" : line.substr(comma + 1)) << ',' << rest
                 << '\n';
      by_name << line.substr(comma + 1) << ',' << rest << '\n';
    }
  }
  r = RunCommand(Cli(
      *server_,
      "train " + scoped.path() + "/first.csv --model=fl4 --create --epochs=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes of fl4: iris,lily,rose\n"));
  ExpectSameModel(*client_, "fl4", *core);
  r = RunCommand(Cli(*server_, "train " + scoped.path() +
                                   "/named.csv --model=fl5 --create --epochs=2 "
                                   "--label_column=species"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectSameModel(*client_, "fl5", *core);
  // fit --create takes the classes from the file as train does; two passes
  // in one Train request learn as two epochs of train.
  r = RunCommand(Cli(*server_, "fit " + scoped.path() +
                                   "/named.csv --model=fl6 --create "
                                   "--max_epochs=2 --label_column=species"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes of fl6: iris,lily,rose\n"));
  ExpectSameModel(*client_, "fl6", *core);
  r = RunCommand(Cli(*server_, "fit " + csv +
                                   " --model=fl9 --create "
                                   "--max_epochs=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes of fl9: iris,lily,rose (the labels "
                                  "of column 3 (species), the last;"));
  ExpectSameModel(*client_, "fl9", *core);
  {
    // The same file gzip-compressed (zlib's gzwrite, the test's own), as
    // scikit-learn ships its digits: read as the CSV within, both epochs.
    std::ifstream in(csv);
    const std::string text(std::istreambuf_iterator<char>(in), {});
    gzFile gz = gzopen((csv + ".gz").c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    ASSERT_EQ(gzclose(gz), Z_OK);
  }
  r = RunCommand(
      Cli(*server_, "train " + csv + ".gz --model=fl7 --create --epochs=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes of fl7: iris,lily,rose"));
  ExpectSameModel(*client_, "fl7", *core);
  r = RunCommand(Cli(*server_, "status fl"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes        3: iris,lily,rose"));
  EXPECT_THAT(r.output, HasSubstr("rows: the true class; columns: the class "
                                  "issued"));
  // Row "iris": its counts as the core counted them, then examples.
  const std::vector<uint64_t>& m = core->confusion();
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrFormat("  iris  %7d %7d %7d %9d", m[0], m[1],
                                        m[2], m[0] + m[1] + m[2])))
      << r.output;
  // A file whose labels name one class: no model, and why.
  std::ofstream(scoped.path() + "/one.csv") << "a,label\n1,rose\n2,rose\n";
  r = RunCommand(Cli(
      *server_, "train " + scoped.path() + "/one.csv --model=one --create"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("one.csv: every label is \"rose\", one "
                                  "class: a model's labels are -1/+1"));
  EXPECT_EQ(client_->GetModel("one").status().code(),
            absl::StatusCode::kNotFound);
  // A label cell left empty names no class: said at its line.
  std::ofstream(scoped.path() + "/gap.csv") << "a,label\n1,rose\n2,\n";
  for (const char* verb : {"train", "fit"}) {
    r = RunCommand(
        Cli(*server_, absl::StrCat(verb, " ", scoped.path(),
                                   "/gap.csv --model=gap --create")));
    EXPECT_EQ(r.exit_code, 1) << verb;
    EXPECT_THAT(r.output, HasSubstr("gap.csv:3: the label is empty")) << verb;
  }
  // Longer class names head their columns whole (up to 12 characters).
  r = RunCommand(
      Cli(*server_, "create lc --dim=1 --classes=versicolor,virginica,x"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "status lc"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("certificate    pending (no labeled example yet)\n"));
  EXPECT_THAT(r.output,
              HasSubstr("versicolor  virginica          x  examples "
                        "   right\n  versicolor          0          0"))
      << r.output;
  // The heaviest weights name their class.
  r = RunCommand(Cli(*server_, "weights fl --top=2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // INDEX WEIGHT NAME class=CLASS (no name kept: "-"; the bias: "(bias)").
  EXPECT_THAT(r.output,
              ::testing::MatchesRegex("([0-9]+ [-0-9.e]+ (-|\\(bias\\)) "
                                      "class=(iris|lily|rose)\n){2}"))
      << r.output;
  // All the weights: each class's vector after its name, as a comparator
  // file reads them (the "#" lines are comments) for the same classes.
  r = RunCommand(Cli(*server_, "weights fl"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::MatchesRegex(
                            "# class iris\n([-0-9.e]+\n){4}# class lily\n"
                            "([-0-9.e]+\n){4}# class rose\n([-0-9.e]+\n){4}"))
      << r.output;
  std::ofstream(scoped.path() + "/u.txt") << r.output;
  r = RunCommand(Cli(*server_,
                     "create flu --dim=3 --classes=iris,lily,rose "
                     "--gamma=0.1 --comparator_file=" +
                         scoped.path() + "/u.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "created flu (classic, d=3, 3 classes, with comparator)\n");
  r = RunCommand(Cli(*server_, "get flu"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("model          flu (classic, d=3, 3 "
                                  "classes)\nclasses        iris,lily,rose\n"));
  EXPECT_THAT(r.output, HasSubstr("comparator     12 values"));
  r = RunCommand(Cli(*server_, "list"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\nflu\tclassic\td=3, 3 classes\n"));
  // Predictions are class names.
  r = RunCommand(Cli(*server_, "predict " + csv + " --model=fl"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 5), "rose ") << r.output;  // the first row
  {
    // New data has no label column: rows of the model's dimension are
    // predicted as the same rows with their labels.
    std::ifstream in(csv);
    std::ofstream out(scoped.path() + "/unlabeled.csv");
    for (std::string line; std::getline(in, line);) {
      out << line.substr(0, line.rfind(',')) << '\n';
    }
  }
  testing::CommandResult unlabeled = RunCommand(
      Cli(*server_, "predict " + scoped.path() + "/unlabeled.csv --model=fl"));
  ASSERT_EQ(unlabeled.exit_code, 0) << unlabeled.output;
  EXPECT_EQ(unlabeled.output, r.output);
  // A label outside the classes: named with its file and line, nothing sent.
  std::ofstream(csv, std::ios::app) << "0,0,0,tulip\n";
  r = RunCommand(Cli(*server_, "train " + csv + " --model=fl"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("flowers.csv:302: label \"tulip\" is not "
                                  "one of the model's 3 classes (iris, lily, "
                                  "rose)"));
  absl::StatusOr<v1::ModelStatus> st = client_->GetStatus("fl");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->stats().examples(), 600u);
  // --positive (one class against the rest) is a binary model's: refused
  // for a multiclass one, nothing sent or created.
  for (const std::string& command :
       {"train " + csv + ".gz --model=fl --positive=rose",
        "predict " + csv + ".gz --model=fl --positive=rose",
        "train " + csv +
            ".gz --model=fl8 --create --classes=iris,lily,rose "
            "--positive=rose"}) {
    r = RunCommand(Cli(*server_, command));
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_THAT(r.output,
                HasSubstr("--positive=\"rose\" makes labels -1/+1 for a "
                          "binary model; this model's labels are the names "
                          "of its 3 classes (iris, lily, rose)"))
        << command;
  }
  st = client_->GetStatus("fl");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->stats().examples(), 600u);
  EXPECT_EQ(client_->GetModel("fl8").status().code(),
            absl::StatusCode::kNotFound);
  // --classes names them at creation, in that order.
  r = RunCommand(Cli(*server_, "create fl2 --dim=3 --classes=rose,iris,lily"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Cli(*server_, "create fl3 --dim=3 --classes=rose,rose"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("classes name \"rose\" is repeated"));
  // train --create of a model that exists trains it as it is, and says the
  // creation flags given are not applied.
  r = RunCommand(Cli(*server_, "train " + csv +
                                   ".gz --model=fl --create --classes=a,b "
                                   "--algorithm=voted"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fl exists (classic, d=3, 3 classes) and is "
                                  "trained as it is: --algorithm, --classes "
                                  "(for --create) not applied"));
}

}  // namespace
}  // namespace perceptron
