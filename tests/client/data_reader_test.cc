#include "client/data_reader.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron::client {
namespace {

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
      HasSubstr("h.csv:2: column 0 \"c\" is not a number"));
  // Text labels without --positive say how to map them.
  EXPECT_THAT(
      std::string(
          ParseData("a,b,label\n1,2,yes\n", "yn.csv", {}).status().message()),
      HasSubstr("yn.csv:2: label \"yes\" is not +1/1 or -1/0"));
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
  EXPECT_EQ(ReadDataFile("/nonexistent/file.csv", {}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace perceptron::client
