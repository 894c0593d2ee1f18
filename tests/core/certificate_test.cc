// The certificate (docs/design.md section 2.7): lower <= B* <= upper, upper is
// the bound of the comparator it names, and the classic rule's updates never
// exceed it.
#include "core/certificate.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

Prepared Prep(const Preparer& preparer, const std::vector<double>& x) {
  return *preparer.Prepare(FeatureView::Dense(x));
}

ModelConfig Plain(uint32_t d) {
  ModelConfig c;
  c.dimension = d;
  c.bias = false;
  c.normalize = false;
  return c;
}

TEST(CertificateTest, OneExampleHasTheClosedForm) {
  // x^ = (1), y = +1, R = 1: B* = min_v v^2 + 2 max(0, 1 - v) = 1 at v = 1.
  const ModelConfig config = Plain(1);
  const Preparer preparer(config);
  const std::vector<double> x = {1.0};
  CertificateSolver solver(1);
  solver.Add(Prep(preparer, x), +1);
  const Certificate c = solver.Solve(1.0, {});
  EXPECT_TRUE(c.converged);
  EXPECT_NEAR(c.upper, 1.0, 1e-4);
  EXPECT_LE(c.lower, 1.0 + 1e-12);
  EXPECT_LE(c.lower, c.upper);
  EXPECT_NEAR(c.gamma, 1.0, 1e-3);
  EXPECT_EQ(c.u, std::vector<double>{1.0});
}

TEST(CertificateTest, AContradictionCostsTwoPerExample) {
  // The same x^ labeled both ways: every comparator pays, B* = 2n = 4.
  const ModelConfig config = Plain(2);
  const Preparer preparer(config);
  const std::vector<double> x = {0.6, 0.8};
  CertificateSolver solver(2);
  solver.Add(Prep(preparer, x), +1);
  solver.Add(Prep(preparer, x), -1);
  const Certificate c = solver.Solve(1.0, {});
  EXPECT_LE(c.lower, 4.0 + 1e-12);
  EXPECT_GE(c.upper, 4.0);
  EXPECT_NEAR(c.upper, 4.0, 1e-4);
  EXPECT_NEAR(c.lower, 4.0, 1e-4);
}

TEST(CertificateTest, NoExampleNoBound) {
  CertificateSolver solver(3);
  const Certificate c = solver.Solve(1.0, {});
  EXPECT_EQ(c.upper, 0);
  EXPECT_EQ(c.lower, 0);
  EXPECT_EQ(c.examples, 0u);
}

// Over random streams, separable and not, normalized and not, with and
// without bias: at checkpoints along the stream, lower <= upper, the classic
// rule's updates so far <= upper, and upper equals the bound a model given
// the certificate's (u, gamma) as its comparator reports over the same prefix.
TEST(CertificateTest, PropertyOverRandomStreams) {
  int streams = 0, converged = 0, checks = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    testing::StreamSpec spec;
    spec.seed = seed;
    spec.dimension = 2 + static_cast<uint32_t>(seed * 7 % 39);
    spec.length = 40 + seed * 13 % 160;
    spec.bias = seed % 2 == 0;
    spec.normalize = seed % 3 != 0;
    spec.margin = seed % 4 == 0 ? 0.0 : 0.02 * (seed % 5);
    spec.noise = seed % 5 == 0 ? 0.0 : 0.01 * (seed % 7);
    spec.norm_spread = spec.normalize ? 1.0 : 1.0 + (seed % 11);
    const testing::Stream s = testing::MakeStream(spec);
    const ModelConfig config = testing::StreamConfig(spec);
    auto model = *Model::Create(config);
    const Preparer preparer(config);
    CertificateSolver solver(config.weight_dimension());
    const size_t checkpoints[] = {s.x.size() / 4, s.x.size() / 2, s.x.size()};
    size_t next = 0;
    ++streams;
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      solver.Add(Prep(preparer, s.x[t]), s.y[t]);
      if (t + 1 != checkpoints[next]) continue;
      ++next;
      const Stats stats = model->stats();
      const Certificate c = solver.Solve(stats.bound.radius, {});
      ++checks;
      ASSERT_EQ(c.examples, t + 1);
      EXPECT_LE(c.lower, c.upper * (1 + 1e-12)) << "seed " << seed;
      EXPECT_LE(static_cast<double>(stats.counters.updates),
                c.upper * (1 + 1e-9))
          << "seed " << seed << " at " << t + 1;
      if (next == 3) converged += c.converged;
      // The same figure from the bound code, with (u, gamma) as comparator.
      ModelConfig with = config;
      with.comparator = c.u;
      with.gamma = c.gamma;
      auto check = *Model::Create(with);
      for (size_t k = 0; k <= t; ++k) {
        ASSERT_TRUE(check->Learn(FeatureView::Dense(s.x[k]), s.y[k]).ok());
      }
      const BoundReport b = check->stats().bound;
      ASSERT_TRUE(b.bound_available);
      EXPECT_NEAR(b.bound, c.upper, 1e-9 * c.upper) << "seed " << seed;
      if (next == 3) break;
    }
  }
  EXPECT_EQ(streams, 1000);
  EXPECT_EQ(checks, 3000);
  // Every stream reached the tolerance within the default passes.
  EXPECT_EQ(converged, streams);
}

