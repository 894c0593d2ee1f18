// A model never holds, answers or journals a non-finite number (docs/design.md
// section 2, 5), whatever finite input it is given: random streams of extreme
// finite values (up to 1e308, every algorithm and kernel, bias and
// normalization on and off) of Learn, Issue, Reveal, Predict and Train. An
// operation either succeeds with finite answers or is refused with
// INVALID_ARGUMENT and changes nothing; after every operation the whole state
// is finite and rebuilds (the path recovery and import take), and every journal
// applied to a copy gives the same state.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/state_bits.h"

namespace perceptron {
namespace {

using testing::StateBits;

bool AllFinite(const std::vector<double>& v) {
  for (double x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// Every number of a state.
void ExpectFinite(const ModelState& s, const std::string& where) {
  EXPECT_TRUE(std::isfinite(s.td_gamma)) << where;
  EXPECT_TRUE(std::isfinite(s.radius)) << where;
  const LearnerState& l = s.learner;
  EXPECT_TRUE(AllFinite(l.weights)) << where;
  EXPECT_TRUE(std::isfinite(l.weight_norm_sq)) << where;
  EXPECT_TRUE(AllFinite(l.average_accumulator)) << where;
  for (const VotedVector& v : l.voted)
    EXPECT_TRUE(AllFinite(v.weights)) << where;
  for (const SupportVector& v : l.support) {
    EXPECT_TRUE(AllFinite(v.values) && std::isfinite(v.coefficient)) << where;
  }
  for (const PendingPrediction& p : s.pending) {
    EXPECT_TRUE(std::isfinite(p.score)) << where;
  }
}

void ExpectFinite(const Journal& j, const std::string& where) {
  EXPECT_TRUE(std::isfinite(j.td_gamma) && std::isfinite(j.radius)) << where;
  EXPECT_TRUE(AllFinite(j.learner.weights.values)) << where;
  EXPECT_TRUE(AllFinite(j.learner.average_accumulator.values)) << where;
  EXPECT_TRUE(std::isfinite(j.learner.weight_norm_sq)) << where;
  for (const VotedVector& v : j.learner.voted_added) {
    EXPECT_TRUE(AllFinite(v.weights)) << where;
  }
  for (const SupportVector& v : j.learner.support_added) {
    EXPECT_TRUE(AllFinite(v.values) && std::isfinite(v.coefficient)) << where;
  }
  for (const PendingPrediction& p : j.pending_added) {
    EXPECT_TRUE(std::isfinite(p.score)) << where;
  }
}

struct Rng {
  std::mt19937_64 gen;
  double Uniform(double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(gen);
  }
  int Int(int a, int b) {
    return std::uniform_int_distribution<int>(a, b)(gen);
  }
  bool Chance(double p) { return Uniform(0, 1) < p; }
  // Ordinary values, or extreme finite ones up to 1e308 of either sign.
  double Value() {
    const double sign = Chance(0.5) ? 1 : -1;
    if (Chance(0.5)) return sign * Uniform(0, 2);
    return sign * std::pow(10.0, Uniform(-300, 308));
  }
};

ModelConfig RandomConfig(Rng& r) {
  ModelConfig c;
  c.dimension = r.Int(1, 6);
  c.algorithm = static_cast<Algorithm>(r.Int(0, 4));
  c.eta = std::pow(10.0, r.Uniform(-100, 100));
  c.bias = r.Chance(0.6);
  c.bias_constant = r.Chance(0.5) ? 1 : std::pow(10.0, r.Uniform(-100, 100));
  c.normalize = c.algorithm == Algorithm::kMargin || r.Chance(0.5);
  if (c.algorithm == Algorithm::kMargin || r.Chance(0.5)) {
    c.gamma = std::pow(10.0, r.Uniform(-100, 0));
  }
  if (c.gamma && r.Chance(0.7)) {
    c.comparator.assign(c.dimension, 0);
    // Extreme too, below the norm's overflow (which CreateModel refuses).
    for (double& v : c.comparator) v = r.Value() * 1e-155;
    c.comparator[0] = 1;  // never zero
  }
  c.max_voted_vectors = 4;
  if (c.algorithm == Algorithm::kKernel) {
    c.kernel.type = static_cast<KernelType>(r.Int(0, 2));
    c.kernel.degree = r.Int(1, kMaxPolynomialDegree);
    c.kernel.c0 = r.Uniform(0, kMaxKernelOffset);
    c.kernel.sigma = std::pow(10.0, r.Uniform(-100, 100));
    c.kernel_budget = 8;
  }
  return c;
}

TEST(FiniteTest, ExtremeFiniteInputsNeverMakeANonFiniteNumber) {
  Rng r{std::mt19937_64(20261122)};
  int streams = 0, ops = 0, refused = 0, ok = 0;
  for (int stream = 0; stream < 2000; ++stream) {
    const ModelConfig config = RandomConfig(r);
    absl::StatusOr<std::unique_ptr<Model>> created = Model::Create(config);
    ASSERT_TRUE(created.ok()) << created.status();
    Model& model = **created;
    model.SetJournaling(true);
    std::unique_ptr<Model> replica = *Model::Create(config);
    ++streams;
    std::vector<uint64_t> issued;
    for (int step = 0; step < 120; ++step) {
      const std::string where =
          "stream " + std::to_string(stream) + " step " + std::to_string(step);
      std::vector<double> x(config.dimension);
      for (double& v : x) v = r.Value();
      const int y = r.Chance(0.5) ? 1 : -1;
      const std::string before = StateBits(model.ExportState());
      absl::Status status;
      const int op = r.Int(0, 9);
      if (op <= 4) {
        absl::StatusOr<Outcome> o = model.Learn(FeatureView::Dense(x), y);
        status = o.status();
        if (o.ok()) {
          EXPECT_TRUE(std::isfinite(o->score)) << where;
        }
      } else if (op <= 6) {
        absl::StatusOr<Issued> i = model.Issue(FeatureView::Dense(x), step);
        status = i.status();
        if (i.ok()) {
          EXPECT_TRUE(std::isfinite(i->score)) << where;
          issued.push_back(i->prediction_id);
        }
      } else if (op == 7 && !issued.empty()) {
        const size_t k = r.Int(0, static_cast<int>(issued.size()) - 1);
        absl::StatusOr<Outcome> o = model.Reveal(issued[k], y);
        status = o.status();
        if (o.ok()) {
          EXPECT_TRUE(std::isfinite(o->score)) << where;
          issued.erase(issued.begin() + k);
        }
      } else if (op == 8) {
        absl::StatusOr<Prediction> p = model.Predict(FeatureView::Dense(x));
        status = p.status();
        if (p.ok()) {
          EXPECT_TRUE(std::isfinite(p->score)) << where;
        }
      } else {
        std::vector<std::vector<double>> xs(
            3, std::vector<double>(config.dimension));
        std::vector<LabeledExample> data;
        for (auto& v : xs) {
          for (double& e : v) e = r.Value();
          data.push_back({FeatureView::Dense(v), r.Chance(0.5) ? 1 : -1});
        }
        TrainOptions options;
        options.max_epochs = 3;
        status = model.Train(data, options).status();
      }
      ++ops;
      if (status.ok()) {
        ++ok;
      } else {
        ++refused;
        // A refused item: its own error, and nothing changed.
        ASSERT_TRUE(status.code() == absl::StatusCode::kInvalidArgument ||
                    status.code() == absl::StatusCode::kNotFound)
            << where << ": " << status;
        ASSERT_EQ(StateBits(model.ExportState()), before)
            << where << ": " << status;
      }
      const ModelState state = model.ExportState();
      ExpectFinite(state, where);
      const Stats stats = model.stats();
      EXPECT_TRUE(std::isfinite(stats.weight_norm) ||
                  config.algorithm == Algorithm::kKernel)
          << where;
      if (stats.bound.bound_available) {
        EXPECT_TRUE(std::isfinite(stats.bound.bound)) << where;
      }
      EXPECT_TRUE(std::isfinite(stats.bound.td_gamma)) << where;
      // What recovery and import do: the state rebuilds.
      ASSERT_TRUE(Model::FromState(state).ok()) << where;
      // What the log holds: finite, and replayed it gives the same state.
      const Journal journal = model.TakeJournal();
      ExpectFinite(journal, where);
      ASSERT_TRUE(replica->ApplyJournal(journal).ok()) << where;
      ASSERT_EQ(StateBits(replica->ExportState()), StateBits(state)) << where;
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("%d streams, %d operations: %d succeeded, %d refused\n", streams,
              ops, ok, refused);
  EXPECT_GT(refused, ops / 20);  // the extremes were reached
  EXPECT_GT(ok, ops / 4);
}

// Model::LearnDense on the same extremes answers each row as Learn does: the
// same errors (the learner's refusals among them), the same outcomes, the same
// state after each batch.
TEST(FiniteTest, LearnDenseAnswersExtremeInputsAsLearnDoes) {
  Rng r{std::mt19937_64(20261126)};
  int rows = 0, refused = 0, refused_by_learner = 0;
  for (int stream = 0; stream < 2000; ++stream) {
    const ModelConfig config = RandomConfig(r);
    std::unique_ptr<Model> batch = *Model::Create(config);
    std::unique_ptr<Model> single = *Model::Create(config);
    for (int b = 0; b < 12; ++b) {
      const size_t n = r.Int(0, 12);
      std::vector<double> values(n * config.dimension);
      for (double& v : values) v = r.Value();
      std::vector<int> labels(n);
      for (int& y : labels) y = r.Chance(0.5) ? 1 : -1;
      const std::string where =
          "stream " + std::to_string(stream) + " batch " + std::to_string(b);
      std::vector<absl::StatusOr<Outcome>> answers;
      ASSERT_TRUE(
          batch
              ->LearnDense(values, labels,
                           [&](size_t, const absl::StatusOr<Outcome>& o) {
                             answers.push_back(o);
                           })
              .ok())
          << where;
      ASSERT_EQ(answers.size(), n) << where;
      for (size_t i = 0; i < n; ++i) {
        const absl::StatusOr<Outcome> o = single->Learn(
            FeatureView::Dense(absl::MakeConstSpan(values).subspan(
                i * config.dimension, config.dimension)),
            labels[i]);
        ++rows;
        ASSERT_EQ(answers[i].status(), o.status()) << where << " row " << i;
        if (!o.ok()) {
          ++refused;
          refused_by_learner +=
              absl::StrContains(o.status().message(), "would make");
          continue;
        }
        EXPECT_EQ(std::bit_cast<uint64_t>(answers[i]->score),
                  std::bit_cast<uint64_t>(o->score))
            << where << " row " << i;
        EXPECT_EQ(answers[i]->mistake, o->mistake) << where << " row " << i;
        EXPECT_EQ(answers[i]->updated, o->updated) << where << " row " << i;
      }
      ASSERT_EQ(StateBits(batch->ExportState()),
                StateBits(single->ExportState()))
          << where;
    }
  }
  std::printf("%d rows: %d refused, %d of them by the learner\n", rows, refused,
              refused_by_learner);
  EXPECT_GT(refused_by_learner, 0);  // the learner's refusals were reached
}

}  // namespace
}  // namespace perceptron
