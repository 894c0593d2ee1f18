// Classic, margin and averaged learners against naive reference
// implementations.
#include "core/linear_learners.h"

#include <cmath>

#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::Augmented;
using testing::MakeStream;
using testing::NaiveDot;
using testing::Stream;
using testing::StreamSpec;

void Axpy(double a, const std::vector<double>& x, std::vector<double>* y) {
  for (size_t i = 0; i < x.size(); ++i) (*y)[i] += a * x[i];
}

StreamSpec SmallSpec(int k) {
  StreamSpec spec;
  spec.dimension = 2 + k % 7;
  spec.bias = k % 3 != 0;
  spec.normalize = k % 2 == 0;
  spec.norm_spread = spec.normalize ? 1.0 : 4.0;
  spec.margin = 0.0;
  spec.noise = (k % 4) * 0.1;
  spec.length = 50 + 7 * k % 150;
  spec.seed = 300 + k;
  return spec;
}

TEST(LinearLearnersTest, ClassicMatchesTheNaiveRule) {
  for (int k = 0; k < 100; ++k) {
    const StreamSpec spec = SmallSpec(k);
    const Stream s = MakeStream(spec);
    ModelConfig c = testing::StreamConfig(spec);
    c.eta = 0.5;
    auto model = *Model::Create(c);
    std::vector<double> w(c.weight_dimension(), 0.0);
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      const double naive = NaiveDot(w, xa);
      const Outcome o = *model->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      ASSERT_NEAR(o.score, naive, 1e-9 * (1 + std::abs(naive)))
          << "stream " << k << " t " << t;
      ASSERT_EQ(o.updated, s.y[t] * naive <= 0) << "stream " << k << " t " << t;
      if (s.y[t] * naive <= 0) Axpy(c.eta * s.y[t], xa, &w);
    }
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT_NEAR(model->weights()[i], w[i], 1e-9 * (1 + std::abs(w[i])));
    }
  }
}

TEST(LinearLearnersTest, AveragedPredictionsEqualTheNaiveAverageOfWeights) {
  uint64_t compared = 0;
  for (int k = 0; k < 100; ++k) {
    const StreamSpec spec = SmallSpec(k);
    const Stream s = MakeStream(spec);
    ModelConfig c = testing::StreamConfig(spec);
    c.algorithm = Algorithm::kAveraged;
    auto model = *Model::Create(c);
    // Naive: keep w, and the sum of w after each example; the average is sum /
    // n.
    std::vector<double> w(c.weight_dimension(), 0.0),
        sum(c.weight_dimension(), 0.0);
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      const double naive =
          t == 0 ? 0.0 : NaiveDot(sum, xa) / static_cast<double>(t);
      const Prediction p = *model->Predict(FeatureView::Dense(s.x[t]));
      ASSERT_NEAR(p.score, naive, 1e-9 * (1 + std::abs(naive)))
          << "stream " << k << " t " << t;
      if (std::abs(naive) > 1e-9) {
        ASSERT_EQ(p.label, naive >= 0 ? 1 : -1);
        ++compared;
      }
      const Outcome o = *model->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      ASSERT_EQ(o.score, p.score);  // the issued score is the averaged one
      if (s.y[t] * NaiveDot(w, xa) <= 0) Axpy(s.y[t], xa, &w);
      Axpy(1.0, w, &sum);
    }
  }
  EXPECT_GT(compared, 5000u);
}

TEST(LinearLearnersTest, AveragedLearnsExactlyAsClassic) {
  const Stream s = MakeStream(SmallSpec(11));
  ModelConfig c = testing::StreamConfig(SmallSpec(11));
  auto classic = *Model::Create(c);
  c.algorithm = Algorithm::kAveraged;
  auto averaged = *Model::Create(c);
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_EQ(classic->Learn(FeatureView::Dense(s.x[t]), s.y[t])->updated,
              averaged->Learn(FeatureView::Dense(s.x[t]), s.y[t])->updated);
  }
  for (size_t i = 0; i < c.weight_dimension(); ++i) {
    EXPECT_EQ(classic->weights()[i], averaged->weights()[i]);
  }
}

TEST(LinearLearnersTest, MarginRuleMatchesTheNaiveRule) {
  for (int k = 0; k < 60; ++k) {
    StreamSpec spec = SmallSpec(k);
    spec.normalize = true;
    const Stream s = MakeStream(spec);
    ModelConfig c = testing::StreamConfig(spec);
    c.algorithm = Algorithm::kMargin;
    c.gamma = 0.2;
    auto model = *Model::Create(c);
    std::vector<double> w(c.weight_dimension(), 0.0);
    uint64_t updates = 0;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      const double norm = std::sqrt(NaiveDot(w, w));
      const bool fire = norm == 0 || s.y[t] * NaiveDot(w, xa) / norm <= 0.1;
      const Outcome o = *model->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      ASSERT_EQ(o.updated, fire) << "stream " << k << " t " << t;
      if (fire) Axpy(s.y[t], xa, &w), ++updates;
    }
    EXPECT_EQ(model->counters().updates, updates);
    EXPECT_NEAR(model->stats().weight_norm, std::sqrt(NaiveDot(w, w)), 1e-9);
  }
}

TEST(LinearLearnersTest, MarginRuleUpdatesOnCorrectButCloseExamples) {
  ModelConfig c;
  c.dimension = 2;
  c.bias = false;
  c.algorithm = Algorithm::kMargin;
  c.gamma = 0.5;
  auto model = *Model::Create(c);
  ASSERT_TRUE(
      model->Learn(FeatureView::Dense(std::vector<double>{1, 0}), 1)->updated);
  // w = (1, 0); x^ = (cos 80deg, sin 80deg): correct (margin 0.17) but below
  // gamma/2 = 0.25.
  const double a = 80 * M_PI / 180;
  const Outcome o = *model->Learn(
      FeatureView::Dense(std::vector<double>{std::cos(a), std::sin(a)}), 1);
  EXPECT_FALSE(o.mistake);
  EXPECT_TRUE(o.updated);
  EXPECT_EQ(model->counters().mistakes, 1u);
  EXPECT_EQ(model->counters().updates, 2u);
}

}  // namespace
}  // namespace perceptron
