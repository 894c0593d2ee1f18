// The kernel model's certificate (docs/design.md section 2.7): the same dual
// over the kernel, R^2 = max k(x^, x^). Over random streams and kernels its
// lower value stays below its upper value, the upper value is the bound of the
// comparator it names (recomputed from scratch), and the kernel perceptron's
// updates never pass it; with the linear kernel it agrees with the linear
// solver; the tracker freezes and carries it over a restart like a linear
// model's; and scikit-learn's SVC (libsvm) finds the same optimum on
// breast_cancer.csv and a synthetic set (run live through Debian's Python).
#include "core/kernel_certificate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/candidate_sums.h"
#include "core/certificate.h"
#include "core/certificate_tracker.h"
#include "core/kernel_learner.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/breast_cancer.h"
#include "tests/core/peers/peer.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

// A labeled set that no hyperplane separates well: the label says whether x
// lies outside a sphere (with `noise` of the labels flipped).
struct Set {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
};

Set Sphere(uint32_t d, size_t n, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  Set s;
  const double median = static_cast<double>(d);  // E ||x||^2
  while (s.x.size() < n) {
    std::vector<double> x(d);
    double sq = 0;
    for (double& v : x) {
      v = normal(rng);
      sq += v * v;
    }
    if (std::abs(sq - median) < 0.05 * median) continue;
    int y = sq > median ? 1 : -1;
    if (unit(rng) < noise) y = -y;
    s.x.push_back(std::move(x));
    s.y.push_back(y);
  }
  return s;
}

ModelConfig KernelModel(uint32_t d, KernelType type) {
  ModelConfig c;
  c.dimension = d;
  c.algorithm = Algorithm::kKernel;
  c.kernel.type = type;
  c.kernel_budget = 1000000;  // nothing dropped: the theorem applies
  return c;
}

// The refresher's round for a kernel model, done in place.
struct KernelRefresher {
  KernelCertificate Round(Model* model,
                          const CertificateOptions& options = {}) {
    CertificateTracker* t = model->certificate();
    if (solver == nullptr || t->generation() != generation) {
      solver = std::make_unique<KernelCertificateSolver>(
          model->config().weight_dimension(), model->config().kernel);
      generation = t->generation();
    }
    std::vector<uint32_t> repeats;
    KeptRows rows = t->Take(&repeats);
    solver->Add(std::move(rows), repeats);
    const KernelCertificate c =
        solver->Solve(model->CertificateRadius(), options);
    KernelCandidates k = KernelCandidatesFrom(c, solver->rows());
    std::vector<double> sums =
        KernelHingeSums(solver->rows(), k.basis, solver->kernel(), k.vs);
    t->Install(k.vs, std::move(sums), c.lower, c.converged, solver->size(),
               generation, std::move(k.basis), nullptr, &solver->rows());
    return c;
  }
  std::unique_ptr<KernelCertificateSolver> solver;
  uint64_t generation = 0;
};

// R^2 ||v||^2 + 2 sum_t max(0, 1 - y_t v . phi(x^_t)) over the first n
// examples, for the comparator a report names (u = v / ||v||, gamma =
// 1/||v||), computed from scratch.
double BoundFromScratch(const ModelConfig& config, const Set& s, size_t n,
                        const CertificateReport& r, double radius) {
  const Preparer preparer(config);
  KeptRows rows;
  for (size_t t = 0; t < n; ++t) {
    rows.Add(*preparer.Prepare(FeatureView::Dense(s.x[t])), s.y[t]);
  }
  std::vector<double> v = r.coefficients;
  for (double& c : v) c /= r.gamma;
  KernelRows kernel(config.weight_dimension(), config.kernel);
  const double square = KernelSquares(r.basis, &kernel, {v})[0];
  const double sum = KernelHingeSums(rows, r.basis, &kernel, {v})[0];
  return radius * radius * square + 2 * sum;
}

