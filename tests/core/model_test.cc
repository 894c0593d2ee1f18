// The model: predict-then-reveal (docs/design.md section 2, 2), cyclic training
// (2.3, the worked example of cyclic training), counters, bad input (6) and
// rebuilding from state (2.5, 5).
#include "core/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/byte_budget.h"
#include "core/learner.h"
#include "core/prepare.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/drivers.h"
#include "tests/core/state_bits.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::Driver;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::StateBits;
using testing::Variant;
using testing::Variants;

FeatureView D(const std::vector<double>& v) { return FeatureView::Dense(v); }

ModelConfig Dim(uint32_t d) {
  ModelConfig c;
  c.dimension = d;
  return c;
}

ModelConfig Plain(uint32_t d) {
  ModelConfig c;
  c.dimension = d;
  c.bias = false;
  c.normalize = false;
  return c;
}

TEST(ModelTest,
     Seed002CyclicTrainingEndsAtTwoFourAfterFourUpdatesInThreePasses) {
  auto model = *Model::Create(Plain(2));
  const std::vector<std::vector<double>> x = {
      {-2, 0}, {0, -2}, {-2, 2}, {2, 2}};
  const int y[] = {-1, -1, 1, 1};
  std::vector<LabeledExample> data;
  for (int i = 0; i < 4; ++i) data.push_back({D(x[i]), y[i]});
  std::vector<std::vector<double>> seen;
  std::vector<std::pair<uint32_t, size_t>> where;
  TrainOptions options;
  options.on_example = [&](uint32_t epoch, size_t index, const Outcome& o) {
    if (!o.updated) return;
    seen.emplace_back(model->weights().begin(), model->weights().end());
    where.emplace_back(epoch, index);
  };
  absl::StatusOr<TrainResult> r = model->Train(data, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(seen, ElementsAre(ElementsAre(2, 0), ElementsAre(2, 2),
                                ElementsAre(0, 4), ElementsAre(2, 4)));
  // Pass 1 updates on the first three points, pass 2 on the first, pass 3 is
  // clean.
  EXPECT_THAT(where, ElementsAre(std::pair<uint32_t, size_t>(1, 0),
                                 std::pair<uint32_t, size_t>(1, 1),
                                 std::pair<uint32_t, size_t>(1, 2),
                                 std::pair<uint32_t, size_t>(2, 0)));
  EXPECT_EQ(r->updates, 4u);
  EXPECT_EQ(r->epochs, 3u);
  EXPECT_TRUE(r->converged);
  EXPECT_THAT(model->weights(), ElementsAre(2, 4));
  EXPECT_EQ(model->counters().examples, 12u);
  EXPECT_EQ(model->counters().updates, 4u);
}

TEST(ModelTest, TrainStopsAtMaxEpochsOnInseparableData) {
  auto model = *Model::Create(Plain(1));
  const std::vector<double> a = {1};
  const std::vector<LabeledExample> data = {{D(a), 1}, {D(a), -1}};
  TrainOptions options;
  options.max_epochs = 7;
  absl::StatusOr<TrainResult> r = model->Train(data, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->epochs, 7u);
  EXPECT_FALSE(r->converged);
  EXPECT_EQ(r->updates, 14u);
}

TEST(ModelTest, FirstExampleIsAlwaysAMistakeAndTiesPredictPlusOne) {
  auto model = *Model::Create(Dim(3));
  absl::StatusOr<Prediction> p = model->Predict(D({1, 2, 3}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->score, 0);
  EXPECT_EQ(p->label, 1);
  absl::StatusOr<Outcome> o = model->Learn(D({1, 2, 3}), 1);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->mistake);  // y * 0 <= 0, although the label +1 was predicted
  EXPECT_TRUE(o->updated);
  EXPECT_EQ(o->predicted, 1);
}

TEST(ModelTest, BiasAndNormalizationPrepareAsDesigned) {
  ModelConfig c;
  c.dimension = 2;
  c.bias_constant = 2;
  auto model = *Model::Create(c);
  ASSERT_TRUE(model->Learn(D({3, 6}), 1).ok());
  // x^ = [3, 6, 2] / 7.
  EXPECT_THAT(model->weights(), ElementsAre(3.0 / 7, 6.0 / 7, 2.0 / 7));
  EXPECT_EQ(model->stats().bound.radius, 1.0);
}

TEST(ModelTest,
     DelayedRevealIsJudgedOnTheIssuedScoreAndLearnsOnCurrentWeights) {
  auto model = *Model::Create(Plain(2));
  // Issued at w = 0: score 0, a mistake whatever the label.
  absl::StatusOr<Issued> early = model->Issue(D({1, 0}), 0);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->score, 0);
  ASSERT_TRUE(model->Learn(D({1, 0}), 1).ok());  // w = (1, 0)
  // Issued now: score 1, correct for +1.
  absl::StatusOr<Issued> late = model->Issue(D({1, 1}), 0);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->score, 1);
  ASSERT_TRUE(model->Learn(D({3, 0}), -1).ok());  // w = (1,0) - (3,0) = (-2, 0)

  // The early prediction: a mistake (issued score 0), but on the current w =
  // (-2, 0) the label -1 gives y*(w.x) = 2 > 0, so no update.
  absl::StatusOr<Outcome> a = model->Reveal(early->prediction_id, -1);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->mistake);
  EXPECT_FALSE(a->updated);
  EXPECT_EQ(a->score, 0);
  // The late one: issued score 1 was right for +1, but current w gives -2:
  // update, no mistake.
  absl::StatusOr<Outcome> b = model->Reveal(late->prediction_id, 1);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->mistake);
  EXPECT_TRUE(b->updated);
  EXPECT_THAT(model->weights(), ElementsAre(-1, 1));
  EXPECT_EQ(model->counters(), (Counters{.examples = 4,
                                         .mistakes = 3,
                                         .updates = 3,
                                         .predictions = 2,
                                         .expired = 0}));
}

