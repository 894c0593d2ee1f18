// The certificate's rows in the store: a file of their own beside LevelDB,
// truncated to the records applied, written by group commits, read from
// LevelDB where earlier servers put them, and gone when they no longer count.
#include <zlib.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/certificate_tracker.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "leveldb/db.h"
#include "server/storage/state_convert.h"
#include "server/storage/store.h"
#include "tests/core/drivers.h"
#include "tests/core/state_bits.h"
#include "tests/scoped_dir.h"
#include "tests/server/storage/leveldb_keys.h"
#include "tests/server/storage/store_drive.h"

namespace perceptron::server {
namespace {

using ::testing::HasSubstr;
using testing::KeysWith;
using testing::StateBits;

// Rows that no longer count are deleted with the record that says so (a
// reset, the certificate disabled); those of a record not applied are dropped
// with it.
TEST(StoreTest, TheCertificatesRowsGoWhenTheyNoLongerCount) {
  const testing::ScopedDir scoped("store-rows");
  ModelConfig config;
  config.dimension = 6;
  auto recover = [&] {
    auto store = *Store::Open(scoped.path());
    absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
    EXPECT_TRUE(models.ok()) << models.status();
    RecoveredModel r = models.ok() && models->size() == 1
                           ? std::move((*models)[0])
                           : RecoveredModel();
    if (r.model != nullptr) {
      r.model->SetJournaling(true);
      r.model->EnableCertificate(100000, 1000);
    }
    return r;
  };
  {
    auto model = NewModel(config);
    model->EnableCertificate(100000, 1000);
    auto store = *Store::Open(scoped.path());
    ASSERT_TRUE(
        store->PutModel("c", absl::UnixEpoch(), model->ExportState()).ok());
    Drive(*model, *store, "c", 4);
  }
  RecoveredModel r = recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_GT(r.certificate_rows, 10u);
  EXPECT_EQ(r.certificate_rows, r.model->counters().examples);
  EXPECT_TRUE(r.certificate_rows_attached);
  EXPECT_EQ(r.model->certificate()->phase(), CertificatePhase::kKeeping);
  {
    // A reset clears them; a record after a gap is dropped with its rows.
    auto store = *Store::Open(scoped.path());
    ASSERT_TRUE(store->Recover(1000).ok());  // before writing, as the server
    r.model->Reset();
    Drive(*r.model, *store, "c", 2, 5);
    Drive(*r.model, *store, "c", 1, 8);  // seq 7 is missing
  }
  r = recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_EQ(r.records_dropped, 1u);
  EXPECT_GT(r.certificate_rows, 0u);
  EXPECT_EQ(r.certificate_rows, r.model->counters().examples);
  EXPECT_TRUE(r.certificate_rows_attached);
  EXPECT_EQ(r.model->certificate()->observed(), r.certificate_rows);
  {
    auto store = *Store::Open(scoped.path());
    ASSERT_TRUE(store->Recover(1000).ok());
    r.model->DisableCertificate();
    Drive(*r.model, *store, "c", 1, 7);
  }
  r = recover();
  EXPECT_EQ(r.records_applied, 7u);  // 1 to 7; 8 was dropped
  EXPECT_EQ(r.certificate_rows, 0u);
}

// A model of `config` whose certificate keeps every example, stored as "c"
// in `store` (recovered first, as the server does before writing).
std::unique_ptr<Model> PutKeepingModel(Store& store,
                                       const ModelConfig& config) {
  auto model = NewModel(config);
  model->EnableCertificate(100000, 1000);
  EXPECT_TRUE(store.Recover(1000).ok());
  EXPECT_TRUE(
      store.PutModel("c", absl::UnixEpoch(), model->ExportState()).ok());
  return model;
}

// The certificate's rows go to a file of their own, beside LevelDB (never
// through its memtable and compactions), chunk by chunk with their records:
// recovery takes the chunks of the records it applied, and truncates those of
// records never committed and a damaged tail; when the rows no longer count
// the file goes.
TEST(StoreTest, TheCertificatesRowsAreAFileTruncatedToTheRecordsApplied) {
  const testing::ScopedDir scoped("store-rows-file");
  const std::string& dir = scoped.path();
  ModelConfig config;
  config.dimension = 6;
  auto recover = [&] {
    auto store = *Store::Open(dir);
    absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
    EXPECT_TRUE(models.ok()) << models.status();
    RecoveredModel r = models.ok() && models->size() == 1
                           ? std::move((*models)[0])
                           : RecoveredModel();
    if (r.model != nullptr) r.model->SetJournaling(true);
    return r;
  };
  {
    auto store = *Store::Open(dir);
    Drive(*PutKeepingModel(*store, config), *store, "c", 6);
  }
  std::map<std::string, uintmax_t> files = RowsFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  ASSERT_TRUE(files.contains("c.0.rows"));
  const uintmax_t six = files["c.0.rows"];
  EXPECT_EQ(KeysWith(dir, "m/c/r/"), 0) << "no rows in LevelDB";
  EXPECT_EQ(KeysWith(dir, "m/c/l/"), 6);

  // Records 5 and 6 never committed (their LevelDB batch lost): their rows
  // chunks are on disk, and go.
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    for (const char* key :
         {"m/c/l/00000000000000000005", "m/c/l/00000000000000000006"}) {
      ASSERT_TRUE(raw->Delete(leveldb::WriteOptions(), key).ok());
    }
    delete raw;
  }
  // Recovers `r`: records 1 to `seq` applied, the rows of every example
  // given back and taken (or, if not `whole`, fewer, and not taken). Returns
  // the rows file's size after.
  RecoveredModel r;
  auto recovered = [&](uint64_t seq, bool whole) -> uintmax_t {
    r = recover();
    if (r.model == nullptr) {
      ADD_FAILURE() << "not recovered";
      return 0;
    }
    EXPECT_EQ(r.seq, seq);
    EXPECT_GT(r.certificate_rows, 10u);
    EXPECT_EQ(r.certificate_rows == r.model->counters().examples, whole);
    EXPECT_LE(r.certificate_rows, r.model->counters().examples);
    EXPECT_EQ(r.certificate_rows_attached, whole);
    return RowsFiles(dir)["c.0.rows"];
  };
  const uintmax_t four = recovered(4, true);
  EXPECT_LT(four, six);
  EXPECT_GE(four, r.certificate_rows * 7 * 8) << "each row's 7 values";
  // The stream goes on after them: records 5 and 6 again.
  {
    auto store = *Store::Open(dir);
    ASSERT_TRUE(store->Recover(1000).ok());
    Drive(*r.model, *store, "c", 2, 5, 5);
  }
  const uintmax_t again = recovered(6, true);
  EXPECT_GT(again, four);

