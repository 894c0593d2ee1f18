// The store: recovery rebuilds models bit for bit; damaged log tails are
// dropped, never applied; a damaged newest snapshot falls back to the previous
// one; foreign directories are refused.
#include "server/storage/store.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/certificate_tracker.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "leveldb/db.h"
#include "server/storage/state_convert.h"
#include "tests/core/drivers.h"
#include "tests/core/state_bits.h"
#include "tests/scoped_dir.h"
#include "tests/server/storage/leveldb_keys.h"

namespace perceptron::server {
namespace {

using ::testing::HasSubstr;
using testing::KeysWith;
using testing::StateBits;

// Drives `model` and logs a record per window; returns the state after each
// record.
std::vector<std::string> Drive(Model& model, Store& store,
                               const std::string& id, int records,
                               uint64_t first_seq = 1, uint64_t seed = 3) {
  testing::Driver driver(6, /*sparse=*/seed % 2 == 0, seed);
  std::vector<Issued> open;
  std::vector<std::string> states;
  for (int r = 0; r < records; ++r) {
    for (int i = 0; i < 5; ++i) driver.Step(model, &open);
    EXPECT_TRUE(store
                    .Append(id, absl::UnixEpoch(), first_seq + r,
                            model.TakeJournal(), true)
                    .ok());
    states.push_back(StateBits(model.ExportState()));
  }
  return states;
}

std::unique_ptr<Model> NewModel(const ModelConfig& c) {
  auto m = *Model::Create(c);
  m->SetJournaling(true);
  return m;
}

// Every model recovered; an error if any was set aside.
absl::StatusOr<std::vector<RecoveredModel>> RecoverAll(Store& store) {
  absl::StatusOr<Recovery> r = store.Recover(1 << 20);
  if (!r.ok()) return r.status();
  if (!r->set_aside.empty()) return r->set_aside[0].reason;
  return std::move(r->models);
}

TEST(StoreTest, RecoveryRebuildsEveryAlgorithmBitForBit) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  std::vector<std::string> expected;
  {
    auto store = *Store::Open(dir);
    for (const testing::Variant& v : testing::Variants(6)) {
      auto model = NewModel(v.config);
      ASSERT_TRUE(
          store->PutModel(v.name, absl::UnixEpoch(), model->ExportState())
              .ok());
      std::vector<std::string> states = Drive(*model, *store, v.name, 30);
      ASSERT_TRUE(store->PutSnapshot(v.name, 30, model->ExportState()).ok());
      states = Drive(*model, *store, v.name, 10, 31);
      expected.push_back(states.back());
    }
  }
  auto store = *Store::Open(dir);
  absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
  ASSERT_TRUE(models.ok()) << models.status();
  const std::vector<testing::Variant> variants = testing::Variants(6);
  ASSERT_EQ(models->size(), variants.size());
  for (const RecoveredModel& r : *models) {
    size_t k = std::find_if(
                   variants.begin(), variants.end(),
                   [&](const testing::Variant& v) { return v.name == r.id; }) -
               variants.begin();
    ASSERT_LT(k, variants.size());
    EXPECT_EQ(StateBits(r.model->ExportState()), expected[k]) << r.id;
    EXPECT_EQ(r.seq, 40u);
    EXPECT_EQ(r.snapshot_seq, 30u);
    EXPECT_EQ(r.records_applied, 10u);
    EXPECT_EQ(r.records_dropped, 0u);
  }
}

// A model's certificate goes through the store as the rest of its state: its
// comparators (in the records whose batch changed them) and sums, recovered
// bit for bit from a snapshot and the log after it, frozen where they end.
TEST(StoreTest, RecoveryCarriesTheCertificatesComparatorsAndSums) {
  const testing::ScopedDir scoped("store-cert");
  ModelConfig config;
  config.dimension = 6;
  auto model = NewModel(config);
  model->EnableCertificate(100000, 1000);
  CertificateSolver solver(config.weight_dimension());
  auto solve = [&] {
    CertificateTracker* t = model->certificate();
    std::vector<uint32_t> repeats;
    KeptRows rows = t->Take(&repeats);
    solver.Add(std::move(rows), repeats);
    const Certificate c = solver.Solve(model->stats(false).bound.radius, {});
    const std::vector<std::vector<double>> vs = CandidatesFrom(c);
    t->Install(vs, HingeSums(solver.rows(), vs), c.lower, c.converged,
               solver.size(), t->generation(), KeptRows(), nullptr,
               &solver.rows());
  };
  std::optional<CertificateState> was;
  {
    auto store = *Store::Open(scoped.path());
    ASSERT_TRUE(
        store->PutModel("c", absl::UnixEpoch(), model->ExportState()).ok());
    for (int round = 0; round < 4; ++round) {
      Drive(*model, *store, "c", 10, round * 10 + 1, 5);
      solve();
      if (round == 1) {
        ASSERT_TRUE(store->PutSnapshot("c", 20, model->ExportState()).ok());
      }
    }
    Drive(*model, *store, "c", 1, 41, 6);  // its record carries the solution
    was = model->ExportState().certificate;
  }
  ASSERT_TRUE(was.has_value());
  ASSERT_FALSE(was->candidates.empty());
  auto store = *Store::Open(scoped.path());
  absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ((*models)[0].records_applied, 21u);
  const std::optional<CertificateState> back =
      (*models)[0].model->ExportState().certificate;
  ASSERT_TRUE(back.has_value());
  // The rows kept beside the log: the certificate goes on keeping, exactly
  // as it was, and its solver gets every example back.
  // (Drive's streams repeat examples: rows stand for several.)
  EXPECT_EQ((*models)[0].certificate_rows, was->observed);
  EXPECT_LT(was->kept, was->observed);
  EXPECT_TRUE((*models)[0].certificate_rows_attached);
  EXPECT_EQ(back->phase, CertificatePhase::kKeeping);
  testing::Bits a, b;
  for (const std::vector<double>& v : back->candidates) a.Add(v);
  for (const std::vector<double>& v : was->candidates) b.Add(v);
  EXPECT_EQ(a.Add(back->sums).Add(back->lower).str(),
            b.Add(was->sums).Add(was->lower).str());
  EXPECT_EQ(*back, *was);
  KeptRows rows = solver.rows();
  std::vector<uint32_t> repeats;
  KeptRows last = model->certificate()->Take(&repeats);
  for (uint32_t t : repeats) rows.AddCount(t, 1);
  rows.Append(last);
  EXPECT_EQ(rows.examples(), was->observed);
  EXPECT_TRUE((*models)[0].model->certificate()->Take() == rows);
}

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

// The rows files under `dir`/rows, by name, with their sizes.
std::map<std::string, uintmax_t> RowsFiles(const std::string& dir) {
  std::map<std::string, uintmax_t> out;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/rows"))
    out[e.path().filename().string()] = e.file_size();
  return out;
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

// The newest file named *.log in `dir`: LevelDB's write-ahead log.
std::filesystem::path NewestLog(const std::string& dir) {
  std::filesystem::path newest;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log" &&
        (newest.empty() || e.path().filename() > newest.filename())) {
      newest = e.path();
    }
  }
  return newest;
}