// The hard margin: on streams separable by a known unit u with margin m, a
// separator is found, lower <= gamma* <= upper brackets m from the right side
// (gamma* >= m), the classic rule's updates stay within (R/lower)^2
// (Novikoff's bound for the u found), and B* <= (R/gamma*)^2.
TEST(CertificateTest, HardMarginOnSeparableStreams) {
  int converged = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    testing::StreamSpec spec;
    spec.seed = seed;
    spec.dimension = 2 + static_cast<uint32_t>(seed % 30);
    spec.length = 50 + seed % 150;
    spec.bias = seed % 2 == 0;
    spec.normalize = seed % 3 != 0;
    spec.margin = 0.02 + 0.01 * (seed % 5);
    spec.norm_spread = spec.normalize ? 1.0 : 3.0;
    const testing::Stream s = testing::MakeStream(spec);
    const ModelConfig config = testing::StreamConfig(spec);
    auto model = *Model::Create(config);
    const Preparer preparer(config);
    CertificateSolver solver(config.weight_dimension());
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      solver.Add(Prep(preparer, s.x[t]), s.y[t]);
    }
    CertificateOptions options;
    options.max_passes = 20000;
    const HardMargin h = solver.SolveHardMargin(options);
    ASSERT_TRUE(h.separable) << "seed " << seed;
    converged += h.converged;
    EXPECT_GT(h.lower, 0);
    EXPECT_GE(h.upper * (1 + 1e-9), s.min_margin) << "seed " << seed;
    if (h.converged) {
      EXPECT_GE(h.lower, s.min_margin * (1 - 2 * options.tolerance))
          << "seed " << seed;
    }
    const double r = model->stats().bound.radius;
    EXPECT_LE(static_cast<double>(model->counters().updates),
              (r / h.lower) * (r / h.lower) * (1 + 1e-9))
        << "seed " << seed;
    const Certificate c = solver.Solve(r, {});
    EXPECT_LE(c.lower, (r / h.lower) * (r / h.lower) * (1 + 1e-9))
        << "seed " << seed;
  }
  // Every bracket above is checked whether or not the gap closed; how often
  // it closed within the passes is a figure, not a property.
  std::cout << "[ certificate ] hard margin: " << converged
            << " of 300 separable streams within 1e-4 in 20,000 passes\n";
}

TEST(CertificateTest, AContradictionIsNotSeparable) {
  const ModelConfig config = Plain(2);
  const Preparer preparer(config);
  const std::vector<double> x = {0.6, 0.8};
  CertificateSolver solver(2);
  solver.Add(Prep(preparer, x), +1);
  solver.Add(Prep(preparer, x), -1);
  CertificateOptions options;
  options.max_passes = 100;
  EXPECT_FALSE(solver.SolveHardMargin(options).separable);
}

