// The theorem of docs/design.md section 2, 4 as a property over random streams,
// and the bound's bookkeeping.
#include "core/bound.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::MakeStream;
using testing::Stream;
using testing::StreamSpec;

// The bound holds exactly in real arithmetic; allow for floating-point rounding
// only.
bool WithinBound(uint64_t updates, double bound) {
  return static_cast<double>(updates) <= bound * (1 + 1e-9) + 1e-9;
}

// TD_gamma recomputed independently of BoundTracker, from the definition.
double NaiveTd(const Stream& s, const ModelConfig& config, double gamma) {
  std::vector<double> u = s.separator;  // already unit length
  double td = 0;
  for (size_t t = 0; t < s.x.size(); ++t) {
    std::vector<double> xa = s.x[t];
    if (config.bias) xa.push_back(config.bias_constant);
    double n2 = 0, dot = 0;
    for (size_t i = 0; i < xa.size(); ++i) n2 += xa[i] * xa[i];
    const double scale = config.normalize ? 1 / std::sqrt(n2) : 1.0;
    for (size_t i = 0; i < xa.size(); ++i) dot += u[i] * xa[i] * scale;
    td += std::max(0.0, gamma - s.y[t] * dot);
  }
  return td;
}

struct Totals {
  int streams = 0;
  uint64_t examples = 0;
  uint64_t checks = 0;
  uint64_t updates = 0;
  double max_ratio = 0;  // max over streams of updates/bound at the end
};

// Streams `s` into a model as labeled examples, or, when `delayed`, as
// predictions issued in groups and revealed in a shuffled order; checks updates
// <= bound after every labeled example.
void RunStream(const Stream& s, const ModelConfig& config, bool delayed,
               uint64_t seed, Totals* totals) {
  absl::StatusOr<std::unique_ptr<Model>> made = Model::Create(config);
  ASSERT_TRUE(made.ok()) << made.status();
  Model& model = **made;
  std::mt19937_64 rng(seed);
  auto check = [&](size_t t) {
    const Stats st = model.stats();
    ASSERT_TRUE(st.bound.bound_available);
    ASSERT_TRUE(WithinBound(st.counters.updates, st.bound.bound))
        << "after example " << t << ": updates " << st.counters.updates
        << " > bound " << st.bound.bound << " (td " << st.bound.td_gamma
        << ", R " << st.bound.radius << ")";
    ++totals->checks;
  };
  if (!delayed) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model.Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      check(t);
    }
  } else {
    for (size_t start = 0; start < s.x.size(); start += 16) {
      const size_t end = std::min(s.x.size(), start + 16);
      std::vector<std::pair<uint64_t, size_t>> issued;
      for (size_t t = start; t < end; ++t) {
        absl::StatusOr<Issued> i = model.Issue(FeatureView::Dense(s.x[t]), 0);
        ASSERT_TRUE(i.ok()) << i.status();
        issued.emplace_back(i->prediction_id, t);
      }
      std::shuffle(issued.begin(), issued.end(), rng);
      for (const auto& [id, t] : issued) {
        ASSERT_TRUE(model.Reveal(id, s.y[t]).ok());
        check(t);
      }
    }
  }
  const Stats st = model.stats();
  EXPECT_NEAR(st.bound.td_gamma, NaiveTd(s, config, *config.gamma),
              1e-9 * std::max(1.0, st.bound.td_gamma));
  totals->streams++;
  totals->examples += s.x.size();
  totals->updates += st.counters.updates;
  totals->max_ratio =
      std::max(totals->max_ratio, st.counters.updates / st.bound.bound);
}