TEST(KernelCertificateTest, PropertyOverRandomStreamsAndKernels) {
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<int> pick(0, 1000000);
  int streams = 0, converged = 0;
  for (int k = 0; k < 300; ++k) {
    const uint32_t d = 2 + pick(rng) % 11;
    const size_t n = 20 + pick(rng) % 200;
    const double noise = std::vector<double>{0, 0.05, 0.2}[pick(rng) % 3];
    ModelConfig config = KernelModel(
        d, std::vector<KernelType>{KernelType::kLinear, KernelType::kPolynomial,
                                   KernelType::kRbf}[pick(rng) % 3]);
    config.kernel.degree = 1 + pick(rng) % 3;
    config.kernel.c0 = std::vector<double>{0, 1, 2}[pick(rng) % 3];
    config.kernel.sigma = std::vector<double>{0.3, 1, 3}[pick(rng) % 3];
    config.bias = pick(rng) % 2;
    config.normalize = pick(rng) % 2;
    SCOPED_TRACE(::testing::Message()
                 << "stream " << k << " d=" << d << " n=" << n << " noise="
                 << noise << " kernel=" << static_cast<int>(config.kernel.type)
                 << " degree=" << config.kernel.degree
                 << " c0=" << config.kernel.c0
                 << " sigma=" << config.kernel.sigma << " bias=" << config.bias
                 << " normalize=" << config.normalize);
    const Set s = Sphere(d, n, noise, 100 + k);
    auto model = *Model::Create(config);
    model->EnableCertificate(/*limit=*/100000, /*slack=*/1000);
    KernelRefresher refresher;
    for (size_t t = 0; t < n; ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      if (pick(rng) % 10 == 0) refresher.Round(model.get());
      const CertificateReport r = *model->CertificateNow(false);
      if (!r.available) continue;
      ASSERT_LE(r.lower, r.upper);
      ASSERT_EQ(model->stats(false).figures.dropped, 0u);
      ASSERT_LE(static_cast<double>(model->counters().updates),
                r.upper * (1 + 1e-9));
    }
    CertificateOptions tight;
    tight.tolerance = 1e-6;
    tight.max_passes = 20000;
    const KernelCertificate c = refresher.Round(model.get(), tight);
    const CertificateReport r = *model->CertificateNow(true);
    ASSERT_TRUE(r.available);
    ++streams;
    converged += c.converged;
    ASSERT_LE(r.lower, r.upper);
    ASSERT_LE(static_cast<double>(model->counters().updates), r.upper);
    const double radius = model->CertificateRadius();
    EXPECT_NEAR(
        radius * radius,
        FeatureRadius(config.kernel, model->stats(false).bound.radius) *
            FeatureRadius(config.kernel, model->stats(false).bound.radius),
        0);
    // The candidates accumulated over the stream name a comparator whose
    // bound, recomputed from scratch, is the reported U.
    EXPECT_NEAR(BoundFromScratch(config, s, n, r, radius), r.upper,
                1e-9 * r.upper);
    if (c.converged) {
      EXPECT_LE(r.upper - r.lower, 1e-3 * r.upper);
    }
  }
  std::cout << "[ kernel certificate ] " << streams << " streams, " << converged
            << " converged to 1e-6\n";
  EXPECT_EQ(converged, streams);
}

