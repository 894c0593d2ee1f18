// A change no client waits for (a certificate's new solution) is not committed
// on its own: Persistence::StageLater leaves it in the model's journal, to go
// with the model's next record, or to be staged by the background thread
// within its tick, or before the server stops. Nothing of it is lost: a
// recovered model holds it. An idle store's memtable is written to a table.
#include "server/storage/persistence.h"

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "server/model/registry.h"
#include "tests/core/state_bits.h"
#include "tests/scoped_dir.h"

namespace perceptron::server {
namespace {

using testing::StateBits;

class PersistenceTest : public ::testing::Test {
 protected:
  PersistenceTest() : scoped_("persistence") {}

  // A persistence over the test's directory, its models recovered into a new
  // registry, and started.
  void Open(absl::Duration tick, Durability durability = Durability::kSync) {
    PersistenceOptions o;
    o.durability = durability;
    o.data_dir = scoped_.path();
    o.background_tick = tick;
    o.async_interval = tick;  // async's sync and snapshot tick
    registry_ = std::make_unique<Registry>(Limits());
    persistence_ = *Persistence::Open(o);
    ASSERT_TRUE(persistence_->Recover(*registry_, 1 << 20).ok());
    persistence_->Start(registry_.get());
  }

  void Close() {
    persistence_->Stop();
    persistence_.reset();
    entry_.reset();
    registry_.reset();
  }

  void Create() {
    ModelConfig config;
    config.dimension = 3;
    entry_ = *registry_->Create("m", config);
    ASSERT_TRUE(persistence_->Created(*entry_).ok());
  }

  // Learns one example under the entry's lock; a client waits for its record
  // (the handle) or none does (StageLater).
  CommitHandle Learn(bool waited) {
    absl::MutexLock lock(&entry_->mu);
    const double x[3] = {next_, -0.5, 1.0};
    next_ += 1;
    EXPECT_TRUE(entry_->model->Learn(FeatureView::Dense(x), -1).ok());
    if (waited) return persistence_->Stage(*entry_);
    persistence_->StageLater(*entry_);
    return nullptr;
  }

  std::string State() {
    absl::MutexLock lock(&entry_->mu);
    return StateBits(entry_->model->ExportState());
  }

  uint64_t Examples() {
    absl::MutexLock lock(&entry_->mu);
    return entry_->model->counters().examples;
  }

  const testing::ScopedDir scoped_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Persistence> persistence_;
  std::shared_ptr<ModelEntry> entry_;
  double next_ = 1;
};

TEST_F(PersistenceTest, AChangeNoClientWaitsForGoesWithTheNextRecord) {
  Open(absl::Hours(1));  // no tick during the test
  Create();
  ASSERT_TRUE(AwaitCommit(Learn(true)).ok());
  EXPECT_EQ(persistence_->counters().records, 1u);
  Learn(false);
  Learn(false);
  ASSERT_TRUE(AwaitCommit(Learn(true)).ok());
  // The two waited for nothing: they went with the third, one record.
  EXPECT_EQ(persistence_->counters().records, 2u);
  EXPECT_EQ(persistence_->counters().commits, 2u);
  Learn(false);
  const std::string before_stop = State();
  // Stopping stages what still waits: the store holds all five examples.
  Close();
  Open(absl::Hours(1));
  entry_ = *registry_->Get("m");
  EXPECT_EQ(Examples(), 5u);
  EXPECT_EQ(State(), before_stop);
  Close();
}

TEST_F(PersistenceTest, AChangeAloneIsStagedWithinTheTick) {
  Open(absl::Milliseconds(10));
  Create();
  Learn(false);
  // Staged and committed by the background thread, no other record needed.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (persistence_->counters().records < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(persistence_->counters().records, 1u);
  {
    absl::MutexLock lock(&entry_->mu);
    EXPECT_FALSE(entry_->unstaged);
  }
  const std::string state = State();
  Close();
  Open(absl::Milliseconds(10));
  entry_ = *registry_->Get("m");
  EXPECT_EQ(State(), state);
  Close();
}

// LevelDB keeps what was logged last in its memtable until its write buffer
// fills; a store idle since the last look writes it to a table, giving its
// memory back and keeping every record.
TEST_F(PersistenceTest, AnIdleStoresMemtableIsWrittenToATable) {
  Open(absl::Hours(1), Durability::kAsync);  // no tick during the test
  Create();
  uint64_t learned = 0;
  while (persistence_->MemtableBytes() < 2 * Persistence::kIdleFlushBytes &&
         learned < 200000) {
    ASSERT_TRUE(AwaitCommit(Learn(true)).ok());
    ++learned;
  }
  const uint64_t full = persistence_->MemtableBytes();
  ASSERT_GE(full, 2 * Persistence::kIdleFlushBytes);
  // Batches were committed since the store was last looked at: not idle.
  EXPECT_FALSE(persistence_->FlushIfIdle());
  EXPECT_EQ(persistence_->MemtableBytes(), full);
  // None since: written, and the memtable holds little.
  EXPECT_TRUE(persistence_->FlushIfIdle());
  EXPECT_LT(persistence_->MemtableBytes(), Persistence::kIdleFlushBytes);
  // Too little to write again; nor after a commit.
  EXPECT_FALSE(persistence_->FlushIfIdle());
  ASSERT_TRUE(AwaitCommit(Learn(true)).ok());
  ++learned;
  EXPECT_FALSE(persistence_->FlushIfIdle());
  const std::string state = State();
  Close();
  Open(absl::Hours(1), Durability::kAsync);
  entry_ = *registry_->Get("m");
  EXPECT_EQ(Examples(), learned);
  EXPECT_EQ(State(), state);
  Close();
}

}  // namespace
}  // namespace perceptron::server