// TD*_gamma: over random streams and margins, lower <= upper, upper is
// TD_gamma of the u it names (||u|| <= 1), lower is at most TD_gamma of the
// stream's own separator, and the certificate's B* is at most the bound of
// (u, gamma).
TEST(CertificateTest, LeastDistanceOverRandomStreams) {
  int converged = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    testing::StreamSpec spec;
    spec.seed = seed;
    spec.dimension = 2 + static_cast<uint32_t>(seed % 25);
    spec.length = 40 + seed % 120;
    spec.bias = seed % 2 == 0;
    spec.normalize = seed % 3 != 0;
    spec.margin = 0.01 * (seed % 4);
    spec.noise = 0.02 * (seed % 5);
    spec.norm_spread = spec.normalize ? 1.0 : 2.0;
    const testing::Stream s = testing::MakeStream(spec);
    const ModelConfig config = testing::StreamConfig(spec);
    const Preparer preparer(config);
    CertificateSolver solver(config.weight_dimension());
    double radius = 0;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const Prepared p = Prep(preparer, s.x[t]);
      radius = std::max(radius, p.norm);
      solver.Add(p, s.y[t]);
    }
    const double gamma = 0.02 + 0.03 * (seed % 4);
    const LeastDistance d = solver.SolveLeastDistance(gamma, {});
    converged += d.converged;
    EXPECT_LE(d.lower, d.upper * (1 + 1e-12) + 1e-12) << "seed " << seed;
    double norm2 = 0;
    for (double v : d.u) norm2 += v * v;
    EXPECT_LE(norm2, 1 + 1e-12) << "seed " << seed;
    double td = 0, td_separator = 0;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const Prepared p = Prep(preparer, s.x[t]);
      td += std::max(0.0, gamma - s.y[t] * Dot(d.u, p));
      td_separator += std::max(0.0, gamma - s.y[t] * Dot(s.separator, p));
    }
    EXPECT_NEAR(d.upper, td, 1e-9 * std::max(1.0, td)) << "seed " << seed;
    EXPECT_LE(d.lower, td_separator * (1 + 1e-9) + 1e-12) << "seed " << seed;
    const Certificate c = solver.Solve(radius, {});
    EXPECT_LE(c.lower,
              ((radius / gamma) * (radius / gamma) + 2 * d.upper / gamma) *
                  (1 + 1e-9))
        << "seed " << seed;
  }
  std::cout << "[ certificate ] TD*_gamma: " << converged
            << " of 40 streams within 1e-4\n";
}

// Warm starts: solving again after more examples gives the same certificate
// as a cold solve of the whole set, within the tolerance.
TEST(CertificateTest, WarmStartsAgreeWithColdSolves) {
  testing::StreamSpec spec;
  spec.dimension = 20;
  spec.length = 2000;
  spec.noise = 0.05;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  const Preparer preparer(config);
  CertificateSolver warm(config.weight_dimension());
  CertificateSolver cold(config.weight_dimension());
  for (size_t t = 0; t < s.x.size(); ++t) {
    warm.Add(Prep(preparer, s.x[t]), s.y[t]);
    cold.Add(Prep(preparer, s.x[t]), s.y[t]);
    if (t == 999) warm.Solve(1.0, {});
  }
  const Certificate w = warm.Solve(1.0, {});
  const Certificate c = cold.Solve(1.0, {});
  EXPECT_TRUE(w.converged);
  EXPECT_TRUE(c.converged);
  // Both bracket B*, so each one's upper is above the other's lower.
  EXPECT_LE(w.lower, c.upper * (1 + 1e-12));
  EXPECT_LE(c.lower, w.upper * (1 + 1e-12));
  EXPECT_NEAR(w.upper, c.upper, 2e-4 * c.upper);
  std::cout << "[ certificate ] 2000 examples, d=20, 5% noise: U=" << c.upper
            << " L=" << c.lower << " gamma=" << c.gamma << "; cold " << c.passes
            << " passes, warm from 1000 " << w.passes << " passes\n";
}

