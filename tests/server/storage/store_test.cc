// The store: recovery rebuilds models bit for bit; damaged log tails are
// dropped, never applied; a damaged newest snapshot falls back to the previous
// one; foreign directories are refused.
#include "server/storage/store.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "tests/server/storage/store_drive.h"

namespace perceptron::server {
namespace {

using ::testing::HasSubstr;
using testing::KeysWith;
using testing::StateBits;

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

// Where a prewritten log file's records end, or a byte or two before: past its
// last byte that is not zero.
uint64_t WrittenEnd(const std::filesystem::path& log) {
  std::ifstream in(log, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  const size_t last = bytes.find_last_not_of('\0');
  return last == std::string::npos ? 0 : last + 1;
}

// The 20 records that the damage tests write, into a log file written
// beforehand (a new store's first) or appended to as LevelDB does.
std::vector<std::string> WriteRecords(const std::string& where, bool prewrite) {
  ModelConfig c;
  c.dimension = 6;
  auto store = *Store::Open(where, prewrite ? kLogPrewriteBytes : 0);
  auto model = NewModel(c);
  EXPECT_TRUE(
      store->PutModel("m", absl::UnixEpoch(), model->ExportState()).ok());
  return Drive(*model, *store, "m", 20, 1, 4);
}

// A copy of this test program started with PERCEPTRON_STORE_WRITER=DIR writes
// the records into DIR and exits before any test, without closing the store:
// like a killed server, nothing is flushed or compacted. (A fresh program, not
// a forked one: forking a process with LevelDB's threads and then using LevelDB
// in the child is not safe. After main, in a test environment's set-up, not in
// a static initializer: the store starts threads.)
class WriterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* dir = getenv("PERCEPTRON_STORE_WRITER")) {
      const char* prewrite = getenv("PERCEPTRON_STORE_PREWRITE");
      WriteRecords(dir, prewrite != nullptr && prewrite[0] == '1');
      _exit(0);
    }
  }
};
::testing::Environment* const kWriter =
    ::testing::AddGlobalTestEnvironment(new WriterEnvironment);

void WriteInAnotherProcess(const std::string& dir, bool prewrite) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string env = "PERCEPTRON_STORE_WRITER=" + dir;
  const std::string how =
      absl::StrCat("PERCEPTRON_STORE_PREWRITE=", prewrite ? 1 : 0);
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), nullptr};
  // This program's environment too (a sanitizer's options among it).
  std::vector<char*> envp = {const_cast<char*>(env.c_str()),
                             const_cast<char*>(how.c_str())};
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  envp.push_back(nullptr);
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

// `damage` is given the log and where its records end (about).
Damaged WriteDamageRecover(
    bool prewrite,
    const std::function<void(const std::filesystem::path&, uint64_t)>& damage) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  WriteInAnotherProcess(dir, prewrite);
  Damaged d;
  const testing::ScopedDir again("store");
  d.states = WriteRecords(
      again.path(),
      prewrite);  // the same, deterministic run: the expected states
  const std::filesystem::path log = NewestLog(dir);
  EXPECT_FALSE(log.empty());
  // The records went into zeros written beforehand, or were appended.
  const uint64_t size = std::filesystem::file_size(log);
  if (prewrite) {
    EXPECT_EQ(size, kLogPrewriteBytes);
  } else {
    EXPECT_LT(size, kLogPrewriteBytes);
  }
  damage(log, prewrite ? WrittenEnd(log) : size);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return d;
  absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(**store);
  EXPECT_TRUE(models.ok()) << models.status();
  if (models.ok() && models->size() == 1) d.recovered = std::move((*models)[0]);
  return d;
}

TEST(StoreTest, ATornLogTailIsDroppedAndTheRestRecovered) {
  for (bool prewrite : {false, true}) {
    SCOPED_TRACE(prewrite ? "a log file written beforehand" : "appended");
    Damaged d = WriteDamageRecover(
        prewrite, [](const std::filesystem::path& log, uint64_t end) {
          std::filesystem::resize_file(log, end - 7);  // mid-record
        });
    ASSERT_NE(d.recovered.model, nullptr);
    // Every record but the torn last one, exactly.
    EXPECT_EQ(d.recovered.seq, 19u);
    EXPECT_EQ(StateBits(d.recovered.model->ExportState()), d.states[18]);
  }
}

