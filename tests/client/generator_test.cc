#include "client/generator.h"

#include <cmath>

#include "gtest/gtest.h"

namespace perceptron::client {
namespace {

TEST(GeneratorTest, TheSeparatorHasTheMarginOnPreparedExamplesBeforeNoise) {
  GeneratorOptions o;
  o.dimension = 8;
  o.margin = 0.1;
  o.count = 5000;
  absl::StatusOr<Synthetic> s = Generate(o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->separator.size(), 9u);
  double norm = 0;
  for (double v : s->separator) norm += v * v;
  EXPECT_NEAR(norm, 1, 1e-12);
  int positives = 0;
  for (const Example& e : s->examples) {
    // x^ = [x, 1] / ||[x, 1]||, as a model with the default preparation sees
    // it.
    double sq = 1, dot = s->separator.back();
    for (size_t i = 0; i < e.values.size(); ++i) {
      sq += e.values[i] * e.values[i];
      dot += s->separator[i] * e.values[i];
    }
    ASSERT_GE(*e.label * dot / std::sqrt(sq), 0.1);
    positives += *e.label > 0;
  }
  EXPECT_GT(positives, 1000);
  EXPECT_LT(positives, 4000);
}

TEST(GeneratorTest, NoiseFlipsAboutTheRequestedFraction) {
  GeneratorOptions o;
  o.count = 20000;
  o.noise = 0.1;
  o.margin = 0;
  const Synthetic s = *Generate(o);
  int flipped = 0;
  for (const Example& e : s.examples) {
    double dot = s.separator.back();
    for (size_t i = 0; i < e.values.size(); ++i)
      dot += s.separator[i] * e.values[i];
    flipped += *e.label * dot < 0;
  }
  EXPECT_NEAR(flipped / 20000.0, 0.1, 0.01);
  o.noise = 0.7;
  EXPECT_EQ(Generate(o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perceptron::client
