#include "core/candidate_sums.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "core/kept_rows.h"
#include "core/prepare.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

TEST(CandidateSumsTest, FindsTheCandidatesThatAreMultiplesOfOthers) {
  // A first coordinate whose 1.41 multiple, divided by it again, is not 1.41:
  // the scale is found in kCandidateScales, not by the ratio.
  double first = 0.1;
  while ((1.4142135623730951 * first) / first == 1.4142135623730951) {
    first += 0.1;
  }
  const std::vector<double> v = {first, -1.25, 3, 0, 1e-3};
  auto times = [&](double p) {
    std::vector<double> out = v;
    for (double& x : out) x = p * x;
    return out;
  };
  // As CandidatesFrom installs them: v and kCandidateScales times it.
  std::vector<std::vector<double>> vs;
  for (double p : kCandidateScales) vs.push_back(times(p));
  ASSERT_EQ(vs.size(), 5u);
  EXPECT_EQ(vs[0], v);
  const ScaledCandidates scaled(vs);
  EXPECT_EQ(scaled.summed(), (std::vector<uint32_t>{0}));
  double scores[5] = {7.3, -1, -1, -1, -1};
  scaled.Spread(scores);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(scores[k], kCandidateScales[k] * 7.3) << k;
  }
  // Any other multiple, found by the ratio, and of a later summed one.
  std::vector<double> w = {1, 2, 3, 4, 5};
  std::vector<double> three_w = {3, 6, 9, 12, 15};
  const ScaledCandidates mixed({v, w, times(3), three_w});
  EXPECT_EQ(mixed.summed(), (std::vector<uint32_t>{0, 1}));
  double s2[4] = {2, 5, -1, -1};
  mixed.Spread(s2);
  EXPECT_EQ(s2[2], 6);
  EXPECT_EQ(s2[3], 15);
  // Not multiples: a vector that differs in one coordinate, 0 v, -v.
  std::vector<double> almost = times(2);
  almost[2] += 1e-12;
  EXPECT_EQ(ScaledCandidates({v, almost}).summed(),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(ScaledCandidates({v, times(0)}).summed(),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(ScaledCandidates({v, times(-1)}).summed(),
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

  // At places: each listed place counts as often as it is listed, in any
  // order; a place past the rows counts nothing.
  std::vector<uint32_t> places;
  for (int j = 0; j < 2000; ++j) {
    places.push_back(static_cast<uint32_t>(rng() % (rows.size() + 3)));
  }
  const std::vector<double> at = HingeSumsAt(rows, places, vs);
  ASSERT_EQ(at.size(), vs.size());
  for (size_t k = 0; k < vs.size(); ++k) {
    double expected = 0;
    for (uint32_t t : places) {
      if (t >= rows.size()) continue;
      expected +=
          std::max(0.0, 1 - rows.label(t) * rows.DotUnordered(t, vs[k]));
    }
    EXPECT_GT(expected, 0);
    EXPECT_NEAR(at[k], expected, 1e-9 * (1 + expected)) << k;
  }
  EXPECT_EQ(HingeSumsAt(rows, {}, vs), std::vector<double>(4, 0.0));
}

// The summed candidates' values kept by coordinate (the coordinates dense
// enough) give the same scores as the lookups of positions into each
// candidate, and as sums written here; a sparse support keeps none; asked for
// other candidates than those it keeps, a support looks their values up.
TEST(CandidateSumsTest, PackedValuesScoreAsThePositionsDo) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> normal;
  std::vector<uint32_t> coordinates;
  for (uint32_t p = 0; p < 40000; ++p) {
    coordinates.push_back(static_cast<uint32_t>(rng() % (1u << 15)));
  }
  std::sort(coordinates.begin(), coordinates.end());
  coordinates.erase(std::unique(coordinates.begin(), coordinates.end()),
                    coordinates.end());
  std::shuffle(coordinates.begin(), coordinates.end(), rng);
  std::vector<double> v(coordinates.size()), w(coordinates.size()),
      z(coordinates.size());
  for (double& x : v) x = normal(rng);
  for (double& x : w) x = normal(rng);
  for (double& x : z) x = normal(rng);
  auto times = [](std::vector<double> x, double p) {
    for (double& e : x) e *= p;
    return x;
  };
  // CandidatesFrom's five, a hard-margin one and one more: three summed.
  const std::vector<std::vector<double>> vs = {v,
                                               times(v, 0.5),
                                               times(v, 0.7071067811865476),
                                               times(v, 1.4142135623730951),
                                               times(v, 2),
                                               w,
                                               z};
  const ScaledCandidates scaled(vs);
  ASSERT_EQ(scaled.summed().size(), 3u);
  const auto plain = CandidateSupport::Of(coordinates);
  const auto packed = CandidateSupport::Of(coordinates, &vs, 1u << 15);
  const auto wide = CandidateSupport::Of(coordinates, &vs, 1u << 24);
  EXPECT_GT(packed->bytes(), plain->bytes());
  EXPECT_EQ(wide->bytes(), plain->bytes());
  // Made with the candidates, a support knows their multiples.
  EXPECT_EQ(plain->scaled(), nullptr);
  ASSERT_NE(packed->scaled(), nullptr);
  ASSERT_NE(wide->scaled(), nullptr);
  EXPECT_EQ(packed->scaled()->summed(), scaled.summed());
  EXPECT_EQ(wide->scaled()->summed(), scaled.summed());
  // Values kept by coordinate, the table of positions is made only when asked
  // for (the candidates' scores read none).
  const size_t packed_bytes = packed->bytes();
  for (size_t p = 0; p < coordinates.size(); ++p) {
    ASSERT_EQ(plain->position(coordinates[p]), static_cast<int64_t>(p));
    ASSERT_EQ(wide->position(coordinates[p]), static_cast<int64_t>(p));
    ASSERT_EQ(packed->position(coordinates[p]), static_cast<int64_t>(p));
  }
  EXPECT_GT(packed->bytes(), packed_bytes);
  std::unordered_map<uint32_t, size_t> where;
  for (size_t p = 0; p < coordinates.size(); ++p) where[coordinates[p]] = p;
  // Two of the three summed: not those kept by coordinate.
  const std::vector<uint32_t> some = {scaled.summed()[0], scaled.summed()[2]};
  for (int t = 0; t < 200; ++t) {
    std::vector<uint32_t> indices;
    std::vector<double> values;
    for (int j = 0; j < 40; ++j) {
      // Coordinates in use and others (whose candidates' values are 0).
      indices.push_back(j % 3 == 0 ? static_cast<uint32_t>(rng() % (1u << 15))
                                   : coordinates[rng() % coordinates.size()]);
      values.push_back(normal(rng));
    }
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    values.resize(indices.size());
    Prepared x;
    x.x = FeatureView::Sparse(indices, values);
    x.dimension = (1u << 15) - 1;  // the bias coordinate is the last
    x.has_bias = t % 2 == 0;
    x.bias_value = 1;
    x.scale = 0.25;
    std::vector<double> a(vs.size()), b(vs.size()), c(vs.size());
    plain->Scores(vs, scaled.summed(), x, a.data());
    packed->Scores(vs, scaled.summed(), x, b.data());
    wide->Scores(vs, scaled.summed(), x, c.data());
    for (uint32_t k : scaled.summed()) {
      EXPECT_EQ(std::bit_cast<uint64_t>(a[k]), std::bit_cast<uint64_t>(b[k]))
          << t << " " << k;
      EXPECT_EQ(std::bit_cast<uint64_t>(a[k]), std::bit_cast<uint64_t>(c[k]))
          << t << " " << k;
    }
    EXPECT_NE(a[0], 0.0);
    // Computed here: each non-zero in order, the bias last, then the scale.
    for (uint32_t k : scaled.summed()) {
      double r = 0;
      for (size_t j = 0; j < indices.size(); ++j) {
        const auto it = where.find(indices[j]);
        if (it != where.end()) r += vs[k][it->second] * values[j];
      }
      if (x.has_bias) {
        const auto it = where.find(x.dimension);
        if (it != where.end()) r += vs[k][it->second] * x.bias_value;
      }
      EXPECT_EQ(std::bit_cast<uint64_t>(r * x.scale),
                std::bit_cast<uint64_t>(a[k]));
    }
    std::vector<double> d(vs.size()), e(vs.size());
    packed->Scores(vs, some, x, d.data());
    wide->Scores(vs, some, x, e.data());
    for (uint32_t k : some) {
      EXPECT_EQ(std::bit_cast<uint64_t>(a[k]), std::bit_cast<uint64_t>(d[k]));
      EXPECT_EQ(std::bit_cast<uint64_t>(a[k]), std::bit_cast<uint64_t>(e[k]));
    }
  }
}

TEST(CandidateSumsTest, TheFilterHoldsEveryCoordinateAndTurnsMostOthersAway) {
  std::mt19937_64 rng(23);
  // With the dimension unknown or large, a hashed filter; with 2^16 (at most
  // 16 bits a coordinate), one bit a coordinate of the model.
  for (const uint64_t dimension :
       {uint64_t{0}, uint64_t{1} << 16, uint64_t{1} << 20, uint64_t{1} << 32}) {
    const uint32_t range =
        dimension == (uint64_t{1} << 16) ? 1u << 16 : 1u << 20;
    std::vector<uint32_t> coordinates;
    std::vector<bool> in(1u << 20, false);
    while (coordinates.size() < 20000) {
      const uint32_t i = static_cast<uint32_t>(rng() % range);
      if (!in[i]) coordinates.push_back(i);
      in[i] = true;
    }
    const auto s = CandidateSupport::Of(coordinates, nullptr, dimension);
    for (uint32_t i : coordinates) ASSERT_TRUE(s->MayHold(i)) << i;
    size_t passed = 0, out = 0;
    for (uint32_t i = 0; i < (1u << 20); ++i) {
      if (in[i]) continue;
      ++out;
      passed += s->MayHold(i);
    }
    if (range == (1u << 16)) {
      EXPECT_EQ(passed, 0u);
    } else {
      EXPECT_LT(static_cast<double>(passed), out / 8.0) << dimension;
      EXPECT_GT(passed, 0u) << dimension;
    }
  }
  // A coordinate past the dimension given is still held (a hashed filter).
  const auto past = CandidateSupport::Of({3, 70000}, nullptr, 16);
  EXPECT_TRUE(past->MayHold(3));
  EXPECT_TRUE(past->MayHold(70000));
}
}  // namespace
}  // namespace perceptron
