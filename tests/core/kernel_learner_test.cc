// The kernel perceptron: the linear kernel repeats classic, rbf and polynomial
// kernels learn XOR-like data, the budget caps storage, sparse and dense inputs
// agree.
#include "core/kernel_learner.h"

#include <cmath>
#include <random>

#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::MakeStream;

TEST(KernelLearnerTest, LinearKernelMakesTheSameMistakesAsClassic) {
  uint64_t examples = 0, mistakes = 0;
  for (int k = 0; k < 100; ++k) {
    testing::StreamSpec spec;
    spec.dimension = 2 + k % 9;
    spec.bias = k % 2 == 0;
    spec.normalize = k % 3 != 0;
    spec.norm_spread = spec.normalize ? 1.0 : 3.0;
    spec.margin = 0;
    spec.noise = 0.05 * (k % 4);
    spec.length = 200;
    spec.seed = 900 + k;
    const testing::Stream s = MakeStream(spec);
    ModelConfig c = testing::StreamConfig(spec);
    auto classic = *Model::Create(c);
    c.algorithm = Algorithm::kKernel;
    auto kernel = *Model::Create(c);
    for (size_t t = 0; t < s.x.size(); ++t) {
      const Outcome a = *classic->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      const Outcome b = *kernel->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      ASSERT_EQ(a.mistake, b.mistake) << "stream " << k << " t " << t;
      ASSERT_EQ(a.updated, b.updated) << "stream " << k << " t " << t;
      ASSERT_NEAR(a.score, b.score, 1e-9 * (1 + std::abs(a.score)));
    }
    EXPECT_EQ(classic->counters(), kernel->counters());
    EXPECT_EQ(kernel->stats().figures.support_vectors,
              kernel->counters().updates);
    examples += s.x.size();
    mistakes += classic->counters().mistakes;
  }
  EXPECT_GT(mistakes, 1000u);
  EXPECT_EQ(examples, 20000u);
}

// XOR-like: four clusters around (+-1, +-1), label sign(x1 * x2).
struct Xor {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
};

Xor MakeXor(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 0.15);
  Xor data;
  for (size_t t = 0; t < n; ++t) {
    const double a = rng() % 2 ? 1 : -1, b = rng() % 2 ? 1 : -1;
    data.x.push_back({a + jitter(rng), b + jitter(rng)});
    data.y.push_back(a * b > 0 ? 1 : -1);
  }
  return data;
}

uint64_t MistakesInSecondHalf(Model& model, const Xor& data) {
  uint64_t late = 0;
  for (size_t t = 0; t < data.x.size(); ++t) {
    const Outcome o = *model.Learn(FeatureView::Dense(data.x[t]), data.y[t]);
    if (t >= data.x.size() / 2) late += o.mistake;
  }
  return late;
}

TEST(KernelLearnerTest, RbfKernelLearnsXorThatClassicCannot) {
  const Xor data = MakeXor(4000, 3);
  ModelConfig c;
  c.dimension = 2;
  auto classic = *Model::Create(c);
  c.algorithm = Algorithm::kKernel;
  c.kernel.type = KernelType::kRbf;
  c.kernel.sigma = 0.3;
  auto rbf = *Model::Create(c);
  c.kernel.type = KernelType::kPolynomial;
  c.kernel.degree = 2;
  c.kernel.c0 = 1;
  auto poly = *Model::Create(c);

  const uint64_t classic_late = MistakesInSecondHalf(*classic, data);
  const uint64_t rbf_late = MistakesInSecondHalf(*rbf, data);
  const uint64_t poly_late = MistakesInSecondHalf(*poly, data);
  // Classic keeps erring at a steady rate; the kernels stop.
  EXPECT_GT(classic_late, 500u);
  EXPECT_EQ(rbf_late, 0u);
  EXPECT_EQ(poly_late, 0u);
  EXPECT_LT(rbf->counters().mistakes, 50u);
  EXPECT_EQ(rbf->stats().figures.support_vectors, rbf->counters().updates);
  std::cout << "[ xor ] 4000 examples: classic " << classic->counters().mistakes
            << " mistakes (" << classic_late << " in the second half), rbf "
            << rbf->counters().mistakes << ", polynomial "
            << poly->counters().mistakes << "\n";
}

TEST(KernelLearnerTest, BudgetDropsTheOldestAndCountsThem) {
  const Xor data = MakeXor(500, 4);
  ModelConfig c;
  c.dimension = 2;
  c.algorithm = Algorithm::kKernel;
  c.kernel.type = KernelType::kRbf;
  c.kernel.sigma = 0.05;  // very local: many mistakes
  c.kernel_budget = 3;
  auto model = *Model::Create(c);
  for (size_t t = 0; t < data.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(data.x[t]), data.y[t]).ok());
    ASSERT_LE(model->stats().figures.support_vectors, 3u);
  }
  const Stats st = model->stats();
  EXPECT_EQ(st.figures.support_vectors, 3u);
  EXPECT_EQ(st.figures.dropped, st.counters.updates - 3);
  EXPECT_GT(st.figures.dropped, 0u);
  // Only the three newest mistakes remain.
  const LearnerState state = model->ExportState().learner;
  ASSERT_EQ(state.support.size(), 3u);
}

