// Log files made of files of zeros written beforehand: LevelDB's log files are
// told from its others; a log file is the file kept ready, written over from
// its start (and past its end), and the next is made in the background; a file
// left ready is taken by the next start; nothing is written on a file system
// in memory; a store whose logs rotate through them recovers every record.
#include "server/storage/prewritten_logs.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "core/model.h"
#include "gtest/gtest.h"
#include "server/storage/store.h"
#include "tests/core/state_bits.h"
#include "tests/scoped_dir.h"
#include "tests/server/storage/store_drive.h"

namespace perceptron::server {
namespace {

namespace fs = std::filesystem;

bool InMemory(const std::string& dir) {
  struct statfs s {};
  return ::statfs(dir.c_str(), &s) == 0 &&
         (s.f_type == TMPFS_MAGIC || s.f_type == RAMFS_MAGIC);
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() | 1);  // never zero
  return out;
}

// Writes `parts` to a new log file taken from `logs`, synced and closed.
void WriteLog(PrewrittenLogs& logs, const std::string& name,
              const std::vector<std::string>& parts) {
  std::unique_ptr<leveldb::WritableFile> file(logs.Take(name));
  ASSERT_NE(file, nullptr) << name;
  for (const std::string& p : parts) ASSERT_TRUE(file->Append(p).ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Close().ok());
}

TEST(PrewrittenLogsTest, TellsLevelDbsLogFilesFromItsOthers) {
  for (const char* log : {"000012.log", "/data/000012.log", "7.log"})
    EXPECT_TRUE(PrewrittenLogs::IsLogName(log)) << log;
  for (const char* other :
       {"LOG", "LOG.old", "/data/LOG", "MANIFEST-000002", "000012.ldb",
        "000012.sst", "000012.dbtmp", "CURRENT", ".log", "/data/.log",
        "x12.log", "12.log.tmp", PrewrittenLogs::kSpareName})
    EXPECT_FALSE(PrewrittenLogs::IsLogName(other)) << other;
}

TEST(PrewrittenLogsTest, ALogFileIsWrittenOverTheZerosAndPastThem) {
  const testing::ScopedDir scoped("prewritten");
  const std::string& dir = scoped.path();
  if (InMemory(dir)) GTEST_SKIP() << dir << " is in memory: nothing prewritten";
  const std::string spare = dir + "/" + PrewrittenLogs::kSpareName;
  constexpr uint64_t kBytes = 1 << 20;
  PrewrittenLogs logs(dir, kBytes);
  // Nothing is written before Start (the directory may not be ours).
  EXPECT_EQ(logs.Take(dir + "/000001.log"), nullptr);
  EXPECT_FALSE(fs::exists(spare));
  logs.Start();
  ASSERT_TRUE(logs.AwaitReady(absl::Seconds(60)));
  EXPECT_EQ(fs::file_size(spare), kBytes);
  EXPECT_EQ(Contents(spare), std::string(kBytes, '\0'));

  // Small and large appends (past the buffer), written over the zeros.
  const std::string a = RandomBytes(100, 1), b = RandomBytes(200 << 10, 2);
  WriteLog(logs, dir + "/000002.log", {a, b, a});
  EXPECT_EQ(Contents(dir + "/000002.log"),
            a + b + a + std::string(kBytes - b.size() - 2 * a.size(), '\0'));

  // The next is made in the background; a log longer than it goes on past.
  ASSERT_TRUE(logs.AwaitReady(absl::Seconds(60)));
  const std::string c = RandomBytes(kBytes + 1000, 3);
  WriteLog(logs, dir + "/000003.log", {c});
  EXPECT_EQ(Contents(dir + "/000003.log"), c);
  EXPECT_EQ(logs.taken(), 2u);
  ASSERT_TRUE(logs.AwaitReady(absl::Seconds(60)));
  EXPECT_EQ(fs::file_size(spare), kBytes);
}

TEST(PrewrittenLogsTest, AFileLeftReadyIsTakenByTheNextStart) {
  const testing::ScopedDir scoped("prewritten");
  const std::string& dir = scoped.path();
  if (InMemory(dir)) GTEST_SKIP() << dir << " is in memory: nothing prewritten";
  const std::string spare = dir + "/" + PrewrittenLogs::kSpareName;
  {
    PrewrittenLogs logs(dir, 1 << 20);
    logs.Start();
    ASSERT_TRUE(logs.AwaitReady(absl::Seconds(60)));
  }
  // One being written when a server stopped is removed.
  std::ofstream(spare + ".tmp") << "partly";
  {
    PrewrittenLogs logs(dir, 1 << 20);  // not started: only takes
    EXPECT_FALSE(fs::exists(spare + ".tmp"));
    WriteLog(logs, dir + "/000004.log", {"x"});
    EXPECT_EQ(fs::file_size(dir + "/000004.log"), 1u << 20);
  }
  // A file of another size is not taken, and removed.
  {
    PrewrittenLogs logs(dir, 1 << 20);
    logs.Start();
    ASSERT_TRUE(logs.AwaitReady(absl::Seconds(60)));
  }
  PrewrittenLogs other(dir, 2 << 20);
  EXPECT_FALSE(fs::exists(spare));
  EXPECT_EQ(other.Take(dir + "/000005.log"), nullptr);
}

TEST(PrewrittenLogsTest, NothingIsWrittenOnAFileSystemInMemory) {
  if (!fs::is_directory("/dev/shm") || !InMemory("/dev/shm"))
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  std::string dir = "/dev/shm/prewritten-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  {
    PrewrittenLogs logs(dir, 1 << 20);
    logs.PrepareIfNew();  // synchronous: writes nothing here
    EXPECT_FALSE(fs::exists(dir + "/" + PrewrittenLogs::kSpareName));
    EXPECT_EQ(logs.Take(dir + "/000001.log"), nullptr);
    EXPECT_EQ(logs.taken(), 0u);
  }
  fs::remove_all(dir);
}