// A row standing for c equal examples is solved as c copies of it, in the
// feature space as in the linear solver: the same optimum (its dual variable
// in [0, c C]), whatever the counts, and solved warm from a solution before
// its count grew as cold; its TD is over every example.
TEST(KernelCertificateTest, ARowsCountSolvesAsItsCopies) {
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    ModelConfig config = KernelModel(
        3, trial % 2 == 0 ? KernelType::kRbf : KernelType::kPolynomial);
    config.kernel.degree = 2;
    const Set s = Sphere(3, 30, 0.1, 40 + trial);
    const Preparer preparer(config);
    KernelCertificateSolver counted(config.weight_dimension(), config.kernel),
        copies(config.weight_dimension(), config.kernel);
    std::mt19937_64 rng(trial);
    std::vector<uint32_t> repeats;
    double radius = 0;
    KeptRows rows;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const Prepared p = *preparer.Prepare(FeatureView::Dense(s.x[t]));
      double square = 0;
      for (uint32_t i = 0; i < config.weight_dimension(); ++i) {
        square += p.dense_at(i) * p.dense_at(i);
      }
      radius = std::max(radius, std::sqrt(KernelValue(config.kernel, square,
                                                      square, square)));
      rows.Add(p, s.y[t]);
      const int times = 1 + static_cast<int>(rng() % 5);
      KeptRows copy;
      for (int k = 0; k < times; ++k) copy.Add(p, s.y[t]);
      copies.Add(std::move(copy));
      for (int k = 1; k < times; ++k) repeats.push_back(t);
    }
    counted.Add(std::move(rows));
    CertificateOptions tight;
    tight.tolerance = 1e-7;
    tight.max_passes = 100000;
    ASSERT_TRUE(counted.Solve(radius, tight).converged);
    counted.Add(KeptRows(), repeats);
    EXPECT_EQ(counted.rows().examples(), copies.size());
    const KernelCertificate a = counted.Solve(radius, tight);
    const KernelCertificate b = copies.Solve(radius, tight);
    ASSERT_TRUE(a.converged && b.converged);
    EXPECT_LE(a.lower, b.upper * (1 + 1e-12));
    EXPECT_LE(b.lower, a.upper * (1 + 1e-12));
    EXPECT_NEAR(a.upper, b.upper, 1e-6 * b.upper);
    const LeastDistance d = counted.SolveLeastDistance(a.gamma, tight);
    const LeastDistance e = copies.SolveLeastDistance(a.gamma, tight);
    EXPECT_NEAR(d.upper, e.upper, 1e-3 * e.upper + 1e-9);
  }
}

// Cyclic training of a kernel model (30 passes over 40 examples) keeps 40
// rows, each standing for its 30 copies: U bounds the updates at every
// example and is the solution over the 1,200 examples, and the model's state
// with its rows goes on bit for bit after a restart.
TEST(KernelCertificateTest, CyclicTrainingKeepsEachRowOnceWithItsCount) {
  const Set s = Sphere(3, 40, 0.1, 77);
  ModelConfig config = KernelModel(3, KernelType::kRbf);
  config.kernel.sigma = 1;
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/1000, /*slack=*/100);
  KernelRefresher refresher;
  constexpr size_t kPasses = 30;
  for (size_t pass = 0; pass < kPasses; ++pass) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      const CertificateReport r = *model->CertificateNow(false);
      if (r.available) {
        ASSERT_LE(static_cast<double>(model->counters().updates),
                  r.upper * (1 + 1e-9));
      }
    }
    if (pass % 4 == 1) refresher.Round(model.get());
  }
  CertificateOptions tight;
  tight.tolerance = 1e-7;
  tight.max_passes = 100000;
  ASSERT_TRUE(refresher.Round(model.get(), tight).converged);
  const double radius = model->CertificateRadius();
  const CertificateReport r = *model->CertificateNow(true);
  EXPECT_EQ(r.phase, CertificatePhase::kKeeping);
  EXPECT_EQ(r.kept_rows, s.x.size());
  EXPECT_EQ(r.kept, kPasses * s.x.size());
  EXPECT_EQ(r.solved, kPasses * s.x.size());
  EXPECT_EQ(refresher.solver->rows().examples(), kPasses * s.x.size());
  EXPECT_GE(r.upper, static_cast<double>(model->counters().updates));

  // The same examples as 1,200 rows: the same optimum.
  KernelCertificateSolver copies(config.weight_dimension(), config.kernel);
  const Preparer preparer(config);
  KeptRows all;
  for (size_t pass = 0; pass < kPasses; ++pass) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      all.Add(*preparer.Prepare(FeatureView::Dense(s.x[t])), s.y[t]);
    }
  }
  copies.Add(std::move(all));
  const KernelCertificate exact = copies.Solve(radius, tight);
  ASSERT_TRUE(exact.converged);
  EXPECT_NEAR(r.upper, exact.upper, 1e-6 * exact.upper);
  EXPECT_LE(r.lower, exact.upper * (1 + 1e-12));
  EXPECT_LE(exact.lower, r.upper * (1 + 1e-12));
  std::cout << "[ kernel certificate ] rbf, " << kPasses << " passes over "
            << s.x.size() << " examples: " << r.kept_rows << " rows for "
            << r.kept << " examples, U " << r.upper << " (over the copies "
            << exact.upper << "), L " << r.lower << ", updates "
            << model->counters().updates << "\n";

  // Restarted from its state and its rows (with their counts), it goes on
  // as the model does.
  auto restored = *Model::FromState(model->ExportState());
  std::optional<KeptRows> rows =
      model->certificate()->RowsNow(&refresher.solver->rows());
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->size(), s.x.size());
  ASSERT_TRUE(restored->AttachCertificateRows(*rows));
  restored->EnableCertificate(1000, 100);
  EXPECT_EQ(restored->ExportState().certificate,
            model->ExportState().certificate);
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    ASSERT_TRUE(restored->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  EXPECT_EQ(model->CertificateNow(false)->upper,
            restored->CertificateNow(false)->upper);
  EXPECT_EQ(restored->CertificateNow(false)->kept, (kPasses + 1) * s.x.size());
}

