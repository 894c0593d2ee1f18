// The certificate of a wide model (docs/design.md section 2.7): past the width
// at which dense vectors of the weight dimension fit, the solver and the
// candidates work over the coordinates the kept rows use.
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "core/certificate_tracker.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/certificate_rounds.h"
#include "tests/core/state_bits.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::BoundOf;
using testing::Refresher;

// Below the width at which the certificate works over the coordinates its
// rows use, a model whose dense vectors pass the memory per model has none,
// and says which limit and flag.
TEST(CertificateTrackerTest, TooWideAModelSaysWhichLimitAndFlag) {
  ModelConfig config;
  config.dimension = kWideDimension - 1;  // and the bias: not wide
  auto model = *Model::Create(config);
  model->EnableCertificate(100, 10, /*limit_bytes=*/uint64_t{1} << 20);
  const CertificateReport r = model->certificate()->Report(1);
  EXPECT_EQ(r.phase, CertificatePhase::kOff);
  EXPECT_THAT(r.reason,
              ::testing::HasSubstr(
                  "its 8 dense vectors of 65536 coordinates (the weight "
                  "dimension) would take 4194304 bytes, over the "
                  "certificate's memory per model of 1048576 bytes (1 MiB: "
                  "perceptrond --certificate_model_mb"));
}

// A wide model (2^20 and 2^24 coordinates, sparse rows) keeps its
// certificate: the solver and the candidates work over the coordinates the
// rows use; U bounds the updates at every example, equals the solution of
// the same rows renumbered into a narrow model's coordinates, takes memory
// in proportion to those coordinates, and carries over a state bit for bit.
TEST(CertificateTrackerTest, AWideModelKeepsItsCertificate) {
  for (const uint32_t bits : {20u, 24u}) {
    SCOPED_TRACE(bits);
    ModelConfig config;
    config.hash_bits = bits;
    config.dimension = 1u << bits;
    std::mt19937_64 random(bits);
    std::vector<uint32_t> used(3000);
    for (uint32_t& i : used) i = random() % config.dimension;
    std::vector<double> hidden(used.size());
    std::normal_distribution<double> normal;
    for (double& h : hidden) h = normal(random);
    struct Example {
      std::vector<uint32_t> indices;
      std::vector<double> values;
      int label;
    };
    std::vector<Example> stream(1400);
    for (Example& e : stream) {
      std::map<uint32_t, double> x;
      double score = 0;
      for (int k = 0; k < 8; ++k) {
        const size_t j = random() % used.size();
        const double v = normal(random);
        x[used[j]] += v;
        score += hidden[j] * v;
      }
      for (const auto& [i, v] : x) {
        e.indices.push_back(i);
        e.values.push_back(v);
      }
      e.label = (score >= 0) == (random() % 10 != 0) ? 1 : -1;
    }
    auto model = *Model::Create(config);
    model->EnableCertificate(2000, 500, uint64_t{64} << 20);
    ASSERT_TRUE(IsWide(config.weight_dimension()));
    Refresher refresher(config.weight_dimension());
    ASSERT_TRUE(refresher.solver.wide());
    auto learn = [](Model* m, const Example& e) {
      ASSERT_TRUE(
          m->Learn(FeatureView::Sparse(e.indices, e.values), e.label).ok());
    };
    for (size_t t = 0; t < 1200; ++t) {
      learn(model.get(), stream[t]);
      if (t % 150 == 149) refresher.Round(model.get());
      const CertificateReport r =
          model->certificate()->Report(model->CertificateRadius(), false);
      ASSERT_NE(r.phase, CertificatePhase::kOff) << r.reason;
      if (r.available) {
        ASSERT_GE(r.upper, static_cast<double>(model->counters().updates));
      }
    }
    Certificate c;
    do {
      c = refresher.Round(model.get());
    } while (!c.converged);
    const double radius = model->CertificateRadius();
    const CertificateReport r = model->certificate()->Report(radius);
    ASSERT_TRUE(r.available);
    EXPECT_EQ(r.solved, 1200u);
    EXPECT_EQ(r.u_indices.size(), r.u.size());
    EXPECT_LE(r.u.size(), used.size() + 1);  // and the bias coordinate
    EXPECT_LT(r.bytes, size_t{1} << 20) << "not in proportion to d";
    EXPECT_LT(refresher.solver.bytes(), size_t{4} << 20);

    // The same rows renumbered 0..m-1 in a narrow solver: the same problem.
    const std::vector<uint32_t>& coordinates = refresher.solver.coordinates();
    const KeptRows& positioned = refresher.solver.rows();
    CertificateSolver narrow(static_cast<uint32_t>(coordinates.size()));
    ASSERT_FALSE(narrow.wide());
    narrow.Add(positioned);
    const Certificate n = narrow.Solve(radius, {});
    ASSERT_TRUE(n.converged);
    EXPECT_NEAR(r.upper, n.upper, 2e-4 * n.upper);
    EXPECT_LE(r.lower, n.upper);
    EXPECT_LE(n.lower, r.upper);
    // The rows at their coordinates again are those the model kept.
    const KeptRows original = refresher.solver.OriginalRows();
    for (size_t t = 0; t < 1200; t += 97) {
      std::vector<uint32_t> at(original.indices(t).begin(),
                               original.indices(t).end());
      std::vector<uint32_t> want = stream[t].indices;
      want.push_back(config.weight_dimension() - 1);  // the bias
      EXPECT_EQ(at, want);
    }

    // Carried over a state: the same figures, example by example.
    const ModelState state = model->ExportState();
    ASSERT_FALSE(state.certificate->support.empty());
    auto restored = *Model::FromState(state);
    ASSERT_TRUE(restored->AttachCertificateRows(original));
    restored->EnableCertificate(2000, 500, uint64_t{64} << 20);
    EXPECT_EQ(restored->ExportState().certificate, state.certificate);
    EXPECT_FALSE(restored->certificate()->due());
    for (size_t t = 1200; t < stream.size(); ++t) {
      learn(model.get(), stream[t]);
      learn(restored.get(), stream[t]);
    }
    const CertificateReport a = model->certificate()->Report(radius);
    const CertificateReport b = restored->certificate()->Report(radius);
    EXPECT_EQ(a.upper, b.upper);
    EXPECT_EQ(a.u, b.u);
    EXPECT_EQ(a.u_indices, b.u_indices);
    EXPECT_GE(a.upper, static_cast<double>(model->counters().updates));
  }
}

}  // namespace
}  // namespace perceptron