TEST(ModelTest,
     OutOfOrderRevealsMatchAReferenceThatAppliesLabelsInRevealOrder) {
  // Reference: for classic, revealing in some order is learning the issued
  // examples in that order, except that mistakes are judged on the issued
  // scores.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 50; ++trial) {
    ModelConfig c;
    c.dimension = 4;
    auto model = *Model::Create(c);
    auto reference = *Model::Create(c);
    std::vector<std::vector<double>> xs(40, std::vector<double>(4));
    std::vector<int> ys(40);
    std::vector<Issued> issued;
    for (int i = 0; i < 40; ++i) {
      for (double& v : xs[i]) v = normal(rng);
      ys[i] = normal(rng) > 0 ? 1 : -1;
      issued.push_back(*model->Issue(D(xs[i]), i));
      EXPECT_EQ(issued.back().prediction_id, static_cast<uint64_t>(i + 1));
    }
    std::vector<int> order(40);
    for (int i = 0; i < 40; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    uint64_t mistakes = 0;
    for (int i : order) {
      absl::StatusOr<Outcome> o = model->Reveal(issued[i].prediction_id, ys[i]);
      ASSERT_TRUE(o.ok()) << o.status();
      EXPECT_EQ(o->mistake, ys[i] * issued[i].score <= 0);
      mistakes += o->mistake;
      absl::StatusOr<Outcome> r = reference->Learn(D(xs[i]), ys[i]);
      EXPECT_EQ(o->updated, r->updated);
    }
    const std::vector<double> w(model->weights().begin(),
                                model->weights().end());
    const std::vector<double> r(reference->weights().begin(),
                                reference->weights().end());
    EXPECT_EQ(testing::Bits().Add(w).str(), testing::Bits().Add(r).str());
    EXPECT_EQ(model->counters().mistakes, mistakes);
    EXPECT_EQ(model->pending_count(), 0u);
  }
}

TEST(ModelTest, RevealErrorsNameTheIdAndChangeNothing) {
  auto model = *Model::Create(Dim(2));
  Issued i = *model->Issue(D({1, 2}), 0);
  const std::string before = StateBits(model->ExportState());
  absl::Status s = model->Reveal(i.prediction_id, 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("label 0"));
  s = model->Reveal(99, 1).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("prediction 99 was never issued"));
  EXPECT_EQ(StateBits(model->ExportState()), before);
  ASSERT_TRUE(model->Reveal(i.prediction_id, 1).ok());
  const std::string after = StateBits(model->ExportState());
  s = model->Reveal(i.prediction_id, 1).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("already revealed or has expired"));
  EXPECT_EQ(StateBits(model->ExportState()), after);
}

