// The data directory: an embedded LevelDB holding, per model, its identity,
// snapshots and a log of what each batch changed, and beside it the examples
// its certificate keeps (server/storage/rows_files.h; docs/design.md section
// 5).
// Values carry a CRC-32 of their own besides LevelDB's checksums; anything that
// fails a check is never applied.
//
//   absl::StatusOr<std::unique_ptr<Store>> store = Store::Open("data");
//   absl::StatusOr<perceptron::server::Recovery> recovered =
//       (*store)->Recover(max_dimension);
//   (*store)->Append("spam", 42, journal, /*sync=*/true);
//
// Thread-safe.
#ifndef PERCEPTRON_SERVER_STORAGE_STORE_H_
#define PERCEPTRON_SERVER_STORAGE_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/model.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "perceptron/v1/state.pb.h"
#include "server/model/history.h"
#include "server/storage/rows_files.h"

namespace perceptron::server {

// The format this server writes and reads; a directory of another format is
// refused. Format 2's snapshots may give a vector by its non-zeros
// (SparseDoubles), which a server of format 1 would not read: a directory of
// format 1 (the same data but for that) is read as it is and marked 2 when it
// is opened, so that such a server refuses it whole rather than setting its
// models aside one by one.
inline constexpr char kStoreFormat[] = "perceptrond-store 2";
inline constexpr char kStoreFormatBefore[] = "perceptrond-store 1";

struct RecoveredModel {
  std::string id;
  absl::Time created_at;
  std::unique_ptr<Model> model;
  // The recent-mistake window and the learning curve, as of `seq`.
  RecentWindow recent{kRecentWindow};
  History history;
  uint64_t seq = 0;           // the last log record applied (or the snapshot's)
  uint64_t snapshot_seq = 0;  // the snapshot recovery started from
  uint64_t records_applied = 0;  // log records replayed after it
  uint64_t records_dropped = 0;  // log records after a gap or a failed check
  bool fell_back =
      false;  // the newest snapshot failed its checks; an older one was used
  // The examples the certificate's kept rows found stand for (a row may
  // stand for several equal ones), and whether it took them (it was keeping,
  // and they are every example it kept).
  uint64_t certificate_rows = 0;
  bool certificate_rows_attached = false;
};

// A model recovery could not rebuild: its records are left untouched.
struct SetAsideModel {
  std::string id;
  absl::Status reason;
};

struct Recovery {
  std::vector<RecoveredModel> models;
  std::vector<SetAsideModel> set_aside;
};

// A log file's size when LevelDB starts the next one (its write buffer, 4 MiB),
// and room for the record that passes it.
inline constexpr uint64_t kLogPrewriteBytes = 5u << 20;

class PrewrittenLogs;

class Store {
 public:
  // Opens (creating if absent) the store at `path`. FAILED_PRECONDITION for a
  // directory of another format or version, DATA_LOSS or another error if it
  // cannot be read; nothing is overwritten. LevelDB's log files are made of
  // files of `log_prewrite_bytes` zeros written beforehand (0: never;
  // server/storage/prewritten_logs.h).
  static absl::StatusOr<std::unique_ptr<Store>> Open(
      const std::string& path, uint64_t log_prewrite_bytes = kLogPrewriteBytes);

  // Every model, rebuilt from its newest valid snapshot and the log after it.
  // Called once, before any write (it finds the certificates' rows files).
  // Drops (and deletes) log records after a gap or a failed check. A model
  // that cannot be rebuilt (no valid snapshot, a damaged identity record) is
  // set aside with the reason, its records untouched; one model never fails
  // the others. An error only if the store itself cannot be read.
  absl::StatusOr<Recovery> Recover(uint32_t max_dimension);

