// Durability of models (docs/design.md section 5) on top of the store:
//   sync   a batch is answered only after its log record is on disk.
//          Records are queued in order and a committer thread writes
//          everything queued as one batch with one fsync, so concurrent
//          batches (of any streams and models) share it, and a stream can
//          apply its next batches while earlier ones are being synced.
//   async  the same, without the fsync: a record is with the operating
//          system before its batch is answered (a crash of the server loses
//          nothing answered), and the store is synced in the background every
//          `async_interval` (a crash of the machine may lose that interval).
//   none   memory only.
// A model's records are queued under its lock, so they are written in order;
// recovery stops at the first gap and never needs one. Snapshots are taken in
// the background and the log behind them is dropped.
//
// Thread-safe.
#ifndef PERCEPTRON_SERVER_STORAGE_PERSISTENCE_H_
#define PERCEPTRON_SERVER_STORAGE_PERSISTENCE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/model/registry.h"
#include "server/storage/store.h"

namespace perceptron::server {

enum class Durability { kSync, kAsync, kNone };

// "sync", "async" or "none".
absl::StatusOr<Durability> ParseDurability(absl::string_view text);
absl::string_view DurabilityName(Durability d);

struct PersistenceOptions {
  // Default: sync.
  Durability durability = Durability::kSync;
  // Where the store lives. Default: "perceptrond-data" under the working
  // directory.
  std::string data_dir = "perceptrond-data";
  // A model's snapshot is taken after this many log records. Default: 1000.
  uint64_t snapshot_every = 1000;
  // async: how often the store is synced. Default: 100 ms.
  absl::Duration async_interval = absl::Milliseconds(100);
  // sync: how often the background thread stages the changes no client waits
  // for (StageLater) and takes the snapshots due. Default: 100 ms.
  absl::Duration background_tick = absl::Milliseconds(100);
  // The certificate's kept rows give way (the certificate freezes) before
  // they would leave less than this free on the data directory's file system,
  // room kept for the log and snapshots. Default: 32 MiB.
  uint64_t rows_reserve_bytes = 32u << 20;
  // The certificate's rows of a batch wait in its log record's write (one
  // sync for both) until a model's waiting rows would pass this many bytes;
  // then they are moved to its rows file (Store::set_rows_waiting). 0: each
  // batch's rows are written and synced to the file before its record.
  // Default: 1 MiB.
  uint64_t rows_waiting_bytes = 1u << 20;
  // LevelDB's log files are made of files of this many zeros written
  // beforehand (server/storage/prewritten_logs.h); 0: appended to as LevelDB
  // does. Default: kLogPrewriteBytes (5 MiB).
  uint64_t log_prewrite_bytes = kLogPrewriteBytes;
};

struct RecoveryReport {
  size_t models = 0;
  // Models that could not be rebuilt, kept untouched (Registry::SetAside).
  std::vector<SetAsideModel> set_aside;
  uint64_t records_applied = 0;
  uint64_t records_dropped = 0;
  size_t fell_back = 0;
  absl::Duration took;
};

// A queued log record's completion.
class Commit {
 public:
  // Calls `done` with the outcome once the record is written as the mode
  // requires: at once if it already is, else later on the committer thread. At
  // most once per Commit.
  void Then(std::function<void(absl::Status)> done);
  // Waits for the outcome.
  absl::Status Wait();

 private:
  friend class Persistence;
  void Complete(absl::Status status);

  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::function<void(absl::Status)> then_ ABSL_GUARDED_BY(mu_);
};

// Null when nothing needs writing (no change, or durability none): treat as
// done and OK.
using CommitHandle = std::shared_ptr<Commit>;
// Then/Wait on a handle that may be null.
void WhenCommitted(const CommitHandle& c,
                   std::function<void(absl::Status)> done);
absl::Status AwaitCommit(const CommitHandle& c);

// What the committer and the background thread have done, for /metrics.
struct StorageCounters {
  // Writes of queued log records (each one fsync in sync mode), the records
  // they held, and the seconds spent writing and syncing them.
  uint64_t commits = 0;
  uint64_t records = 0;
  double commit_seconds = 0;
  uint64_t snapshots = 0;
  // A write failed and the store has not written again yet: changes are
  // refused (retried every second); Persistence::Problem says why.
  bool failed = false;
  // Times the store wrote again after a failure, and the models then rebuilt
  // from what it held.
  uint64_t resumed = 0;
  uint64_t models_reloaded = 0;
  // Certificates that stopped keeping because their kept rows could not be
  // stored (a full disk): the log went on without them.
  uint64_t rows_gave_way = 0;
};

class Persistence {
 public:
  // Opens the store (except with kNone). Errors as Store::Open.
  static absl::StatusOr<std::unique_ptr<Persistence>> Open(
      const PersistenceOptions& options);
  ~Persistence();

  Durability durability() const { return options_.durability; }
  StorageCounters counters() const;