TEST(ModelTest, ExpiredPredictionsAreCountedAndCannotBeRevealed) {
  auto model = *Model::Create(Dim(1));
  Issued a = *model->Issue(D({1}), 10);
  Issued b = *model->Issue(D({2}), 20);
  Issued c = *model->Issue(D({3}), 30);
  EXPECT_EQ(model->ExpirePending(25), 2u);
  EXPECT_EQ(model->counters().expired, 2u);
  EXPECT_EQ(model->pending_count(), 1u);
  EXPECT_EQ(model->Reveal(a.prediction_id, 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(model->Reveal(b.prediction_id, 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(model->Reveal(c.prediction_id, 1).ok());
  EXPECT_EQ(model->stats().pending, 0u);
}

TEST(ModelTest, ResetZeroesStateKeepsConfigAndNeverReusesIds) {
  ModelConfig c;
  c.dimension = 2;
  c.algorithm = Algorithm::kAveraged;
  c.gamma = 0.1;
  c.comparator = {1, 0};
  auto model = *Model::Create(c);
  Issued first = *model->Issue(D({1, 1}), 0);
  ASSERT_TRUE(model->Learn(D({1, 1}), -1).ok());
  model->Reset();
  const Stats st = model->stats();
  EXPECT_EQ(st.counters, Counters());
  EXPECT_EQ(st.pending, 0u);
  EXPECT_EQ(st.bound.td_gamma, 0);
  EXPECT_EQ(st.weight_norm, 0);
  EXPECT_EQ(model->config(), c);
  EXPECT_EQ(model->Reveal(first.prediction_id, 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_GT(model->Issue(D({1, 1}), 0)->prediction_id, first.prediction_id);
}

// ---- Bad input: INVALID_ARGUMENT naming the problem, and the model unchanged.
// ----

struct BadCase {
  std::string name;
  FeatureView x;
  int label;
  std::string message;
};

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelConfig c;
    c.dimension = 3;
    c.bias = false;
    c.gamma = 0.2;
    c.comparator = {1, 1, 1};
    model_ = *Model::Create(c);
    ASSERT_TRUE(model_->Learn(D({1, -1, 0.5}), 1).ok());
    pending_ = model_->Issue(D({0.5, 0.5, 0.5}), 0)->prediction_id;
  }
  std::unique_ptr<Model> model_;
  uint64_t pending_ = 0;
};

TEST_F(BadInputTest, EveryBadExampleIsRejectedByEveryPathWithNothingChanged) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  static const std::vector<double> v_nan = {1, nan, 0}, v_inf = {inf, 0, 0},
                                   v_ninf = {0, 0, -inf};
  static const std::vector<double> short_v = {1, 2}, long_v = {1, 2, 3, 4},
                                   zero = {0, 0, 0};
  static const std::vector<double> huge = {1.5e308, 1.5e308, 1};
  static const std::vector<uint32_t> idx_out = {0, 3}, idx_dup = {2, 0, 2},
                                     idx_ok = {0, 1};
  static const std::vector<double> val2 = {1, 2}, val3 = {1, 2, 3},
                                   sp_nan = {1, nan};
  const std::vector<double> ok = {1, 2, 3};
  const std::vector<BadCase> cases = {
      {"nan", D(v_nan), 1, "position 1 is nan, not finite"},
      {"inf", D(v_inf), 1, "position 0 is inf, not finite"},
      {"-inf", D(v_ninf), 1, "position 2 is -inf, not finite"},
      {"short", D(short_v), 1,
       "dense vector has 2 values; the model's dimension is 3"},
      {"long", D(long_v), 1,
       "dense vector has 4 values; the model's dimension is 3"},
      {"zero", D(zero), 1, "is zero and cannot be normalized"},
      {"overflow", D(huge), 1, "the norm overflows a double"},
      {"index out of range", FeatureView::Sparse(idx_out, val2), 1,
       "index 3 at position 1 is out of range for dimension 3"},
      {"duplicate index", FeatureView::Sparse(idx_dup, val3), 1,
       "index 2 repeated at positions 0 and 2"},
      {"count mismatch", FeatureView::Sparse(idx_ok, val3), 1,
       "has 2 indices but 3 values"},
      {"sparse nan", FeatureView::Sparse(idx_ok, sp_nan), 1,
       "position 1 (index 1) is nan"},
      {"label 0", D(ok), 0, "label 0 must be -1 or +1"},
      {"label 2", D(ok), 2, "label 2 must be -1 or +1"},
      {"label -3", D(ok), -3, "label -3 must be -1 or +1"},
  };
  const std::string before = StateBits(model_->ExportState());
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const bool label_case = c.label != 1;
    absl::Status learn = model_->Learn(c.x, c.label).status();
    EXPECT_EQ(learn.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(learn.message()), HasSubstr(c.message));
    if (!label_case) {
      absl::Status issue = model_->Issue(c.x, 0).status();
      EXPECT_EQ(issue.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(issue.message()), HasSubstr(c.message));
      absl::Status predict = model_->Predict(c.x).status();
      EXPECT_EQ(predict.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(predict.message()), HasSubstr(c.message));
    }
    // In a training set, the error names the example's index and nothing is
    // learned.
    const std::vector<LabeledExample> data = {
        {D(ok), 1}, {D(ok), -1}, {c.x, c.label}};
    absl::Status train = model_->Train(data).status();
    EXPECT_EQ(train.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(train.message()), HasSubstr("example 2: "));
    EXPECT_THAT(std::string(train.message()), HasSubstr(c.message));
    EXPECT_EQ(StateBits(model_->ExportState()), before);
  }
  // A long sparse vector (checked by sorting) with a duplicate far apart.
  ModelConfig big;
  big.dimension = 1000;
  auto wide = *Model::Create(big);
  std::vector<uint32_t> idx(100);
  std::vector<double> val(100, 1.0);
  for (uint32_t i = 0; i < 100; ++i) idx[i] = 7 * i;
  idx[90] = idx[5];
  absl::Status s = wide->Learn(FeatureView::Sparse(idx, val), 1).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("index 35 repeated at positions 5 and 90"));
  EXPECT_EQ(wide->counters(), Counters());
}

TEST(ModelTest, ZeroExampleWithoutNormalizationIsAMistakeButNoUpdate) {
  auto model = *Model::Create(Plain(2));
  absl::StatusOr<Outcome> o = model->Learn(D({0, 0}), 1);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->mistake);
  EXPECT_FALSE(o->updated);
  EXPECT_EQ(model->counters().updates, 0u);
}

