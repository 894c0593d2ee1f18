// A row met again in its place (a cycling stream, epochs over a file) takes
// the score it had against the same candidates instead of being scored again
// (CertificateTracker::Observe). The hinge sums are then those of scoring
// every example, bit for bit, through new candidates installed mid-cycle and
// rows met out of order, for dense, sparse, wide and multiclass rows: the
// reference is a frozen tracker, which keeps no rows and scores each example.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "core/candidate_sums.h"
#include "core/certificate_tracker.h"
#include "core/config.h"
#include "core/prepare.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

struct Shape {
  const char* name;
  uint32_t dimension;
  bool sparse;
  int classes;
};

TEST(CertificateRepeatsTest, RowsMetAgainSumAsIfScoredAgain) {
  for (const Shape& shape :
       {Shape{"dense", 30, false, 0}, Shape{"sparse", 30, true, 0},
        Shape{"wide", uint32_t{1} << 20, true, 0},
        Shape{"multiclass", 30, false, 4}}) {
    SCOPED_TRACE(shape.name);
    std::mt19937_64 rng(5);
    std::normal_distribution<double> normal;
    ModelConfig config;
    config.dimension = shape.dimension;
    config.bias = true;
    const Preparer preparer(config);
    const uint32_t wd = config.weight_dimension();
    constexpr size_t kRows = 300;
    std::vector<std::vector<uint32_t>> indices(kRows);
    std::vector<std::vector<double>> values(kRows);
    std::vector<int> labels(kRows);
    for (size_t t = 0; t < kRows; ++t) {
      if (shape.sparse) {
        std::set<uint32_t> at;
        while (at.size() < 12) at.insert(rng() % shape.dimension);
        indices[t].assign(at.begin(), at.end());
        for (size_t j = 0; j < at.size(); ++j) values[t].push_back(normal(rng));
      } else {
        for (uint32_t i = 0; i < shape.dimension; ++i) {
          values[t].push_back(normal(rng));
        }
      }
      labels[t] = shape.classes > 0 ? static_cast<int>(rng() % shape.classes)
                                    : (rng() % 2 ? 1 : -1);
    }
    auto prepare = [&](size_t t) {
      return *preparer.Prepare(shape.sparse
                                   ? FeatureView::Sparse(indices[t], values[t])
                                   : FeatureView::Dense(values[t]));
    };
    auto make = [&](uint64_t limit, uint64_t slack) {
      return std::make_unique<CertificateTracker>(
          limit, slack, UINT64_MAX, nullptr, std::nullopt, wd, shape.classes);
    };
    auto keeping = make(1000000, 1000000);
    for (size_t t = 0; t < kRows; ++t) keeping->Observe(prepare(t), labels[t]);
    const KeptRows taken = keeping->Take();
    ASSERT_EQ(taken.size(), kRows);
    // A wide model's candidates hold a value for each coordinate its rows use.
    std::shared_ptr<const CandidateSupport> support;
    size_t length = shape.classes > 0 ? size_t{wd} * shape.classes : wd;
    if (IsWide(wd)) {
      std::set<uint32_t> used;
      for (size_t t = 0; t < taken.size(); ++t) {
        for (uint32_t i : taken.indices(t)) used.insert(i);
      }
      support = CandidateSupport::Of({used.begin(), used.end()});
      length = support->size();
    }
    // v and two multiples of it (whose scores are v's times a power of two).
    auto candidates = [&] {
      std::vector<double> v(length);
      for (double& e : v) e = 0.3 * normal(rng);
      std::vector<std::vector<double>> vs{v, v, v};
      for (double& e : vs[1]) e *= 2;
      for (double& e : vs[2]) e *= 0.5;
      return vs;
    };
    const std::vector<double> zeros(3, 0.0);
    // A frozen tracker with candidates `vs` and zero sums.
    auto frozen = [&](const std::vector<std::vector<double>>& vs) {
      auto f = make(kRows, 1);
      for (size_t t = 0; t < kRows; ++t) f->Observe(prepare(t), labels[t]);
      f->Take();
      f->Install(vs, zeros, 0, /*converged=*/true, f->taken(), f->generation(),
                 {}, support);
      EXPECT_EQ(f->phase(), CertificatePhase::kFrozen);
      return f;
    };
    auto observe = [&](CertificateTracker* a, CertificateTracker* b,
                       const std::vector<size_t>& order) {
      for (size_t t : order) {
        const Prepared x = prepare(t);
        a->Observe(x, labels[t]);
        b->Observe(x, labels[t]);
      }
    };
    auto in_order = [](size_t from, size_t to) {
      std::vector<size_t> o;
      for (size_t t = from; t < to; ++t) o.push_back(t);
      return o;
    };

    const std::vector<std::vector<double>> a = candidates();
    keeping->Install(a, zeros, 0, /*converged=*/true, keeping->taken(),
                     keeping->generation(), {}, support);
    ASSERT_EQ(keeping->phase(), CertificatePhase::kKeeping);
    auto reference = frozen(a);
    // A cycle, 50 rows out of order, and the next cycle's first 70.
    std::vector<size_t> order = in_order(0, kRows);
    for (int j = 0; j < 50; ++j) order.push_back(rng() % kRows);
    for (size_t t : in_order(0, 70)) order.push_back(t);
    observe(keeping.get(), reference.get(), order);
    std::vector<double> sums = keeping->Save().sums;
    EXPECT_EQ(sums, reference->Save().sums);
    // Some hinge terms were 0 and others positive.
    EXPECT_GT(sums[0], 0);

    // New candidates mid-cycle: what was remembered is of the old ones.
    std::vector<uint32_t> repeats;
    keeping->Take(&repeats);
    EXPECT_EQ(repeats.size(), order.size());
    const std::vector<std::vector<double>> b = candidates();
    keeping->Install(b, zeros, 0, /*converged=*/true, keeping->taken(),
                     keeping->generation(), {}, support);
    ASSERT_EQ(keeping->Save().sums, zeros);
    reference = frozen(b);
    order = in_order(70, kRows);
    for (size_t t : in_order(0, kRows)) order.push_back(t);
    observe(keeping.get(), reference.get(), order);
    sums = keeping->Save().sums;
    EXPECT_EQ(sums, reference->Save().sums);
    EXPECT_GT(sums[0], 0);
    EXPECT_EQ(keeping->phase(), CertificatePhase::kKeeping);
  }
}

}  // namespace
}  // namespace perceptron