  // Rebuilds every stored model into `registry`.
  absl::StatusOr<RecoveryReport> Recover(Registry& registry,
                                         uint32_t max_dimension);

  // A new model (created or imported): stored with a snapshot before it is
  // answered.
  absl::Status Created(ModelEntry& entry);
  absl::Status Deleted(const std::string& id);

  // With entry.mu held, after the model changed: takes its journal as the next
  // log record and queues it for the committer.
  CommitHandle Stage(ModelEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // The same for a change no client waits for (a certificate's new solution):
  // it goes with the model's next record, or is staged by the background
  // thread within its tick (background_tick), before a snapshot and before
  // stopping, rather than committed alone. A stream of one example a request
  // (predict, then reveal) then commits twice per example, not three times.
  void StageLater(ModelEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);

  // OK while the store writes. After a write failed, UNAVAILABLE naming the
  // cause until it writes again: changes are refused before they are applied
  // (the batches whose records failed were never acknowledged; their models
  // are rebuilt from the store once it writes again).
  absl::Status Writable() const;
  // "" while the store writes; else why it does not, for health.
  std::string Problem() const;

  // Writes LevelDB's memtable to a table if no batch was committed since the
  // last call and it holds at least kIdleFlushBytes: what it holds is in the
  // log already, and kept it stays in memory until the write buffer (4 MiB)
  // fills, after a burst of writes and the server idle. Called by one thread
  // at a time; true if it wrote one.
  bool FlushIfIdle();
  // Store::MemtableBytes.
  uint64_t MemtableBytes() const;
  static constexpr uint64_t kIdleFlushBytes = 256 << 10;

  // Starts the committer and the background thread (syncs and snapshots) over
  // `registry`.
  void Start(Registry* registry);
  // Writes what is queued, stops both threads and takes a final sync.
  // Idempotent.
  void Stop();

 private:
  struct Queued {
    Store::Record record;
    CommitHandle commit;
  };

  explicit Persistence(const PersistenceOptions& options) : options_(options) {}
  void CommitLoop();
  // The certificates of `ids` stop keeping: their rows could not be stored.
  void RowsGaveWay(const std::vector<std::string>& ids,
                   const absl::Status& why);
  void BackgroundLoop(Registry* registry);
  // Stages what waits (StageLater), then snapshots `entry` if one is due.
  void MaybeSnapshot(ModelEntry& entry);
  // Stages `entry` if a change waits (StageLater).
  void StageWaiting(ModelEntry& entry);
  // `s` unchanged if OK; else the store is failing from now on (if it was not
  // already) and the failure returned, as a batch's commit reports it.
  absl::Status Failing(absl::Status s) ABSL_LOCKS_EXCLUDED(queue_mu_);
  // Why the store cannot write (the failed write's message); nullopt while it
  // writes.
  std::optional<std::string> Cause() const ABSL_LOCKS_EXCLUDED(queue_mu_);
  // The store failed: records of model `id` from `seq` on were not stored.
  void Behind(const std::string& id, uint64_t seq)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_);
  // After a failure, once a second: opens the store again, drops the records
  // that failed, rebuilds the models they belonged to from what is stored,
  // and lets changes in again. Leaves the store failed if any step fails.
  void TryResume();
  // Model `id` as stored (its entry's state replaced in place).
  absl::Status ReloadModel(const std::string& id, uint64_t from_seq)
      ABSL_SHARED_LOCKS_REQUIRED(store_mu_);

  const PersistenceOptions options_;
  // Shared by every use of the store; held exclusively to open it again.
  mutable absl::Mutex store_mu_;
  std::unique_ptr<Store> store_;
  uint32_t max_dimension_ = 0;  // set by Recover

  mutable absl::Mutex queue_mu_;
  std::vector<Queued> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  // Once a write fails, every later record fails until TryResume succeeds:
  // the models of `behind_` are ahead of the store from the given record on.
  absl::Status store_error_ ABSL_GUARDED_BY(queue_mu_);
  std::string store_cause_ ABSL_GUARDED_BY(queue_mu_);
  absl::flat_hash_map<std::string, uint64_t> behind_ ABSL_GUARDED_BY(queue_mu_);
  std::atomic<bool> failed_{false};
  // Of TryResume (background thread only).
  absl::Time last_attempt_;
  std::string last_retry_error_;
  std::atomic<uint64_t> resumed_{0};
  std::atomic<uint64_t> models_reloaded_{0};

  std::atomic<uint64_t> commits_{0};
  uint64_t commits_seen_ = 0;  // by FlushIfIdle
  std::atomic<uint64_t> records_{0};
  std::atomic<int64_t> commit_nanos_{0};
  std::atomic<uint64_t> snapshots_{0};
  std::atomic<uint64_t> rows_gave_way_{0};
  Registry* registry_ = nullptr;  // set by Start

  std::thread committer_;
  std::thread background_;
  absl::Notification stop_background_;
  std::once_flag stop_once_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_PERSISTENCE_H_