TEST(ModelTest, CreateRefusesAnInvalidConfig) {
  ModelConfig c;
  c.dimension = 0;
  EXPECT_EQ(Model::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Rebuilding from state continues bit-identically. ----

TEST(ModelTest, RebuildingFromStateContinuesBitIdenticallyForEveryAlgorithm) {
  for (bool sparse : {false, true}) {
    for (const Variant& v : Variants(12)) {
      SCOPED_TRACE(v.name + (sparse ? " sparse" : " dense"));
      auto straight = *Model::Create(v.config);
      auto first = *Model::Create(v.config);
      Driver a(12, sparse, 99), b(12, sparse, 99);
      std::vector<Issued> open_a, open_b;
      for (int i = 0; i < 300; ++i) a.Step(*straight, &open_a);
      for (int i = 0; i < 300; ++i) b.Step(*first, &open_b);
      const ModelState saved = first->ExportState();
      first.reset();
      absl::StatusOr<std::unique_ptr<Model>> rebuilt = Model::FromState(saved);
      ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
      EXPECT_EQ(StateBits((*rebuilt)->ExportState()), StateBits(saved));
      EXPECT_TRUE((*rebuilt)->ExportState() == saved);
      for (int i = 0; i < 300; ++i) a.Step(*straight, &open_a);
      for (int i = 0; i < 300; ++i) b.Step(**rebuilt, &open_b);
      const ModelState x = straight->ExportState(),
                       y = (*rebuilt)->ExportState();
      EXPECT_EQ(StateBits(x), StateBits(y));
      EXPECT_GT(x.counters.updates, 0u);
      EXPECT_GT(x.counters.predictions, 0u);
    }
  }
}

TEST(ModelTest, ReplayingTheSameExamplesGivesBitIdenticalWeights) {
  for (const Variant& v : Variants(6)) {
    auto m1 = *Model::Create(v.config);
    auto m2 = *Model::Create(v.config);
    Driver a(6, false, 5), b(6, false, 5);
    std::vector<Issued> oa, ob;
    for (int i = 0; i < 500; ++i) a.Step(*m1, &oa), b.Step(*m2, &ob);
    EXPECT_EQ(StateBits(m1->ExportState()), StateBits(m2->ExportState()))
        << v.name;
  }
}

TEST(ModelTest, FromStateRejectsInconsistentStateNamingTheField) {
  ModelConfig c;
  c.dimension = 3;
  auto model = *Model::Create(c);
  ASSERT_TRUE(model->Learn(D({1, 2, 3}), 1).ok());
  model->Issue(D({1, 1, 1}), 0).IgnoreError();
  const ModelState good = model->ExportState();
  struct Case {
    std::string name;
    std::function<void(ModelState&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"bad config", [](ModelState& s) { s.config.dimension = 0; },
       "dimension 0"},
      {"short weights", [](ModelState& s) { s.learner.weights.pop_back(); },
       "weights has 3 values; expected 4"},
      {"nan weight", [](ModelState& s) { s.learner.weights[1] = NAN; },
       "weights value 1 is nan"},
      {"negative td", [](ModelState& s) { s.td_gamma = -1; }, "td_gamma -1"},
      {"future id", [](ModelState& s) { s.pending[0].prediction_id = 50; },
       "pending prediction id 50 is not below"},
      {"bad pending features",
       [](ModelState& s) { s.pending[0].features.values.pop_back(); },
       "pending prediction 1: features: dense vector has 2 values"},
      {"zero next id", [](ModelState& s) { s.next_prediction_id = 0; },
       "next_prediction_id"},
      {"more mistakes than examples",
       [](ModelState& s) { s.counters.mistakes = 2; },
       "2 mistakes and 1 updates cannot come from 1 examples"},
      {"more updates than examples",
       [](ModelState& s) { s.counters.updates = 7; }, "7 updates"},
      {"more predictions than ids",
       [](ModelState& s) { s.counters.predictions = 2; },
       "2 predictions issued (next id 2)"},
      {"more expired than issued",
       [](ModelState& s) {
         s.counters.expired = 2;
         s.counters.predictions = 1;
       },
       "2 expired"},
      {"more pending than outstanding",
       [](ModelState& s) { s.counters.expired = 1; }, "1 pending"},
  };
  for (const Case& k : cases) {
    ModelState s = good;
    k.edit(s);
    absl::Status st = Model::FromState(s).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << k.name;
    EXPECT_THAT(std::string(st.message()), HasSubstr(k.message)) << k.name;
  }
  EXPECT_TRUE(Model::FromState(good).ok());
}

// A wide model's vectors, mostly zeros, leave ExportState by their non-zeros
// (no whole copy while the model is held) and come back bit for bit; a
// small model's stay whole.
TEST(ModelTest, AWideModelExportsItsVectorsByTheirNonZeros) {
  constexpr uint32_t kWide = 1u << 17;
  std::vector<Variant> variants;
  for (const Variant& v : Variants(kWide)) {
    if (v.name == "classic" || v.name == "margin" || v.name == "averaged" ||
        v.name == "voted") {
      variants.push_back(v);
    }
  }
  Variant three = variants[2];  // averaged, of three classes
  three.name = "averaged-multiclass";
  three.config.classes = {"a", "b", "c"};
  three.config.comparator.clear();
  three.config.gamma.reset();
  variants.push_back(three);
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    auto straight = *Model::Create(v.config);
    auto first = *Model::Create(v.config);
    std::mt19937_64 rng(3);
    auto step = [&rng, &v](Model& a, Model& b) {
      std::vector<uint32_t> idx;
      std::vector<double> val;
      for (int k = 0; k < 20; ++k) idx.push_back(rng() % kWide);
      std::sort(idx.begin(), idx.end());
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      for (size_t k = 0; k < idx.size(); ++k) val.push_back((rng() % 7) - 3.0);
      const int y = v.config.classes.empty() ? (rng() % 2 ? 1 : -1)
                                             : static_cast<int>(rng() % 3);
      ASSERT_TRUE(a.Learn(FeatureView::Sparse(idx, val), y).ok());
      ASSERT_TRUE(b.Learn(FeatureView::Sparse(idx, val), y).ok());
    };
    for (int i = 0; i < 200; ++i) step(*straight, *first);
    const ModelState saved = first->ExportState();
    ASSERT_TRUE(saved.learner.sparse_weights.has_value());
    EXPECT_TRUE(saved.learner.weights.empty());
    EXPECT_EQ(saved.learner.sparse_weights->size, v.config.weight_count());
    EXPECT_GT(saved.learner.sparse_weights->indices.size(), 20u);
    EXPECT_EQ(saved.learner.sparse_average_accumulator.has_value(),
              v.config.algorithm == Algorithm::kAveraged);
    first.reset();
    absl::StatusOr<std::unique_ptr<Model>> rebuilt = Model::FromState(saved);
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
    EXPECT_EQ(StateBits((*rebuilt)->ExportState()), StateBits(saved));
    for (int i = 0; i < 100; ++i) step(*straight, **rebuilt);
    EXPECT_EQ(StateBits(straight->ExportState()),
              StateBits((*rebuilt)->ExportState()));
    // A malformed sparse form is refused, naming the vector.
    const std::vector<
        std::pair<std::function<void(LearnerState&)>, std::string>>
        bad = {
            {[](LearnerState& l) {
               std::swap(l.sparse_weights->indices[0],
                         l.sparse_weights->indices[1]);
             },
             "not above the one before it"},
            {[](LearnerState& l) { l.sparse_weights->size -= 1; },
             absl::StrCat("weights has ", v.config.weight_count() - 1,
                          " values; expected ", v.config.weight_count())},
            {[](LearnerState& l) { l.weights.assign(4, 0.0); },
             "weights is given both whole and by its non-zeros"},
            {[](LearnerState& l) { l.sparse_weights->values.pop_back(); },
             "indices and"},
            {[](LearnerState& l) { l.sparse_weights->values[0] = NAN; },
             "is nan, not finite"},
        };
    for (const auto& [edit, says] : bad) {
      ModelState s = saved;
      edit(s.learner);
      const absl::Status st = Model::FromState(s).status();
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << says;
      EXPECT_THAT(std::string(st.message()), HasSubstr(says));
    }
  }
  // Small, or wide and mostly not zeros: whole.
  ModelConfig small;
  small.dimension = 6;
  EXPECT_FALSE((*Model::Create(small))
                   ->ExportState()
                   .learner.sparse_weights.has_value());
  ModelConfig wide;
  wide.dimension = kWide;
  ModelState dense = (*Model::Create(wide))->ExportState();
  dense.learner.sparse_weights.reset();
  dense.learner.weights.assign(wide.weight_count(), 0.25);
  absl::StatusOr<std::unique_ptr<Model>> full = Model::FromState(dense);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_FALSE((*full)->ExportState().learner.sparse_weights.has_value());
  EXPECT_EQ(StateBits((*full)->ExportState()), StateBits(dense));
}

TEST(ModelTest, TheLastPredictionIdIsNeverIssuedTwiceOrWrapped) {
  ModelConfig c;
  c.dimension = 2;
  auto model = *Model::Create(c);
  ModelState s = model->ExportState();
  s.next_prediction_id = std::numeric_limits<uint64_t>::max() - 1;
  auto m = *Model::FromState(s);
  absl::StatusOr<Issued> last = m->Issue(D({1, 1}), 0);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->prediction_id, std::numeric_limits<uint64_t>::max() - 1);
  const ModelState before = m->ExportState();
  absl::Status st = m->Issue(D({1, 1}), 0).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(st.message()), HasSubstr("every prediction id"));
  EXPECT_EQ(StateBits(m->ExportState()), StateBits(before));
  ASSERT_TRUE(m->Reveal(last->prediction_id, 1).ok());
}

}  // namespace
}  // namespace perceptron