// Writes 20 records in a child process that exits without closing the store, so
// they are only in LevelDB's log; damages the log with `damage`, and recovers.
// Returns the states after each record and the recovered model.
struct Damaged {
  std::vector<std::string> states;
  RecoveredModel recovered;
};

// The 20 records that the damage tests write.
std::vector<std::string> WriteRecords(const std::string& where) {
  ModelConfig c;
  c.dimension = 6;
  auto store = *Store::Open(where);
  auto model = NewModel(c);
  EXPECT_TRUE(
      store->PutModel("m", absl::UnixEpoch(), model->ExportState()).ok());
  return Drive(*model, *store, "m", 20, 1, 4);
}

// A copy of this test program started with PERCEPTRON_STORE_WRITER=DIR writes
// the records into DIR and exits before main, without closing the store: like a
// killed server, nothing is flushed or compacted. (A fresh program, not a
// forked one: forking a process with LevelDB's threads and then using LevelDB
// in the child is not safe.)
const bool kWriterRan = [] {
  if (const char* dir = getenv("PERCEPTRON_STORE_WRITER")) {
    WriteRecords(dir);
    _exit(0);
  }
  return false;
}();

void WriteInAnotherProcess(const std::string& dir) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string env = "PERCEPTRON_STORE_WRITER=" + dir;
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), nullptr};
  std::vector<char*> envp = {const_cast<char*>(env.c_str()), nullptr};
  const pid_t child = fork();
  if (child == 0) {
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the writer failed";
}

