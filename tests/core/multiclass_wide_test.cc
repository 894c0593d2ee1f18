// The certificate of a wide multiclass model (docs/design.md sections 2.7 and
// 2.8): past the width at which k dense vectors of the weight dimension fit,
// the Crammer-Singer solver and the candidates work over the coordinates the
// kept rows use, as the binary certificate does.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "core/certificate_tracker.h"
#include "core/model.h"
#include "core/multiclass_certificate.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

struct Example {
  std::vector<uint32_t> indices;
  std::vector<double> values;
  int label = 0;
};

// Sparse examples of `classes` classes over `used` coordinates of a model of
// 2^bits: eight non-zeros each, the class the best of hidden class vectors
// but for a tenth of them.
std::vector<Example> SparseStream(uint32_t bits, int classes, size_t used_count,
                                  size_t length, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  std::vector<uint32_t> used(used_count);
  for (uint32_t& i : used) i = random() % (uint32_t{1} << bits);
  std::vector<std::vector<double>> hidden(classes,
                                          std::vector<double>(used.size()));
  for (auto& h : hidden) {
    for (double& v : h) v = normal(random);
  }
  std::vector<Example> stream(length);
  for (Example& e : stream) {
    std::map<uint32_t, double> x;
    std::vector<double> score(classes, 0.0);
    for (int n = 0; n < 8; ++n) {
      const size_t j = random() % used.size();
      const double v = normal(random);
      x[used[j]] += v;
      for (int r = 0; r < classes; ++r) score[r] += hidden[r][j] * v;
    }
    for (const auto& [i, v] : x) {
      e.indices.push_back(i);
      e.values.push_back(v);
    }
    e.label = static_cast<int>(std::max_element(score.begin(), score.end()) -
                               score.begin());
    if (random() % 10 == 0) e.label = static_cast<int>(random() % classes);
  }
  return stream;
}

// A wide solver's figures are, bit for bit, those of the dense solver given
// the same rows at their positions; its rows at their coordinates again are
// those it was given.
TEST(MulticlassCertificateTest, AWideSolverIsTheDenseSolverOverPositions) {
  const int k = 5;
  const uint32_t d = uint32_t{1} << 20;
  const std::vector<Example> stream = SparseStream(20, k, 500, 400, 3);
  KeptRows rows;
  double radius = 0;
  for (const Example& e : stream) {
    double square = 0;
    for (double v : e.values) square += v * v;
    radius = std::max(radius, std::sqrt(square));
    rows.Add(e.indices, e.values, e.label);
  }
  MulticlassCertificateSolver wide(k, d);
  ASSERT_TRUE(wide.wide());
  wide.Add(rows);
  const std::vector<uint32_t>& coordinates = wide.coordinates();
  EXPECT_LE(coordinates.size(), 500u);
  MulticlassCertificateSolver dense(k,
                                    static_cast<uint32_t>(coordinates.size()));
  ASSERT_FALSE(dense.wide());
  dense.Add(wide.rows());
  const MulticlassCertificate a = wide.Solve(radius, {});
  const MulticlassCertificate b = dense.Solve(radius, {});
  ASSERT_TRUE(a.converged);
  EXPECT_GT(a.upper, 0);
  EXPECT_EQ(a.upper, b.upper);
  EXPECT_EQ(a.lower, b.lower);
  EXPECT_EQ(a.u, b.u);
  EXPECT_EQ(a.u.size(), k * coordinates.size());
  EXPECT_EQ(a.candidates, b.candidates);
  EXPECT_EQ(a.sums, b.sums);
  EXPECT_TRUE(wide.OriginalRows() == rows);
  EXPECT_LT(wide.bytes(), size_t{1} << 20) << "not in proportion to d";
}

