// The certificate's rows of small records wait in the log (in the record's
// own LevelDB batch: one sync) until a model's pass the limit, then move to
// its rows file in order; recovery takes the file's, then the log's after
// them, once each, even when a move's commit never reached the disk; a clear
// or rows that give way take them out of the log.
#include <array>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "leveldb/db.h"
#include "server/storage/store.h"
#include "tests/scoped_dir.h"
#include "tests/server/storage/leveldb_keys.h"

namespace perceptron::server {
namespace {

using ::testing::ElementsAre;

class RowsWaitingTest : public ::testing::Test {
 protected:
  RowsWaitingTest() : scoped_("rows-waiting") {
    config_.dimension = 6;
    MakePool(24);
  }

  // `n` rows of 6 values at random, learned in turn: examples after the
  // first n are repeats, which raise kept rows' counts.
  void MakePool(size_t n) {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> normal;
    pool_.resize(n);
    for (auto& row : pool_) {
      for (double& v : row) v = normal(rng);
    }
  }

  // Opens the store, recovers it as the server does, waiting up to `limit`.
  absl::StatusOr<Recovery> Open(uint64_t limit) {
    store_.reset();
    store_ = *Store::Open(dir());
    store_->set_rows_waiting(limit);
    return store_->Recover(1 << 20);
  }

  // A new model "c" whose certificate keeps every example.
  void Create(uint64_t limit) {
    ASSERT_TRUE(Open(limit).ok());
    model_ = *Model::Create(config_);
    model_->SetJournaling(true);
    model_->EnableCertificate(100000, 1000);
    ASSERT_TRUE(
        store_->PutModel("c", absl::UnixEpoch(), model_->ExportState()).ok());
  }

  // Learns `n` examples of the pool and stores their record; the models
  // whose rows gave way.
  std::vector<std::string> Step(int n = 5) {
    for (int i = 0; i < n; ++i) {
      const auto& row = pool_[next_++ % pool_.size()];
      EXPECT_TRUE(
          model_->Learn(FeatureView::Dense(row), next_ % 3 ? 1 : -1).ok());
    }
    const Store::Record r{
        "c", absl::UnixEpoch(), ++seq_, model_->TakeJournal(), {}};
    std::vector<std::string> gave_way;
    absl::Status cause;
    EXPECT_TRUE(store_->Append({&r}, true, &gave_way, &cause).ok());
    return gave_way;
  }

  // Reopens the store and checks that "c" comes back with the model's rows,
  // every one, in order, with their counts.
  void ExpectRecovered() {
    absl::StatusOr<Recovery> r = Open(store_limit_);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->models.size(), 1u);
    const RecoveredModel& m = r->models[0];
    EXPECT_EQ(m.seq, seq_);
    EXPECT_TRUE(m.certificate_rows_attached);
    EXPECT_EQ(m.certificate_rows, model_->counters().examples);
    const std::optional<KeptRows> want =
        model_->certificate()->RowsNow(nullptr);
    const std::optional<KeptRows> got =
        m.model->certificate()->RowsNow(nullptr);
    ASSERT_TRUE(want.has_value() && got.has_value());
    EXPECT_TRUE(*got == *want);
  }

  const std::string& dir() const { return scoped_.path(); }
  bool HasRowsFile() const {
    return std::filesystem::exists(dir() + "/rows/c.0.rows");
  }
  // Keys of the closed store's LevelDB that start with `prefix`.
  int Keys(const std::string& prefix) {
    store_.reset();
    return testing::KeysWith(dir(), prefix);
  }