Damaged WriteDamageRecover(
    const std::function<void(const std::filesystem::path&)>& damage) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  WriteInAnotherProcess(dir);
  Damaged d;
  const testing::ScopedDir again("store");
  d.states = WriteRecords(
      again.path());  // the same, deterministic run: the expected states
  const std::filesystem::path log = NewestLog(dir);
  EXPECT_FALSE(log.empty());
  damage(log);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return d;
  absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(**store);
  EXPECT_TRUE(models.ok()) << models.status();
  if (models.ok() && models->size() == 1) d.recovered = std::move((*models)[0]);
  return d;
}

TEST(StoreTest, ATornLogTailIsDroppedAndTheRestRecovered) {
  Damaged d = WriteDamageRecover([](const std::filesystem::path& log) {
    std::filesystem::resize_file(
        log, std::filesystem::file_size(log) - 7);  // mid-record
  });
  ASSERT_NE(d.recovered.model, nullptr);
  // Every record but the torn last one, exactly.
  EXPECT_EQ(d.recovered.seq, 19u);
  EXPECT_EQ(StateBits(d.recovered.model->ExportState()), d.states[18]);
}

TEST(StoreTest, AFlippedByteInTheLogTailIsDetectedAndNeverApplied) {
  Damaged d = WriteDamageRecover([](const std::filesystem::path& log) {
    std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = std::filesystem::file_size(log);
    f.seekg(size - 20);
    char c;
    f.get(c);
    f.seekp(size - 20);
    f.put(static_cast<char>(c ^ 0x40));
  });
  ASSERT_NE(d.recovered.model, nullptr);
  // The damaged record (and anything after it) is dropped; what is left is an
  // exact prefix.
  ASSERT_LT(d.recovered.seq, 20u);
  ASSERT_GE(d.recovered.seq, 1u);
  EXPECT_EQ(StateBits(d.recovered.model->ExportState()),
            d.states[d.recovered.seq - 1]);
}

TEST(StoreTest, ADamagedNewestSnapshotFallsBackToThePreviousOne) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  ModelConfig c;
  c.dimension = 6;
  std::string final_state;
  {
    auto store = *Store::Open(dir);
    auto model = NewModel(c);
    ASSERT_TRUE(
        store->PutModel("m", absl::UnixEpoch(), model->ExportState()).ok());
    Drive(*model, *store, "m", 10, 1);
    ASSERT_TRUE(store->PutSnapshot("m", 10, model->ExportState()).ok());
    Drive(*model, *store, "m", 10, 11);
    ASSERT_TRUE(store->PutSnapshot("m", 20, model->ExportState()).ok());
    final_state = Drive(*model, *store, "m", 5, 21).back();
  }
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    std::string value;
    const std::string key = "m/m/s/00000000000000000020";
    ASSERT_TRUE(raw->Get(leveldb::ReadOptions(), key, &value).ok());
    value[value.size() / 2] ^= 0x01;  // one bit
    ASSERT_TRUE(raw->Put(leveldb::WriteOptions(), key, value).ok());
    delete raw;
  }
  auto store = *Store::Open(dir);
  absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 1u);
  EXPECT_TRUE((*models)[0].fell_back);
  EXPECT_EQ((*models)[0].snapshot_seq, 10u);
  EXPECT_EQ(StateBits((*models)[0].model->ExportState()), final_state);
}

