#include "core/prepare.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

ModelConfig Config(bool bias, bool normalize, double c = 1) {
  ModelConfig config;
  config.dimension = 3;
  config.bias = bias;
  config.bias_constant = c;
  config.normalize = normalize;
  return config;
}

TEST(PrepareTest, BiasThenNormalization) {
  const std::vector<double> x = {1, 2, 2};
  const Prepared p =
      *Preparer(Config(true, true, 4)).Prepare(FeatureView::Dense(x));
  // [1, 2, 2, 4] has norm 5.
  EXPECT_EQ(p.scale, 0.2);
  EXPECT_EQ(p.norm, 1.0);
  EXPECT_DOUBLE_EQ(p.dense_at(0), 0.2);
  EXPECT_DOUBLE_EQ(p.dense_at(3), 0.8);
  std::vector<double> w = {1, 1, 1, 1};
  EXPECT_DOUBLE_EQ(Dot(w, p), 9 * 0.2);
}

TEST(PrepareTest, WithoutNormalizationTheRadiusIsTheNorm) {
  const std::vector<double> x = {3, 4, 0};
  const Prepared p =
      *Preparer(Config(false, false)).Prepare(FeatureView::Dense(x));
  EXPECT_EQ(p.scale, 1.0);
  EXPECT_EQ(p.norm, 5.0);
  const Prepared q =
      *Preparer(Config(true, false, 12)).Prepare(FeatureView::Dense(x));
  EXPECT_EQ(q.norm, 13.0);
}

TEST(PrepareTest, ZeroVectorCannotBeNormalizedButBiasRescuesIt) {
  const std::vector<double> zero = {0, 0, 0};
  absl::StatusOr<Prepared> p =
      Preparer(Config(false, true)).Prepare(FeatureView::Dense(zero));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), ::testing::HasSubstr("zero"));
  EXPECT_TRUE(
      Preparer(Config(true, true)).Prepare(FeatureView::Dense(zero)).ok());
  EXPECT_TRUE(
      Preparer(Config(false, false)).Prepare(FeatureView::Dense(zero)).ok());
}

TEST(PrepareTest,
     SquaresThatOverflowGiveTheNormScaledAndANormThatOverflowsIsRejected) {
  const std::vector<double> big = {1e200, 1e200, 1};
  absl::StatusOr<Prepared> p =
      Preparer(Config(false, false)).Prepare(FeatureView::Dense(big));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->norm, std::sqrt(2.0) * 1e200);
  absl::StatusOr<Prepared> unit =
      Preparer(Config(false, true)).Prepare(FeatureView::Dense(big));
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_EQ(unit->norm, 1.0);
  EXPECT_DOUBLE_EQ(unit->scale * 1e200, 1 / std::sqrt(2.0));
  const std::vector<double> too_big = {1.5e308, 1.5e308, 1};
  absl::StatusOr<Prepared> q =
      Preparer(Config(false, false)).Prepare(FeatureView::Dense(too_big));
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(q.status().message()),
              ::testing::HasSubstr("the norm overflows a double"));
}

TEST(PrepareTest, SparseAndDenseAgree) {
  const std::vector<double> dense = {0, 5, -1};
  const std::vector<uint32_t> idx = {2, 1};
  const std::vector<double> val = {-1, 5};
  const Preparer preparer(Config(true, true));
  const Prepared a = *preparer.Prepare(FeatureView::Dense(dense));
  const Prepared b = *preparer.Prepare(FeatureView::Sparse(idx, val));
  EXPECT_EQ(a.scale, b.scale);
  std::vector<double> w = {0.5, -2, 3, 7};
  EXPECT_DOUBLE_EQ(Dot(w, a), Dot(w, b));
  std::vector<double> wa(4, 0.0), wb(4, 0.0);
  AddScaled(-1.5, a, absl::MakeSpan(wa));
  AddScaled(-1.5, b, absl::MakeSpan(wb));
  EXPECT_EQ(wa, wb);
  EXPECT_DOUBLE_EQ(wa[3], -1.5 * a.scale);
}

TEST(PrepareTest, DenseDotHandlesEveryRemainder) {
  for (size_t n = 0; n < 11; ++n) {
    std::vector<double> a(n), b(n);
    double expect = 0;
    for (size_t i = 0; i < n; ++i)
      a[i] = i + 1, b[i] = 2, expect += 2 * (i + 1);
    EXPECT_EQ(DenseDot(a.data(), b.data(), n), expect) << n;
  }
}

}  // namespace
}  // namespace perceptron
