// docs/design.md section 2.7's peer: on breast_cancer.csv (bias c = 1,
// normalized and not), the certificate's upper value U/(2R^2) matches
// scikit-learn's LinearSVC (liblinear, hinge loss, no intercept, C = 1/R^2)
// primal objective at its solution within 1e-3, and the certificate's lower
// value is below it (any dual value is below any primal value). The test runs
// scikit-learn itself through Debian's Python.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/certificate.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/breast_cancer.h"

namespace perceptron {
namespace {

struct Peer {
  std::string csv;
  std::map<int, std::pair<double, double>> objective;  // normalize -> (R, P)
};

Peer RunLinearSvc() {
  const std::string command =
      std::string(PERCEPTRON_PYTHON) + " " + PERCEPTRON_SVC_SCRIPT + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (pipe && fgets(buf, sizeof buf, pipe)) out += buf;
  const int rc = pipe ? pclose(pipe) : -1;
  EXPECT_EQ(rc, 0) << command << " failed:\n" << out;
  Peer p;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "csv") in >> p.csv;
    if (key == "objective") {
      int normalize;
      std::string r, objective;
      in >> normalize >> r >> objective;
      p.objective[normalize] = {std::strtod(r.c_str(), nullptr),
                                std::strtod(objective.c_str(), nullptr)};
    }
  }
  return p;
}

TEST(CertificatePeerTest, MatchesLinearSvcOnBreastCancer) {
  const Peer peer = RunLinearSvc();
  ASSERT_EQ(peer.objective.size(), 2u);
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  testing::ReadBreastCancer(peer.csv, &x, &y);
  ASSERT_EQ(x.size(), 569u);
  for (const bool normalize : {true, false}) {
    ModelConfig config;
    config.dimension = 30;
    config.normalize = normalize;
    auto model = *Model::Create(config);
    const Preparer preparer(config);
    CertificateSolver solver(config.weight_dimension());
    for (size_t t = 0; t < x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(x[t]), y[t]).ok());
      solver.Add(*preparer.Prepare(FeatureView::Dense(x[t])), y[t]);
    }
    const Stats stats = model->stats();
    const double r = stats.bound.radius;
    const auto [peer_r, peer_p] = peer.objective.at(normalize ? 1 : 0);
    EXPECT_NEAR(r, peer_r, 1e-12 * peer_r);
    CertificateOptions options;
    options.tolerance = 1e-6;
    options.max_passes = 100000;
    const Certificate c = solver.Solve(r, options);
    const double upper = c.upper / (2 * r * r);
    const double lower = c.lower / (2 * r * r);
    EXPECT_NEAR(upper, peer_p, 1e-3 * peer_p)
        << (normalize ? "normalized" : "raw");
    EXPECT_LE(lower, peer_p * (1 + 1e-9)) << (normalize ? "normalized" : "raw");
    EXPECT_LE(static_cast<double>(stats.counters.updates), c.upper);
    std::cout << "[ certificate peer ] breast_cancer, "
              << (normalize ? "normalized" : "raw") << ": R=" << r
              << " mistakes=" << stats.counters.mistakes << " U=" << c.upper
              << " L=" << c.lower << " gamma=" << c.gamma << " TD=" << c.td
              << " passes=" << c.passes << "; U/(2R^2)=" << upper
              << " vs liblinear " << peer_p << "\n";
  }
}

}  // namespace
}  // namespace perceptron
