#include "core/prepare.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/magnitude_bound.h"
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

// The same double, bit for bit (so +0 and -0 differ, and NaN equals itself).
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// DenseDot's order of additions, written out one addition at a time: eight
// partial sums over whole blocks of eight, the tail added to the first in
// turn, then the pairs, the pairs of pairs and the two halves.
double OrderedDotReference(const double* a, const double* b, size_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      const double product = a[i + k] * b[i + k];
      s[k] = s[k] + product;
    }
  }
  for (; i < n; ++i) {
    const double product = a[i] * b[i];
    s[0] = s[0] + product;
  }
  const double s01 = s[0] + s[1], s23 = s[2] + s[3];
  const double s45 = s[4] + s[5], s67 = s[6] + s[7];
  const double low = s01 + s23, high = s45 + s67;
  return low + high;
}

TEST(PrepareTest, DenseDotAddsInItsFixedOrderBitForBit) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (size_t n = 0; n <= 70; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> a(n), b(n);
      // Magnitudes spread widely, so that another order of additions would
      // round differently.
      for (size_t i = 0; i < n; ++i) {
        a[i] = std::ldexp(normal(rng), exponent(rng));
        b[i] = std::ldexp(normal(rng), exponent(rng));
      }
      const double expect = OrderedDotReference(a.data(), b.data(), n);
      EXPECT_TRUE(SameBits(DenseDot(a.data(), b.data(), n), expect)) << n;
      double w_dot_x = -1, x_dot_x = -1;
      DenseDots(a.data(), b.data(), n, &w_dot_x, &x_dot_x);
      EXPECT_TRUE(SameBits(w_dot_x, expect)) << n;
      EXPECT_TRUE(SameBits(x_dot_x, OrderedDotReference(b.data(), b.data(), n)))
          << n;
    }
  }
}

TEST(PrepareTest, DenseDotsSumsAsDenseDotBitForBit) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (size_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 20, 21, 63, 64, 65, 1000}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> w(n), x(n);
      // Magnitudes spread widely, so that a different order of additions
      // would round differently.
      for (size_t i = 0; i < n; ++i) {
        w[i] = std::ldexp(normal(rng), exponent(rng));
        x[i] = std::ldexp(normal(rng), exponent(rng));
      }
      double w_dot_x = -1, x_dot_x = -1;
      DenseDots(w.data(), x.data(), n, &w_dot_x, &x_dot_x);
      EXPECT_TRUE(SameBits(w_dot_x, DenseDot(w.data(), x.data(), n))) << n;
      EXPECT_TRUE(SameBits(x_dot_x, DenseDot(x.data(), x.data(), n))) << n;
    }
  }
}

TEST(PrepareTest, DenseSquaresSumsEachRowAsDenseDotBitForBit) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (size_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 20, 21, 63, 64, 65, 1000}) {
    for (size_t m : {0, 1, 5, 8}) {
      std::vector<double> x(m * n);
      for (double& v : x) v = std::ldexp(normal(rng), exponent(rng));
      std::vector<double> out(m + 1, -1);
      DenseSquares(x.data(), m, n, out.data());
      for (size_t k = 0; k < m; ++k) {
        const double* row = x.data() + k * n;
        EXPECT_TRUE(SameBits(out[k], DenseDot(row, row, n))) << n << " " << k;
      }
      EXPECT_EQ(out[m], -1) << "wrote past the m rows";
    }
  }
}

TEST(PrepareTest, DenseDotsOfSumsEachAsDenseDotBitForBit) {
  std::mt19937_64 rng(8);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (size_t n : {0, 1, 7, 8, 9, 21, 64, 1001}) {
    for (size_t m = 0; m <= 9; ++m) {
      std::vector<std::vector<double>> vs(m, std::vector<double>(n));
      std::vector<double> x(n);
      for (double& v : x) v = std::ldexp(normal(rng), exponent(rng));
      std::vector<const double*> pointers;
      for (auto& v : vs) {
        for (double& e : v) e = std::ldexp(normal(rng), exponent(rng));
        pointers.push_back(v.data());
      }
      std::vector<double> out(m + 1, -7.0);
      DenseDotsOf(pointers.data(), m, x.data(), n, out.data());
      for (size_t k = 0; k < m; ++k) {
        EXPECT_TRUE(SameBits(out[k], DenseDot(vs[k].data(), x.data(), n)))
            << n << " " << m << " " << k;
      }
      EXPECT_EQ(out[m], -7.0);  // nothing written past the m sums
    }
  }
}

TEST(PrepareTest, PreparedWithTheSquaresGivenEqualsPrepared) {
  for (bool bias : {false, true}) {
    for (bool normalize : {false, true}) {
      const Preparer preparer(Config(bias, normalize, 2.5));
      const std::vector<double> v = {0.1, -3e5, 7.25};
      const FeatureView x = FeatureView::Dense(v);
      const Prepared a = *preparer.Prepare(x);
      const Prepared b =
          *preparer.Prepare(x, DenseDot(v.data(), v.data(), v.size()));
      EXPECT_TRUE(SameBits(a.scale, b.scale));
      EXPECT_TRUE(SameBits(a.norm, b.norm));
      const std::vector<double> w = {0.5, 1e-6, -2, 0.25};
      double raw = 0, squares = 0;
      DenseDots(w.data(), v.data(), v.size(), &raw, &squares);
      EXPECT_TRUE(SameBits(DotFrom(raw, w, a), Dot(w, a)));
    }
  }
  // Given a non-finite sum of squares, the value is still named.
  const std::vector<double> bad = {1, std::nan(""), 2};
  EXPECT_THAT(Preparer(Config(false, false))
                  .Prepare(FeatureView::Dense(bad), std::nan(""))
                  .status()
                  .message(),
              testing::HasSubstr("position 1"));
}

