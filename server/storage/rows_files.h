// The certificate's kept rows, stored beside LevelDB: one append-only file
// per model under the data directory's rows/ (docs/design.md section 5).
// A kept row is written once, synced with the records it goes with, and
// deleted with its file when the rows no longer count (the certificate
// froze, the model was reset or deleted); it is never copied by LevelDB's
// memtable flushes and compactions, as rows stored in LevelDB would be.
//
// A file is a sequence of chunks (rows_format.h; rows_chunk.h encodes and
// parses them): a header naming the model and its incarnation, then the rows
// of a log record, or a mark that the rows before it no longer count, each
// tagged with its record's sequence number. Recovery reads the chunks of the
// records it applied, up to the first that fails its check (a torn tail), and
// truncates the rest. Chunks are written before the LevelDB batch that holds
// their records (and synced before it with durability sync), so that an applied
// record always has its rows on disk.
//
// Thread-safe. Used by Store, which serializes its writes to it.
#ifndef PERCEPTRON_SERVER_STORAGE_ROWS_FILES_H_
#define PERCEPTRON_SERVER_STORAGE_ROWS_FILES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/kept_rows.h"

namespace perceptron::server {

class RowsFiles {
 public:
  // Opens (creating if absent) the directory `dir`.
  static absl::StatusOr<std::unique_ptr<RowsFiles>> Open(std::string dir);
  ~RowsFiles();

  // What one log record does to its model's rows.
  struct Change {
    const std::string* id;
    absl::Time created_at;
    uint64_t seq;
    bool cleared;          // the rows before this record no longer count
    const KeptRows* rows;  // then these are kept (may be empty)
    // then these places are counted once more each (may be null or empty)
    const std::vector<uint32_t>* repeats = nullptr;
  };
  // Writes the changes' chunks (synced if `sync`), then runs `commit` (the
  // LevelDB batch holding their records). Changes of a model not stored (put
  // or recovered) under that created_at are left out: their records are never
  // applied. If either fails, every file is
  // truncated back to where it was and the error returned. After a commit,
  // files whose rows no longer count are deleted.
  //
  // With `gave_way`, the rows give way instead when their files cannot be
  // written or synced (a full disk, an I/O error): the files that failed are
  // deleted, the commit runs without them, their models' ids are added to
  // `*gave_way` and the cause is set in `*why`. Their later changes keep no
  // rows until one clears them (the model's certificate stops keeping:
  // recovery finds those rows missing and restores it frozen).
  //
  // With `log`, a model's chunks may wait in the log instead (set_waiting):
  // `log` puts them in the batch `commit` writes, keyed by their record, so
  // that one sync makes both durable; they are moved to the file (written
  // there before whatever comes after them, and removed from the log by the
  // same commit) once the model's or every model's waiting chunks would pass
  // their limit, or a chunk is too large to wait. A clear removes them.
  struct Log {
    std::function<void(const std::string& id, uint64_t seq,
                       const std::string& chunks)>
        put;
    std::function<void(const std::string& id, uint64_t seq)> remove;
  };
  absl::Status Append(const std::vector<Change>& changes, bool sync,
                      const std::function<absl::Status()>& commit,
                      std::vector<std::string>* gave_way = nullptr,
                      absl::Status* why = nullptr, const Log* log = nullptr);
  // How many bytes of chunks a model may leave waiting in the log (one
  // record's at most a quarter of it and 4 KiB, every model's 8 times it);
  // 0 (the default): none wait.
  void set_waiting(uint64_t model_bytes) {
    absl::MutexLock lock(&mu_);
    waiting_limit_ = model_bytes;
  }
  // The bytes of chunks waiting in the log, every model's.
  uint64_t waiting_bytes() const {
    absl::MutexLock lock(&mu_);
    return waiting_bytes_;
  }
  // A model stored anew under `id` (created or imported) with `rows` (may be
  // null or empty): its file is written and synced, then `commit` runs; after
  // it, any earlier file of `id` is deleted. An earlier file of the same
  // incarnation (the same created_at) is deleted first.
  absl::Status Put(const std::string& id, absl::Time created_at,
                   const KeptRows* rows,
                   const std::function<absl::Status()>& commit);
  // Runs `commit` (the model's deletion), then deletes its file.
  absl::Status Delete(const std::string& id,
                      const std::function<absl::Status()>& commit);
  // Makes every earlier write durable (durability async).
  absl::Status Sync();
  // Rows are written only while the file system keeps `bytes` free beside
  // them, for the log; past that they give way as on a full disk (Append
  // with `gave_way`). Default: 0.
  void set_reserve(uint64_t bytes) {
    absl::MutexLock lock(&mu_);
    reserve_ = bytes;
  }