// Rows kept in blocks: however they were added, appended, moved or copied, the
// same rows read back, the same dot products come out, and a taken block is
// not copied.
// A row standing for c equal examples is solved as c copies of it: the same
// optimum (its dual variable in [0, c C]), whatever the counts, and solved
// warm from a solution before its count grew as cold.
TEST(CertificateTest, ARowsCountSolvesAsItsCopies) {
  std::mt19937_64 random(21);
  std::normal_distribution<double> normal;
  const Preparer preparer(Plain(4));
  for (int trial = 0; trial < 20; ++trial) {
    CertificateSolver counted(4), copies(4);
    std::vector<uint32_t> repeats;
    double radius = 0;
    for (int t = 0; t < 30; ++t) {
      std::vector<double> x(4);
      for (double& v : x) v = normal(random);
      const int label = random() % 3 == 0 ? -1 : 1;
      const Prepared p = Prep(preparer, x);
      radius = std::max(radius, p.norm);
      counted.Add(p, label);
      const int times = 1 + static_cast<int>(random() % 5);
      for (int k = 0; k < times; ++k) copies.Add(p, label);
      for (int k = 1; k < times; ++k) repeats.push_back(t);
    }
    const Certificate before = counted.Solve(radius, {});
    ASSERT_TRUE(before.converged);
    counted.Add(KeptRows(), repeats);
    EXPECT_EQ(counted.rows().examples(), copies.size());
    const Certificate a = counted.Solve(radius, {});
    const Certificate b = copies.Solve(radius, {});
    ASSERT_TRUE(a.converged && b.converged);
    EXPECT_LE(a.lower, b.upper * (1 + 1e-12));
    EXPECT_LE(b.lower, a.upper * (1 + 1e-12));
    EXPECT_NEAR(a.upper, b.upper, 2e-4 * b.upper);
    // Its TD is over every example, copies counted.
    const LeastDistance d = counted.SolveLeastDistance(a.gamma, {});
    const LeastDistance e = copies.SolveLeastDistance(a.gamma, {});
    EXPECT_NEAR(d.upper, e.upper, 1e-3 * e.upper + 1e-9);
  }
}

// Every x^ zero (no bias, no normalization): every comparator's TD_gamma is
// gamma for each example, a row of count c being c of them, so every bound
// is twice the examples, not the rows.
TEST(CertificateTest, ZeroRowsBoundTwiceTheirExamples) {
  const Preparer preparer(Plain(3));
  CertificateSolver solver(3);
  solver.Add(Prep(preparer, {0, 0, 0}), 1);
  solver.Add(Prep(preparer, {0, 0, 0}), -1);
  const std::vector<uint32_t> repeats = {0, 0, 1};  // 3 and 2 examples
  solver.Add(KeptRows(), repeats);
  const Certificate c = solver.Solve(0, {});
  EXPECT_TRUE(c.converged);
  EXPECT_EQ(c.upper, 10);
  EXPECT_EQ(c.lower, 10);
  EXPECT_EQ(c.td, 5);
}

// A wide solver finds its coordinates' positions in a table, and once they
// are a sixth of the model's coordinates in an array: the solver of a model
// just wide enough to switch solves as one so wide it never does, bit for bit.
TEST(CertificateTest, AWideSolversPositionsAreTheSameFromTableOrArray) {
  constexpr uint32_t kSwitching = (uint32_t{1} << 16) + 8;
  constexpr uint32_t kNever = uint32_t{1} << 24;
  ASSERT_TRUE(IsWide(kSwitching));
  std::mt19937_64 rng(31);
  std::normal_distribution<double> normal;
  CertificateSolver switching(kSwitching), never(kNever);
  double radius = 0;
  // Three handovers of 400 rows of 32 coordinates each: about 12,800, then
  // 25,600 coordinates in use, past a sixth of 2^16 before the last two.
  for (int handover = 0; handover < 3; ++handover) {
    KeptRows rows;
    for (int t = 0; t < 400; ++t) {
      std::vector<uint32_t> indices;
      while (indices.size() < 32) {
        indices.push_back(static_cast<uint32_t>(rng() % kSwitching));
        std::sort(indices.begin(), indices.end());
        indices.erase(std::unique(indices.begin(), indices.end()),
                      indices.end());
      }
      std::vector<double> values;
      double square = 0;
      for (size_t j = 0; j < indices.size(); ++j) {
        values.push_back(normal(rng));
        square += values.back() * values.back();
      }
      radius = std::max(radius, std::sqrt(square));
      rows.Add(indices, values, rng() % 2 == 0 ? 1 : -1);
    }
    switching.Add(rows);
    never.Add(std::move(rows));
  }
  EXPECT_EQ(switching.coordinates(), never.coordinates());
  EXPECT_GT(switching.coordinates().size(), kSwitching / 6);
  const Certificate a = switching.Solve(radius, {});
  const Certificate b = never.Solve(radius, {});
  ASSERT_TRUE(a.converged);
  EXPECT_EQ(a.upper, b.upper);
  EXPECT_EQ(a.lower, b.lower);
  EXPECT_EQ(a.u, b.u);
  EXPECT_TRUE(switching.OriginalRows() == never.OriginalRows());
  // The array takes no more than the table would (24 bytes a coordinate in
  // use, as the tracker counts them), and the solver's bytes say so.
  EXPECT_LE(uint64_t{kSwitching} * 4,
            uint64_t{24} * switching.coordinates().size());
  EXPECT_GE(switching.bytes(), uint64_t{kSwitching} * 4);
}