  // A flipped byte in the last chunk: it fails its check and goes, with
  // nothing after it; its record's rows are then missing, so the certificate
  // does not take the others (it freezes where the stream ends).
  {
    std::fstream f(dir + "/rows/c.0.rows",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(again - 3));
    f.put('\x5a');
  }
  const uintmax_t damaged = recovered(6, false);
  EXPECT_LT(damaged, again);
  EXPECT_GT(damaged, four);

  // Rows that no longer count: the file goes with the record that says so.
  {
    auto store = *Store::Open(dir);
    auto model = PutKeepingModel(*store, config);
    Drive(*model, *store, "c", 2);
    EXPECT_EQ(RowsFiles(dir).size(), 1u);
    model->DisableCertificate();
    Drive(*model, *store, "c", 1, 3);
    EXPECT_TRUE(RowsFiles(dir).empty());
    // Rows of a model deleted, or replaced by another of the same id, since
    // its records were queued are not kept (nor are those records applied).
    auto deleted = PutKeepingModel(*store, config);
    Drive(*deleted, *store, "c", 1);
    ASSERT_TRUE(store->DeleteModel("c").ok());
    EXPECT_TRUE(RowsFiles(dir).empty());
    Drive(*deleted, *store, "c", 1, 2);
    EXPECT_TRUE(RowsFiles(dir).empty());
    ASSERT_TRUE(store
                    ->PutModel("c", absl::UnixEpoch() + absl::Seconds(1),
                               NewModel(config)->ExportState())
                    .ok());
    Drive(*deleted, *store, "c", 1, 3);
    EXPECT_TRUE(RowsFiles(dir).empty());
  }
  r = recover();
  ASSERT_NE(r.model, nullptr);
  EXPECT_EQ(r.created_at, absl::UnixEpoch() + absl::Seconds(1));
  EXPECT_EQ(r.seq, 0u);
}

// One group commit of several models' records writes each model's rows to
// its file, made durable together (one syncfs), and each model recovers its
// own.
TEST(StoreTest, OneGroupOfSeveralModelsWritesEachModelsRows) {
  const testing::ScopedDir scoped("store-rows-group");
  const std::string& dir = scoped.path();
  ModelConfig config;
  config.dimension = 6;
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::string> ids = {"a", "b", "c"};
  {
    auto store = *Store::Open(dir);
    ASSERT_TRUE(store->Recover(1000).ok());
    std::vector<testing::Driver> drivers;
    for (const std::string& id : ids) {
      models.push_back(NewModel(config));
      models.back()->EnableCertificate(100000, 1000);
      ASSERT_TRUE(
          store->PutModel(id, absl::UnixEpoch(), models.back()->ExportState())
              .ok());
      drivers.emplace_back(6, /*sparse=*/id == "b", 3 + drivers.size());
    }
    std::vector<std::vector<Issued>> open(ids.size());
    for (uint64_t seq = 1; seq <= 4; ++seq) {
      std::vector<Store::Record> records;
      for (size_t m = 0; m < ids.size(); ++m) {
        for (int i = 0; i < 5; ++i) drivers[m].Step(*models[m], &open[m]);
        records.push_back(Store::Record{
            ids[m], absl::UnixEpoch(), seq, models[m]->TakeJournal(), {}});
      }
      std::vector<const Store::Record*> group;
      for (const Store::Record& r : records) group.push_back(&r);
      ASSERT_TRUE(store->Append(group, /*sync=*/true).ok());
    }
  }
  EXPECT_EQ(RowsFiles(dir).size(), ids.size());
  auto store = *Store::Open(dir);
  absl::StatusOr<std::vector<RecoveredModel>> recovered = RecoverAll(*store);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  ASSERT_EQ(recovered->size(), ids.size());
  for (size_t m = 0; m < ids.size(); ++m) {
    const RecoveredModel& r = (*recovered)[m];
    EXPECT_EQ(r.id, ids[m]);
    EXPECT_EQ(r.seq, 4u);
    EXPECT_GT(r.certificate_rows, 0u) << r.id;
    EXPECT_EQ(r.certificate_rows, r.model->counters().examples) << r.id;
    EXPECT_TRUE(r.certificate_rows_attached) << r.id;
    EXPECT_EQ(StateBits(r.model->ExportState()),
              StateBits(models[m]->ExportState()))
        << r.id;
  }
}

// Rows a server before the rows files stored in LevelDB (StoredRows under
// m/<id>/r/<seq>) are read before the file's, and deleted when they no
// longer count.
TEST(StoreTest, RowsStoredInLevelDbByEarlierServersAreStillRead) {
  const testing::ScopedDir scoped("store-rows-leveldb");
  const std::string& dir = scoped.path();
  ModelConfig config;
  config.dimension = 6;
  std::unique_ptr<Model> model;
  KeptRows earlier;
  {
    auto store = *Store::Open(dir);
    model = PutKeepingModel(*store, config);
    testing::Driver driver(6, /*sparse=*/false, 3);
    std::vector<Issued> open;
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      for (int i = 0; i < 5; ++i) driver.Step(*model, &open);
      Journal j = model->TakeJournal();
      CertificateTracker::Apply(
          {false, j.certificate_rows, j.certificate_repeats}, &earlier);
      j.certificate_rows.Clear();  // as if written the earlier way, below
      j.certificate_repeats.clear();
      ASSERT_TRUE(store->Append("c", absl::UnixEpoch(), seq, j, true).ok());
    }
  }
  ASSERT_GT(earlier.size(), 5u);
  {
    v1::StoredRows stored;
    stored.set_created_at_unix_nanos(0);
    KeptRowsToProto(earlier, stored.mutable_rows());
    const std::string payload = stored.SerializeAsString();
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(payload.data()),
              static_cast<uInt>(payload.size())));
    std::string value(4, '\0');
    for (int i = 0; i < 4; ++i) value[i] = static_cast<char>(crc >> (8 * i));
    value += payload;
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    ASSERT_TRUE(
        raw->Put(leveldb::WriteOptions(), "m/c/r/00000000000000000003", value)
            .ok());
    delete raw;
  }
  {
    auto store = *Store::Open(dir);
    ASSERT_TRUE(store->Recover(1000).ok());
    // The rows of records 4 and 5 (other examples): a file.
    Drive(*model, *store, "c", 2, 4, /*seed=*/5);
  }
  EXPECT_EQ(RowsFiles(dir).size(), 1u);
  {
    auto store = *Store::Open(dir);
    absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
    ASSERT_TRUE(models.ok()) << models.status();
    ASSERT_EQ(models->size(), 1u);
    RecoveredModel& r = (*models)[0];
    EXPECT_EQ(r.seq, 5u);
    EXPECT_GT(r.certificate_rows, earlier.size());
    EXPECT_EQ(r.certificate_rows, r.model->counters().examples);
    EXPECT_TRUE(r.certificate_rows_attached);
    EXPECT_EQ(StateBits(r.model->ExportState()),
              StateBits(model->ExportState()));
    // A reset: both the stored rows and the file go.
    r.model->SetJournaling(true);
    r.model->Reset();
    Drive(*r.model, *store, "c", 1, 6);
  }
  EXPECT_EQ(KeysWith(dir, "m/c/r/"), 0);
  const std::map<std::string, uintmax_t> files = RowsFiles(dir);
  ASSERT_EQ(files.size(), 1u) << "the rows kept after the reset";
}

}  // namespace
}  // namespace perceptron::server
