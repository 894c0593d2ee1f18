#include "core/kept_rows.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/config.h"
#include "core/prepare.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

// A row of d coordinates, every `gap`-th one a non-zero (gap 1: dense).
void AddRow(KeptRows* rows, uint32_t d, uint32_t gap, int label,
            std::mt19937_64& rng, std::vector<std::vector<double>>* dense) {
  std::normal_distribution<double> normal;
  std::vector<uint32_t> indices;
  std::vector<double> values;
  std::vector<double> full(d, 0.0);
  for (uint32_t i = 0; i < d; i += gap) {
    indices.push_back(i);
    values.push_back(normal(rng));
    full[i] = values.back();
  }
  rows->Add(indices, values, label);
  dense->push_back(full);
}

TEST(KeptRowsTest, KeepsDenseAndSparseRowsAsGiven) {
  std::mt19937_64 rng(3);
  KeptRows rows;
  std::vector<std::vector<double>> dense;
  for (int t = 0; t < 3000; ++t) {  // past the first block
    AddRow(&rows, 40, t % 3 == 0 ? 1 : 2 + t % 4, t % 2 ? 1 : -1, rng, &dense);
  }
  ASSERT_EQ(rows.size(), dense.size());
  std::normal_distribution<double> normal;
  std::vector<double> w(40);
  for (double& v : w) v = normal(rng);
  for (size_t t = 0; t < rows.size(); ++t) {
    EXPECT_EQ(rows.label(t), t % 2 ? 1 : -1);
    EXPECT_EQ(rows.dense(t), t % 3 == 0) << t;
    double dot = 0, square = 0;
    size_t nonzeros = 0;
    for (uint32_t i = 0; i < 40; ++i) {
      dot += w[i] * dense[t][i];  // in index order, as Dot sums
      square += dense[t][i] * dense[t][i];
      nonzeros += dense[t][i] != 0;
    }
    EXPECT_EQ(rows.Dot(t, w), dot) << t;
    EXPECT_NEAR(rows.DotUnordered(t, w), dot, 1e-12 * (1 + std::abs(dot)));
    EXPECT_NEAR(rows.square(t), square, 1e-12 * square);
    EXPECT_EQ(rows.values(t).size(), nonzeros);
    std::vector<double> added(40, 1.0);
    rows.AddTo(t, 0.5, &added);
    for (uint32_t i = 0; i < 40; ++i) {
      EXPECT_EQ(added[i], 1.0 + 0.5 * dense[t][i]);
    }
  }
}