TEST(PrepareTest, AddScaledStaysFiniteFindsAnOverflowAtEveryPosition) {
  // Every position, in the eight-wide part of the check and in its tail.
  for (size_t n : {1, 5, 8, 13, 16, 21, 40}) {
    ModelConfig c;  // no bias coordinate, no normalization: x^ = x
    c.dimension = static_cast<uint32_t>(n);
    c.bias = false;
    c.normalize = false;
    const std::vector<double> v(n, 1.0);
    const Prepared x = *Preparer(c).Prepare(FeatureView::Dense(v));
    EXPECT_TRUE(AddScaledStaysFinite(1.0, x, std::vector<double>(n, 1.0)));
    for (size_t i = 0; i < n; ++i) {
      for (double big : {std::numeric_limits<double>::max(),
                         -std::numeric_limits<double>::max()}) {
        std::vector<double> w(n, 1.0);
        w[i] = big;
        // big + big overflows; big - big is 0, and 1 - big is finite.
        EXPECT_FALSE(AddScaledStaysFinite(big, x, w)) << n << " " << i;
        EXPECT_TRUE(AddScaledStaysFinite(-big, x, w)) << n << " " << i;
      }
    }
  }
}

TEST(PrepareTest, MagnitudeBoundStaysAboveEveryWeightItCovers) {
  // Random updates of every size up to near overflow, bias and normalization
  // on and off, dense and sparse: after each update the bound is at least
  // every |w_i|, and an update it covers leaves w finite (the exact check
  // agrees). One non-zero makes a coordinate of x^ as large as its norm.
  std::mt19937_64 rng(20261126);
  auto uniform = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(rng);
  };
  int covered = 0, not_covered = 0;
  for (int stream = 0; stream < 400; ++stream) {
    const bool bias = stream % 2 == 0, normalize = stream % 4 < 2;
    const Preparer preparer(
        Config(bias, normalize, std::pow(10.0, uniform(-3, 3))));
    std::vector<double> w(4, 0.0);
    MagnitudeBound bound;
    const double top = uniform(0, 306);  // this stream's largest values
    for (int step = 0; step < 60; ++step) {
      std::vector<double> v(3, 0.0);
      const int nonzeros = static_cast<int>(rng() % 3) + 1;
      for (int k = 0; k < nonzeros; ++k) {
        v[rng() % 3] = (rng() % 2 ? 1 : -1) * std::pow(10.0, uniform(-5, top));
      }
      const std::vector<uint32_t> index = {0, 1, 2};
      const FeatureView x = stream % 3 == 0 ? FeatureView::Sparse(index, v)
                                            : FeatureView::Dense(v);
      absl::StatusOr<Prepared> p = preparer.Prepare(x);
      if (!p.ok() || p->norm == 0) continue;
      const double a = (rng() % 2 ? 1 : -1) * std::pow(10.0, uniform(-3, 3));
      const bool exact = AddScaledStaysFinite(a, *p, w);
      if (bound.Covers(a, *p)) {
        ++covered;
        EXPECT_TRUE(exact) << stream << " " << step;
      } else {
        ++not_covered;
      }
      if (!exact) continue;  // refused: nothing changes
      AddScaled(a, *p, absl::MakeSpan(w));
      bound.Added(a, *p);
      for (double wi : w) {
        ASSERT_TRUE(std::isfinite(wi)) << stream << " " << step;
        ASSERT_GE(bound.value(), std::abs(wi)) << stream << " " << step;
      }
    }
    // Set and Raise give the largest magnitude itself.
    MagnitudeBound set;
    set.Set(w);
    double largest = 0;
    for (double wi : w) largest = std::max(largest, std::abs(wi));
    EXPECT_EQ(set.value(), largest);
    set.Raise(std::vector<double>{-2 * largest - 1});
    EXPECT_EQ(set.value(), 2 * largest + 1);
  }
  // Both answers were exercised.
  EXPECT_GT(covered, 1000);
  EXPECT_GT(not_covered, 100);
}

// ScaledCopy writes scale * x[i] bit for bit, and says whether one of them is
// 0 (a zero of x, or a product below the smallest double), at every length
// and position (its vector loop and the tail after it).
TEST(PrepareTest, ScaledCopyIsTheProductsAndFindsAZero) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> normal;
  for (size_t n = 0; n < 40; ++n) {
    std::vector<double> x(n);
    for (double& v : x) v = normal(rng);
    const double scale = 0.37 + normal(rng) * 1e-3;
    std::vector<double> out(n + 1, -7.0);
    EXPECT_FALSE(ScaledCopy(x.data(), n, scale, out.data())) << n;
    for (size_t i = 0; i < n; ++i) {
      const double want = scale * x[i];
      EXPECT_EQ(std::memcmp(&out[i], &want, sizeof(double)), 0)
          << n << " " << i;
    }
    EXPECT_EQ(out[n], -7.0) << "nothing written past n";
    for (size_t at = 0; at < n; ++at) {
      std::vector<double> y = x;
      y[at] = 0;
      EXPECT_TRUE(ScaledCopy(y.data(), n, scale, out.data())) << n << " " << at;
      y[at] = 1e-200;
      EXPECT_TRUE(ScaledCopy(y.data(), n, 1e-200, out.data())) << "underflow";
    }
  }
}

}  // namespace
}  // namespace perceptron