// The stored mistakes' bytes, counted in the store budget: a fixed cost for
// each and 12 bytes a non-zero, kept in step through drops by the budget, a
// journal replayed, a state imported, a reset and the model's end; and the
// room to store more refused once the budget is past its limit.
TEST(KernelLearnerTest, StoredMistakesAreCountedInTheStoreBudget) {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> normal;
  ModelConfig c;
  c.dimension = 40;
  c.algorithm = Algorithm::kKernel;
  c.kernel.type = KernelType::kRbf;
  c.kernel.sigma = 0.3;  // local: most examples are mistakes
  c.kernel_budget = 7;
  auto budget = std::make_shared<ByteBudget>(1 << 20, "the budget is taken");
  auto replica_budget = std::make_shared<ByteBudget>(1 << 20, "taken");
  auto model = *Model::Create(c);
  auto replica = *Model::Create(c);
  model->set_store_budget(budget);
  replica->set_store_budget(replica_budget);
  model->SetJournaling(true);
  // What the store holds, from the state: {stored, non-zeros}.
  const auto held = [](const Model& m) {
    uint64_t nonzeros = 0;
    const LearnerState state = m.ExportState().learner;
    for (const SupportVector& sv : state.support) nonzeros += sv.indices.size();
    return std::pair<uint64_t, uint64_t>{state.support.size(), nonzeros};
  };
  uint64_t fixed = 0;  // the cost of one stored mistake besides its non-zeros
  for (int t = 0; t < 200; ++t) {
    std::vector<uint32_t> idx;
    std::vector<double> val;
    for (uint32_t i = 0; i < 40; ++i) {
      if (rng() % 4 == 0) idx.push_back(i), val.push_back(normal(rng));
    }
    ASSERT_TRUE(
        model->Learn(FeatureView::Sparse(idx, val), t % 2 ? 1 : -1).ok());
    ASSERT_TRUE(replica->ApplyJournal(model->TakeJournal()).ok());
    const auto [stored, nonzeros] = held(*model);
    ASSERT_GT(stored, 0u);
    ASSERT_GE(budget->used(), 12 * nonzeros);
    if (fixed == 0) fixed = (budget->used() - 12 * nonzeros) / stored;
    ASSERT_EQ(budget->used(), stored * fixed + 12 * nonzeros) << t;
    ASSERT_EQ(replica_budget->used(), budget->used()) << t;
  }
  EXPECT_GT(model->stats().figures.dropped, 0u);
  EXPECT_GE(fixed, sizeof(SupportVector));
  const uint64_t used = budget->used();

  // A state imported counts what it holds, whether or not it fits; learning
  // that may store more is then refused.
  auto imported = *Model::FromState(model->ExportState());
  auto small = std::make_shared<ByteBudget>(used - 1, "the small one is taken");
  imported->set_store_budget(small);
  EXPECT_EQ(small->used(), used);
  EXPECT_EQ(imported->StoreRoom().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(imported->StoreRoom().message().find("the small one is taken"),
            std::string::npos);
  EXPECT_TRUE(model->StoreRoom().ok());
  imported->Reset();
  EXPECT_EQ(small->used(), 0u);
  EXPECT_TRUE(imported->StoreRoom().ok());
  // A model gone, or moved to no budget, gives its bytes back.
  replica.reset();
  EXPECT_EQ(replica_budget->used(), 0u);
  model->set_store_budget(nullptr);
  EXPECT_EQ(budget->used(), 0u);
}

TEST(KernelLearnerTest, SparseAndDenseInputsScoreAlike) {
  std::mt19937_64 rng(8);
  std::normal_distribution<double> normal;
  for (KernelType type :
       {KernelType::kLinear, KernelType::kPolynomial, KernelType::kRbf}) {
    ModelConfig c;
    c.dimension = 30;
    c.algorithm = Algorithm::kKernel;
    c.kernel.type = type;
    auto dense = *Model::Create(c);
    auto sparse = *Model::Create(c);
    for (int t = 0; t < 300; ++t) {
      std::vector<double> x(30, 0.0);
      std::vector<uint32_t> idx;
      std::vector<double> val;
      for (uint32_t i = 0; i < 30; ++i) {
        if (rng() % 3 == 0) x[i] = normal(rng);
      }
      for (uint32_t i = 30;
           i-- > 0;) {  // descending: sparse input in any order
        if (x[i] != 0) idx.push_back(i), val.push_back(x[i]);
      }
      const int y = x[0] + x[1] - x[2] > 0 ? 1 : -1;
      const Outcome a = *dense->Learn(FeatureView::Dense(x), y);
      const Outcome b = *sparse->Learn(FeatureView::Sparse(idx, val), y);
      ASSERT_NEAR(a.score, b.score, 1e-9 * (1 + std::abs(a.score)))
          << KernelTypeName(type);
      ASSERT_EQ(a.updated, b.updated);
    }
    EXPECT_GT(dense->counters().updates, 0u);
  }
}

}  // namespace
}  // namespace perceptron