TEST(BoundTest,
     ClassicUpdatesStayWithinTheBoundAfterEveryExampleOnRandomStreams) {
  const uint32_t dims[] = {2, 3, 5, 10, 20, 50};
  const double noises[] = {0.0, 0.0, 0.02, 0.1, 0.3};
  const double margins[] = {0.0, 0.02, 0.05, 0.1};
  const double etas[] = {1.0, 0.25, 3.0};
  const Algorithm algorithms[] = {Algorithm::kClassic, Algorithm::kClassic,
                                  Algorithm::kAveraged, Algorithm::kVoted};
  Totals totals;
  std::mt19937_64 pick(2026);
  for (int k = 0; k < 1200; ++k) {
    StreamSpec spec;
    spec.dimension = dims[pick() % 6];
    spec.bias = pick() % 4 != 0;
    spec.normalize = pick() % 2 == 0;
    spec.norm_spread = spec.normalize ? 1.0 : 1.0 + (pick() % 10);
    spec.noise = noises[pick() % 5];
    spec.margin = margins[pick() % 4] * (spec.normalize ? 1.0 : 0.5);
    spec.length = 100 + pick() % 1900;
    spec.seed = 1000 + k;
    const Stream s = MakeStream(spec);

    ModelConfig config = testing::StreamConfig(spec);
    config.algorithm = algorithms[k % 4];
    config.eta = etas[pick() % 3];
    config.comparator = s.separator;
    // The clean stream's own margin when it has one; otherwise an arbitrary
    // gamma (the theorem holds for every gamma > 0, only more loosely).
    const double gammas[] = {s.min_margin, 0.5 * s.min_margin, 0.01, 0.1, 0.3};
    const double g = gammas[pick() % 5];
    config.gamma = g > 0 ? g : 0.05;
    const bool delayed = k % 5 == 4;
    SCOPED_TRACE(::testing::Message()
                 << "stream " << k << ": d=" << spec.dimension
                 << " bias=" << spec.bias << " normalize=" << spec.normalize
                 << " noise=" << spec.noise << " gamma=" << *config.gamma
                 << " eta=" << config.eta << " algorithm="
                 << AlgorithmName(config.algorithm) << " delayed=" << delayed);
    RunStream(s, config, delayed, k, &totals);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::cout << "[ property ] " << totals.streams << " streams, "
            << totals.examples << " examples, " << totals.checks
            << " checks of updates <= bound, " << totals.updates
            << " updates; largest final updates/bound " << totals.max_ratio
            << "\n";
  EXPECT_EQ(totals.streams, 1200);
  EXPECT_GT(totals.updates, 0u);
}

TEST(BoundTest, MarginRuleStaysWithinEightOverGammaSquaredOnSeparableStreams) {
  const uint32_t dims[] = {2, 5, 10, 20};
  const double margins[] = {0.05, 0.1, 0.2};
  Totals totals;
  uint64_t max_updates = 0;
  for (int k = 0; k < 300; ++k) {
    StreamSpec spec;
    spec.dimension = dims[k % 4];
    spec.bias = k % 3 != 0;
    spec.margin = margins[k % 3];
    spec.length = 300 + 50 * (k % 10);
    spec.seed = 50000 + k;
    const Stream s = MakeStream(spec);
    ModelConfig config = testing::StreamConfig(spec);
    config.algorithm = Algorithm::kMargin;
    config.comparator = s.separator;
    // Slightly below the stream's margin, so TD_gamma is exactly 0 despite
    // rounding.
    config.gamma = 0.999 * s.min_margin;
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
    ASSERT_TRUE(model.ok()) << model.status();
    const double bound = 8 / (*config.gamma * *config.gamma);
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE((*model)->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      const Stats st = (*model)->stats();
      ASSERT_TRUE(st.bound.bound_available)
          << "stream " << k << " example " << t;
      ASSERT_EQ(st.bound.bound, bound);
      ASSERT_LE(st.counters.updates, bound)
          << "stream " << k << " example " << t;
      ++totals.checks;
    }
    max_updates = std::max(max_updates, (*model)->counters().updates);
    totals.examples += s.x.size();
    ++totals.streams;
  }
  std::cout << "[ property ] margin rule: " << totals.streams
            << " separable streams, " << totals.examples << " examples, "
            << totals.checks << " checks; most updates " << max_updates << "\n";
  EXPECT_GT(max_updates, 0u);
}

TEST(BoundTest, MarginBoundIsWithdrawnOnceTdGammaIsPositive) {
  ModelConfig config;
  config.dimension = 2;
  config.bias = false;
  config.algorithm = Algorithm::kMargin;
  config.gamma = 0.5;
  config.comparator = {1, 0};
  auto model = *Model::Create(config);
  ASSERT_TRUE(
      model->Learn(FeatureView::Dense(std::vector<double>{1, 0}), 1).ok());
  EXPECT_TRUE(model->stats().bound.bound_available);
  EXPECT_EQ(model->stats().bound.bound, 8 / 0.25);
  // u . x^ = 1/sqrt(2) > gamma for y = +1, but y = -1 puts the point on the
  // wrong side.
  ASSERT_TRUE(
      model->Learn(FeatureView::Dense(std::vector<double>{1, 1}), -1).ok());
  const Stats st = model->stats();
  EXPECT_TRUE(st.bound.td_available);
  EXPECT_NEAR(st.bound.td_gamma, 0.5 + std::sqrt(0.5), 1e-15);
  EXPECT_FALSE(st.bound.bound_available);
}

TEST(BoundTest, WithoutAComparatorNothingIsAvailable) {
  ModelConfig config;
  config.dimension = 3;
  config.gamma = 0.1;
  auto model = *Model::Create(config);
  ASSERT_TRUE(
      model->Learn(FeatureView::Dense(std::vector<double>{1, 2, 3}), 1).ok());
  const Stats st = model->stats();
  EXPECT_FALSE(st.bound.td_available);
  EXPECT_FALSE(st.bound.bound_available);
  EXPECT_EQ(st.bound.radius, 1.0);
}

TEST(BoundTest, ClassicBoundFollowsTheFormulaWithRadiusAndTd) {
  // No normalization: R is the largest ||x^||, and bound = (R/gamma)^2 + 2
  // TD/gamma.
  ModelConfig config;
  config.dimension = 2;
  config.bias = false;
  config.normalize = false;
  config.gamma = 0.5;
  config.comparator = {3, 4};  // scaled to (0.6, 0.8)
  auto model = *Model::Create(config);
  ASSERT_TRUE(model->Learn(FeatureView::Dense(std::vector<double>{3, 4}), 1)
                  .ok());  // margin 5
  ASSERT_TRUE(model->Learn(FeatureView::Dense(std::vector<double>{1, 0}), -1)
                  .ok());  // -0.6
  ASSERT_TRUE(model->Learn(FeatureView::Dense(std::vector<double>{0, 0.5}), 1)
                  .ok());  // 0.4
  const Stats st = model->stats();
  EXPECT_EQ(st.bound.radius, 5.0);
  const double td = (0.5 + 0.6) + (0.5 - 0.4);
  EXPECT_NEAR(st.bound.td_gamma, td, 1e-15);
  EXPECT_NEAR(st.bound.bound, 100 + 2 * td / 0.5, 1e-12);
}

TEST(BoundTest, KernelBoundOnlyForALinearKernelThatDroppedNothing) {
  ModelConfig config;
  config.dimension = 2;
  config.algorithm = Algorithm::kKernel;
  config.gamma = 0.1;
  config.comparator = {1, 0};
  config.kernel_budget = 1;
  auto linear = *Model::Create(config);
  ASSERT_TRUE(
      linear->Learn(FeatureView::Dense(std::vector<double>{1, 0}), 1).ok());
  EXPECT_TRUE(linear->stats().bound.bound_available);
  ASSERT_TRUE(
      linear->Learn(FeatureView::Dense(std::vector<double>{1, 0}), -1).ok());
  EXPECT_EQ(linear->stats().figures.dropped, 1u);
  EXPECT_FALSE(linear->stats().bound.bound_available);
  config.kernel.type = KernelType::kRbf;
  auto rbf = *Model::Create(config);
  EXPECT_TRUE(rbf->stats().bound.td_available);
  EXPECT_FALSE(rbf->stats().bound.bound_available);
}

}  // namespace
}  // namespace perceptron