namespace perceptron {
namespace {

// Model::Learn computes w . x and ||x||^2 in one pass for a dense x and a
// linear learner (DenseDots); the score, the outcome and every weight equal
// the separate sums of Preparer::Prepare and Learner::ScoreAndLearn, bit for
// bit, with every remainder of the eight-wide sums.
TEST(ModelTest, LearnsDenseExamplesAsTheSeparateSumsDoBitForBit) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  for (Algorithm algorithm :
       {Algorithm::kClassic, Algorithm::kMargin, Algorithm::kAveraged}) {
    for (uint32_t d : {1u, 7u, 8u, 13u, 20u}) {
      for (bool bias : {false, true}) {
        ModelConfig config;
        config.dimension = d;
        config.algorithm = algorithm;
        config.bias = bias;
        config.normalize = algorithm == Algorithm::kMargin || bias;
        if (algorithm == Algorithm::kMargin) config.gamma = 0.1;
        auto model = *Model::Create(config);
        const Preparer preparer(model->config());
        std::unique_ptr<Learner> reference = MakeLearner(model->config());
        std::vector<double> truth(d);
        for (double& t : truth) t = normal(rng);
        int updates = 0;
        for (int t = 0; t < 300; ++t) {
          std::vector<double> v(d);
          for (double& x : v) x = normal(rng) * 3;
          double dot = 0;
          for (uint32_t i = 0; i < d; ++i) dot += truth[i] * v[i];
          // One label in ten flipped, so that updates go on.
          const int y = (dot >= 0) != (t % 10 == 3) ? 1 : -1;
          const FeatureView x = FeatureView::Dense(v);
          const Outcome o = *model->Learn(x, y);
          bool updated = false;
          const double score =
              *reference->ScoreAndLearn(*preparer.Prepare(x), y, &updated);
          ASSERT_EQ(std::memcmp(&o.score, &score, sizeof score), 0)
              << static_cast<int>(algorithm) << " d=" << d << " t=" << t;
          ASSERT_EQ(o.updated, updated);
          updates += updated;
        }
        EXPECT_GT(updates, 10);
        const absl::Span<const double> a = model->weights(),
                                       b = reference->weights();
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)),
                  0);
      }
    }
  }
}