// A linear kernel model's examples of `s`, prepared, given to a linear solver
// and a kernel one; R is their largest norm.
struct BothSolvers {
  BothSolvers(const Set& s, const ModelConfig& config)
      : linear(config.weight_dimension()),
        kernel(config.weight_dimension(), config.kernel) {
    const Preparer preparer(config);
    KeptRows rows;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const Prepared p = *preparer.Prepare(FeatureView::Dense(s.x[t]));
      linear.Add(p, s.y[t]);
      rows.Add(p, s.y[t]);
      radius = std::max(radius, p.norm);
    }
    kernel.Add(std::move(rows));
  }
  CertificateSolver linear;
  KernelCertificateSolver kernel;
  double radius = 0;
};

TEST(KernelCertificateTest, TheLinearKernelAgreesWithTheLinearSolver) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Set s = Sphere(3 + seed % 5, 150, 0.1, seed);
    ModelConfig config = KernelModel(3 + seed % 5, KernelType::kLinear);
    config.normalize = seed % 2;
    BothSolvers both(s, config);
    CertificateSolver& linear = both.linear;
    KernelCertificateSolver& kernel = both.kernel;
    const double radius = both.radius;
    CertificateOptions tight;
    tight.tolerance = 1e-8;
    tight.max_passes = 100000;
    const Certificate a = linear.Solve(radius, tight);
    const KernelCertificate b = kernel.Solve(radius, tight);
    ASSERT_TRUE(a.converged && b.converged) << seed;
    EXPECT_NEAR(a.upper, b.upper, 1e-6 * a.upper) << seed;
    EXPECT_NEAR(a.lower, b.lower, 1e-6 * a.upper) << seed;
    EXPECT_NEAR(a.gamma, b.gamma, 1e-3 * a.gamma) << seed;
  }
}

// A solve asked to stop ends after the pass it was asked at, says so and
// converges nothing; solved again without the stop, each solver goes on from
// where it stopped to a solution that brackets the same optimum as a solver
// never stopped (linear and kernel solvers alike).
TEST(KernelCertificateTest, AStoppedSolveEndsThereAndTheNextGoesOn) {
  const Set s = Sphere(5, 400, 0.1, 3);
  const ModelConfig config = KernelModel(5, KernelType::kLinear);
  BothSolvers stopped(s, config), never_stopped(s, config);
  CertificateSolver& linear = stopped.linear;
  KernelCertificateSolver& kernel = stopped.kernel;
  const double radius = stopped.radius;
  int asked = 0;
  CertificateOptions stopping;
  stopping.stop = [&asked] { return ++asked == 3; };
  const Certificate a = linear.Solve(radius, stopping);
  EXPECT_TRUE(a.stopped);
  EXPECT_FALSE(a.converged);
  EXPECT_EQ(a.passes, 3);
  asked = 0;
  const KernelCertificate b = kernel.Solve(radius, stopping);
  EXPECT_TRUE(b.stopped);
  EXPECT_FALSE(b.converged);
  EXPECT_EQ(b.passes, 3);

  const Certificate a2 = linear.Solve(radius, {});
  const KernelCertificate b2 = kernel.Solve(radius, {});
  const Certificate never = never_stopped.linear.Solve(radius, {});
  ASSERT_TRUE(a2.converged && b2.converged && never.converged);
  EXPECT_FALSE(a2.stopped || b2.stopped || never.stopped);
  for (double upper : {a2.upper, b2.upper}) {
    EXPECT_LE(never.lower, upper * (1 + 1e-12));
    EXPECT_LE(upper, never.upper * (1 + 2e-4));
  }
}

