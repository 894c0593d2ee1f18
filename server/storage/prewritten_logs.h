// LevelDB's log files written over space written with zeros beforehand
// (docs/design.md section 5, "The log's syncs").
//
// On ext4 (and most file systems) an fdatasync after an append also commits
// the file's new size and blocks to the journal: a second write and flush. An
// fdatasync after overwriting blocks that are already written and synced has
// only the data to write. So a log file made of a file of zeros, written and
// synced ahead of time, syncs each commit at the cost of its data alone.
// LevelDB's log reader skips zeros (they read as records of its type 0, which
// LevelDB reserves for preallocated files), so the file is an ordinary log to
// it; a record that outgrows the zeros is appended as before.
//
// One such file (`kSpareName` in the directory) is kept ready: a new log file
// takes it (renamed, and the directory synced, so that the name is durable
// before any record is), and a thread of its own writes the next. When none is
// ready (the disk full, or the thread behind), LevelDB creates the log file
// itself. Nothing is prewritten on a file system in memory (tmpfs, ramfs),
// where a sync costs nothing and the zeros would take memory.
//
//   PrewrittenLogs logs(dir, 5 << 20);
//   logs.Start();
//   leveldb::WritableFile* file = logs.Take(dir + "/000012.log");  // or null
//
// Thread-safe.
#ifndef PERCEPTRON_SERVER_STORAGE_PREWRITTEN_LOGS_H_
#define PERCEPTRON_SERVER_STORAGE_PREWRITTEN_LOGS_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "leveldb/env.h"

namespace perceptron::server {

class PrewrittenLogs {
 public:
  // The file kept ready, in the directory; LevelDB ignores names it does not
  // know.
  static constexpr char kSpareName[] = "perceptrond-log-spare";

  // Files of `bytes` zeros in `dir` (which may not exist yet); `bytes` 0:
  // none. A file left ready by an earlier start is taken; no other is written
  // before Start.
  PrewrittenLogs(std::string dir, uint64_t bytes);
  // Waits for a file being written, if any; the one ready stays for the next
  // start.
  ~PrewrittenLogs();

  // Writes the first file now if the directory is new (absent, then created,
  // or empty), so that a new store's first log file is made of it.
  void PrepareIfNew();
  // Writes a file to keep ready now, and another after each Take, in the
  // background (once the directory is known to be the caller's).
  void Start();

  PrewrittenLogs(const PrewrittenLogs&) = delete;
  PrewrittenLogs& operator=(const PrewrittenLogs&) = delete;

  // The new log file `name` (in the directory) made of the file ready, open
  // for writing from its start, or nullptr if none is ready or it could not be
  // moved: the caller then creates the file itself. Either way the next file
  // is written in the background.
  leveldb::WritableFile* Take(const std::string& name);

  // Whether `name` is one of LevelDB's log files ("<number>.log").
  static bool IsLogName(const std::string& name);

  // For tests: log files made of a prewritten file so far, and whether one is
  // ready within `timeout`.
  uint64_t taken() const;
  bool AwaitReady(absl::Duration timeout) const;

 private:
  // Writes the file kept ready; false if it cannot (it is then removed).
  bool Prepare() const;
  // The writer's loop, from Start.
  void Loop();

  const std::string dir_;
  const uint64_t bytes_;
  // std::mutex, as LevelDB's own threads use. Under ThreadSanitizer an
  // absl::Mutex::Await on a new thread reports the allocation of Abseil's
  // identity for the thread as a race with the wake-up (suppressed in
  // tests/tsan.supp), and a test's child process that opened a store without
  // those suppressions stopped on it.
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  // Guarded by mu_.
  bool ready_ = false;
  bool wanted_ = false;
  bool stopping_ = false;
  uint64_t taken_ = 0;
  std::thread writer_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_PREWRITTEN_LOGS_H_
