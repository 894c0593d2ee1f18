#include "core/example.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(ExampleTest, ValidDenseAndSparseVectorsPass) {
  const std::vector<double> dense = {0, -1.5, 2};
  EXPECT_TRUE(ValidateFeatures(FeatureView::Dense(dense), 3).ok());
  const std::vector<uint32_t> idx = {9, 0, 4};
  const std::vector<double> val = {1, 2, 3};
  EXPECT_TRUE(ValidateFeatures(FeatureView::Sparse(idx, val), 10).ok());
  EXPECT_TRUE(
      ValidateFeatures(FeatureView::Sparse({}, {}), 10).ok());  // all zeros
}

TEST(ExampleTest, EachProblemIsNamed) {
  const std::vector<double> nan = {1, NAN}, two = {1, 2}, big = {1e300, 1e300};
  const std::vector<uint32_t> out = {0, 5}, dup = {1, 1};
  absl::Status s = ValidateFeatures(FeatureView::Dense(nan), 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("position 1 is nan"));
  EXPECT_THAT(
      Message(ValidateFeatures(FeatureView::Dense(two), 3)),
      HasSubstr("dense vector has 2 values; the model's dimension is 3"));
  EXPECT_THAT(
      Message(ValidateFeatures(FeatureView::Sparse(out, two), 5)),
      HasSubstr("index 5 at position 1 is out of range for dimension 5"));
  EXPECT_THAT(Message(ValidateFeatures(FeatureView::Sparse(dup, two), 5)),
              HasSubstr("index 1 repeated at positions 0 and 1"));
  EXPECT_THAT(Message(ValidateFeatures(FeatureView::Sparse(out, nan), 9)),
              HasSubstr("position 1 (index 5) is nan"));
  EXPECT_TRUE(ValidateFeatures(FeatureView::Dense(big), 2)
                  .ok());  // Prepare checks the norm
  EXPECT_THAT(Message(ValidateFeatures(FeatureView::Sparse(dup, {}), 5)),
              HasSubstr("2 indices but 0 values"));
}

TEST(ExampleTest, LongSparseVectorsAreCheckedForDuplicatesBySorting) {
  std::vector<uint32_t> idx(1000);
  std::vector<double> val(1000, 1.0);
  for (uint32_t i = 0; i < 1000; ++i) idx[i] = 999 - i;
  EXPECT_TRUE(ValidateFeatures(FeatureView::Sparse(idx, val), 1000).ok());
  idx[700] = idx[3];
  EXPECT_THAT(Message(ValidateFeatures(FeatureView::Sparse(idx, val), 1000)),
              HasSubstr("index 996 repeated at positions 3 and 700"));
}

// Unsorted vectors of up to 256 indices name the repeat whose second place
// comes first, through the filter (up to 64) and the table alike: checked
// against every pair, on vectors with no repeat, one, or many, over ranges
// from 40 indices (repeats everywhere) to 2^24.
TEST(ExampleTest, UnsortedRepeatsAreFoundAsEveryPairWouldFindThem) {
  std::mt19937 rng(5);
  int repeats = 0, clean = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const uint32_t range =
        std::array<uint32_t, 4>{40, 1000, 1u << 20, 1u << 24}[trial % 4];
    const size_t n = 1 + rng() % std::min<uint32_t>(100, range);
    std::vector<uint32_t> idx(n);
    for (uint32_t& i : idx) i = rng() % range;
    if (trial % 3 == 0 && n > 1) idx[rng() % n] = idx[rng() % n];
    const std::vector<double> val(n, 1.0);
    std::string expected;
    for (size_t j = 1; j < n && expected.empty(); ++j) {
      for (size_t i = 0; i < j; ++i) {
        if (idx[i] == idx[j]) {
          expected = absl::StrCat("index ", idx[i], " repeated at positions ",
                                  i, " and ", j);
          break;
        }
      }
    }
    const absl::Status s =
        ValidateStructure(FeatureView::Sparse(idx, val), range);
    if (expected.empty()) {
      ASSERT_TRUE(s.ok()) << trial << ": " << s;
      ++clean;
    } else {
      ASSERT_THAT(Message(s), HasSubstr(expected)) << trial;
      ++repeats;
    }
  }
  EXPECT_GT(repeats, 5000);
  EXPECT_GT(clean, 5000);
}

TEST(ExampleTest, LabelsMustBePlusOrMinusOne) {
  EXPECT_TRUE(ValidateLabel(1).ok());
  EXPECT_TRUE(ValidateLabel(-1).ok());
  EXPECT_EQ(ValidateLabel(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(ValidateLabel(2)), HasSubstr("label 2 must be -1 or +1"));
}

TEST(ExampleTest, FeaturesCopyOwnsItsData) {
  std::vector<uint32_t> idx = {3};
  std::vector<double> val = {4};
  const Features f = Features::Copy(FeatureView::Sparse(idx, val));
  idx[0] = 0;
  val[0] = 0;
  EXPECT_TRUE(f.sparse);
  EXPECT_EQ(f.indices, std::vector<uint32_t>{3});
  EXPECT_EQ(f.values, std::vector<double>{4});
}

}  // namespace
}  // namespace perceptron