// A store's log files through the files written beforehand: a new store's
// first, then the one made in the background when LevelDB starts the next
// (after 4 MiB of records); every record is recovered after a restart.
TEST(PrewrittenLogsTest, AStoresLogsRotateThroughThemAndRecoverEveryRecord) {
  const testing::ScopedDir scoped("store");
  const std::string& dir = scoped.path();
  if (InMemory(dir)) GTEST_SKIP() << dir << " is in memory: nothing prewritten";
  ModelConfig wide;
  wide.dimension = 200000;  // with every weight used, a snapshot of 1.6 MB
  ModelConfig small;
  small.dimension = 6;
  std::vector<std::string> states;
  {
    auto store = *Store::Open(dir);
    PrewrittenLogs* logs = store->prewritten_logs();
    ASSERT_NE(logs, nullptr);
    EXPECT_EQ(logs->taken(), 1u);  // the new store's first log file
    ASSERT_TRUE(logs->AwaitReady(absl::Seconds(60)));
    auto model = NewModel(small);
    ASSERT_TRUE(
        store->PutModel("m", absl::UnixEpoch(), model->ExportState()).ok());
    states = Drive(*model, *store, "m", 10);
    for (int i = 0; i < 4; ++i) {
      // Weights that are not zeros: a vector of zeros is stored by its
      // non-zeros, in a few bytes.
      ModelState state = NewModel(wide)->ExportState();
      state.learner.sparse_weights.reset();  // a new model's zeros, exported
      state.learner.weights.assign(wide.weight_count(), 0.5);
      ASSERT_TRUE(store
                      ->PutModel(absl::StrCat("wide", i), absl::UnixEpoch(),
                                 std::move(state))
                      .ok());
    }
    const std::vector<std::string> more = Drive(*model, *store, "m", 10, 11);
    states.insert(states.end(), more.begin(), more.end());
    EXPECT_GE(logs->taken(), 2u);  // LevelDB started a log file after 4 MiB
  }
  auto store = *Store::Open(dir);
  absl::StatusOr<std::vector<RecoveredModel>> models = RecoverAll(*store);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 5u);
  for (const RecoveredModel& r : *models) {
    if (r.id != "m") continue;
    EXPECT_EQ(r.seq, 20u);
    EXPECT_EQ(testing::StateBits(r.model->ExportState()), states.back());
  }
}

}  // namespace
}  // namespace perceptron::server