// Model::LearnDense learns a batch of dense rows exactly as Learn learns
// them one by one: the same answer or error for every row and the same state,
// bit for bit, for every algorithm, short rows (prepared ahead in blocks) and
// long ones, with and without the certificate, batches of every size
// (remainders of the blocks of eight), rows refused for their label or a
// value that is not finite, a squared norm that overflows (prepared by
// Prepare's scaled sum) and zero rows.
TEST(ModelTest, LearnDenseLearnsABatchAsLearnLearnsEachRowBitForBit) {
  std::mt19937_64 rng(13);
  std::normal_distribution<double> normal;
  for (uint32_t d : {3u, 20u, 70u}) {
    for (const Variant& v : Variants(d)) {
      for (bool certificate : {false, true}) {
        SCOPED_TRACE(v.name + " d=" + std::to_string(d) +
                     (certificate ? " certificate" : ""));
        auto batched = *Model::Create(v.config);
        auto single = *Model::Create(v.config);
        if (certificate) {
          batched->EnableCertificate(50, 10);
          single->EnableCertificate(50, 10);
        }
        std::vector<double> values;
        std::vector<int> labels;
        for (int t = 0; t < 400; ++t) {
          std::vector<double> x(d);
          double s = 0;
          for (uint32_t i = 0; i < d; ++i) {
            x[i] = normal(rng);
            s += (i % 2 ? 1 : -1) * x[i];
          }
          int y = (s > 0) == (t % 10 != 3) ? 1 : -1;
          switch (t % 37) {
            case 5:
              y = 0;
              break;
            case 9:
              y = 2;
              break;
            case 14:
              x[d / 2] = std::nan("");
              break;
            case 19:
              x[0] = std::numeric_limits<double>::infinity();
              break;
            case 23:  // ||x||^2 overflows
              x[d - 1] = 1e200;
              break;
            case 29:
              std::fill(x.begin(), x.end(), 0.0);
              break;
            default:
              break;
          }
          values.insert(values.end(), x.begin(), x.end());
          labels.push_back(y);
        }
        size_t errors = 0, updates = 0;
        const size_t sizes[] = {1, 5, 8, 9, 0, 64, 17, 16};
        for (size_t begin = 0, b = 0; begin < labels.size(); ++b) {
          const size_t n = std::min(sizes[b % 8], labels.size() - begin);
          std::vector<absl::StatusOr<Outcome>> out;
          // What each row's call finds: the model right after that row.
          std::vector<Counters> counters;
          ASSERT_TRUE(
              batched
                  ->LearnDense(
                      absl::MakeConstSpan(values).subspan(begin * d, n * d),
                      absl::MakeConstSpan(labels).subspan(begin, n),
                      [&](size_t i, const absl::StatusOr<Outcome>& r) {
                        EXPECT_EQ(i, out.size());
                        out.push_back(r);
                        counters.push_back(batched->counters());
                      })
                  .ok());
          ASSERT_EQ(out.size(), n);
          for (size_t k = 0; k < n; ++k) {
            const size_t i = begin + k;
            const absl::StatusOr<Outcome> want = single->Learn(
                FeatureView::Dense(
                    absl::MakeConstSpan(values).subspan(i * d, d)),
                labels[i]);
            ASSERT_EQ(out[k].status(), want.status()) << "row " << i;
            ASSERT_EQ(counters[k], single->counters()) << "row " << i;
            if (!want.ok()) {
              ++errors;
              continue;
            }
            ASSERT_EQ(
                std::memcmp(&out[k]->score, &want->score, sizeof want->score),
                0)
                << "row " << i;
            ASSERT_EQ(out[k]->predicted, want->predicted) << "row " << i;
            ASSERT_EQ(out[k]->mistake, want->mistake) << "row " << i;
            ASSERT_EQ(out[k]->updated, want->updated) << "row " << i;
            updates += want->updated;
          }
          begin += n;
        }
        EXPECT_GE(errors, 40u);  // 4 of every 37 rows, at least
        EXPECT_GT(updates, 20u);
        const ModelState a = batched->ExportState(), b = single->ExportState();
        EXPECT_EQ(StateBits(a), StateBits(b));
        EXPECT_TRUE(a == b);
        EXPECT_EQ(batched->certificate() != nullptr, certificate);
      }
    }
  }
}

