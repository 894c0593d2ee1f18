// Durability of models (DESIGN.md section 5) on top of the store:
//   sync   a batch is answered only after its log record is on disk; concurrent batches share
//          one fsync (LevelDB's group commit).
//   async  records are handed to the operating system before the answer (a crash of the server
//          loses nothing answered) and synced in the background every `async_interval` (a crash
//          of the machine may lose that last interval).
//   none   memory only.
// A model's records are answered in order: a batch is acknowledged only once every earlier record
// of its model is written, so recovery, which stops at the first gap, never drops an acknowledged
// batch. Snapshots are taken in the background; the log behind them is dropped.
//
// Thread-safe.
#ifndef PERCEPTRON_SERVER_PERSISTENCE_H_
#define PERCEPTRON_SERVER_PERSISTENCE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/registry.h"
#include "server/store.h"

namespace perceptron::server {

enum class Durability { kSync, kAsync, kNone };

// "sync", "async" or "none".
absl::StatusOr<Durability> ParseDurability(absl::string_view text);
absl::string_view DurabilityName(Durability d);

struct PersistenceOptions {
  // Default: sync.
  Durability durability = Durability::kSync;
  // Where the store lives. Default: "perceptrond-data" under the working directory.
  std::string data_dir = "perceptrond-data";
  // A model's snapshot is taken after this many log records. Default: 1000.
  uint64_t snapshot_every = 1000;
  // async: how often the store is synced. Default: 100 ms.
  absl::Duration async_interval = absl::Milliseconds(100);
};

struct RecoveryReport {
  size_t models = 0;
  uint64_t records_applied = 0;
  uint64_t records_dropped = 0;
  size_t fell_back = 0;
  absl::Duration took;
};

// A batch's log record, staged under the model's lock and committed after it is released.
struct StagedRecord {
  uint64_t seq = 0;  // 0: nothing to write
  Journal journal;
};

class Persistence {
 public:
  // Opens the store (except with kNone). Errors as Store::Open.
  static absl::StatusOr<std::unique_ptr<Persistence>> Open(const PersistenceOptions& options);
  ~Persistence();

  Durability durability() const { return options_.durability; }

  // Rebuilds every stored model into `registry`.
  absl::StatusOr<RecoveryReport> Recover(Registry& registry, uint32_t max_dimension);

  // A new model (created or imported): stored with a snapshot before it is answered.
  absl::Status Created(ModelEntry& entry);
  absl::Status Deleted(const std::string& id);

  // With entry.mu held, after the model changed: takes its journal as the next record.
  StagedRecord Stage(ModelEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // Without the lock: writes the record (per the durability mode) and returns once it and every
  // earlier record of the model are written. UNAVAILABLE if the store failed.
  absl::Status Commit(ModelEntry& entry, StagedRecord record);

  // Starts the background thread (syncs and snapshots) over `registry`.
  void Start(Registry* registry);
  // Stops it, takes a final sync. Idempotent.
  void Stop();

  uint64_t snapshots_taken() const { return snapshots_.load(); }

 private:
  explicit Persistence(const PersistenceOptions& options) : options_(options) {}
  void Loop(Registry* registry);
  void MaybeSnapshot(ModelEntry& entry);

  const PersistenceOptions options_;
  std::unique_ptr<Store> store_;
  std::thread thread_;
  absl::Notification stop_;
  std::atomic<uint64_t> snapshots_{0};
  std::once_flag stop_once_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_PERSISTENCE_H_