  // Recovery. Lists the files on disk; then for each model, Recover reads
  // the rows of its records up to `last_seq` after `rows` (whose content a
  // chunk that clears them replaces), one chunk in memory at a time, then
  // those of `logged` (the chunks found waiting in the log, by record, in
  // order) after the file's last record. `*ok` is false if a chunk of an
  // applied record failed to parse. Chunks after `last_seq` or after one that
  // fails its check are truncated; the records of `logged` not taken (after
  // `last_seq`, or moved to the file already) are added to `*drop`.
  void List();
  void Recover(const std::string& id, absl::Time created_at, uint64_t last_seq,
               KeptRows* rows, bool* ok,
               std::vector<std::pair<uint64_t, std::string>> logged = {},
               std::vector<uint64_t>* drop = nullptr);
  // Model `id`'s file, listed again as if found on disk, for Recover to read
  // once more (a model rebuilt in a running server).
  void Relist(const std::string& id);
  // Deletes the files listed that no recovered model took, except those of
  // `keep` (models set aside, left untouched).
  void RemoveUnclaimed(const absl::flat_hash_set<std::string>& keep);

 private:
  struct File {
    std::string path;
    int64_t created_at = 0;  // unix nanoseconds
    int fd = -1;
    uint64_t size = 0;
    bool live = false;   // rows after its last clear
    bool dirty = false;  // written since the last sync
  };
  explicit RowsFiles(std::string dir, int dir_fd, int max_held)
      : dir_(std::move(dir)), dir_fd_(dir_fd), max_held_(max_held) {}
  std::string PathOf(const std::string& id, int64_t created_at) const;
  absl::Status OpenForWrite(File& f, bool create)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Close(File& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SyncDir() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes every file (and the directory) durable at once: syncfs(2) on the
  // directory's file system, one journal commit where each file's fdatasync
  // would take one each. It flushes whatever else of that file system is not
  // yet on disk too (the data directory's own volume, in the deployments).
  absl::Status SyncAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `files` (and the directory, if it changed) durable: one file's
  // fdatasync, or SyncAll for several.
  absl::Status SyncFiles(absl::Span<File* const> files)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The chunks of a model's records waiting in the log, in order.
  struct Waiting {
    std::vector<std::pair<uint64_t, std::string>> chunks;
    uint64_t bytes = 0;
  };
  // Recover's part for the file of model `id` (incarnation `nanos`): the
  // last record whose rows it holds (0 if none).
  uint64_t RecoverFile(const std::string& id, int64_t nanos, uint64_t last_seq,
                       KeptRows* rows, bool* ok)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets model `id`'s waiting chunks (not the log's copies).
  void Unwait(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const int dir_fd_;
  const int max_held_;  // descriptors kept open between writes
  mutable absl::Mutex mu_;
  // Every model stored (put or recovered), by id: its created_at. Records of
  // another incarnation are not this model's.
  absl::flat_hash_map<std::string, int64_t> incarnations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, File> files_ ABSL_GUARDED_BY(mu_);
  int held_ ABSL_GUARDED_BY(mu_) = 0;
  bool dir_dirty_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t reserve_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t waiting_limit_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  uint64_t waiting_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Models whose rows gave way: their changes keep no rows until one clears
  // them.
  absl::flat_hash_set<std::string> gave_way_ ABSL_GUARDED_BY(mu_);
  // Recovery: files on disk by model id, not yet taken.
  absl::flat_hash_map<std::string, std::vector<std::pair<int64_t, std::string>>>
      listed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_ROWS_FILES_H_