// The batch's sizes must fit: refused with nothing changed.
TEST(ModelTest, LearnDenseRefusesSizesThatDoNotFitWithNothingChanged) {
  auto model = *Model::Create(Dim(2));
  const std::vector<double> values = {1, 2, 3, 4, 5};
  const std::vector<int> labels = {1, -1};
  int calls = 0;
  const absl::Status s = model->LearnDense(
      values, labels, [&](size_t, const absl::StatusOr<Outcome>&) { ++calls; });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("does not fit 2 rows of dimension 2"));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(model->counters().examples, 0u);
  ASSERT_TRUE(model
                  ->LearnDense(absl::MakeConstSpan(values).first(4), labels,
                               [&](size_t, const absl::StatusOr<Outcome>& r) {
                                 EXPECT_TRUE(r.ok());
                                 ++calls;
                               })
                  .ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(model->counters().examples, 2u);
}

// Model::Prefetch only asks for memory: a model that is asked for each next
// example's weights (an index out of range among them) learns and ends as
// one that is not, bit for bit, with and without a comparator.
TEST(ModelTest, PrefetchChangesNothing) {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> normal;
  constexpr uint32_t kDimension = 1u << 16;
  std::vector<std::vector<uint32_t>> indices(400);
  std::vector<std::vector<double>> values(400);
  std::vector<int> labels(400);
  for (size_t t = 0; t < indices.size(); ++t) {
    while (indices[t].size() < 16) {
      const auto i = static_cast<uint32_t>(rng() % kDimension);
      if (std::find(indices[t].begin(), indices[t].end(), i) !=
          indices[t].end()) {
        continue;
      }
      indices[t].push_back(i);
      values[t].push_back(normal(rng));
    }
    labels[t] = rng() % 2 == 0 ? 1 : -1;
  }
  indices[100].back() = kDimension + 5;  // refused by Learn, fetched by none
  for (Algorithm algorithm :
       {Algorithm::kClassic, Algorithm::kAveraged, Algorithm::kKernel}) {
    for (bool comparator : {false, true}) {
      ModelConfig config;
      config.dimension = kDimension;
      config.algorithm = algorithm;
      if (algorithm == Algorithm::kKernel) {
        config.kernel.type = KernelType::kPolynomial;
      }
      if (comparator && algorithm != Algorithm::kKernel) {
        config.gamma = 0.1;
        config.comparator.assign(kDimension, 1.0);
      }
      auto fetched = *Model::Create(config);
      auto plain = *Model::Create(config);
      int refused = 0;
      for (size_t t = 0; t < indices.size(); ++t) {
        if (t + 1 < indices.size()) {
          fetched->Prefetch(FeatureView::Sparse(indices[t + 1], values[t + 1]));
        }
        const FeatureView x = FeatureView::Sparse(indices[t], values[t]);
        const absl::StatusOr<Outcome> a = fetched->Learn(x, labels[t]);
        const absl::StatusOr<Outcome> b = plain->Learn(x, labels[t]);
        ASSERT_EQ(a.ok(), b.ok()) << t;
        if (!a.ok()) {
          ++refused;
          continue;
        }
        ASSERT_EQ(std::memcmp(&a->score, &b->score, sizeof a->score), 0) << t;
        ASSERT_EQ(a->updated, b->updated) << t;
      }
      EXPECT_EQ(refused, 1);
      EXPECT_EQ(StateBits(fetched->ExportState()),
                StateBits(plain->ExportState()));
      EXPECT_GT(fetched->counters().updates, 10u);
    }
  }
}

