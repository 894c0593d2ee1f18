// docs/design.md section 2.7's peer: on breast_cancer.csv (bias c = 1,
// normalized and not), the certificate's upper value U/(2R^2) matches
// scikit-learn's LinearSVC (liblinear, hinge loss, no intercept, C = 1/R^2)
// primal objective at its solution within 1e-3, and the certificate's lower
// value is below it (any dual value is below any primal value). The test runs
// scikit-learn itself through Debian's Python.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/certificate.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/breast_cancer.h"
#include "tests/core/peers/peer.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

struct Peer {
  std::string csv;
  std::map<int, std::pair<double, double>> objective;  // normalize -> (R, P)
};

Peer RunLinearSvc(const std::string& args = "") {
  const std::string out =
      testing::RunPeer(std::string(PERCEPTRON_PYTHON) + " " +
                       PERCEPTRON_SVC_SCRIPT + " " + args);
  Peer p;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "csv") in >> p.csv;
    if (key == "objective") {
      std::string which, r, objective;
      in >> which >> r >> objective;
      p.objective[which == "rows" ? 2 : std::stoi(which)] = {
          std::strtod(r.c_str(), nullptr),
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

// 10^5 examples of d = 20 (normalized, bias on), labels from a random
// separator with 10% flipped: the shape of the solver's benchmark.
TEST(CertificatePeerTest, MatchesLinearSvcOnOneHundredThousandExamples) {
  constexpr uint32_t kDim = 20;
  constexpr size_t kCount = 100000;
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  std::vector<double> separator(kDim);
  for (double& v : separator) v = normal(rng);
  ModelConfig config;
  config.dimension = kDim;
  auto model = *Model::Create(config);
  const Preparer preparer(config);
  CertificateSolver solver(config.weight_dimension());
  // A directory of its own: another run of the suite may share TempDir().
  const testing::ScopedDir dir("certificate-peer");
  const std::string path = dir.path() + "/certificate_peer_rows.bin";
  {
    std::ofstream out(path, std::ios::binary);
    std::vector<double> x(kDim), record(config.weight_dimension() + 1);
    for (size_t t = 0; t < kCount; ++t) {
      double s = 0;
      for (uint32_t i = 0; i < kDim; ++i)
        s += separator[i] * (x[i] = normal(rng));
      const int y = (s >= 0) == (rng() % 10 != 0) ? 1 : -1;
      ASSERT_TRUE(model->Learn(FeatureView::Dense(x), y).ok());
      const Prepared p = *preparer.Prepare(FeatureView::Dense(x));
      solver.Add(p, y);
      record[0] = y;
      for (uint32_t i = 0; i < config.weight_dimension(); ++i) {
        record[i + 1] = p.dense_at(i);
      }
      out.write(reinterpret_cast<const char*>(record.data()),
                static_cast<std::streamsize>(record.size() * sizeof(double)));
    }
    ASSERT_TRUE(out.good());
  }
  const Peer peer = RunLinearSvc("rows " + path + " " +
                                 std::to_string(config.weight_dimension()));
  ASSERT_EQ(peer.objective.count(2), 1u);
  const auto [peer_r, peer_p] = peer.objective.at(2);
  const double r = model->stats().bound.radius;
  EXPECT_NEAR(r, peer_r, 1e-12 * peer_r);
  CertificateOptions options;
  options.tolerance = 1e-6;
  options.max_passes = 100000;
  const Certificate c = solver.Solve(r, options);
  const double upper = c.upper / (2 * r * r);
  EXPECT_TRUE(c.converged);
  EXPECT_NEAR(upper, peer_p, 1e-3 * peer_p);
  EXPECT_LE(c.lower / (2 * r * r), peer_p * (1 + 1e-9));
  EXPECT_LE(static_cast<double>(model->counters().updates), c.upper);
  std::cout << "[ certificate peer ] 10^5 examples d=20, 10% noise: R=" << r
            << " mistakes=" << model->counters().mistakes << " U=" << c.upper
            << " L=" << c.lower << " gamma=" << c.gamma << " TD=" << c.td
            << " passes=" << c.passes << "; U/(2R^2)=" << upper
            << " vs liblinear " << peer_p << "\n";
}

}  // namespace
}  // namespace perceptron