  // Writes a model's identity and a snapshot of `state` at seq 0, with the
  // rows its certificate keeps if given, replacing anything stored under
  // `id`. Synced.
  absl::Status PutModel(const std::string& id, absl::Time created_at,
                        const ModelState& state,
                        const v1::CurvesState& curves = v1::CurvesState(),
                        const KeptRows* certificate_rows = nullptr);
  // Removes everything stored under `id`. Synced.
  absl::Status DeleteModel(const std::string& id);
  // A log record: what batch `seq` of model `id` changed. `created_at` names
  // the model's incarnation: records of an earlier model of the same id are
  // never applied.
  struct Record {
    std::string id;
    absl::Time created_at;
    uint64_t seq = 0;
    Journal journal;
    CurvesJournal curves;
  };
  // Writes `records` in one atomic batch, in order; synced (one fsync for all)
  // if `sync`. With `gave_way`, the certificate's rows of a model whose rows
  // file cannot be written give way (RowsFiles::Append): the records are
  // written without them, the model's id is added and the cause set in `*why`.
  absl::Status Append(const std::vector<const Record*>& records, bool sync,
                      std::vector<std::string>* gave_way = nullptr,
                      absl::Status* why = nullptr);
  // One record.
  absl::Status Append(const std::string& id, absl::Time created_at,
                      uint64_t seq, const Journal& journal, bool sync);
  // The certificate's rows give way once the file system would keep less
  // than `bytes` free beside them (RowsFiles::set_reserve).
  void set_rows_reserve(uint64_t bytes);
  // A record's rows of at most 4 KiB (and a quarter of `model_bytes`) wait
  // in the log
  // (in its LevelDB batch: one sync instead of the rows file's and the
  // log's) until a model's reach `model_bytes`, or every model's 8 times it;
  // then they are moved to the model's rows file (RowsFiles::set_waiting).
  // 0 (the default): every record's rows go to the file.
  void set_rows_waiting(uint64_t model_bytes);
  uint64_t rows_waiting_bytes() const;
  // Makes every earlier write durable.
  absl::Status Sync();
  // LevelDB's memtable: what the last writes added (and the log holds), kept
  // in memory until its write buffer fills and it is written to a table.
  uint64_t MemtableBytes() const;
  // Writes the memtable to a table now, giving its memory back; nothing
  // stored changes.
  void FlushMemtable();

  // The log files written beforehand (none with log_prewrite_bytes 0). For
  // tests.
  PrewrittenLogs* prewritten_logs() const { return logs_; }

  // After a write failed. LevelDB refuses every write once one has failed
  // (the failed record may or may not be in its log), until it is opened
  // again: Reopen closes and opens it (the rows files stay as they are).
  // Not concurrent with any other call.
  absl::Status Reopen();
  // Deletes model `id`'s log records from `seq` on (those whose writes
  // failed, if they were written after all). Synced.
  absl::Status DropLogFrom(const std::string& id, uint64_t seq);
  // Model `id` rebuilt again from what is stored, as Recover does, its rows
  // file read again.
  absl::StatusOr<RecoveredModel> Reload(const std::string& id,
                                        uint32_t max_dimension);
  // Writes a snapshot of `state` after log record `seq` (synced), then removes
  // the snapshots and log records that the previous snapshot made unnecessary:
  // two snapshots are kept, and the log after the older, so that a damaged
  // newest snapshot can fall back. `state` and `curves` are taken, and freed
  // as each copy of them is made (a wide model's are tens of MB: at most two
  // copies are held at once before LevelDB's own).
  absl::Status PutSnapshot(const std::string& id, uint64_t seq,
                           ModelState state,
                           v1::CurvesState curves = v1::CurvesState());

 private:
  Store(std::string path, std::unique_ptr<leveldb::Env> env,
        std::unique_ptr<leveldb::DB> db)
      : path_(std::move(path)), env_(std::move(env)), db_(std::move(db)) {}
  static leveldb::Options Options(leveldb::Env* env);
  absl::StatusOr<RecoveredModel> RecoverModel(const std::string& id,
                                              uint32_t max_dimension);
  std::vector<std::pair<uint64_t, std::string>> Keys(const std::string& prefix);

  const std::string path_;
  std::unique_ptr<leveldb::Env> env_;  // outlives db_, which uses it
  PrewrittenLogs* logs_ = nullptr;     // env_'s
  std::unique_ptr<leveldb::DB> db_;
  // The certificate's kept rows (rows/ in the directory). Rows written by
  // earlier versions, in LevelDB under m/<id>/r/, are read and deleted as
  // before.
  std::unique_ptr<RowsFiles> rows_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_STORE_H_