// The summed candidate's values kept by position (k side by side) give the
// class scores bit for bit as the k blocks do, on prepared examples and on
// kept rows; a candidate scored from another (a multiple) keeps no copy.
TEST(MulticlassCertificateTest, ValuesKeptByPositionScoreAsTheBlocksDo) {
  const int k = 7;
  const std::vector<Example> stream = SparseStream(20, k, 300, 200, 8);
  ModelConfig config;
  config.hash_bits = 20;
  config.dimension = uint32_t{1} << 20;
  for (int r = 0; r < k; ++r) config.classes.push_back("c" + std::to_string(r));
  const Preparer preparer(config);
  std::vector<uint32_t> coordinates;
  for (const Example& e : stream) {
    for (uint32_t i : e.indices) coordinates.push_back(i);
  }
  std::sort(coordinates.begin(), coordinates.end());
  coordinates.erase(std::unique(coordinates.begin(), coordinates.end()),
                    coordinates.end());
  coordinates.push_back(config.weight_dimension() - 1);  // the bias
  std::mt19937_64 random(4);
  std::normal_distribution<double> normal;
  std::vector<double> v(coordinates.size() * k);
  for (double& e : v) e = normal(random);
  std::vector<double> half(v.size());
  for (size_t i = 0; i < v.size(); ++i) half[i] = 0.5 * v[i];
  const std::vector<std::vector<double>> vs = {v, half};
  const auto blocks = CandidateSupport::Of(coordinates);
  const auto by_position =
      CandidateSupport::Of(coordinates, &vs, config.weight_dimension(), k);
  EXPECT_GE(by_position->bytes(), blocks->bytes() + v.size() * sizeof(double));
  EXPECT_LT(by_position->bytes(),
            blocks->bytes() + 2 * v.size() * sizeof(double));
  KeptRows rows;
  for (const Example& e : stream) {
    const Prepared x =
        *preparer.Prepare(FeatureView::Sparse(e.indices, e.values));
    rows.Add(x, e.label);
    double a[k], b[k];
    blocks->ClassScores(vs, 0, k, x, a);
    by_position->ClassScores(vs, 0, k, x, b);
    for (int r = 0; r < k; ++r) ASSERT_EQ(a[r], b[r]);
    ASSERT_NE(a[0], 0);
  }
  for (size_t t = 0; t < rows.size(); ++t) {
    double a[k], b[k];
    blocks->ClassScores(vs, 0, k, rows, t, a);
    by_position->ClassScores(vs, 0, k, rows, t, b);
    for (int r = 0; r < k; ++r) ASSERT_EQ(a[r], b[r]);
  }
  EXPECT_EQ(ClassHingeSums(rows, vs, k, *blocks),
            ClassHingeSums(rows, vs, k, *by_position));
}

// A multiclass model of 2^20 and 2^24 coordinates (hashed names) keeps its
// certificate: U bounds the updates at every example, the solution equals
// the dense solver's over the rows' positions, the scores the tracker sums
// by coordinate equal those summed over positions, the comparator comes as
// its non-zeros at the k vectors' coordinates, memory is in proportion to the
// coordinates used, and a state carries over bit for bit.
TEST(MulticlassCertificateTest, AWideMulticlassModelKeepsItsCertificate) {
  for (const uint32_t bits : {20u, 24u}) {
    SCOPED_TRACE(bits);
    const int k = 4;
    ModelConfig config;
    config.hash_bits = bits;
    config.dimension = uint32_t{1} << bits;
    for (int r = 0; r < k; ++r)
      config.classes.push_back("c" + std::to_string(r));
    const uint32_t w = config.weight_dimension();
    const std::vector<Example> stream = SparseStream(bits, k, 2000, 1000, bits);
    auto model = *Model::Create(config);
    model->EnableCertificate(2000, 500, uint64_t{64} << 20);
    ASSERT_TRUE(IsWide(w));
    MulticlassCertificateSolver solver(k, w);
    ASSERT_TRUE(solver.wide());
    auto round = [&] {
      CertificateTracker* t = model->certificate();
      std::vector<uint32_t> repeats;
      solver.Add(t->Take(&repeats), repeats);
      MulticlassCertificate c = solver.Solve(model->CertificateRadius(), {});
      t->Install(
          c.candidates, c.sums, c.lower, c.converged, solver.size(),
          t->generation(), KeptRows(),
          CandidateSupport::Of(solver.coordinates(), &c.candidates, w, k),
          &solver.rows());
      return c;
    };
    for (size_t t = 0; t < 900; ++t) {
      const Example& e = stream[t];
      ASSERT_TRUE(
          model->Learn(FeatureView::Sparse(e.indices, e.values), e.label).ok());
      if (t % 150 == 149) round();
      const CertificateReport r =
          model->certificate()->Report(model->CertificateRadius(), false);
      ASSERT_NE(r.phase, CertificatePhase::kOff) << r.reason;
      if (r.available) {
        ASSERT_GE(r.upper, static_cast<double>(model->counters().updates));
      }
    }
    MulticlassCertificate c;
    do {
      c = round();
    } while (!c.converged);
    // Examples after the solution: the tracker scores them by coordinate.
    for (size_t t = 900; t < stream.size(); ++t) {
      const Example& e = stream[t];
      ASSERT_TRUE(
          model->Learn(FeatureView::Sparse(e.indices, e.values), e.label).ok());
    }
    const double radius = model->CertificateRadius();
    const CertificateReport r = model->certificate()->Report(radius);
    ASSERT_TRUE(r.available) << r.reason;
    EXPECT_EQ(r.examples, stream.size());
    EXPECT_EQ(r.solved, 900u);
    EXPECT_GE(r.upper, static_cast<double>(model->counters().updates));
    EXPECT_LE(r.lower, r.upper);
    EXPECT_LT(r.bytes, size_t{2} << 20) << "not in proportion to d";
    // u: k blocks over the coordinates used, class r's coordinate i at
    // r W + i.
    const std::vector<uint32_t>& coordinates = solver.coordinates();
    ASSERT_EQ(r.u.size(), k * coordinates.size());
    ASSERT_EQ(r.u_indices.size(), r.u.size());
    for (int cl = 0; cl < k; ++cl) {
      for (size_t p = 0; p < coordinates.size(); p += 37) {
        EXPECT_EQ(r.u_indices[cl * coordinates.size() + p],
                  coordinates[p] + uint64_t(cl) * w);
      }
    }
    // The bound over every example, summed here over the rows at their
    // positions with the solution's k vectors (the candidates are its
    // multiples; the tracker summed the last 100 by coordinate).
    KeptRows all = solver.rows();
    {
      KeptRows later;
      const Preparer preparer(config);
      for (size_t t = 900; t < stream.size(); ++t) {
        const Example& e = stream[t];
        later.Add(*preparer.Prepare(FeatureView::Sparse(e.indices, e.values)),
                  e.label);
      }
      // Positions for the later rows' coordinates: those in the support,
      // and a fresh one (its values 0) for any other.
      std::map<uint32_t, uint32_t> position;
      for (size_t p = 0; p < coordinates.size(); ++p) {
        position[coordinates[p]] = static_cast<uint32_t>(p);
      }
      const uint32_t outside = static_cast<uint32_t>(coordinates.size());
      for (size_t t = 0; t < later.size(); ++t) {
        std::vector<uint32_t> at;
        for (uint32_t i : later.indices(t)) {
          auto it = position.find(i);
          at.push_back(it == position.end() ? outside : it->second);
        }
        std::vector<double> values(later.values(t).begin(),
                                   later.values(t).end());
        // Positions must be distinct within a row: outside ones merge.
        std::map<uint32_t, double> merged;
        for (size_t j = 0; j < at.size(); ++j) merged[at[j]] += values[j];
        std::vector<uint32_t> mi;
        std::vector<double> mv;
        for (const auto& [i, v] : merged) {
          if (i == outside) continue;
          mi.push_back(i);
          mv.push_back(v);
        }
        all.Add(mi, mv, later.label(t));
      }
    }
    double best = INFINITY;
    for (const std::vector<double>& v : c.candidates) {
      double square = 0;
      for (double x : v) square += x * x;
      const double sum = ClassHingeSums(all, {v}, k)[0];
      best = std::min(best, 2 * radius * radius * square + 2 * sum);
    }
    EXPECT_NEAR(r.upper, best, 1e-9 * best);

    // Carried over a state: the same figures.
    const ModelState state = model->ExportState();
    ASSERT_TRUE(state.certificate.has_value());
    EXPECT_FALSE(state.certificate->support.empty());
    auto restored = *Model::FromState(state);
    restored->EnableCertificate(2000, 500, uint64_t{64} << 20);
    const CertificateReport again =
        restored->certificate()->Report(restored->CertificateRadius());
    EXPECT_EQ(again.upper, r.upper);
    EXPECT_EQ(again.lower, r.lower);
    EXPECT_EQ(again.u, r.u);
    EXPECT_EQ(again.u_indices, r.u_indices);
  }
}

