// The certificate's kept rows give way when their file cannot be written (a
// full disk; here the file is made /dev/full) or would leave less than the
// reserve free: the records are stored without them, the model is named, and
// recovery gives back every record with the certificate stopped, never a
// certificate that counts rows the disk does not hold.
#include <unistd.h>

#include <filesystem>

#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/storage/store.h"
#include "tests/core/drivers.h"
#include "tests/scoped_dir.h"

namespace perceptron::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RowsGiveWayTest : public ::testing::Test {
 protected:
  RowsGiveWayTest() : scoped_("rows-give-way"), driver_(6, false, 5) {
    config_.dimension = 6;
  }

  // A new model "c" stored with its certificate on.
  void Create() {
    model_ = *Model::Create(config_);
    model_->SetJournaling(true);
    model_->EnableCertificate(100000, 1000);
    store_ = *Store::Open(scoped_.path());
    ASSERT_TRUE(
        store_->PutModel("c", absl::UnixEpoch(), model_->ExportState()).ok());
  }

  // Learns from 5 examples and stores their record; the models whose rows
  // gave way.
  std::vector<std::string> Step(absl::Status* why = nullptr) {
    std::vector<Issued> open;
    for (int i = 0; i < 5; ++i) driver_.Step(*model_, &open);
    const Store::Record r{
        "c", absl::UnixEpoch(), ++seq_, model_->TakeJournal(), {}};
    std::vector<std::string> gave_way;
    absl::Status cause;
    EXPECT_TRUE(store_->Append({&r}, true, &gave_way, &cause).ok());
    if (why != nullptr) *why = cause;
    return gave_way;
  }

  // Opens the store again and recovers "c" as the server does.
  RecoveredModel Recover() {
    store_.reset();
    store_ = *Store::Open(scoped_.path());
    absl::StatusOr<Recovery> r = store_->Recover(1 << 20);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->models.size() != 1) return RecoveredModel();
    RecoveredModel m = std::move(r->models[0]);
    m.model->SetJournaling(true);
    m.model->EnableCertificate(100000, 1000);
    return m;
  }

  std::string RowsFile() const { return scoped_.path() + "/rows/c.0.rows"; }

  const testing::ScopedDir scoped_;
  testing::Driver driver_;
  ModelConfig config_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Store> store_;
  uint64_t seq_ = 0;
};

TEST_F(RowsGiveWayTest, AFileThatCannotBeWrittenGivesWayAndTheLogGoesOn) {
  Create();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Step().empty());
  ASSERT_TRUE(std::filesystem::exists(RowsFile()));
  RecoveredModel r = Recover();
  ASSERT_NE(r.model, nullptr);
  ASSERT_TRUE(r.certificate_rows_attached);
  model_ = std::move(r.model);
  // The disk is full from here on, for this file.
  ASSERT_TRUE(std::filesystem::remove(RowsFile()));
  ASSERT_EQ(::symlink("/dev/full", RowsFile().c_str()), 0);
  absl::Status why;
  EXPECT_THAT(Step(&why), ElementsAre("c"));
  EXPECT_THAT(why.message(), HasSubstr("No space left on device"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(
      RowsFile())));  // deleted, the link with it
  // Killed here, before the certificate stopped: every record comes back,
  // the certificate without the rows it counted (stopped, saying so).
  const uint64_t examples = model_->counters().examples;
  r = Recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_EQ(r.seq, seq_);
  EXPECT_EQ(r.model->counters().examples, examples);
  EXPECT_FALSE(r.certificate_rows_attached);
  EXPECT_NE(r.model->certificate()->phase(), CertificatePhase::kKeeping);
  EXPECT_THAT(r.model->certificate()->Report(1).reason,
              HasSubstr("not carried over"));
  // Or it stops, as the server stops it: later records keep no rows, and
  // recovery brings the certificate back as it stopped.
  const std::string reason = "the examples kept for it could not be stored";
  model_->certificate()->RowsGaveWay(reason);
  EXPECT_TRUE(Step().empty());
  EXPECT_TRUE(Step().empty());
  r = Recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_EQ(r.model->counters().examples, model_->counters().examples);
  EXPECT_EQ(r.model->certificate()->phase(), model_->certificate()->phase());
  EXPECT_EQ(r.model->certificate()->Report(1).reason, reason);
  EXPECT_FALSE(std::filesystem::exists(RowsFile()));
}

TEST_F(RowsGiveWayTest, RowsThatWouldLeaveLessThanTheReserveGiveWay) {
  Create();
  EXPECT_TRUE(Step().empty());
  store_->set_rows_reserve(uint64_t{1} << 50);  // more than any disk has
  absl::Status why;
  EXPECT_THAT(Step(&why), ElementsAre("c"));
  EXPECT_EQ(why.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(why.message()),
              HasSubstr("keeps 1073741824 MiB of it for the "
                        "log: --rows_reserve_mb"));
  EXPECT_FALSE(std::filesystem::exists(RowsFile()));
  // Until the rows are cleared, none are written: a reset keeps them again
  // once there is room.
  EXPECT_TRUE(Step().empty());
  EXPECT_FALSE(std::filesystem::exists(RowsFile()));
  store_->set_rows_reserve(0);
  EXPECT_TRUE(Step().empty());
  EXPECT_FALSE(std::filesystem::exists(RowsFile()));
  model_->Reset();
  EXPECT_TRUE(Step().empty());
  EXPECT_TRUE(std::filesystem::exists(RowsFile()));
  RecoveredModel r = Recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_TRUE(r.certificate_rows_attached);
  EXPECT_EQ(r.model->certificate()->phase(), CertificatePhase::kKeeping);
  EXPECT_EQ(r.certificate_rows, model_->counters().examples);
}

// A model deleted and created again under the same id keeps its rows again.
TEST_F(RowsGiveWayTest, ANewModelOfTheSameIdKeepsItsRowsAgain) {
  Create();
  store_->set_rows_reserve(uint64_t{1} << 50);
  EXPECT_THAT(Step(), ElementsAre("c"));
  store_->set_rows_reserve(0);
  ASSERT_TRUE(store_->DeleteModel("c").ok());
  model_ = *Model::Create(config_);
  model_->SetJournaling(true);
  model_->EnableCertificate(100000, 1000);
  ASSERT_TRUE(
      store_->PutModel("c", absl::UnixEpoch(), model_->ExportState()).ok());
  seq_ = 0;
  EXPECT_TRUE(Step().empty());
  EXPECT_TRUE(std::filesystem::exists(RowsFile()));
  RecoveredModel r = Recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_TRUE(r.certificate_rows_attached);
  EXPECT_EQ(r.certificate_rows, model_->counters().examples);
}

}  // namespace
}  // namespace perceptron::server