TEST(StoreTest, ATornLogTailAmongZerosIsDroppedAndTheRestRecovered) {
  // A crash while a record was written over the zeros: its end is still zero.
  Damaged d = WriteDamageRecover(
      true, [](const std::filesystem::path& log, uint64_t end) {
        std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(end - 7));
        f.write("\0\0\0\0\0\0\0", 7);
      });
  ASSERT_NE(d.recovered.model, nullptr);
  EXPECT_EQ(d.recovered.seq, 19u);
  EXPECT_EQ(StateBits(d.recovered.model->ExportState()), d.states[18]);
}

TEST(StoreTest, AFlippedByteInTheLogTailIsDetectedAndNeverApplied) {
  for (bool prewrite : {false, true}) {
    SCOPED_TRACE(prewrite ? "a log file written beforehand" : "appended");
    Damaged d = WriteDamageRecover(
        prewrite, [](const std::filesystem::path& log, uint64_t end) {
          std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
          f.seekg(static_cast<std::streamoff>(end - 20));
          char c;
          f.get(c);
          f.seekp(static_cast<std::streamoff>(end - 20));
          f.put(static_cast<char>(c ^ 0x40));
        });
    ASSERT_NE(d.recovered.model, nullptr);
    // The damaged record (and anything after it) is dropped; what is left is
    // an exact prefix.
    ASSERT_LT(d.recovered.seq, 20u);
    ASSERT_GE(d.recovered.seq, 1u);
    EXPECT_EQ(StateBits(d.recovered.model->ExportState()),
              d.states[d.recovered.seq - 1]);
  }
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
        raw->Put(leveldb::WriteOptions(), "meta/format", "perceptrond-store 3")
            .ok());
    delete raw;
  }
  s = Store::Open(future).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("has format \"perceptrond-store 3\""));
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), future, &raw).ok());
    std::string v;
    ASSERT_TRUE(raw->Get(leveldb::ReadOptions(), "meta/format", &v).ok());
    EXPECT_EQ(v, "perceptrond-store 3");  // not overwritten
    delete raw;
  }

  const testing::ScopedDir file_dir("store");
  const std::string file = file_dir.path() + "/a-file";
  std::ofstream(file) << "x";
  s = Store::Open(file).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("a-file is not a directory (a file is there)"));
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "x");
  // A new directory is made with its parents; one under a file cannot be.
  const std::string deep = file_dir.path() + "/new/parents/data";
  EXPECT_TRUE(Store::Open(deep).ok());
  EXPECT_TRUE(std::filesystem::is_directory(deep));
  s = Store::Open(file + "/data").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("cannot create the data directory"));
}

// A directory of the format before (no vector given by its non-zeros) is read
// as it is and marked with this format, so that a server of that one refuses
// it; its models come back bit for bit.
TEST(StoreTest, ADirectoryOfTheFormatBeforeIsReadAndMarkedAsThisOne) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  ModelConfig c;
  c.dimension = 6;
  auto model = NewModel(c);
  {
    auto store = *Store::Open(dir);
    ASSERT_TRUE(
        store->PutModel("m", absl::UnixEpoch(), model->ExportState()).ok());
    Drive(*model, *store, "m", 5);
  }
  auto marker = [&dir](const char* set) {
    leveldb::DB* raw;
    EXPECT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    if (set != nullptr) {
      EXPECT_TRUE(raw->Put(leveldb::WriteOptions(), "meta/format", set).ok());
    }
    std::string v;
    EXPECT_TRUE(raw->Get(leveldb::ReadOptions(), "meta/format", &v).ok());
    delete raw;
    return v;
  };
  EXPECT_EQ(marker(nullptr), kStoreFormat);
  EXPECT_EQ(marker("perceptrond-store 1"), "perceptrond-store 1");
  {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(**store);
    ASSERT_TRUE(models.ok()) << models.status();
    ASSERT_EQ(models->size(), 1u);
    EXPECT_EQ(StateBits((*models)[0].model->ExportState()),
              StateBits(model->ExportState()));
  }
  EXPECT_EQ(marker(nullptr), "perceptrond-store 2");
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