  const testing::ScopedDir scoped_;
  ModelConfig config_;
  std::vector<std::array<double, 6>> pool_;
  size_t next_ = 0;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Store> store_;
  uint64_t seq_ = 0;
  uint64_t store_limit_ = 1 << 20;
};

TEST_F(RowsWaitingTest, SmallRecordsRowsWaitInTheLogAndComeBackInOrder) {
  Create(store_limit_);
  for (int i = 0; i < 12; ++i) EXPECT_TRUE(Step().empty());  // repeats from 5
  EXPECT_FALSE(HasRowsFile());
  EXPECT_GT(store_->rows_waiting_bytes(), 24u * 6 * 8);
  EXPECT_EQ(Keys("m/c/w/"), 12);
  ExpectRecovered();
  EXPECT_GT(store_->rows_waiting_bytes(), 24u * 6 * 8);  // known again
  // More after the restart; then a reset clears them, out of the log.
  EXPECT_TRUE(Step().empty());
  ExpectRecovered();
  model_->Reset();
  next_ = 3;
  EXPECT_TRUE(Step().empty());
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(Keys("m/c/w/"), 2);
  ExpectRecovered();
  EXPECT_FALSE(HasRowsFile());
}

TEST_F(RowsWaitingTest, TheyMoveToTheFileInOrderOnceTheyPassTheLimit) {
  store_limit_ = 2048;  // a record of 5 new rows waits; about six of them do
  MakePool(400);        // no repeats
  Create(store_limit_);
  int moves = 0;
  for (int i = 0; i < 30; ++i) {
    const uint64_t before = store_->rows_waiting_bytes();
    EXPECT_TRUE(Step().empty());
    const uint64_t after = store_->rows_waiting_bytes();
    EXPECT_LE(after, store_limit_);
    moves += after < before;
  }
  EXPECT_GE(moves, 3);
  EXPECT_TRUE(HasRowsFile());
  const int waiting = Keys("m/c/w/");
  EXPECT_GT(waiting, 0);
  EXPECT_LT(waiting, 8);
  ExpectRecovered();
  // A record too large to wait (over a quarter of the limit) moves the rows
  // waiting before it, and goes to the file after them.
  EXPECT_TRUE(Step(40).empty());
  EXPECT_EQ(store_->rows_waiting_bytes(), 0u);
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(Keys("m/c/w/"), 1);
  ExpectRecovered();
}

// The move's file is synced before the commit that takes the rows out of the
// log; should that commit never reach the disk (the server killed), recovery
// finds the rows in both, and takes them once.
TEST_F(RowsWaitingTest, RowsMovedByACommitThatNeverReachedTheDiskCountOnce) {
  store_limit_ = 2048;
  Create(store_limit_);
  const std::string saved = dir() + "-saved";
  std::filesystem::remove_all(saved);
  int records = 0;
  while (!HasRowsFile() && records < 200) {
    // The LevelDB files as they are before this record, the rows as they
    // would be recovered from them.
    store_.reset();
    std::filesystem::remove_all(saved);
    std::filesystem::copy(dir(), saved,
                          std::filesystem::copy_options::recursive);
    ASSERT_TRUE(Open(store_limit_).ok());
    EXPECT_TRUE(Step().empty());
    ++records;
  }
  ASSERT_TRUE(HasRowsFile()) << "never moved";
  EXPECT_GT(records, 2);
  const uint64_t moved_at = seq_;
  // The record that moved them never committed: LevelDB as before it, the
  // rows file as after it (its own chunk included).
  store_.reset();
  for (const auto& e : std::filesystem::directory_iterator(dir())) {
    if (e.path().filename() != "rows") std::filesystem::remove_all(e.path());
  }
  for (const auto& e : std::filesystem::directory_iterator(saved)) {
    if (e.path().filename() != "rows") {
      std::filesystem::copy(e.path(),
                            std::filesystem::path(dir()) / e.path().filename(),
                            std::filesystem::copy_options::recursive);
    }
  }
  std::filesystem::remove_all(saved);
  EXPECT_EQ(Keys("m/c/w/"), static_cast<int>(moved_at - 1));
  // What the model had before that record: learned again without it.
  model_ = *Model::Create(config_);
  model_->SetJournaling(true);
  model_->EnableCertificate(100000, 1000);
  next_ = 0;
  seq_ = 0;
  for (uint64_t s = 1; s < moved_at; ++s) {
    for (int i = 0; i < 5; ++i) {
      const auto& row = pool_[next_++ % pool_.size()];
      ASSERT_TRUE(
          model_->Learn(FeatureView::Dense(row), next_ % 3 ? 1 : -1).ok());
    }
    ++seq_;
  }
  ExpectRecovered();
  // Taken from the file; the log's copies gone.
  EXPECT_TRUE(HasRowsFile());
  EXPECT_EQ(Keys("m/c/w/"), 0);
  ExpectRecovered();
}

TEST_F(RowsWaitingTest, WaitingRowsGiveWayWithTheRest) {
  Create(store_limit_);
  EXPECT_TRUE(Step().empty());
  EXPECT_TRUE(Step().empty());
  ASSERT_TRUE(Open(store_limit_).ok());
  store_->set_rows_reserve(uint64_t{1} << 50);  // more than any disk has
  EXPECT_THAT(Step(), ElementsAre("c"));
  EXPECT_EQ(store_->rows_waiting_bytes(), 0u);
  EXPECT_EQ(Keys("m/c/w/"), 0);
  EXPECT_FALSE(HasRowsFile());
  absl::StatusOr<Recovery> r = Open(store_limit_);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->models.size(), 1u);
  EXPECT_EQ(r->models[0].seq, seq_);
  EXPECT_FALSE(r->models[0].certificate_rows_attached);
}

}  // namespace
}  // namespace perceptron::server