// A stream ten times what a kernel model may keep: frozen at the limit with
// the exact certificate there, U valid at every example after; and its state,
// saved and restored (as over a restart), reports the same figures.
TEST(KernelCertificateTest, FreezesAndIsCarriedOverARestart) {
  const Set s = Sphere(4, 3000, 0.05, 11);
  ModelConfig config = KernelModel(4, KernelType::kRbf);
  config.kernel.sigma = 1;
  auto model = *Model::Create(config);
  const uint64_t limit = 300;
  model->EnableCertificate(limit, /*slack=*/100);
  KernelRefresher refresher;
  KernelCertificate exact;
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t % 40 == 39 && model->certificate()->due()) {
      const KernelCertificate c = refresher.Round(model.get());
      if (c.examples == limit) exact = c;
    }
    const CertificateReport r = *model->CertificateNow(false);
    if (t + 1 == 320) {
      ASSERT_EQ(r.phase, CertificatePhase::kFrozen);
      EXPECT_EQ(r.frozen_at, limit);
      ASSERT_EQ(exact.examples, limit);
      const CertificateReport with = *model->CertificateNow(true);
      EXPECT_NEAR(
          BoundFromScratch(config, s, t + 1, with, model->CertificateRadius()),
          r.upper, 1e-9 * r.upper);
    }
    if (r.available) {
      ASSERT_LE(static_cast<double>(model->counters().updates),
                r.upper * (1 + 1e-9));
    }
  }
  const CertificateReport r = *model->CertificateNow(true);
  EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(r.examples, s.x.size());
  EXPECT_NEAR(
      BoundFromScratch(config, s, s.x.size(), r, model->CertificateRadius()),
      r.upper, 1e-9 * r.upper);
  std::cout << "[ kernel certificate ] rbf, 3000 examples, limit " << limit
            << ": mistakes " << model->counters().mistakes << ", updates "
            << model->counters().updates << ", U " << r.upper << ", L "
            << r.lower << ", exact at the limit " << exact.upper << " (basis "
            << r.basis.size() << " rows)\n";

  auto restored = *Model::FromState(model->ExportState());
  restored->EnableCertificate(limit, 100);
  const CertificateReport back = *restored->CertificateNow(true);
  EXPECT_EQ(back.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(back.upper, r.upper);
  EXPECT_EQ(back.lower, r.lower);
  EXPECT_EQ(back.gamma, r.gamma);
  EXPECT_EQ(back.coefficients, r.coefficients);
  EXPECT_TRUE(back.basis == r.basis);
  // And it goes on accumulating the same way.
  const Set more = Sphere(4, 200, 0.05, 12);
  for (size_t t = 0; t < more.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(more.x[t]), more.y[t]).ok());
    ASSERT_TRUE(restored->Learn(FeatureView::Dense(more.x[t]), more.y[t]).ok());
  }
  EXPECT_EQ(restored->CertificateNow(false)->upper,
            model->CertificateNow(false)->upper);
}

// A basis row out of the model's dimension turns the certificate off, not
// the model.
TEST(KernelCertificateTest, ABadBasisTurnsTheCertificateOff) {
  const Set s = Sphere(3, 100, 0, 5);
  const ModelConfig config = KernelModel(3, KernelType::kRbf);
  auto model = *Model::Create(config);
  model->EnableCertificate(1000, 100);
  KernelRefresher refresher;
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  refresher.Round(model.get());
  ModelState state = model->ExportState();
  ASSERT_TRUE(state.certificate.has_value());
  ASSERT_GT(state.certificate->basis.size(), 0u);
  KeptRows bad;
  const std::vector<uint32_t> index = {0, 99};
  const std::vector<double> value = {1, 1};
  bad.Add(index, value, 1);
  for (size_t t = 1; t < state.certificate->basis.size(); ++t) {
    bad.Add(state.certificate->basis.indices(t),
            state.certificate->basis.values(t),
            state.certificate->basis.label(t));
  }
  state.certificate->basis = bad;
  auto restored = *Model::FromState(state);
  restored->EnableCertificate(1000, 100);
  const CertificateReport r = *restored->CertificateNow(false);
  EXPECT_EQ(r.phase, CertificatePhase::kOff);
  EXPECT_NE(r.reason.find("basis row 0"), std::string::npos) << r.reason;
  EXPECT_EQ(restored->counters().examples, model->counters().examples);
}

