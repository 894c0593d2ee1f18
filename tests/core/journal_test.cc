// A replica fed only journals equals the original bit for bit (docs/design.md
// section 5).
#include "core/journal.h"

#include <random>

#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/drivers.h"
#include "tests/core/state_bits.h"

namespace perceptron {
namespace {

using testing::Driver;
using testing::StateBits;

TEST(JournalTest, AReplicaFedJournalsEqualsTheOriginalForEveryAlgorithm) {
  for (bool sparse : {false, true}) {
    for (const testing::Variant& v : testing::Variants(12)) {
      SCOPED_TRACE(v.name + (sparse ? " sparse" : " dense"));
      auto original = *Model::Create(v.config);
      auto replica = *Model::Create(v.config);
      original->SetJournaling(true);
      Driver driver(12, sparse, 7);
      std::mt19937_64 rng(8);
      std::vector<Issued> open;
      int64_t clock = 0;
      for (int window = 0; window < 200; ++window) {
        const int steps = rng() % 8;
        for (int i = 0; i < steps; ++i) driver.Step(*original, &open, ++clock);
        if (window % 50 == 25) original->Reset(), open.clear();
        if (window % 30 == 29) {
          original->ExpirePending(clock - 5);
          std::vector<uint64_t> still;
          for (const PendingPrediction& p : original->ExportState().pending) {
            still.push_back(p.prediction_id);
          }
          std::erase_if(open, [&](const Issued& i) {
            return std::find(still.begin(), still.end(), i.prediction_id) ==
                   still.end();
          });
        }
        const Journal j = original->TakeJournal();
        absl::Status s = replica->ApplyJournal(j);
        ASSERT_TRUE(s.ok()) << s;
        ASSERT_EQ(StateBits(replica->ExportState()),
                  StateBits(original->ExportState()))
            << "after window " << window;
      }
      EXPECT_GT(original->counters().updates, 0u);
    }
  }
}

TEST(JournalTest, ASparseJournalCarriesOnlyTheTouchedCoordinates) {
  ModelConfig c;
  c.dimension = 1u << 20;
  auto model = *Model::Create(c);
  model->SetJournaling(true);
  const std::vector<uint32_t> idx = {5, 900000, 77};
  const std::vector<double> val = {1, -2, 0.5};
  ASSERT_TRUE(model->Learn(FeatureView::Sparse(idx, val), 1)->updated);
  const Journal j = model->TakeJournal();
  EXPECT_FALSE(j.learner.weights.full);
  EXPECT_EQ(j.learner.weights.indices.size(),
            4u);  // three features and the bias
  // A labeled example that changes nothing journals no coordinate.
  ASSERT_FALSE(model->Learn(FeatureView::Sparse(idx, val), 1)->updated);
  EXPECT_TRUE(model->TakeJournal().learner.weights.empty());
}

TEST(JournalTest, ABadJournalChangesNothing) {
  ModelConfig c;
  c.dimension = 3;
  auto source = *Model::Create(c);
  source->SetJournaling(true);
  ASSERT_TRUE(
      source->Learn(FeatureView::Dense(std::vector<double>{1, 2, 3}), 1).ok());
  Journal j = source->TakeJournal();
  auto target = *Model::Create(c);
  const std::string before = StateBits(target->ExportState());
  Journal bad = j;
  bad.learner.weights.values.pop_back();
  EXPECT_EQ(target->ApplyJournal(bad).code(),
            absl::StatusCode::kInvalidArgument);
  bad = j;
  bad.learner.weights.values[0] = NAN;
  EXPECT_EQ(target->ApplyJournal(bad).code(),
            absl::StatusCode::kInvalidArgument);
  bad = j;
  bad.td_gamma = -1;
  EXPECT_EQ(target->ApplyJournal(bad).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StateBits(target->ExportState()), before);
  EXPECT_TRUE(target->ApplyJournal(j).ok());
}

}  // namespace
}  // namespace perceptron
