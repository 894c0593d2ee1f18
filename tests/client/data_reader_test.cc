#include "client/data_reader.h"

#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scoped_dir.h"

namespace perceptron::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DataReaderTest, Libsvm) {
  absl::StatusOr<Dataset> d =
      ParseData("+1 1:0.5 3:2 # comment\n\n-1 2:1\n0 10:-3e-2\n", "x.svm", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 3u);
  EXPECT_TRUE(d->sparse);
  EXPECT_EQ(d->dimension, 10u);
  EXPECT_EQ(d->examples[0].indices, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{0.5, 2}));
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_EQ(d->examples[1].label, -1);
  EXPECT_EQ(d->examples[2].label, -1);
  EXPECT_EQ(d->examples[2].values[0], -0.03);
}

// Numbers are read as glibc's strtod reads them, bit for bit (random doubles
// written in full and in short, a subnormal, overflow and underflow, signs),
// indices with a sign too; tabs, runs of spaces and a CR end separate tokens;
// what is no number is refused naming the token. Each number is read both
// after an index with a sign (the token's own reading) and after plain
// digits (the common form's one pass), and the two agree.
TEST(DataReaderTest, LibsvmNumbersAreReadAsStrtodReadsThem) {
  std::vector<std::string> texts = {"0",
                                    "-0",
                                    "+2.5",
                                    "1e-320",
                                    "1e400",
                                    "-1e400",
                                    "1e-400",
                                    "3.",
                                    ".5",
                                    "1E5",
                                    "inf",
                                    "-inf",
                                    "1.7976931348623157e308",
                                    "4.9e-324"};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const double v =
        std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                   std::uniform_int_distribution<int>(-60, 60)(rng));
    texts.push_back(absl::StrFormat("%.17g", v));
    texts.push_back(absl::StrFormat("%.6e", v));
  }
  std::string file;
  for (const std::string& t : texts) {
    absl::StrAppend(&file, "+1\t+3:", t, "  \t 7:1\r\n");
    absl::StrAppend(&file, "-1 3:", t, "\t7:", t, "\n");
  }
  absl::StatusOr<Dataset> d = ParseData(file, "n.svm", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2 * texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const double want = std::strtod(texts[i].c_str(), nullptr);
    for (const Example& e : {d->examples[2 * i], d->examples[2 * i + 1]}) {
      ASSERT_EQ(e.indices, (std::vector<uint32_t>{2, 6})) << texts[i];
      EXPECT_EQ(std::bit_cast<uint64_t>(e.values[0]),
                std::bit_cast<uint64_t>(want))
          << texts[i];
    }
    EXPECT_EQ(std::bit_cast<uint64_t>(d->examples[2 * i + 1].values[1]),
              std::bit_cast<uint64_t>(want))
        << texts[i];
  }
  // Without a label (where none is required) the first token is a feature.
  ReadOptions unlabeled;
  unlabeled.require_labels = false;
  d = ParseData("2:0.5 4:-1\n  3:2\n", "u.svm", unlabeled);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  EXPECT_EQ(d->examples[0].indices, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{0.5, -1}));
  EXPECT_FALSE(d->examples[0].label.has_value());
  EXPECT_EQ(d->examples[1].indices, (std::vector<uint32_t>{2}));
  for (const char* bad : {"1.5x", "--1", "1e", ".", "1,5", "2:3", ""}) {
    EXPECT_THAT(
        std::string(ParseData(absl::StrCat("+1 1:", bad, "\n"), "b.svm", {})
                        .status()
                        .message()),
        HasSubstr(absl::StrCat("b.svm:1: cannot read \"1:", bad,
                               "\" as index:value")))
        << bad;
  }
  EXPECT_FALSE(ParseData("+1 -3:1\n", "b.svm", {}).ok());
  EXPECT_FALSE(ParseData("+1 3\n", "b.svm", {}).ok());
  EXPECT_FALSE(ParseData("+1 :3\n", "b.svm", {}).ok());
  EXPECT_FALSE(ParseData("+1 99999999999999999999:3\n", "b.svm", {}).ok());
}

