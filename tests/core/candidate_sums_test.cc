#include "core/candidate_sums.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/kept_rows.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

TEST(CandidateSumsTest, FindsTheCandidatesThatArePowersOfTwoOfOthers) {
  const std::vector<double> v = {0.5, -1.25, 3};
  auto times = [&](double p) {
    std::vector<double> out = v;
    for (double& x : out) x *= p;
    return out;
  };
  // As CandidatesFrom installs them: v, 0.5 v, 0.71 v, 1.41 v, 2 v.
  const ScaledCandidates scaled(
      {v, times(0.5), times(0.71), times(1.41), times(2)});
  EXPECT_EQ(scaled.summed(), (std::vector<uint32_t>{0, 2, 3}));
  double scores[5] = {7, -1, 11, 13, -1};
  scaled.Spread(scores);
  EXPECT_EQ(scores[1], 3.5);
  EXPECT_EQ(scores[4], 14);
  // 0.71 v and 1.41 v are not a power of two apart; nor is anything of a
  // vector that differs in one coordinate.
  std::vector<double> almost = times(2);
  almost[2] += 1e-12;
  EXPECT_EQ(ScaledCandidates({v, almost}).summed(),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(ScaledCandidates({v, times(0)}).summed(),
            (std::vector<uint32_t>{0, 1}));
}

TEST(CandidateSumsTest, HingeSumsAreTheSumsOfTheHingeTerms) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  KeptRows rows;
  for (int t = 0; t < 300; ++t) {
    std::vector<uint32_t> indices;
    std::vector<double> values;
    for (uint32_t i = 0; i < 8; i += 1 + t % 2) {
      indices.push_back(i);
      values.push_back(normal(rng));
    }
    rows.Add(indices, values, t % 3 ? 1 : -1);
  }
  std::vector<double> v(8);
  for (double& x : v) x = normal(rng);
  std::vector<std::vector<double>> vs = {v, v, v, v};
  for (double& x : vs[1]) x *= 0.5;
  for (double& x : vs[2]) x *= 1.41;
  for (double& x : vs[3]) x *= 2;

  const std::vector<double> sums = HingeSums(rows, vs);
  ASSERT_EQ(sums.size(), vs.size());
  for (size_t k = 0; k < vs.size(); ++k) {
    double expected = 0;
    for (size_t t = 0; t < rows.size(); ++t) {
      expected +=
          std::max(0.0, 1 - rows.label(t) * rows.DotUnordered(t, vs[k]));
    }
    EXPECT_NEAR(sums[k], expected, 1e-9 * (1 + expected)) << k;
  }
  EXPECT_EQ(HingeSums(KeptRows(), vs), std::vector<double>(4, 0.0));
}

}  // namespace
}  // namespace perceptron