// scikit-learn's SVC fits an intercept; on the doubled set {(x^, y),
// (-x^, -y)} (its Gram matrix [[K, -K], [-K, K]], given precomputed) the best
// intercept is 0 by symmetry, and its objective with C/2 is exactly this
// certificate's P*(C). The script computes K itself with sklearn's kernels.
double Field(const std::string& out, const std::string& key) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string k, v;
    in >> k >> v;
    if (k == key) return std::strtod(v.c_str(), nullptr);
  }
  ADD_FAILURE() << key << " not in:\n" << out;
  return NAN;
}

void CheckAgainstSvc(const std::string& name, const ModelConfig& config,
                     const Set& s) {
  SCOPED_TRACE(name);
  const Preparer preparer(config);
  auto model = *Model::Create(config);
  KeptRows rows;
  // A directory of its own: another run of the suite may share TempDir().
  const testing::ScopedDir dir("kernel-svc");
  const std::string path = dir.path() + "/kernel_svc_rows.txt";
  {
    std::ofstream out(path);
    out.precision(17);
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      const Prepared p = *preparer.Prepare(FeatureView::Dense(s.x[t]));
      rows.Add(p, s.y[t]);
      out << s.y[t];
      for (uint32_t i = 0; i < config.weight_dimension(); ++i) {
        out << " " << p.dense_at(i);
      }
      out << '\n';
    }
  }
  KernelCertificateSolver solver(config.weight_dimension(), config.kernel);
  solver.Add(rows);
  CertificateOptions tight;
  tight.tolerance = 1e-6;
  tight.max_passes = 100000;
  const double radius = model->CertificateRadius();
  const KernelCertificate c = solver.Solve(radius, tight);
  const char* type = config.kernel.type == KernelType::kRbf          ? "rbf"
                     : config.kernel.type == KernelType::kPolynomial ? "poly"
                                                                     : "linear";
  std::ostringstream command;
  command.precision(17);
  command << PERCEPTRON_PYTHON << ' ' << PERCEPTRON_KERNEL_SVC_SCRIPT
          << " solve " << path << ' ' << type << ' ' << config.kernel.degree
          << ' ' << config.kernel.c0 << ' ' << config.kernel.sigma << " 2>&1";
  const std::string out = testing::RunPeer(command.str());
  const double r2 = Field(out, "r2");
  const double primal = Field(out, "primal");
  const double dual = Field(out, "dual");
  EXPECT_NEAR(radius * radius, r2, 1e-12 * r2);
  const double upper = c.upper / (2 * radius * radius);
  const double lower = c.lower / (2 * radius * radius);
  EXPECT_TRUE(c.converged);
  EXPECT_NEAR(upper, primal, 1e-3 * primal);
  // Any dual value is below any primal value.
  EXPECT_LE(lower, primal * (1 + 1e-9));
  EXPECT_LE(dual, upper * (1 + 1e-9));
  EXPECT_LE(static_cast<double>(model->counters().updates), c.upper);
  std::cout << "[ kernel certificate peer ] " << name << ": n=" << s.x.size()
            << " R^2=" << radius * radius
            << " mistakes=" << model->counters().mistakes << " U=" << c.upper
            << " L=" << c.lower << " gamma=" << c.gamma << " TD=" << c.td
            << " passes=" << c.passes << "; U/(2R^2)=" << upper << " vs libsvm "
            << primal << " (its dual " << dual << ")\n";
}