TEST(StoreTest,
     AModelWithNoValidSnapshotIsSetAsideUntouchedAndTheOthersRecover) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  ModelConfig c;
  c.dimension = 2;
  {
    auto store = *Store::Open(dir);
    for (const char* id : {"a", "m", "z"}) {
      ASSERT_TRUE(store
                      ->PutModel(id, absl::UnixEpoch(),
                                 (*Model::Create(c))->ExportState())
                      .ok());
    }
  }
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    ASSERT_TRUE(raw->Put(leveldb::WriteOptions(), "m/m/s/00000000000000000000",
                         "garbage")
                    .ok());
    delete raw;
  }
  // Rows files: the set-aside model's stays as it is; those of a model not
  // stored, and of an earlier incarnation of "a", go.
  for (const char* name : {"m.0.rows", "gone.0.rows", "a.5.rows"})
    std::ofstream(dir + "/rows/" + name) << "kept";
  for (int round = 0; round < 2; ++round) {  // the second: nothing was changed
    absl::StatusOr<Recovery> r = (*Store::Open(dir))->Recover(1 << 20);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->models.size(), 2u);
    EXPECT_EQ(r->models[0].id, "a");
    EXPECT_EQ(r->models[1].id, "z");
    ASSERT_EQ(r->set_aside.size(), 1u);
    EXPECT_EQ(r->set_aside[0].id, "m");
    EXPECT_EQ(r->set_aside[0].reason.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(r->set_aside[0].reason.message()),
                HasSubstr("model m: no valid snapshot"));
    EXPECT_EQ(RowsFiles(dir),
              (std::map<std::string, uintmax_t>{{"m.0.rows", 4}}));
  }
  leveldb::DB* raw;
  ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
  std::string value;
  EXPECT_TRUE(
      raw->Get(leveldb::ReadOptions(), "m/m/s/00000000000000000000", &value)
          .ok());
  EXPECT_EQ(value, "garbage");
  delete raw;
}

TEST(StoreTest, ForeignOrIncompatibleDirectoriesAreRefusedUntouched) {
  const testing::ScopedDir foreign_dir("store");
  const std::string& foreign = foreign_dir.path();
  {
    leveldb::DB* raw;
    leveldb::Options o;
    o.create_if_missing = true;
    ASSERT_TRUE(leveldb::DB::Open(o, foreign, &raw).ok());
    ASSERT_TRUE(raw->Put(leveldb::WriteOptions(), "someone", "else").ok());
    delete raw;
  }
  absl::Status s = Store::Open(foreign).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("holds data of another program"));

  const testing::ScopedDir future_dir("store");
  const std::string& future = future_dir.path();
  {
    leveldb::DB* raw;
    leveldb::Options o;
    o.create_if_missing = true;
    ASSERT_TRUE(leveldb::DB::Open(o, future, &raw).ok());
    ASSERT_TRUE(
        raw->Put(leveldb::WriteOptions(), "meta/format", "perceptrond-store 2")
            .ok());
    delete raw;
  }
  s = Store::Open(future).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("has format \"perceptrond-store 2\""));
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), future, &raw).ok());
    std::string v;
    ASSERT_TRUE(raw->Get(leveldb::ReadOptions(), "meta/format", &v).ok());
    EXPECT_EQ(v, "perceptrond-store 2");  // not overwritten
    delete raw;
  }

  const testing::ScopedDir file_dir("store");
  const std::string file = file_dir.path() + "/a-file";
  std::ofstream(file) << "x";
  EXPECT_FALSE(Store::Open(file).ok());
}