TEST(KeptRowsTest, BlocksHoldTheSameRowsHoweverTheyWereAdded) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  auto rows_of = [&](size_t n, uint32_t d) {
    KeptRows r;
    for (size_t t = 0; t < n; ++t) {
      std::vector<uint32_t> index;
      std::vector<double> value;
      for (uint32_t i = 0; i < d; ++i) {
        if (rng() % 3 == 0) continue;  // some coordinates absent
        index.push_back(i);
        value.push_back(rng() % 7 == 0 ? 0.0 : normal(rng));  // zeros dropped
      }
      r.Add(index, value, t % 2 == 0 ? 1 : -1);
    }
    return r;
  };
  // Large rows (a block each, past the largest block), many small ones, none.
  for (auto [n, d] :
       {std::pair<size_t, uint32_t>{3, 400000}, {20000, 30}, {0, 5}, {1, 1}}) {
    const KeptRows first = rows_of(n, d), second = rows_of(n / 2 + 1, d);
    KeptRows copied = first;
    copied.Append(second);  // copies
    KeptRows moved = first;
    KeptRows taken = second;
    const double* block = taken.size() > 0 ? taken.values(0).data() : nullptr;
    moved.Append(std::move(taken));  // takes the blocks when they are large
    EXPECT_EQ(taken.size(), 0u);
    ASSERT_EQ(copied.size(), first.size() + second.size());
    EXPECT_TRUE(copied == moved);
    if (block != nullptr && first.size() > 0 && d > 100000) {
      EXPECT_EQ(moved.values(first.size()).data(), block) << "copied";
    }
    std::vector<double> w(d + 1);
    for (double& v : w) v = normal(rng);
    for (size_t t = 0; t < copied.size(); ++t) {
      const KeptRows& from = t < first.size() ? first : second;
      const size_t s = t < first.size() ? t : t - first.size();
      ASSERT_EQ(copied.label(t), from.label(s));
      ASSERT_EQ(copied.square(t), from.square(s));
      ASSERT_EQ(copied.Dot(t, w), from.Dot(s, w));
      ASSERT_EQ(moved.Dot(t, w), from.Dot(s, w));
      for (double v : moved.values(t)) ASSERT_NE(v, 0.0);
    }
    KeptRows assigned;
    assigned = moved;
    EXPECT_TRUE(assigned == copied);
    EXPECT_GE(assigned.bytes(), 0u);
    if (copied.size() > 0) {
      KeptRows other = copied;
      other.Add(std::vector<uint32_t>{0}, std::vector<double>{1.0}, 1);
      EXPECT_FALSE(other == copied);
    }
  }
}