TEST(KernelCertificateTest, MatchesScikitLearnSvc) {
  const std::string csv =
      testing::RunPeer(std::string(PERCEPTRON_PYTHON) + ' ' +
                       PERCEPTRON_KERNEL_SVC_SCRIPT + " csv");
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  testing::ReadBreastCancer(csv.substr(0, csv.find('\n')), &x, &y);
  ASSERT_EQ(x.size(), 569u);
  Set cancer{x, y};
  ModelConfig rbf = KernelModel(30, KernelType::kRbf);
  rbf.normalize = true;
  rbf.kernel.sigma = 0.5;
  CheckAgainstSvc("breast_cancer, normalized, rbf sigma 0.5", rbf, cancer);
  ModelConfig poly = KernelModel(30, KernelType::kPolynomial);
  poly.normalize = true;
  poly.kernel.degree = 3;
  poly.kernel.c0 = 1;
  CheckAgainstSvc("breast_cancer, normalized, polynomial (x.x'+1)^3", poly,
                  cancer);
  const Set sphere = Sphere(5, 600, 0.05, 77);
  ModelConfig raw = KernelModel(5, KernelType::kRbf);
  raw.normalize = false;
  raw.kernel.sigma = 2;
  CheckAgainstSvc("sphere d=5, 5% noise, raw, rbf sigma 2", raw, sphere);
  ModelConfig quad = KernelModel(5, KernelType::kPolynomial);
  quad.normalize = false;
  quad.kernel.degree = 2;
  quad.kernel.c0 = 0;
  CheckAgainstSvc("sphere d=5, 5% noise, raw, polynomial (x.x')^2", quad,
                  sphere);
}