TEST(KeptRowsTest, ZerosAreNotKept) {
  KeptRows rows;
  rows.Add(std::vector<uint32_t>{0, 1, 2}, std::vector<double>{1, 0, 2}, 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows.dense(0));
  EXPECT_EQ(
      std::vector<uint32_t>(rows.indices(0).begin(), rows.indices(0).end()),
      (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(rows.square(0), 5.0);
}

// Rows staged and then kept are those Add keeps, bit for bit; a row staged
// and not kept leaves nothing behind.
TEST(KeptRowsTest, AStagedRowIsKeptAsAddKeepsItOrLeavesNothing) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  ModelConfig config;
  config.dimension = 12;
  const Preparer preparer(config);
  KeptRows staged, added;
  std::vector<std::vector<double>> expected;  // each kept row's non-zeros
  for (int t = 0; t < 3000; ++t) {            // past the first block
    std::vector<double> x(12);
    for (double& v : x) v = normal(rng);
    if (t % 5 == 1) x[t % 12] = 0;  // a dense row kept sparse
    std::vector<uint32_t> indices{1, 4, 9};
    std::vector<double> values{normal(rng), 0.0, normal(rng)};
    const bool sparse = t % 3 == 2;
    const Prepared p = *preparer.Prepare(
        sparse ? FeatureView::Sparse(indices, values) : FeatureView::Dense(x));
    const int label = t % 2 ? 1 : -1;
    KeptRows::Staged s;
    staged.Stage(p, &s);
    ASSERT_EQ(staged.dense(s), !sparse && t % 5 != 1) << t;
    const size_t nonzeros = sparse ? 3 : (t % 5 == 1 ? 12 : 13);
    ASSERT_EQ(staged.values(s).size(), nonzeros) << t;
    ASSERT_EQ(staged.indices(s).size(), staged.dense(s) ? 0 : nonzeros) << t;
    if (t % 4 == 3) continue;  // not kept
    staged.Keep(s, label);
    added.Add(p, label);
    std::vector<double>& e = expected.emplace_back();
    for (size_t k = 0; k < (sparse ? 3 : 12); ++k) {
      const double v = p.scale * (sparse ? values[k] : x[k]);
      if (v != 0) e.push_back(v);
    }
    e.push_back(p.scale * p.bias_value);
  }
  ASSERT_EQ(staged.size(), added.size());
  for (size_t t = 0; t < added.size(); ++t) {
    EXPECT_EQ(staged.label(t), added.label(t));
    EXPECT_EQ(staged.dense(t), added.dense(t));
    EXPECT_EQ(staged.square(t), added.square(t));
    const auto si = staged.indices(t), ai = added.indices(t);
    const auto sv = staged.values(t), av = added.values(t);
    EXPECT_EQ(std::vector<uint32_t>(si.begin(), si.end()),
              std::vector<uint32_t>(ai.begin(), ai.end()));
    EXPECT_EQ(std::vector<double>(sv.begin(), sv.end()), expected[t]) << t;
    EXPECT_EQ(std::vector<double>(av.begin(), av.end()), expected[t]) << t;
    double square = 0;
    for (double v : expected[t]) square += v * v;
    EXPECT_EQ(staged.square(t), square) << t;
  }
}

TEST(KeptRowsTest, AppendingCopiesOrTakesTheSameRows) {
  std::mt19937_64 rng(5);
  KeptRows a, b;
  std::vector<std::vector<double>> dense;
  for (int t = 0; t < 500; ++t) AddRow(&a, 12, 1 + t % 2, 1, rng, &dense);
  for (int t = 0; t < 700; ++t) AddRow(&b, 12, 1 + t % 3, -1, rng, &dense);

  KeptRows copied = a;
  copied.Append(b);
  KeptRows moved = a;
  KeptRows b_copy = b;
  moved.Append(std::move(b_copy));
  ASSERT_EQ(copied.size(), 1200u);
  EXPECT_TRUE(copied == moved);
  KeptRows again;
  for (size_t t = 0; t < copied.size(); ++t) {
    again.Add(copied.indices(t), copied.values(t), copied.label(t));
  }
  EXPECT_TRUE(again == copied);
  KeptRows other = copied;
  other.Add(std::vector<uint32_t>{1}, std::vector<double>{1}, 1);
  EXPECT_FALSE(other == copied);
  other.Clear();
  EXPECT_EQ(other.size(), 0u);
}

// A row may stand for several equal examples: counts are raised, carried by
// every append and compared; the last row can be taken back.
TEST(KeptRowsTest, CountsStandForEqualExamples) {
  KeptRows rows;
  const std::vector<uint32_t> at = {1, 4};
  const std::vector<double> value = {0.5, -2};
  rows.Add(at, value, 1);
  rows.Add({}, {}, -1);
  rows.Add(at, value, -1);
  EXPECT_EQ(rows.examples(), 3u);
  EXPECT_EQ(rows.count(0), 1u);
  EXPECT_TRUE(rows.AddCount(0, 4));
  EXPECT_TRUE(rows.AddCount(2, 1));
  EXPECT_EQ(rows.count(0), 5u);
  EXPECT_EQ(rows.count(1), 1u);
  EXPECT_EQ(rows.examples(), 8u);
  EXPECT_FALSE(rows.AddCount(0, UINT32_MAX)) << "past 2^32 - 1";
  EXPECT_EQ(rows.count(0), 5u);

  KeptRows copied;
  copied.Append(rows);
  EXPECT_TRUE(copied == rows);
  EXPECT_EQ(copied.examples(), 8u);
  KeptRows other = rows;
  other.AddCount(1, 1);
  EXPECT_FALSE(other == rows) << "the same rows, other counts";

  // Taken whole (blocks moved) after rows that all count one.
  KeptRows moved;
  for (int k = 0; k < 3; ++k) moved.Add(at, value, 1);
  KeptRows big;
  std::vector<uint32_t> many(70000);
  std::vector<double> ones(many.size(), 1.0);
  for (uint32_t i = 0; i < many.size(); ++i) many[i] = 2 * i;
  big.Add(many, ones, 1);
  big.AddCount(0, 2);
  moved.Append(std::move(big));
  EXPECT_EQ(moved.size(), 4u);
  EXPECT_EQ(moved.count(2), 1u);
  EXPECT_EQ(moved.count(3), 3u);
  EXPECT_EQ(moved.examples(), 6u);

  rows.PopBack();
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.examples(), 6u);
  rows.Add(at, value, 1);
  EXPECT_EQ(rows.count(2), 1u);
  EXPECT_EQ(rows.values(2)[1], -2);
}

}  // namespace
}  // namespace perceptron
