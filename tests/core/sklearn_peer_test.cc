// docs/design.md section 2, 6: one classic pass over breast_cancer.csv (bias c
// = 1, no normalization, eta = 1) equals scikit-learn's Perceptron, which the
// test runs itself through Debian's Python.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/breast_cancer.h"
#include "tests/core/peers/peer.h"

namespace perceptron {
namespace {

struct Sklearn {
  std::string csv;
  size_t samples = 0;
  std::vector<double> coef;
  double intercept = 0;
};

Sklearn RunSklearn() {
  const std::string out = testing::RunPeer(
      absl::StrCat(PERCEPTRON_PYTHON, " ", PERCEPTRON_SKLEARN_SCRIPT));
  Sklearn r;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "csv") in >> r.csv;
    if (key == "samples") in >> r.samples;
    if (key == "intercept")
      r.intercept = std::strtod(line.substr(10).c_str(), nullptr);
    if (key == "coef") {
      std::string v;
      while (in >> v) r.coef.push_back(std::strtod(v.c_str(), nullptr));
    }
  }
  return r;
}

TEST(SklearnPeerTest, OneClassicPassEqualsSklearnPerceptronOnBreastCancer) {
  const Sklearn sk = RunSklearn();
  ASSERT_EQ(sk.coef.size(), 30u);
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  testing::ReadBreastCancer(sk.csv, &x, &y);
  ASSERT_EQ(x.size(), sk.samples);
  ASSERT_EQ(x.size(), 569u);

  ModelConfig config;
  config.dimension = 30;
  config.bias = true;
  config.bias_constant = 1;
  config.normalize = false;
  config.eta = 1;
  auto model = *Model::Create(config);
  for (size_t t = 0; t < x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(x[t]), y[t]).ok())
        << "row " << t;
  }
  const absl::Span<const double> w = model->weights();
  double worst = 0;
  for (size_t i = 0; i < 30; ++i) {
    const double rel =
        std::abs(w[i] - sk.coef[i]) / std::max(1e-300, std::abs(sk.coef[i]));
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-12) << "coef " << i << ": " << w[i] << " vs sklearn "
                          << sk.coef[i];
  }
  EXPECT_LE(std::abs(w[30] - sk.intercept), 1e-12 * std::abs(sk.intercept))
      << "intercept " << w[30] << " vs sklearn " << sk.intercept;
  // docs/design.md section 2, 6 records 168 updates for this pass; without
  // delays updates == mistakes.
  EXPECT_EQ(model->counters().updates, 168u);
  EXPECT_EQ(model->counters().mistakes, 168u);
  EXPECT_EQ(model->counters().examples, 569u);
  std::cout << "[ peer ] 569 examples, " << model->counters().updates
            << " updates; largest relative difference from sklearn's coef_ "
            << worst << ", intercept " << w[30] << " vs " << sk.intercept
            << "\n";
}

}  // namespace
}  // namespace perceptron
