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

TEST(ConvertTest, AComparatorGivenByItsNonZerosIsSpreadAndComesBackSo) {
  // A wide model (2^17 coordinates a vector) of 3 classes: 3 (2^17 + 1)
  // weight coordinates, class r's coordinate i at r (2^17 + 1) + i.
  constexpr uint32_t kWidth = (1u << 17) + 1;
  v1::ModelConfig in;
  in.set_hash_bits(17);
  in.set_gamma(0.5);
  for (const char* name : {"a", "b", "c"}) in.add_classes(name);
  const std::vector<std::pair<uint32_t, double>> given = {
      {2 * kWidth + 5, -0.25}, {3, 1.5}, {kWidth - 1, 2}};
  for (const auto& [i, v] : given) {
    in.add_comparator_indices(i);
    in.add_comparator(v);
  }
  absl::StatusOr<ModelConfig> c = ConfigFromProto(in, 1u << 24);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->comparator.size(), 3u * kWidth);
  for (size_t i = 0; i < c->comparator.size(); ++i) {
    double expected = 0;
    for (const auto& [j, v] : given) expected = j == i ? v : expected;
    ASSERT_EQ(c->comparator[i], expected) << i;
  }
  // Back as its non-zeros in coordinate order, and the same config again.
  const v1::ModelConfig out = ConfigToProto(*c);
  EXPECT_THAT(out.comparator_indices(),
              ::testing::ElementsAre(3, kWidth - 1, 2 * kWidth + 5));
  EXPECT_THAT(out.comparator(), ::testing::ElementsAre(1.5, 2, -0.25));
  EXPECT_EQ(*ConfigFromProto(out, 1u << 24), *c);

  // A wide comparator given densely as d values a class (no bias coordinate)
  // comes back at its weight coordinates.
  v1::ModelConfig dense = in;
  dense.clear_comparator_indices();
  dense.clear_comparator();
  dense.mutable_comparator()->Resize(3 * (kWidth - 1), 0.0);
  dense.set_comparator(2 * (kWidth - 1) + 7, 4.0);
  c = ConfigFromProto(dense, 1u << 24);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(ConfigToProto(*c).comparator_indices(),
              ::testing::ElementsAre(2 * kWidth + 7));

  // A model of vectors up to 2^16 coordinates keeps its comparator dense.
  v1::ModelConfig narrow;
  narrow.set_dimension(3);
  narrow.set_gamma(0.5);
  narrow.add_comparator_indices(3);  // the bias coordinate
  narrow.add_comparator(1.0);
  c = ConfigFromProto(narrow, 1000);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->comparator, (std::vector<double>{0, 0, 0, 1}));
  EXPECT_THAT(ConfigToProto(*c).comparator(),
              ::testing::ElementsAre(0, 0, 0, 1));
  EXPECT_EQ(ConfigToProto(*c).comparator_indices_size(), 0);

  auto refused = [](const v1::ModelConfig& config) {
    return std::string(ConfigFromProto(config, 1u << 24).status().message());
  };
  v1::ModelConfig bad = in;
  bad.add_comparator_indices(9);
  EXPECT_EQ(refused(bad),
            "config: comparator_indices has 4 coordinates for 3 comparator "
            "values; they go in pairs");
  bad = in;
  bad.set_comparator_indices(1, 3 * kWidth);
  EXPECT_EQ(refused(bad),
            "config: comparator_indices: coordinate 393219 is past the "
            "model's 393219 weight coordinates (0 to 393218)");
  bad = in;
  bad.set_comparator_indices(1, 2 * kWidth + 5);
  EXPECT_EQ(refused(bad),
            "config: comparator_indices: coordinate 262151 is given twice");
  bad = in;
  bad.set_comparator(0, 0);
  bad.set_comparator(1, 0);
  bad.set_comparator(2, 0);
  EXPECT_EQ(refused(bad),
            "config: comparator is zero and cannot be scaled to unit length");
  bad = in;
  bad.clear_gamma();
  EXPECT_EQ(refused(bad), "config: gamma is required with a comparator");
  // 8 classes of 2^24 + 1 weights are more than a model may have: refused
  // for that, before the comparator is spread over them.
  bad = in;
  bad.set_hash_bits(24);
  for (const char* name : {"d", "e", "f", "g", "h"}) bad.add_classes(name);
  EXPECT_EQ(refused(bad),
            "config: classes 8 weight vectors of 16777217 are 134217736 "
            "weights; at most 134217728");
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