// A multiclass model's rows keep their classes; rows whose classes are all 1
// are written as labels +1 and read back as class 1.
TEST(StoreTest, AMulticlassModelsRowsKeepTheirClasses) {
  KeptRows rows;
  for (int t = 0; t < 20; ++t) {
    rows.Add(std::vector<uint32_t>{0, 1}, std::vector<double>{0.25 * t, 1.0},
             t % 10);
  }
  v1::KeptRowsState state;
  KeptRowsToProto(rows, &state, /*compact=*/true);
  EXPECT_TRUE(state.labels().empty());
  EXPECT_EQ(state.classes().size(), rows.size());
  KeptRows back;
  ASSERT_TRUE(KeptRowsFromProto(state, &back).ok());
  EXPECT_TRUE(back == rows);

  KeptRows ones;
  ones.Add(std::vector<uint32_t>{0}, std::vector<double>{2.0}, 1);
  v1::KeptRowsState signs;
  KeptRowsToProto(ones, &signs);
  EXPECT_TRUE(signs.classes().empty());
  KeptRows ones_back;
  ASSERT_TRUE(KeptRowsFromProto(signs, &ones_back).ok());
  EXPECT_EQ(ones_back.label(0), 1);

  v1::KeptRowsState bad = state;
  (*bad.mutable_classes())[3] = 64;  // past the most classes
  EXPECT_FALSE(KeptRowsFromProto(bad, &back).ok());
  bad = state;
  bad.set_labels(std::string(rows.size(), 1));  // both
  EXPECT_FALSE(KeptRowsFromProto(bad, &back).ok());
}

// The store keeps a dense row's values alone (its indices 0, 1, ..., n-1
// marked, not written); export blobs give every index, as older servers read.
// Both read back as the same rows, as do rows written before the mark; rows
// whose marks, indices or values do not add up are refused.
TEST(StoreTest, TheCertificatesDenseRowsAreStoredWithoutTheirIndices) {
  KeptRows rows;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  for (int t = 0; t < 300; ++t) {
    std::vector<uint32_t> indices;
    std::vector<double> values;
    const int kind = t % 3;  // dense, dense with a zero, sparse
    for (uint32_t i = 0; i < 40; ++i) {
      if ((kind == 1 && i == 7) || (kind == 2 && i % 3 != 0)) continue;
      indices.push_back(i);
      values.push_back(normal(rng));
    }
    rows.Add(indices, values, t % 2 == 0 ? 1 : -1);
  }
  v1::KeptRowsState compact, full;
  KeptRowsToProto(rows, &compact, /*compact=*/true);
  KeptRowsToProto(rows, &full);
  ASSERT_EQ(compact.dense().size(), rows.size());
  EXPECT_TRUE(full.dense().empty());
  EXPECT_EQ(full.indices_size(), full.values_size());
  // 100 dense rows of 40: their 4,000 indices are not written.
  EXPECT_EQ(compact.indices_size(), full.indices_size() - 4000);
  EXPECT_LT(compact.ByteSizeLong(), full.ByteSizeLong());
  for (const v1::KeptRowsState* state : {&compact, &full}) {
    KeptRows back;
    ASSERT_TRUE(KeptRowsFromProto(*state, &back).ok());
    EXPECT_TRUE(back == rows);
    for (size_t t = 0; t < rows.size(); ++t)
      ASSERT_EQ(back.dense(t), t % 3 == 0) << t;
  }
  auto refused = [](const v1::KeptRowsState& state) {
    KeptRows back;
    return !KeptRowsFromProto(state, &back).ok();
  };
  v1::KeptRowsState bad = compact;
  (*bad.mutable_dense())[4] = 2;  // neither 0 nor 1
  EXPECT_TRUE(refused(bad));
  bad = compact;
  bad.mutable_dense()->pop_back();  // a mark short
  EXPECT_TRUE(refused(bad));
  bad = compact;
  bad.mutable_indices()->RemoveLast();  // the last sparse row short
  EXPECT_TRUE(refused(bad));
  bad = compact;
  bad.add_indices(1);  // an index after the last row
  EXPECT_TRUE(refused(bad));
  bad = compact;
  (*bad.mutable_dense())[1] = 1;  // a sparse row marked dense
  EXPECT_TRUE(refused(bad));
}