// A dense x^ with no zero is kept as its values alone; every other row (a
// dense one with a zero, a sparse one) as its non-zeros. Either way a row
// reads back the same: its non-zeros, label and square, the same w . x^ and
// w + a x^ bit for bit as summed over its non-zeros in order; copies, taken
// blocks and rows rebuilt from what they read back stay so. Rows of both kinds
// in turn fill a block of each kind, not a block a row.
TEST(KeptRowsTest, DenseRowsKeepTheirValuesAloneAndReadAsEveryRowDoes) {
  constexpr uint32_t kDim = 30;
  ModelConfig config;
  config.dimension = kDim;
  const Preparer preparer(config);  // bias and normalization on
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  KeptRows kept;
  std::vector<std::vector<uint32_t>> want_index;
  std::vector<std::vector<double>> want_value;
  std::vector<bool> want_dense;
  size_t coordinates = 0;
  for (int t = 0; t < 3000; ++t) {
    std::vector<double> x(kDim);
    for (double& v : x) v = normal(rng);
    std::vector<uint32_t> index;
    std::vector<double> value;
    Prepared p;
    if (t % 3 == 2) {  // sparse: 5 coordinates
      for (uint32_t i = 0; i < 5; ++i) index.push_back(6 * i + t % 6);
      for (uint32_t i : index) value.push_back(x[i]);
      p = *preparer.Prepare(FeatureView::Sparse(index, value));
    } else {
      if (t % 3 == 1) x[t % kDim] = 0;  // dense with a zero
      p = *preparer.Prepare(FeatureView::Dense(x));
    }
    kept.Add(p, t % 2 == 0 ? 1 : -1);
    // x^'s non-zeros, the bias last.
    std::vector<uint32_t> nz_index;
    std::vector<double> nz_value;
    auto keep = [&](uint32_t i, double v) {
      if (v == 0) return;
      nz_index.push_back(i);
      nz_value.push_back(v);
    };
    if (p.x.sparse) {
      for (size_t k = 0; k < p.x.indices.size(); ++k) {
        keep(p.x.indices[k], p.scale * p.x.values[k]);
      }
    } else {
      for (uint32_t i = 0; i < kDim; ++i) keep(i, p.scale * p.x.values[i]);
    }
    keep(kDim, p.scale * p.bias_value);
    want_dense.push_back(t % 3 == 0);
    coordinates += nz_index.size();
    want_index.push_back(std::move(nz_index));
    want_value.push_back(std::move(nz_value));
  }
  std::vector<double> w(kDim + 1);
  for (double& v : w) v = normal(rng);
  auto check = [&](const KeptRows& rows) {
    ASSERT_EQ(rows.size(), want_index.size());
    for (size_t t = 0; t < rows.size(); ++t) {
      ASSERT_EQ(rows.dense(t), want_dense[t]) << t;
      ASSERT_EQ(
          std::vector<uint32_t>(rows.indices(t).begin(), rows.indices(t).end()),
          want_index[t])
          << t;
      ASSERT_EQ(
          std::vector<double>(rows.values(t).begin(), rows.values(t).end()),
          want_value[t])
          << t;
      ASSERT_EQ(rows.label(t), t % 2 == 0 ? 1 : -1);
      double dot = 0, square = 0;
      std::vector<double> added = w, want_added = w;
      for (size_t k = 0; k < want_index[t].size(); ++k) {
        dot += w[want_index[t][k]] * want_value[t][k];
        square += want_value[t][k] * want_value[t][k];
        want_added[want_index[t][k]] += 0.37 * want_value[t][k];
      }
      ASSERT_EQ(rows.Dot(t, w), dot) << t;
      ASSERT_EQ(rows.square(t), square) << t;
      rows.AddTo(t, 0.37, &added);
      ASSERT_EQ(added, want_added) << t;
    }
  };
  check(kept);
  // 8 bytes a coordinate for the dense rows, 12 for the others, with room
  // to spare in the blocks: within twice that, not a block a row.
  size_t dense_coordinates = 0;
  for (size_t t = 0; t < want_index.size(); ++t) {
    if (want_dense[t]) dense_coordinates += want_index[t].size();
  }
  const size_t tight = dense_coordinates * 8 +
                       (coordinates - dense_coordinates) * 12 +
                       want_index.size() * 21;
  EXPECT_LT(kept.bytes(), 2 * tight);
  // 20,000 dense rows against as many with one zero each (kept as their 30
  // non-zeros with indices): 8 * 31 against 12 * 30 bytes a row, in blocks
  // that grow alike.
  KeptRows all_dense, one_zero;
  for (int t = 0; t < 20000; ++t) {
    std::vector<double> x(kDim);
    for (double& v : x) v = normal(rng);
    all_dense.Add(*preparer.Prepare(FeatureView::Dense(x)), 1);
    x[t % kDim] = 0;
    one_zero.Add(*preparer.Prepare(FeatureView::Dense(x)), 1);
  }
  EXPECT_LT(static_cast<double>(all_dense.bytes()),
            0.75 * static_cast<double>(one_zero.bytes()));

  const KeptRows copied = kept;
  check(copied);
  KeptRows taken;
  taken.Add(std::vector<uint32_t>{3}, std::vector<double>{1.0}, 1);
  KeptRows moved = kept;
  taken.Append(std::move(moved));
  KeptRows rebuilt;
  rebuilt.Add(std::vector<uint32_t>{3}, std::vector<double>{1.0}, 1);
  for (size_t t = 0; t < kept.size(); ++t) {
    rebuilt.Add(kept.indices(t), kept.values(t), kept.label(t));
  }
  EXPECT_TRUE(taken == rebuilt);
  for (size_t t = 0; t < kept.size(); ++t) {
    ASSERT_EQ(rebuilt.dense(t + 1), want_dense[t]);
    ASSERT_EQ(taken.dense(t + 1), want_dense[t]);
    ASSERT_EQ(rebuilt.Dot(t + 1, w), kept.Dot(t, w));
  }
}

}  // namespace
}  // namespace perceptron