// A wide multiclass model counts each coordinate its kept rows use as
// WideCoordinateBytes(k) (96 k + 56 bytes) against its limit, as the first
// row that uses it is kept: the rows kept before the limit are those the test
// counts itself, and the limit's reason names its flag.
TEST(MulticlassCertificateTest,
     AWideMulticlassModelsLimitCountsItsCoordinates) {
  const int k = 6;
  ModelConfig config;
  config.hash_bits = 20;
  config.dimension = uint32_t{1} << 20;
  for (int r = 0; r < k; ++r) config.classes.push_back("c" + std::to_string(r));
  const uint32_t w = config.weight_dimension();
  const std::vector<Example> stream = SparseStream(20, k, 20000, 3000, 11);
  EXPECT_EQ(CertificateTracker::WideCoordinateBytes(k), uint64_t{96 * k + 56});
  constexpr uint64_t kLimitBytes = uint64_t{1} << 20;
  uint64_t want = 0;
  {
    std::map<uint32_t, bool> used;
    uint64_t bytes = 0;
    while (bytes < kLimitBytes && want < stream.size()) {
      std::vector<uint32_t> at = stream[want].indices;
      at.push_back(w - 1);  // the bias
      uint64_t fresh = 0;
      for (uint32_t i : at) fresh += used.emplace(i, true).second;
      bytes += CertificateTracker::RowBytes(at.size()) +
               fresh * CertificateTracker::WideCoordinateBytes(k);
      ++want;
    }
    ASSERT_LT(want, stream.size() / 2);
  }
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100000, /*slack=*/100000, kLimitBytes);
  for (const Example& e : stream) {
    ASSERT_TRUE(
        model->Learn(FeatureView::Sparse(e.indices, e.values), e.label).ok());
  }
  const CertificateReport r =
      model->certificate()->Report(model->CertificateRadius());
  EXPECT_EQ(r.phase, CertificatePhase::kFreezing) << r.reason;
  EXPECT_EQ(r.kept_rows, want);
  EXPECT_NE(r.reason.find("perceptrond --certificate_model_mb"),
            std::string::npos)
      << r.reason;
}

}  // namespace
}  // namespace perceptron