// Paths under /proc/self that name a table file of `dir` (*.ldb): the
// process's mappings (`maps`) or its open descriptors (`fd`).
int TablesIn(const std::string& what, const std::string& dir) {
  const std::string canonical = std::filesystem::canonical(dir).string();
  int n = 0;
  if (what == "maps") {
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      n += line.find(canonical) != std::string::npos &&
           line.find(".ldb") != std::string::npos;
    }
    return n;
  }
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target =
        std::filesystem::read_symlink(e.path(), error).string();
    n += !error && target.rfind(canonical, 0) == 0 &&
         target.find(".ldb") != std::string::npos;
  }
  return n;
}

// LevelDB's tables are read with pread, never mapped (their pages stay the
// kernel's page cache, not the server's memory), and past the descriptors the
// store may hold (a quarter of RLIMIT_NOFILE) a table is opened for each read:
// recovery over more tables than that rebuilds every model bit for bit.
TEST(StoreTest, TablesAreReadWithoutMappingsAndPastTheDescriptorsHeld) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  // The limit of descriptors lowered for the test (10 held), then restored.
  struct LowLimit {
    LowLimit() {
      getrlimit(RLIMIT_NOFILE, &saved);
      rlimit low = saved;
      low.rlim_cur = std::min<rlim_t>(saved.rlim_cur, 40);
      set = setrlimit(RLIMIT_NOFILE, &low) == 0;
    }
    ~LowLimit() { setrlimit(RLIMIT_NOFILE, &saved); }
    rlimit saved{};
    bool set = false;
  } limit;
  ASSERT_TRUE(limit.set);
  // 60 models of 100,000 random weights (incompressible): about 48 MB of
  // snapshots, in tables of at most 4 MiB (a memtable).
  ModelConfig config;
  config.dimension = 100000;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::vector<std::string> expected;
  {
    auto store = *Store::Open(dir);
    for (int m = 0; m < 60; ++m) {
      const std::string id = absl::StrCat("m", m);
      auto model = NewModel(config);
      ASSERT_TRUE(
          store->PutModel(id, absl::UnixEpoch(), model->ExportState()).ok());
      std::vector<double> x(config.dimension);
      for (double& v : x) v = normal(rng);
      ASSERT_TRUE(model->Learn(FeatureView::Dense(x), 1).ok());
      ASSERT_TRUE(store->PutSnapshot(id, 0, model->ExportState()).ok());
      expected.push_back(StateBits(model->ExportState()));
    }
  }
  int tables = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    tables += e.path().extension() == ".ldb";
  ASSERT_GT(tables, 10) << "too few tables to pass the descriptors held";
  {
    auto store = *Store::Open(dir);
    absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
    ASSERT_TRUE(models.ok()) << models.status();
    ASSERT_EQ(models->size(), expected.size());
    for (const RecoveredModel& r : *models) {
      int m = 0;
      ASSERT_TRUE(absl::SimpleAtoi(r.id.substr(1), &m)) << r.id;
      EXPECT_EQ(StateBits(r.model->ExportState()), expected[m]) << r.id;
    }
    EXPECT_EQ(TablesIn("maps", dir), 0);
    EXPECT_LE(TablesIn("fd", dir), 10);
    EXPECT_GT(TablesIn("fd", dir), 0);
  }
  EXPECT_EQ(TablesIn("fd", dir), 0);  // every one closed with the store
}

}  // namespace
}  // namespace perceptron::server