// The kernel's B* and TD*_gamma against cvxopt's QP and cone solvers
// (Debian's python3-cvxopt) posed in the feature space: the script computes
// the Gram matrix itself (sklearn.metrics.pairwise) and features Phi with
// Phi Phi^T = K from its eigenvectors. U and L bracket cvxopt's optimum, the
// least distance's upper and lower values bracket its TD*_gamma, and the
// comparator the least distance names has ||u|| <= 1 and the TD it claims,
// recomputed from scratch.
TEST(KernelCertificateTest, BracketsCvxoptsOptimaInTheFeatureSpace) {
  struct Case {
    ModelConfig config;
    Set set;
    double radius = 0;
    double gamma = 0;
  };
  std::vector<Case> cases;
  // A directory of its own: another run of the suite may share TempDir().
  const testing::ScopedDir dir("kernel-cvxopt");
  const std::string path = dir.path() + "/kernel_cvxopt_rows.txt";
  {
    std::ofstream out(path);
    out.precision(17);
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      Case c;
      const uint32_t d = 2 + seed % 5;
      const bool rbf = seed % 2 == 0;
      c.config =
          KernelModel(d, rbf ? KernelType::kRbf : KernelType::kPolynomial);
      c.config.normalize = seed % 3 != 0;
      c.config.bias = seed % 4 != 0;
      c.config.kernel.sigma = 0.5 + 0.25 * static_cast<double>(seed % 7);
      c.config.kernel.degree = 2 + static_cast<int>(seed % 2);
      c.config.kernel.c0 = static_cast<double>(seed % 3) / 2;
      c.set = Sphere(d, 20 + seed * 7 % 50, seed % 3 == 0 ? 0.0 : 0.1, seed);
      const Preparer preparer(c.config);
      std::vector<std::vector<double>> rows;
      for (const std::vector<double>& x : c.set.x) {
        const Prepared p = *preparer.Prepare(FeatureView::Dense(x));
        std::vector<double> row(c.config.weight_dimension());
        double square = 0;
        for (uint32_t i = 0; i < row.size(); ++i) {
          row[i] = p.dense_at(i);
          square += row[i] * row[i];
        }
        rows.push_back(std::move(row));
        c.radius = std::max(
            c.radius,
            std::sqrt(KernelValue(c.config.kernel, square, square, square)));
      }
      c.gamma = 0.1 * c.radius;
      out << "stream " << seed << ' ' << rows.size() << ' '
          << c.config.weight_dimension() << ' ' << c.radius << ' ' << c.gamma
          << ' ' << (rbf ? "rbf" : "poly") << ' ' << c.config.kernel.degree
          << ' ' << c.config.kernel.c0 << ' ' << c.config.kernel.sigma << '\n';
      for (size_t t = 0; t < rows.size(); ++t) {
        out << c.set.y[t];
        for (double v : rows[t]) out << ' ' << v;
        out << '\n';
      }
      cases.push_back(std::move(c));
    }
  }
  const std::string output =
      testing::RunPeer(std::string(PERCEPTRON_PYTHON) + ' ' +
                       PERCEPTRON_CVXOPT_SCRIPT + ' ' + path + " 2>&1");
  std::map<std::string, std::pair<std::string, std::string>> peer;
  {
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream in(line);
      std::string kind, k, a, b;
      in >> kind >> k >> a >> b;
      peer[kind + ' ' + k] = {a, b};
    }
  }
  int soft_solved = 0, soft_close = 0, td_solved = 0, td_close = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string k = std::to_string(i + 1);
    SCOPED_TRACE("stream " + k);
    const Preparer preparer(c.config);
    KeptRows rows;
    for (size_t t = 0; t < c.set.x.size(); ++t) {
      rows.Add(*preparer.Prepare(FeatureView::Dense(c.set.x[t])), c.set.y[t]);
    }
    KernelCertificateSolver solver(c.config.weight_dimension(),
                                   c.config.kernel);
    solver.Add(rows);
    const KernelCertificate cert = solver.Solve(c.radius, {1e-6, 100000, {}});
    const LeastDistance d =
        solver.SolveLeastDistance(c.gamma, {1e-5, 2000, {}});
    EXPECT_LE(d.lower, d.upper * (1 + 1e-12));
    // The comparator it names: in the unit ball, with the TD it claims.
    KernelRows kernel(c.config.weight_dimension(), c.config.kernel);
    double uu = 0, td = 0;
    std::vector<double> column;
    for (size_t t = 0; t < rows.size(); ++t) {
      kernel.Against(rows, rows, t, &column);
      double f = 0;
      for (size_t s = 0; s < rows.size(); ++s) f += d.u[s] * column[s];
      uu += d.u[t] * f;
      td += std::max(0.0, c.gamma - rows.label(t) * f);
    }
    EXPECT_LE(uu, 1 + 1e-9);
    EXPECT_NEAR(td, d.upper, 1e-9 * std::max(1.0, td));
    ASSERT_TRUE(peer.count("soft " + k) && peer.count("td " + k)) << output;
    const auto& [soft_primal, soft_dual] = peer["soft " + k];
    if (soft_primal != "none") {
      ++soft_solved;
      const double r2 = 2 * c.radius * c.radius;
      const double primal = std::strtod(soft_primal.c_str(), nullptr);
      const double dual = std::strtod(soft_dual.c_str(), nullptr);
      EXPECT_GE(cert.upper, r2 * dual * (1 - 1e-9));
      EXPECT_LE(cert.lower, r2 * primal * (1 + 1e-9));
      soft_close += std::abs(cert.upper - r2 * primal) <= 1e-3 * cert.upper;
    }
    const auto& [td_primal, td_dual] = peer["td " + k];
    if (td_primal != "none") {
      ++td_solved;
      const double primal = std::strtod(td_primal.c_str(), nullptr);
      const double dual = std::strtod(td_dual.c_str(), nullptr);
      const double scale = std::max(1.0, std::abs(primal));
      EXPECT_LE(d.lower, primal + 1e-9 * scale);
      EXPECT_GE(d.upper, dual - 1e-9 * scale);
      td_close += std::abs(d.upper - primal) <= 1e-4 * scale;
    }
  }
  std::cout << cases.size() << " kernel streams; cvxopt solved B* on "
            << soft_solved << ", U within 1e-3 of it on " << soft_close
            << "; TD*_gamma on " << td_solved << ", ours within 1e-4 on "
            << td_close << "\n";
  const int n = static_cast<int>(cases.size());
  EXPECT_GT(soft_solved, n * 8 / 10);
  EXPECT_GT(soft_close, soft_solved * 95 / 100);
  EXPECT_GT(td_solved, n * 8 / 10);
  EXPECT_GT(td_close, td_solved * 95 / 100);
}

}  // namespace
}  // namespace perceptron
