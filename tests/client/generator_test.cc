#include "client/generator.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/config.h"
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

TEST(GeneratorTest, TheStreamIsTheWholeOneInTurnAndStopsWhenAsked) {
  GeneratorOptions o;
  o.dimension = 5;
  o.count = 100;
  const Synthetic whole = *Generate(o);
  std::vector<double> separator;
  size_t seen = 0;
  ASSERT_TRUE(GenerateEach(o, &separator, [&](const Example& e) {
                EXPECT_EQ(e.values, whole.examples[seen].values);
                EXPECT_EQ(e.label, whole.examples[seen].label);
                return ++seen < 10;
              }).ok());
  EXPECT_EQ(seen, 10u);
  EXPECT_EQ(separator, whole.separator);
}

TEST(GeneratorTest, RefusesADimensionNoModelTakes) {
  GeneratorOptions o;
  for (uint32_t d : {0u, kMaxDimension + 1}) {
    o.dimension = d;
    absl::StatusOr<Synthetic> s = Generate(o);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << d;
    EXPECT_NE(s.status().message().find("16777216"), std::string::npos)
        << s.status();
  }
}

TEST(GeneratorTest, AMarginOutOfReachIsRefusedNamingOneThatIsNot) {
  // At d=1000 a random point's margin is about 0.03: one in 10^50 has 0.5.
  GeneratorOptions o;
  o.dimension = 1000;
  o.margin = 0.5;
  std::vector<double> separator;
  int handed = 0;
  const absl::Status s = GenerateEach(o, &separator, [&](const Example&) {
    ++handed;
    return true;
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("0 of the first 10000 points"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("up to about 0.063"), std::string::npos) << s;
  EXPECT_EQ(handed, 0);
  // A margin that is rare but not out of reach, for a stream it finishes.
  o.dimension = 20;
  o.count = 5;
  absl::StatusOr<Synthetic> few = Generate(o);
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_EQ(few->examples.size(), 5u);
}

}  // namespace
}  // namespace perceptron::client