// Models sharing a pending budget hold no more together than it allows; what
// each drops (revealed, expired, reset, destroyed) is given back, and a model
// that joins with predictions brings them in even past the limit.
TEST(ModelTest, PendingPredictionsOfModelsSharingABudgetStayWithinIt) {
  const uint64_t one = Model::PendingBytes(2, 0);
  auto budget = std::make_shared<ByteBudget>(3 * one, "the budget is taken");
  auto a = *Model::Create(Dim(2));
  auto b = *Model::Create(Dim(2));
  ASSERT_TRUE(a->Issue(D({1, 0}), 0).ok());  // before it joins
  a->set_pending_limits({.budget = budget});
  b->set_pending_limits({.budget = budget});
  EXPECT_EQ(budget->used(), one);
  const Issued a2 = *a->Issue(D({0, 1}), 5);
  ASSERT_TRUE(b->Issue(D({1, 1}), 0).ok());
  EXPECT_EQ(budget->used(), 3 * one);
  absl::StatusOr<Issued> refused = b->Issue(D({1, 2}), 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr(absl::StrCat("the budget is taken: ", 3 * one, " of ",
                                     3 * one, " bytes held")));
  EXPECT_EQ(b->pending_count(), 1u);
  EXPECT_EQ(b->counters().predictions, 1u);
  // A reveal gives its bytes back, and b's next fits.
  ASSERT_TRUE(a->Reveal(a2.prediction_id, 1).ok());
  EXPECT_EQ(budget->used(), 2 * one);
  ASSERT_TRUE(b->Issue(D({1, 2}), 0).ok());
  EXPECT_EQ(budget->used(), 3 * one);
  EXPECT_EQ(b->ExpirePending(1), 2u);
  EXPECT_EQ(budget->used(), one);
  a->Reset();
  EXPECT_EQ(budget->used(), 0u);
  // A model with more than the budget joins whole; none issues until room.
  auto c = *Model::Create(Dim(2));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c->Issue(D({1, 0}), 0).ok());
  c->set_pending_limits({.budget = budget});
  EXPECT_EQ(budget->used(), 4 * one);
  EXPECT_FALSE(a->Issue(D({1, 0}), 0).ok());
  c.reset();
  EXPECT_EQ(budget->used(), 0u);
  ASSERT_TRUE(a->Issue(D({1, 0}), 0).ok());
  a->set_pending_limits({});
  EXPECT_EQ(budget->used(), 0u);
}

// A model's own limits on its pending predictions: their number and bytes,
// each refused with RESOURCE_EXHAUSTED naming it, nothing issued; a model
// holding more when the limits are set keeps what it holds.
TEST(ModelTest, PendingPredictionsStayWithinTheModelsOwnLimits) {
  const uint64_t two = Model::PendingBytes(2, 0);
  auto m = *Model::Create(Dim(2));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m->Issue(D({1, 0}), 0).ok());
  m->set_pending_limits({.count = 2});
  EXPECT_EQ(m->pending_count(), 3u);
  absl::StatusOr<Issued> refused = m->Issue(D({1, 0}), 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "the model holds its maximum of 2 pending predictions");
  EXPECT_EQ(m->ExpirePending(1), 3u);
  m->set_pending_limits({.bytes = 2 * two, .bytes_name = "--the_flag"});
  ASSERT_TRUE(m->Issue(D({1, 0}), 0).ok());
  ASSERT_TRUE(m->Issue(D({1, 0}), 0).ok());
  refused = m->Issue(D({1, 0}), 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(
      refused.status().message(),
      absl::StrCat("the model's pending predictions hold ", 2 * two,
                   " bytes; this one (", two, ") would pass the maximum of ",
                   2 * two, " (--the_flag)"));
  EXPECT_EQ(m->pending_count(), 2u);
  EXPECT_EQ(m->pending_bytes(), 2 * two);
  EXPECT_EQ(m->counters().predictions, 5u);
  // An example that is not valid is told so first.
  EXPECT_EQ(m->Issue(D({1, 0, 0}), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perceptron