TEST(DataReaderTest, CsvWithHeaderAndNamedPositiveClass) {
  ReadOptions o;
  o.positive_label = "2";
  absl::StatusOr<Dataset> d =
      ParseData("a,b,class\n1,2,2\n3,4,7\n", "x.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dimension, 2u);
  EXPECT_FALSE(d->sparse);
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{1, 2}));
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_EQ(d->examples[1].label, -1);
  o.label_column = 0;
  o.positive_label = "";
  d = ParseData("1,5,6\n0,7,8\n", "y.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[1].values, (std::vector<double>{7, 8}));
  EXPECT_EQ(d->examples[1].label, -1);
}

// Class names as labels: the header is the first row only (its feature cells
// are not numbers), and every later row is data with a text label.
TEST(DataReaderTest, CsvWithTextLabelsAndOnlyTheFirstRowAsHeader) {
  ReadOptions o;
  o.positive_label = "yes";
  absl::StatusOr<Dataset> d =
      ParseData("a,b,label\n1,2,yes\n3,4,no\n", "yn.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  EXPECT_EQ(d->dimension, 2u);
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_EQ(d->examples[1].label, -1);
  // No header: the first row is data.
  d = ParseData("1,2,yes\n3,4,no\n", "yn.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples.size(), 2u);
  // A second non-numeric row is an error, not another header.
  EXPECT_THAT(
      std::string(ParseData("a,b,label\nc,d,label\n1,2,yes\n", "h.csv", o)
                      .status()
                      .message()),
      HasSubstr("h.csv:2: column 0 (a) \"c\" is not a number"));
  // Text labels without --positive say how to map them.
  EXPECT_THAT(
      std::string(
          ParseData("a,b,label\n1,2,yes\n", "yn.csv", {}).status().message()),
      HasSubstr("yn.csv:2: label \"yes\" is not +1/1 or -1/0"));
}

// A header's column named "label" (in any case) is the label wherever it is;
// --label_column names another, by number or by name.
TEST(DataReaderTest, CsvLabelColumnByName) {
  ReadOptions o;
  o.classes = {"3", "7"};
  absl::StatusOr<Dataset> d =
      ParseData("Label,p0,p1\n3,0.5,1\n7,0.25,0\n", "l.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dimension, 2u);
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{0.5, 1}));
  EXPECT_EQ(d->examples[0].label, 0);
  EXPECT_EQ(d->examples[1].label, 1);
  // Read by name (a model with hash_bits), the same column is the label.
  o.named = true;
  d = ParseData("Label,p0,p1\n3,0.5,1\n7,0.25,0\n", "l.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[1].label, 1);
  ASSERT_EQ(d->examples[1].named.size(), 2);
  EXPECT_EQ(d->examples[1].named[0].name(), "p0");
  // Without such a column, the last.
  o.named = false;
  o.classes = {"0.5", "0.25"};
  d = ParseData("p1,y,p0\n1,3,0.5\n0,7,0.25\n", "n.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[1].values, (std::vector<double>{0, 7}));
  EXPECT_EQ(d->examples[1].label, 1);
  // A name given: that column; one the header lacks, or no header, is an
  // error naming the line.
  o.classes = {"3", "7"};
  o.label_name = "y";
  d = ParseData("p1,y,p0\n1,3,0.5\n0,7,0.25\n", "n.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[1].values, (std::vector<double>{0, 0.25}));
  EXPECT_EQ(d->examples[1].label, 1);
  EXPECT_EQ(ParseData("p1,z,p0\n1,3,0.5\n", "n.csv", o).status().message(),
            "n.csv:1: no column of the header is named \"y\" (the label's "
            "column)");
  EXPECT_EQ(ParseData("1,3,0.5\n", "n.csv", o).status().message(),
            "n.csv:1: the label's column is named \"y\", and the file has no "
            "header row");
}

// Quotes as RFC 4180 writes them (pandas and spreadsheets do): a cell in
// double quotes may hold commas, and "" is a quote in it.
TEST(DataReaderTest, CsvQuotedCells) {
  ReadOptions o;
  o.named = true;
  absl::StatusOr<Dataset> d = ParseData(
      "\"city, country\",\"x\",label\n"
      "\"Paris, France\", 2 ,1\n"
      "\"say \"\"hi\"\"\",\"0.5\",0\n",
      "q.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  ASSERT_EQ(d->examples[0].named.size(), 2);
  EXPECT_EQ(d->examples[0].named[0].name(), "city, country");
  EXPECT_EQ(d->examples[0].named[0].category(), "Paris, France");
  EXPECT_EQ(d->examples[0].named[1].name(), "x");
  EXPECT_EQ(d->examples[0].named[1].number(), 2);
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_EQ(d->examples[1].named[0].category(), "say \"hi\"");
  EXPECT_EQ(d->examples[1].named[1].number(), 0.5);
  EXPECT_EQ(d->examples[1].label, -1);
  // A byte order mark before the header is not part of its first name.
  o.named = false;
  o.classes = {"3", "7"};
  d = ParseData("\xEF\xBB\xBFlabel,x\n3,1\n7,2\n", "bom.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[1].values, (std::vector<double>{2}));
  EXPECT_EQ(d->examples[1].label, 1);
  o.classes = {};
  // By index, a quoted number is a number.
  d = ParseData("\"1.5\",2,\"1\"\n", "n.csv", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{1.5, 2}));
  EXPECT_EQ(d->examples[0].label, 1);
  // A quote left open, or text after a closing quote: the line named, and
  // the next file read afresh.
  for (const char* bad : {"1,2,1\n\"3,4,1\n", "1,2,1\n\"3\"x,4,1\n"}) {
    EXPECT_THAT(std::string(ParseData(bad, "b.csv", {}).status().message()),
                HasSubstr("b.csv:2: cannot read the line as CSV"))
        << bad;
  }
}

// Predict's rows of exactly the model's dimension have no label column; one
// more cell is the label, as always.
TEST(DataReaderTest, CsvRowsOfTheModelsWidthHaveNoLabel) {
  ReadOptions o;
  o.require_labels = false;
  o.unlabeled_width = 3;
  absl::StatusOr<Dataset> d = ParseData("a,b,c\n1,2,3\n4,5,6\n", "u.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dimension, 3u);
  EXPECT_EQ(d->examples[1].values, (std::vector<double>{4, 5, 6}));
  EXPECT_FALSE(d->examples[1].label.has_value());
  d = ParseData("1,2,3,-1\n", "l.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(d->examples[0].label, -1);
  // A column the header names "label" is the label whatever the width.
  d = ParseData("label,a,b\n1,2,3\n", "h.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples[0].values, (std::vector<double>{2, 3}));
  EXPECT_EQ(d->examples[0].label, 1);
}

TEST(DataReaderTest, AFileWithNoExampleIsAnError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"e.csv", ""},
      {"e.csv", "\n\n"},
      {"e.csv", "a,b,label\n"},
      {"e.svm", ""},
      {"e.svm", "# only a comment\n\n"}};
  for (const auto& [name, text] : cases) {
    absl::StatusOr<Dataset> d = ParseData(text, name, {});
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument)
        << name << " " << text;
    EXPECT_THAT(std::string(d.status().message()),
                HasSubstr("no examples in the file"))
        << name << " " << text;
  }
}

TEST(DataReaderTest, ErrorsNameTheFileAndLine) {
  EXPECT_THAT(
      std::string(
          ParseData("+1 1:2\n+1 x:2\n", "f.svm", {}).status().message()),
      HasSubstr("f.svm:2: cannot read \"x:2\" as index:value"));
  EXPECT_THAT(
      std::string(ParseData("+1 0:2\n", "f.svm", {}).status().message()),
      HasSubstr("f.svm:1: index 0 is out of range (indices start at 1)"));
  EXPECT_THAT(std::string(ParseData("5 1:2\n", "f.svm", {}).status().message()),
              HasSubstr("f.svm:1: label \"5\" is not +1/1 or -1/0"));
  EXPECT_THAT(
      std::string(ParseData("1,2,1\n1,1\n", "f.csv", {}).status().message()),
      HasSubstr("f.csv:2: 2 columns; the first data row has 3"));
  EXPECT_THAT(
      std::string(ParseData("1,2,1\n1,zz,1\n", "f.csv", {}).status().message()),
      HasSubstr("f.csv:2: column 1 \"zz\" is not a number"));
  // A first row of another width (scikit-learn's summary row) names no
  // column.
  EXPECT_THAT(
      std::string(ParseData("569,30,malignant,benign\n1,zz,1\n", "s.csv", {})
                      .status()
                      .message()),
      HasSubstr("s.csv:2: column 1 \"zz\" is not a number"));
  EXPECT_EQ(ReadDataFile("/nonexistent/file.csv", {}).status().code(),
            absl::StatusCode::kNotFound);
}

// A feature as "namespace|name=number" or "namespace|name:category", to
// compare examples by name in one line.
std::vector<std::string> Named(const Example& e) {
  std::vector<std::string> out;
  for (const v1::NamedFeature& f : e.named) {
    out.push_back(
        f.has_category()
            ? absl::StrCat(f.space(), "|", f.name(), ":", f.category())
            : absl::StrCat(f.space(), "|", f.name(), "=",
                           f.has_number() ? f.number() : 1.0));
  }
  return out;
}

TEST(DataReaderTest, VowpalWabbitLines) {
  absl::StatusOr<Dataset> d = ParseData(
      "1 'first|a x y:2 |b:0.5 z:4 |  w colour:red\r\n"
      "\n"
      "0 1 | 7 caf\xc3\xa9\n"
      "-1 |a:2 x\n",
      "t.vw", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 3u);
  EXPECT_THAT(Named(d->examples[0]),
              ElementsAre("a|x=1", "a|y=2", "b|z=2", "|w=1", "|colour:red"));
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_THAT(Named(d->examples[1]), ElementsAre("|7=1", "|caf\xc3\xa9=1"));
  EXPECT_EQ(d->examples[1].label, -1);
  EXPECT_THAT(Named(d->examples[2]), ElementsAre("a|x=2"));
  EXPECT_EQ(d->lines, (std::vector<size_t>{1, 3, 4}));
  EXPECT_TRUE(d->examples[0].by_name);
  // "x:" is x with the value 1 (times the namespace's scale), and all after
  // the first ':' that is not a number a categorical value, as Vowpal Wabbit
  // reads them.
  d = ParseData("1 |a x: y:p:q z:: |b:3 w:\n", "c.vw", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 1u);
  EXPECT_THAT(Named(d->examples[0]),
              ElementsAre("a|x=1", "a|y:p:q", "a|z::", "b|w=3"));
  // A line of no feature is an example by name all the same (for a model
  // that takes names, its bias alone), not a vector of width 0.
  d = ParseData("-1 |\n1 |b\n", "e.vw", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  for (const Example& e : d->examples) {
    EXPECT_TRUE(e.named.empty());
    EXPECT_TRUE(e.by_name && IsNamed(e));
  }
  d = ParseData("{\"features\": {}, \"label\": -1}\n", "e.jsonl", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(IsNamed(d->examples.at(0)));
  v1::Features proto;
  FeaturesToProto(d->examples[0], &proto);
  EXPECT_TRUE(proto.has_named());
  d = ParseData("-1 1:2\n", "e.svm", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(IsNamed(d->examples.at(0)));
}

TEST(DataReaderTest, CsvByNameWithCategoricalCells) {
  ReadOptions o;
  o.named = true;
  absl::StatusOr<Dataset> d =
      ParseData("age, city ,label\n34,paris,1\n,lyon,0\n", "p.csv", o);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  EXPECT_THAT(Named(d->examples[0]), ElementsAre("|age=34", "|city:paris"));
  EXPECT_THAT(Named(d->examples[1]), ElementsAre("|city:lyon"));
  EXPECT_EQ(d->examples[1].label, -1);
  EXPECT_THAT(ParseData(",b,label\n", "h.csv", o).status().message(),
              HasSubstr("h.csv:1: the header's column 0 has no name"));
}

// Read by number, a headed CSV file stops at its first categorical cell and
// names it; an empty cell, or a file with no header, names none.
TEST(DataReaderTest, CsvByNumberNamesItsFirstCategoricalCell) {
  auto first = [](const std::string& text) {
    std::istringstream in(text);
    DataReader reader(&in, "c.csv", {});
    Example e;
    absl::StatusOr<bool> more = true;
    while (more.ok() && *more) more = reader.Next(&e);
    return std::make_pair(more.ok(), reader.categorical_cell());
  };
  EXPECT_EQ(
      first("age,city,label\n34,7,1\n27,paris,0\n"),
      std::make_pair(false, std::string("line 3: column 1 (city) \"paris\"")));
  EXPECT_EQ(first("age,city,label\n34,,1\n"),
            std::make_pair(false, std::string()));
  EXPECT_EQ(first("age,city,label\n34,7,1\n"),
            std::make_pair(true, std::string()));
  // Without a header the first row is one, so a cell of a later row that is
  // not a number is an error only.
  EXPECT_EQ(first("34,7,1\n27,paris,0\n"),
            std::make_pair(false, std::string()));
}

// Names and labels travel as UTF-8 (protobuf's strings): text in another
// encoding is refused at its line, naming the byte; UTF-8 text is taken.
TEST(DataReaderTest, NamesAndLabelsMustBeUtf8) {
  ReadOptions named;
  named.named = true;
  ReadOptions raw;
  raw.raw_labels = true;
  const struct {
    std::string text, name;
    ReadOptions options;
    std::string says;
  } refused[] = {
      {"1 |t caf\xe9 good\n", "a.vw", {}, "a.vw:1: the feature \"caf\\xe9\""},
      {"1 |n\xe9 a\n", "b.vw", {}, "b.vw:1: the namespace \"n\\xe9\""},
      {"1 |t city:\xe9t\xe9\n",
       "c.vw",
       {},
       "the categorical value \"\\xe9t\\xe9\""},
      {"city,label\nr\xe9,1\n", "d.csv", named, "d.csv:2: column 0 (city): "},
      {"caf\xe9,label\n1,1\n", "e.csv", named, "the feature \"caf\\xe9\""},
      {"{\"features\": {\"caf\xe9\": 1}, \"label\": 1}\n",
       "f.jsonl",
       {},
       "f.jsonl:1: the line is not UTF-8 text (byte 19)"},
      {"1 1:1\ncaf\xe9 2:1\n", "g.svm", raw, "g.svm:2: the label \"caf\\xe9\""},
  };
  for (const auto& r : refused) {
    absl::StatusOr<Dataset> d = ParseData(r.text, r.name, r.options);
    EXPECT_THAT(d.status().message(), HasSubstr(r.says)) << r.name;
    EXPECT_THAT(d.status().message(), HasSubstr("is not UTF-8 text")) << r.name;
  }
  absl::StatusOr<Dataset> d =
      ParseData("1 |t caf\xc3\xa9 city:\xe6\x9d\xb1\xe4\xba\xac\n", "u.vw", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(
      Named(d->examples[0]),
      ElementsAre("t|caf\xc3\xa9=1", "t|city:\xe6\x9d\xb1\xe4\xba\xac"));
}

// Vowpal Wabbit's rule for the tag: the head's last word is the tag if it
// begins with ' or touches the '|' (vowpalwabbit/parse_example.cc,
// substring_to_example); it is ignored here.
TEST(DataReaderTest, VowpalWabbitTags) {
  absl::StatusOr<Dataset> d = ParseData(
      "1 id7|a x\n-1 1 row-8|a y\n0 'q |a z\n1 1 'r|a w\n", "t.vw", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 4u);
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_EQ(d->examples[1].label, -1);
  EXPECT_EQ(d->examples[2].label, -1);
  EXPECT_EQ(d->examples[3].label, 1);
  EXPECT_THAT(Named(d->examples[1]), ElementsAre("a|y=1"));
  // A word that touches the '|' is the tag even when it alone is there: the
  // line has no label (Vowpal Wabbit learns nothing from it).
  EXPECT_THAT(
      ParseData("1|a x\n", "n.vw", {}).status().message(),
      HasSubstr("n.vw:1: no label: \"1\" touches the '|', which makes it the "
                "line's tag, as Vowpal Wabbit reads it (\"1 |...\" for a "
                "label)"));
  ReadOptions unlabeled;
  unlabeled.require_labels = false;
  d = ParseData("id9|a x\n'id10 |a y\n", "p.vw", unlabeled);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  EXPECT_FALSE(d->examples[0].label.has_value());
  EXPECT_THAT(Named(d->examples[1]), ElementsAre("a|y=1"));
  EXPECT_THAT(ParseData("1 'a b |a x\n", "q.vw", {}).status().message(),
              HasSubstr("q.vw:1: the tag must come last"));
  EXPECT_THAT(ParseData("1 1 2 t|a x\n", "r.vw", {}).status().message(),
              HasSubstr("r.vw:1: initial prediction 2 (Vowpal Wabbit"));
  EXPECT_THAT(ParseData("1 1 z t|a x\n", "r.vw", {}).status().message(),
              HasSubstr("r.vw:1: cannot read \"z\" before '|'"));
  EXPECT_THAT(ParseData("1 1 0 a b c|a x\n", "r.vw", {}).status().message(),
              HasSubstr("r.vw:1: 6 words before '|': at most a label"));
}

TEST(DataReaderTest, VowpalWabbitErrorsNameTheLine) {
  EXPECT_THAT(ParseData("1 |a x\n1 0.5 |a y\n", "w.vw", {}).status().message(),
              HasSubstr("w.vw:2: importance weight 0.5"));
  EXPECT_THAT(ParseData("1 |a x\n2:0.5 |a y\n", "w.vw", {}).status().message(),
              HasSubstr("w.vw:2: label \"2:0.5\" is Vowpal Wabbit's class:cost "
                        "form"));
  EXPECT_THAT(ParseData("1 a x\n", "w.vw", {}).status().message(),
              HasSubstr("w.vw:1: no '|'"));
  EXPECT_THAT(ParseData("1 |a x:inf\n", "w.vw", {}).status().message(),
              HasSubstr("w.vw:1: feature x: value inf is not a finite number"));
  EXPECT_THAT(ParseData("1 |:2 x\n", "w.vw", {}).status().message(),
              HasSubstr("a namespace's name is empty"));
  EXPECT_THAT(ParseData("1 |a:q x\n", "w.vw", {}).status().message(),
              HasSubstr("namespace a: scale \"q\" is not a finite number"));
}

// Text from the file in a message is shown in part when long (core/quoted.h):
// a line of 100,000 bytes gives a message of a line, not of 100,000 bytes.
TEST(DataReaderTest, MessagesShowLongTextInPart) {
  const std::string x(100000, 'x');
  const std::string shown = std::string(64, 'x') + "...\" (100000 bytes)";
  struct Case {
    std::string text, name, says;
  };
  for (const Case& c : std::vector<Case>{
           {"1 |a :" + x + "\n", "l.vw",
            "feature \":" + std::string(63, 'x') + "...\" (100001 bytes)"},
           {"1 " + x + " |a y\n", "w.vw",
            "importance weight " + std::string(64, 'x') + "... (100000 bytes)"},
           {"+1 1:" + x + "\n", "s.svm",
            "cannot read \"1:" + std::string(62, 'x') + "...\" (100002 bytes)"},
           {"a,label\n" + x + ",1\n", "c.csv", "column 0 (a) \"" + shown},
           {x + ",label\nzz,1\n", "h.csv",
            "column 0 (" + std::string(64, 'x') + "... (100000 bytes)) \"zz\""},
           {"{\"features\": {\"a\": [\"" + x + "\"]}, \"label\": 1}\n",
            "j.jsonl",
            "feature a: [\"" + std::string(62, 'x') + "... (100004 bytes)"},
           {"{\"features\": {\"" + x + "\": [1]}, \"label\": 1}\n", "k.jsonl",
            "feature " + std::string(64, 'x') + "... (100000 bytes): [1]"},
           {"{\"features\": {\"a\": 1}, \"label\": \"" + x + "\"}\n", "m.jsonl",
            "label \"" + shown},
       }) {
    const std::string message(ParseData(c.text, c.name, {}).status().message());
    EXPECT_THAT(message, HasSubstr(c.says)) << c.name;
    EXPECT_LT(message.size(), 400u) << c.name << ": " << message;
  }
}

TEST(DataReaderTest, JsonLines) {
  absl::StatusOr<Dataset> d = ParseData(
      "{\"label\": 1, \"features\": {\"age\": 34, \"city\": \"paris\", "
      "\"user\": {\"id\": 7, \"vip\": true, \"gone\": false}, \"n\": null}}\n"
      "\n"
      "{\"features\": {\"b\": 0.5, \"a\": 2}, \"label\": \"-1\"}\n",
      "d.jsonl", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  EXPECT_THAT(Named(d->examples[0]),
              ElementsAre("|age=34", "|city:paris", "user|id=7", "user|vip=1"));
  EXPECT_EQ(d->examples[0].label, 1);
  // In the line's order, not sorted.
  EXPECT_THAT(Named(d->examples[1]), ElementsAre("|b=0.5", "|a=2"));
  EXPECT_EQ(d->examples[1].label, -1);
  // A label true or false is +1 or -1.
  d = ParseData(
      "{\"label\": true, \"features\": {}}\n"
      "{\"label\": false, \"features\": {}}\n",
      "b.jsonl", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples.at(0).label, 1);
  EXPECT_EQ(d->examples.at(1).label, -1);
  EXPECT_THAT(ParseData("{\"label\": 1}\n", "e.jsonl", {}).status().message(),
              HasSubstr("e.jsonl:1: no \"features\" object"));
  EXPECT_THAT(ParseData("{\"label\": 2, \"features\": {}}\n", "e.jsonl", {})
                  .status()
                  .message(),
              HasSubstr("e.jsonl:1: label \"2\""));
  EXPECT_THAT(ParseData("[1]\n", "e.jsonl", {}).status().message(),
              HasSubstr("e.jsonl:1: not a JSON object; a line is"));
  // A line that is not JSON says where, in the parser's words.
  EXPECT_THAT(
      ParseData("{\"label\": 1, \"features\": {\"a\": 1,}}\n", "e.jsonl", {})
          .status()
          .message(),
      HasSubstr("e.jsonl:1: not a JSON object (parse error at column 34: "
                "syntax error while parsing object key"));
}

// `text` written to `path` compressed (zlib's gzwrite: the test's own).
void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// Every example's label and values, in order, from `path`; the reader's
// error if there is one.
absl::StatusOr<std::vector<std::pair<int, std::vector<double>>>> ReadAll(
    const std::string& path, const ReadOptions& o,
    std::unique_ptr<DataReader>* keep = nullptr) {
  absl::StatusOr<std::unique_ptr<DataReader>> r = DataReader::Open(path, o);
  if (!r.ok()) return r.status();
  std::vector<std::pair<int, std::vector<double>>> all;
  Example e;
  while (true) {
    absl::StatusOr<bool> more = (*r)->Next(&e);
    if (!more.ok()) return more.status();
    if (!*more) break;
    all.emplace_back(e.label.value_or(0), e.values);
  }
  if (keep != nullptr) *keep = std::move(*r);
  return all;
}

TEST(DataReaderTest, GzipFilesAreReadAsTheFileWithin) {
  testing::ScopedDir dir("gzip");
  // Enough lines to span several of GzipInput's 256 KiB blocks.
  std::string csv = "a,b,label\n";
  for (int i = 0; i < 100000; ++i) {
    absl::StrAppend(&csv, i % 7, ".25,", -i, ",", i % 3 == 0 ? 1 : -1, "\n");
  }
  const std::string plain = dir.path() + "/data.csv";
  std::ofstream(plain) << csv;
  WriteGzip(plain + ".gz", csv);
  auto want = ReadAll(plain, {});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->size(), 100000u);
  std::unique_ptr<DataReader> reader;
  auto got = ReadAll(plain + ".gz", {}, &reader);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, *want);
  // Progress counts the compressed bytes, and ends at the file's size.
  EXPECT_EQ(reader->size(), std::filesystem::file_size(plain + ".gz"));
  EXPECT_EQ(reader->bytes_read(), reader->size());
  // Again after a rewind (train --epochs, fit).
  ASSERT_TRUE(reader->Rewind().ok());
  Example e;
  absl::StatusOr<bool> more = reader->Next(&e);
  ASSERT_TRUE(more.ok() && *more) << more.status();
  EXPECT_EQ(e.values, (*want)[0].second);
  EXPECT_EQ(reader->line(), 2u);
  // And from the middle of the file, the next blocks inflated already (the
  // thread that inflates them stopped and started again): the whole again.
  for (int i = 0; i < 30000; ++i) ASSERT_TRUE(*reader->Next(&e));
  ASSERT_TRUE(reader->Rewind().ok());
  size_t k = 0;
  while (true) {
    more = reader->Next(&e);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ASSERT_LT(k, want->size());
    EXPECT_EQ(e.label.value_or(0), (*want)[k].first);
    EXPECT_EQ(e.values, (*want)[k].second);
    ++k;
  }
  EXPECT_EQ(k, want->size());
  // A reader closed in the middle of the file.
  {
    absl::StatusOr<std::unique_ptr<DataReader>> half =
        DataReader::Open(plain + ".gz", {});
    ASSERT_TRUE(half.ok()) << half.status();
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(*(*half)->Next(&e));
  }

  // By its contents, not its name: a gzip file named "x.svm" is LIBSVM, one
  // named "x.gz" too.
  for (const char* name : {"/x.svm", "/x.gz"}) {
    WriteGzip(dir.path() + name, "+1 1:0.5 3:2\n-1 2:1\n");
    auto svm = ReadAll(dir.path() + name, {});
    ASSERT_TRUE(svm.ok()) << svm.status();
    ASSERT_EQ(svm->size(), 2u);
    EXPECT_EQ((*svm)[1].first, -1);
  }
}

TEST(DataReaderTest, AGzipFileCutShortIsAnErrorAtItsLine) {
  testing::ScopedDir dir("gzip-cut");
  std::string svm;
  for (int i = 0; i < 50000; ++i) {
    absl::StrAppend(&svm, i % 2 ? "+1" : "-1", " 1:", i, " 2:", i * 7 % 13,
                    "\n");
  }
  const std::string whole = dir.path() + "/whole.svm.gz";
  WriteGzip(whole, svm);
  std::string bytes;
  {
    std::ifstream in(whole, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 4000u);
  const std::string cut = dir.path() + "/cut.svm.gz";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  absl::StatusOr<std::unique_ptr<DataReader>> r = DataReader::Open(cut, {});
  ASSERT_TRUE(r.ok()) << r.status();
  Example e;
  absl::StatusOr<bool> more;
  uint64_t examples = 0;
  while ((more = (*r)->Next(&e)).ok() && *more) ++examples;
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(more.status().message(),
              HasSubstr("cut.svm.gz:" + std::to_string(examples + 1) +
                        ": cannot decompress it past byte"));
  EXPECT_THAT(more.status().message(),
              HasSubstr("the file ends inside its compressed data"));
  // The lines before the cut were whole, and read as they were written.
  EXPECT_GT(examples, 1000u);
  EXPECT_LT(examples, 50000u);
  // A file of nothing but gzip's magic bytes.
  const std::string magic = dir.path() + "/magic.svm.gz";
  std::ofstream(magic, std::ios::binary) << "\x1f\x8b";
  auto none = ReadAll(magic, {});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(),
              HasSubstr("magic.svm.gz:1: cannot decompress it past byte"));
}

}  // namespace
}  // namespace perceptron::client
