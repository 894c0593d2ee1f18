#include "server/model/convert.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

TEST(ConvertTest, UnsetFieldsTakeTheDefaultsAndComeBackFilledIn) {
  v1::ModelConfig in;
  in.set_dimension(7);
  absl::StatusOr<ModelConfig> c = ConfigFromProto(in, 1000);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, [] {
    ModelConfig d;
    d.dimension = 7;
    return d;
  }());
  const v1::ModelConfig out = ConfigToProto(*c);
  EXPECT_EQ(out.algorithm(), v1::CLASSIC);
  EXPECT_TRUE(out.has_eta() && out.eta() == 1.0);
  EXPECT_TRUE(out.bias() && out.normalize());
  EXPECT_FALSE(out.has_gamma());
  EXPECT_EQ(out.kernel().type(), v1::LINEAR);
  EXPECT_EQ(out.kernel_budget(), 10000u);
  // Round trip.
  EXPECT_EQ(*ConfigFromProto(out, 1000), *c);
}

TEST(ConvertTest, EveryFieldIsCarried) {
  v1::ModelConfig in;
  in.set_dimension(2);
  in.set_algorithm(v1::KERNEL);
  in.set_eta(0.5);
  in.set_bias(false);
  in.set_normalize(true);
  in.set_gamma(0.2);
  in.add_comparator(1);
  in.add_comparator(-1);
  in.mutable_kernel()->set_type(v1::POLYNOMIAL);
  in.mutable_kernel()->set_degree(3);
  in.mutable_kernel()->set_c0(0.5);
  in.set_kernel_budget(7);
  absl::StatusOr<ModelConfig> c = ConfigFromProto(in, 1000);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->algorithm, Algorithm::kKernel);
  EXPECT_EQ(c->eta, 0.5);
  EXPECT_FALSE(c->bias);
  EXPECT_EQ(c->gamma, 0.2);
  EXPECT_EQ(c->comparator, (std::vector<double>{1, -1}));
  EXPECT_EQ(c->kernel.type, KernelType::kPolynomial);
  EXPECT_EQ(c->kernel.degree, 3);
  EXPECT_EQ(c->kernel.c0, 0.5);
  EXPECT_EQ(c->kernel_budget, 7u);
}

TEST(ConvertTest, BadConfigsAreRefused) {
  v1::ModelConfig in;
  in.set_dimension(2000);
  EXPECT_THAT(
      std::string(ConfigFromProto(in, 1000).status().message()),
      ::testing::HasSubstr("dimension 2000 is over the server's limit 1000"));
  in.set_dimension(2);
  in.set_algorithm(static_cast<v1::Algorithm>(42));
  EXPECT_THAT(std::string(ConfigFromProto(in, 1000).status().message()),
              ::testing::HasSubstr("algorithm 42 is unknown"));
  in.set_algorithm(v1::MARGIN);
  EXPECT_THAT(std::string(ConfigFromProto(in, 1000).status().message()),
              ::testing::HasSubstr("gamma is required by the margin rule"));
}

TEST(ConvertTest, FeaturesAreViewedWithoutCopying) {
  v1::Features f;
  f.mutable_sparse()->add_indices(4);
  f.mutable_sparse()->add_values(2.5);
  absl::StatusOr<FeatureView> v = FeaturesFromProto(f);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->sparse);
  EXPECT_EQ(v->values.data(), f.sparse().values().data());
  EXPECT_EQ(FeaturesFromProto(v1::Features()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ConvertTest, StatusCodesCrossUnchanged) {
  const grpc::Status s = ToGrpc(absl::NotFoundError("x"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "x");
  EXPECT_EQ(
      std::string(ForItem(3, absl::InvalidArgumentError("bad")).message()),
      "item 3: bad");
}

}  // namespace
}  // namespace perceptron::server
