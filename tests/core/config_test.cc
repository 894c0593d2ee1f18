#include "core/config.h"

#include <cmath>
#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

using ::testing::HasSubstr;

TEST(ConfigTest, DefaultsWithADimensionAreValid) {
  ModelConfig c;
  c.dimension = 1;
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_EQ(c.weight_dimension(), 2u);
  EXPECT_EQ(c.eta, 1.0);
  EXPECT_TRUE(c.bias);
  EXPECT_TRUE(c.normalize);
  EXPECT_EQ(c.bias_constant, 1.0);
  EXPECT_FALSE(c.gamma.has_value());
}

TEST(ConfigTest, ComparatorMayCoverTheBiasCoordinateOrNot) {
  ModelConfig c;
  c.dimension = 2;
  c.gamma = 0.1;
  c.comparator = {1, 2};
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.comparator = {1, 2, 3};
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.bias = false;
  EXPECT_THAT(std::string(ValidateConfig(c).message()),
              HasSubstr("comparator has 3 values; expected 2"));
}

TEST(ConfigTest, EachBadFieldIsRejectedAndNamed) {
  struct Case {
    ModelConfig config;
    std::string message;
  };
  auto with = [](auto edit) {
    ModelConfig c;
    c.dimension = 3;
    edit(c);
    return c;
  };
  const std::vector<Case> cases = {
      {with([](ModelConfig& c) { c.dimension = 0; }),
       "dimension 0 is out of range 1..16777216: give the input's dimension "
       "d, or hash_bits (or feature_names) to take features by name"},
      {with([](ModelConfig& c) { c.dimension = kMaxDimension + 1; }),
       "is out of range"},
      {with([](ModelConfig& c) { c.eta = 0; }),
       "eta 0 is out of range [1e-100, 1e+100]"},
      {with([](ModelConfig& c) { c.eta = NAN; }), "eta nan"},
      // Finite, but overflow is certain: documented ranges (issue: a model
      // never holds a non-finite number).
      {with([](ModelConfig& c) { c.eta = 1e308; }),
       "eta 1e+308 is out of range"},
      {with([](ModelConfig& c) { c.bias_constant = 1e300; }),
       "bias_constant 1e+300 is out of range"},
      {with([](ModelConfig& c) { c.gamma = 1e-200; }),
       "gamma 1e-200 is out of range"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kKernel;
         c.kernel.type = KernelType::kRbf;
         c.kernel.sigma = 1e-200;
       }),
       "kernel.sigma 1e-200 is out of range"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kKernel;
         c.kernel.type = KernelType::kPolynomial;
         c.kernel.c0 = 1e7;
       }),
       "kernel.c0 1e+07 is out of range [0, 1e+06]"},
      {with([](ModelConfig& c) { c.gamma = 0; }), "gamma 0 is out of range"},
      {with([](ModelConfig& c) { c.gamma = -1; }), "gamma -1"},
      {with([](ModelConfig& c) { c.bias_constant = 0; }), "bias_constant 0"},
      {with([](ModelConfig& c) { c.algorithm = Algorithm::kMargin; }),
       "gamma is required"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kMargin;
         c.gamma = 0.1;
         c.normalize = false;
       }),
       "normalize must be on"},
      {with([](ModelConfig& c) {
         c.gamma = 0.1;
         c.comparator = {1, 2};
       }),
       "comparator has 2 values; expected 3 or 4"},
      {with([](ModelConfig& c) {
         c.gamma = 0.1;
         c.comparator = {0, 0, 0};
       }),
       "comparator is zero"},
      {with([](ModelConfig& c) {
         c.gamma = 0.1;
         c.comparator = {0, INFINITY, 0};
       }),
       "comparator value 1 is inf"},
      {with([](ModelConfig& c) {
         c.comparator = {1, 0, 0};
       }),
       "gamma is required with a comparator"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kKernel;
         c.kernel_budget = 0;
       }),
       "kernel_budget must be >= 1"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kKernel;
         c.kernel.type = KernelType::kRbf;
         c.kernel.sigma = 0;
       }),
       "kernel.sigma 0"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kKernel;
         c.kernel.type = KernelType::kPolynomial;
         c.kernel.degree = 0;
       }),
       "kernel.degree 0 is out of range"},
      {with([](ModelConfig& c) {
         c.algorithm = Algorithm::kVoted;
         c.max_voted_vectors = 0;
       }),
       "max_voted_vectors must be >= 1"},
  };
  for (const Case& c : cases) {
    absl::Status s = ValidateConfig(c.config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace perceptron
