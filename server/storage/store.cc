#include "server/storage/store.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "leveldb/write_batch.h"
#include "perceptron/v1/state.pb.h"
#include "server/model/curves.h"
#include "server/storage/crc.h"
#include "server/storage/prewritten_logs.h"
#include "server/storage/state_convert.h"

namespace perceptron::server {
namespace {

using google::protobuf::util::TimeUtil;

constexpr char kFormatKey[] = "meta/format";

std::string ModelKey(const std::string& id) {
  return absl::StrCat("m/", id, "/c");
}
std::string SnapshotPrefix(const std::string& id) {
  return absl::StrCat("m/", id, "/s/");
}
std::string LogPrefix(const std::string& id) {
  return absl::StrCat("m/", id, "/l/");
}
std::string RowsPrefix(const std::string& id) {
  return absl::StrCat("m/", id, "/r/");
}
// The certificate's rows of a record, waiting in the log to be moved to the
// model's rows file (RowsFiles::Append): rows-file chunks, tagged with the
// record's sequence number.
std::string WaitPrefix(const std::string& id) {
  return absl::StrCat("m/", id, "/w/");
}
// Fixed-width so that key order is numeric order.
std::string SeqKey(const std::string& prefix, uint64_t seq) {
  return absl::StrFormat("%s%020u", prefix, seq);
}

// A value: 4 bytes of CRC-32 (little-endian) and the serialized message.
std::string Seal(const google::protobuf::Message& m) {
  // Serialized after room for the CRC, which is filled in after: one copy of
  // the message, however large.
  std::string out(4, '\0');
  m.AppendToString(&out);
  PutLittle(out.data(), Crc32(absl::string_view(out).substr(4)), 4);
  return out;
}

bool Unseal(absl::string_view value, google::protobuf::Message* m) {
  if (value.size() < 4) return false;
  const absl::string_view payload = value.substr(4);
  return Crc32(payload) == GetLittle(value.data(), 4) &&
         m->ParseFromArray(payload.data(), static_cast<int>(payload.size()));
}

absl::Status FromLevelDb(const leveldb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsNotFound()) return absl::NotFoundError(message);
  return absl::UnavailableError(message);
}

// Every read verifies LevelDB's block checksums. None fills LevelDB's block
// cache: the server reads a block once (recovery, and the scans of a model's
// keys when it is created, deleted or snapshotted, which mostly pass over other
// models' blocks), so a cached block would only hold memory (10,000 models
// created filled its 8 MiB).
leveldb::ReadOptions Verified() {
  leveldb::ReadOptions o;
  o.verify_checksums = true;
  o.fill_cache = false;
  return o;
}

// LevelDB's table files read with pread rather than through mappings (as
// Debian's LevelDB does for its first 1,000 tables). A mapped table's pages
// that compaction or recovery read stay resident in the server while the table
// lives, so RSS grew with the tables being compacted. Read
// with pread, those pages are the kernel's page cache (reclaimed under memory
// pressure like any cached file), not the server's memory; a block read is
// one system call and a copy into a buffer LevelDB frees after use. RocksDB
// reads its tables this way by default (allow_mmap_reads false).
class PreadFile final : public leveldb::RandomAccessFile {
 public:
  // `fd` open on `name`, owned, or -1: the file is opened for each read (over
  // the limit of descriptors held).
  PreadFile(std::string name, int fd, std::atomic<int>* held)
      : name_(std::move(name)), fd_(fd), held_(held) {}
  ~PreadFile() override {
    if (fd_ >= 0) {
      ::close(fd_);
      held_->fetch_add(1, std::memory_order_relaxed);
    }
  }

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    int fd = fd_;
    if (fd < 0) {
      fd = ::open(name_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Error(errno);
    }
    size_t got = 0;
    int error = 0;
    while (got < n) {
      const ssize_t r =
          ::pread(fd, scratch + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) error = errno;
      if (r <= 0) break;  // an error, or the end of the file
      got += static_cast<size_t>(r);
    }
    if (fd != fd_) ::close(fd);
    *result = leveldb::Slice(scratch, got);
    return error == 0 ? leveldb::Status::OK() : Error(error);
  }

 private:
  leveldb::Status Error(int error) const {
    return leveldb::Status::IOError(name_, std::strerror(error));
  }

  const std::string name_;
  const int fd_;
  std::atomic<int>* const held_;
};

// Also makes LevelDB's log files of files written beforehand
// (server/storage/prewritten_logs.h).
class PreadEnv final : public leveldb::EnvWrapper {
 public:
  PreadEnv(const std::string& dir, uint64_t log_prewrite_bytes)
      : EnvWrapper(leveldb::Env::Default()),
        held_(Limit()),
        logs_(dir, log_prewrite_bytes) {}

  PrewrittenLogs& logs() { return logs_; }

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    if (PrewrittenLogs::IsLogName(name)) {
      if (leveldb::WritableFile* file = logs_.Take(name)) {
        *result = file;
        return leveldb::Status::OK();
      }
    }
    return target()->NewWritableFile(name, result);
  }

  leveldb::Status NewRandomAccessFile(
      const std::string& name, leveldb::RandomAccessFile** result) override {
    *result = nullptr;
    const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      return error == ENOENT
                 ? leveldb::Status::NotFound(name, std::strerror(error))
                 : leveldb::Status::IOError(name, std::strerror(error));
    }
    // A descriptor is held per open table while under the limit (LevelDB's
    // table cache keeps up to max_open_files tables open); past it, each read
    // opens the file.
    if (held_.fetch_sub(1, std::memory_order_relaxed) > 0) {
      *result = new PreadFile(name, fd, &held_);
    } else {
      held_.fetch_add(1, std::memory_order_relaxed);
      ::close(fd);
      *result = new PreadFile(name, -1, &held_);
    }
    return leveldb::Status::OK();
  }

 private:
  // A quarter of the process's descriptors (LevelDB's own reader holds up to
  // half), leaving the rest to connections.
  static int Limit() {
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
      return 1000;
    return static_cast<int>(std::min<rlim_t>(r.rlim_cur / 4, 1000));
  }

  std::atomic<int> held_;  // descriptors that may still be held
  PrewrittenLogs logs_;
};

}  // namespace

leveldb::Options Store::Options(leveldb::Env* env) {
  leveldb::Options options;
  options.create_if_missing = true;
  // A damaged record in LevelDB's own log is skipped rather than refused:
  // recovery then finds a gap in the model's records and drops everything after
  // it (never applying a damaged or out-of-order change). Every read verifies
  // LevelDB's block checksums, every value our CRC.
  options.paranoid_checks = false;
  // LevelDB's memory, bounded: a memtable of at most 4 MiB and one being
  // written out, and its open tables (a few hundred bytes each); its 8 MiB
  // block cache stays empty, as no read fills it (Verified). A larger memtable
  // shows in RSS while streaming.
  options.write_buffer_size = 4 << 20;
  // Uncompressed: the records (and the certificate's rows waiting among them)
  // are mostly doubles, which Snappy does not shrink, at a cost in every
  // compaction they pass through.
  options.compression = leveldb::kNoCompression;
  options.env = env;
  return options;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(
    const std::string& path, uint64_t log_prewrite_bytes) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the data directory ", path, " is not a directory (a file is there)"));
  }
  // A new directory is made with its parents (LevelDB makes only the last).
  std::error_code made;
  std::filesystem::create_directories(path, made);
  if (made) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create the data directory ", path, ": ", made.message()));
  }
  auto env = std::make_unique<PreadEnv>(path, log_prewrite_bytes);
  PrewrittenLogs* logs = &env->logs();
  logs->PrepareIfNew();
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(Options(env.get()), path, &raw);
  if (s.IsIOError() && absl::StrContains(s.ToString(), "/LOCK")) {
    // LevelDB holds an exclusive lock on its directory while it is open.
    return absl::FailedPreconditionError(absl::StrCat(
        "the data directory ", path,
        " is in use by another perceptrond (its lock is held: ", s.ToString(),
        ")"));
  }
  if (!s.ok())
    return FromLevelDb(s,
                       absl::StrCat("cannot open the data directory ", path));
  std::unique_ptr<Store> store(
      new Store(path, std::move(env), std::unique_ptr<leveldb::DB>(raw)));
  // Writes this server's format marker, synced.
  auto mark = [&store, &path](absl::string_view doing) {
    leveldb::WriteOptions sync;
    sync.sync = true;
    return FromLevelDb(store->db_->Put(sync, kFormatKey, kStoreFormat),
                       absl::StrCat(doing, " in ", path));
  };
  std::string format;
  s = store->db_->Get(Verified(), kFormatKey, &format);
  if (s.IsNotFound()) {
    // New, or a LevelDB directory that is not ours: only an empty one may
    // become ours.
    std::unique_ptr<leveldb::Iterator> it(store->db_->NewIterator(Verified()));
    it->SeekToFirst();
    if (it->Valid()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the data directory ", path,
                       " holds data of another program (no format marker)"));
    }
    if (absl::Status init = mark("cannot initialize the store"); !init.ok()) {
      return init;
    }
  } else if (!s.ok()) {
    return FromLevelDb(s, "cannot read the store's format");
  } else if (format == kStoreFormatBefore) {
    if (absl::Status marked = mark(
            absl::StrCat("cannot mark the store as \"", kStoreFormat, "\""));
        !marked.ok()) {
      return marked;
    }
  } else if (format != kStoreFormat) {
    return absl::FailedPreconditionError(
        absl::StrCat("the data directory ", path, " has format \"", format,
                     "\"; this server reads \"", kStoreFormat, "\""));
  }
  absl::StatusOr<std::unique_ptr<RowsFiles>> rows =
      RowsFiles::Open(absl::StrCat(path, "/rows"));
  if (!rows.ok()) return rows.status();
  store->rows_ = *std::move(rows);
  store->logs_ = logs;
  logs->Start();  // the directory is the store's
  return store;
}

std::vector<std::pair<uint64_t, std::string>> Store::Keys(
    const std::string& prefix) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(Verified()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    uint64_t seq = 0;
    const absl::string_view key(it->key().data(), it->key().size());
    if (absl::SimpleAtoi(key.substr(prefix.size()), &seq)) {
      out.emplace_back(seq, std::string(key));
    }
  }
  return out;
}

absl::StatusOr<RecoveredModel> Store::RecoverModel(const std::string& id,
                                                   uint32_t max_dimension) {
  RecoveredModel r;
  r.id = id;
  std::string value;
  v1::StoredModel stored;
  leveldb::Status s = db_->Get(Verified(), ModelKey(id), &value);
  if (!s.ok()) return FromLevelDb(s, absl::StrCat("model ", id));
  if (!Unseal(value, &stored)) {
    return absl::DataLossError(
        absl::StrCat("model ", id, ": its identity record fails its check"));
  }
  r.created_at = absl::FromUnixNanos(
      TimeUtil::TimestampToNanoseconds(stored.created_at()));

  // The newest snapshot that passes every check.
  std::vector<std::pair<uint64_t, std::string>> snapshots =
      Keys(SnapshotPrefix(id));
  std::string why;
  for (auto it = snapshots.rbegin();
       it != snapshots.rend() && r.model == nullptr; ++it) {
    v1::Snapshot snap;
    s = db_->Get(Verified(), it->second, &value);
    absl::StatusOr<ModelState> state;
    if (!s.ok() || !Unseal(value, &snap)) {
      why = absl::StrCat("snapshot ", it->first, " fails its check");
    } else if (!(state = StateFromProto(snap.state(), max_dimension)).ok()) {
      why =
          absl::StrCat("snapshot ", it->first, ": ", state.status().message());
    } else if (absl::StatusOr<std::unique_ptr<Model>> m =
                   Model::FromState(*std::move(state));
               !m.ok()) {
      why = absl::StrCat("snapshot ", it->first, ": ", m.status().message());
    } else if (absl::Status c = CurvesFromProto(snap.state().curves(),
                                                &r.recent, &r.history);
               !c.ok()) {
      why = absl::StrCat("snapshot ", it->first, ": ", c.message());
    } else {
      r.model = *std::move(m);
      r.snapshot_seq = r.seq = snap.seq();
      r.fell_back = it != snapshots.rbegin();
    }
  }
  if (r.model == nullptr) {
    return absl::DataLossError(
        absl::StrCat("model ", id, ": no valid snapshot",
                     why.empty() ? "" : absl::StrCat(" (", why, ")")));
  }

  // The log after it, in order, up to the first gap or failed check.
  leveldb::WriteBatch drop;
  for (const auto& [seq, key] : Keys(LogPrefix(id))) {
    if (seq <= r.seq) continue;
    v1::LogRecord record;
    absl::StatusOr<Journal> journal;
    const bool next = seq == r.seq + 1 && r.records_dropped == 0;
    if (next && db_->Get(Verified(), key, &value).ok() &&
        Unseal(value, &record) && record.seq() == seq &&
        record.created_at_unix_nanos() == absl::ToUnixNanos(r.created_at) &&
        (journal = JournalFromProto(record.journal())).ok() &&
        CheckCurvesDelta(record.journal().curves()).ok() &&
        r.model->ApplyJournal(*journal).ok()) {
      ApplyCurvesDelta(record.journal().curves(), &r.recent, &r.history);
      r.seq = seq;
      ++r.records_applied;
    } else {
      drop.Delete(key);
      ++r.records_dropped;
    }
  }
  // The certificate's kept rows up to the last record applied, in order; those
  // of records not applied are dropped with them. Rows that fail a check are
  // not given (the certificate is then frozen where the stream ends, saying
  // its examples were not stored) and are deleted by its next record.
  KeptRows rows;
  bool rows_ok = true;
  bool rows_dropped = false;
  for (const auto& [seq, key] : Keys(RowsPrefix(id))) {
    if (seq > r.seq) {
      drop.Delete(key);
      rows_dropped = true;
      continue;
    }
    v1::StoredRows stored_rows;
    rows_ok = rows_ok && db_->Get(Verified(), key, &value).ok() &&
              Unseal(value, &stored_rows) &&
              stored_rows.created_at_unix_nanos() ==
                  absl::ToUnixNanos(r.created_at) &&
              KeptRowsFromProto(stored_rows.rows(), &rows).ok();
  }
  // Then the rows file, then the rows waiting in the log after it.
  std::vector<std::pair<uint64_t, std::string>> logged;
  for (const auto& [seq, key] : Keys(WaitPrefix(id))) {
    if (db_->Get(Verified(), key, &value).ok()) {
      logged.emplace_back(seq, std::move(value));
    } else {
      rows_ok = false;
    }
  }
  std::vector<uint64_t> not_taken;
  rows_->Recover(id, r.created_at, r.seq, &rows, &rows_ok, std::move(logged),
                 &not_taken);
  for (const uint64_t seq : not_taken) {
    drop.Delete(SeqKey(WaitPrefix(id), seq));
    rows_dropped = true;
  }
  if (rows_ok) {
    r.certificate_rows = rows.examples();
    r.certificate_rows_attached =
        r.model->AttachCertificateRows(std::move(rows));
  }
  if (r.records_dropped > 0 || rows_dropped) {
    leveldb::WriteOptions sync;
    sync.sync = true;
    if (absl::Status d =
            FromLevelDb(db_->Write(sync, &drop), "dropping a damaged log tail");
        !d.ok()) {
      return d;
    }
  }
  return r;
}

absl::StatusOr<Recovery> Store::Recover(uint32_t max_dimension) {
  std::vector<std::string> ids;
  {
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(Verified()));
    for (it->Seek("m/"); it->Valid() && it->key().starts_with("m/");
         it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (absl::EndsWith(key, "/c"))
        ids.emplace_back(key.substr(2, key.size() - 4));
    }
    if (!it->status().ok())
      return FromLevelDb(it->status(), "reading the store");
  }
  Recovery out;
  rows_->List();
  absl::flat_hash_set<std::string> set_aside;
  for (const std::string& id : ids) {
    absl::StatusOr<RecoveredModel> r = RecoverModel(id, max_dimension);
    if (r.ok()) {
      out.models.push_back(*std::move(r));
    } else {
      out.set_aside.push_back({id, r.status()});
      set_aside.insert(id);
    }
  }
  // Rows files of models no longer stored (deleted, or replaced, before
  // their files were) go; those of models set aside stay with their records.
  rows_->RemoveUnclaimed(set_aside);
  return out;
}

absl::Status Store::PutModel(const std::string& id, absl::Time created_at,
                             const ModelState& state,
                             const v1::CurvesState& curves,
                             const KeptRows* certificate_rows) {
  leveldb::WriteBatch batch;
  for (const auto& [seq, key] : Keys(SnapshotPrefix(id))) batch.Delete(key);
  for (const auto& [seq, key] : Keys(LogPrefix(id))) batch.Delete(key);
  for (const auto& [seq, key] : Keys(RowsPrefix(id))) batch.Delete(key);
  for (const auto& [seq, key] : Keys(WaitPrefix(id))) batch.Delete(key);
  v1::StoredModel stored;
  stored.set_model_id(id);
  *stored.mutable_created_at() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(created_at));
  batch.Put(ModelKey(id), Seal(stored));
  v1::Snapshot snap;
  snap.set_seq(0);
  StateToProto(state, snap.mutable_state(), /*compact=*/true);
  *snap.mutable_state()->mutable_curves() = curves;
  batch.Put(SeqKey(SnapshotPrefix(id), 0), Seal(snap));
  leveldb::WriteOptions sync;
  sync.sync = true;
  return rows_->Put(id, created_at, certificate_rows, [&] {
    return FromLevelDb(db_->Write(sync, &batch),
                       absl::StrCat("storing model ", id));
  });
}

absl::Status Store::DeleteModel(const std::string& id) {
  leveldb::WriteBatch batch;
  batch.Delete(ModelKey(id));
  for (const auto& [seq, key] : Keys(SnapshotPrefix(id))) batch.Delete(key);
  for (const auto& [seq, key] : Keys(LogPrefix(id))) batch.Delete(key);
  for (const auto& [seq, key] : Keys(RowsPrefix(id))) batch.Delete(key);
  for (const auto& [seq, key] : Keys(WaitPrefix(id))) batch.Delete(key);
  leveldb::WriteOptions sync;
  sync.sync = true;
  return rows_->Delete(id, [&] {
    return FromLevelDb(db_->Write(sync, &batch),
                       absl::StrCat("deleting model ", id));
  });
}

absl::Status Store::Append(const std::vector<const Record*>& records, bool sync,
                           std::vector<std::string>* gave_way,
                           absl::Status* why) {
  leveldb::WriteBatch batch;
  v1::LogRecord record;
  std::vector<RowsFiles::Change> changes;
  changes.reserve(records.size());
  for (const Record* r : records) {
    if (r->journal.certificate_rows_cleared) {
      // Rows an earlier version stored in LevelDB.
      for (const auto& [seq, key] : Keys(RowsPrefix(r->id))) batch.Delete(key);
    }
    changes.push_back(
        {&r->id, r->created_at, r->seq, r->journal.certificate_rows_cleared,
         &r->journal.certificate_rows, &r->journal.certificate_repeats});
    record.Clear();
    record.set_seq(r->seq);
    record.set_created_at_unix_nanos(absl::ToUnixNanos(r->created_at));
    JournalToProto(r->journal, record.mutable_journal());
    CurvesDeltaToProto(r->curves, record.mutable_journal()->mutable_curves());
    batch.Put(SeqKey(LogPrefix(r->id), r->seq), Seal(record));
  }
  const RowsFiles::Log log{
      [&batch](const std::string& id, uint64_t seq, const std::string& chunks) {
        batch.Put(SeqKey(WaitPrefix(id), seq), chunks);
      },
      [&batch](const std::string& id, uint64_t seq) {
        batch.Delete(SeqKey(WaitPrefix(id), seq));
      }};
  leveldb::WriteOptions options;
  options.sync = sync;
  return rows_->Append(
      changes, sync,
      [&] { return FromLevelDb(db_->Write(options, &batch), "logging"); },
      gave_way, why, &log);
}

absl::Status Store::Append(const std::string& id, absl::Time created_at,
                           uint64_t seq, const Journal& journal, bool sync) {
  const Record r{id, created_at, seq, journal, {}};
  return Append(std::vector<const Record*>{&r}, sync);
}

void Store::set_rows_reserve(uint64_t bytes) { rows_->set_reserve(bytes); }

void Store::set_rows_waiting(uint64_t model_bytes) {
  rows_->set_waiting(model_bytes);
}

uint64_t Store::rows_waiting_bytes() const { return rows_->waiting_bytes(); }

absl::Status Store::Sync() {
  if (absl::Status s = rows_->Sync(); !s.ok()) return s;
  leveldb::WriteBatch empty;
  leveldb::WriteOptions sync;
  sync.sync = true;
  return FromLevelDb(db_->Write(sync, &empty), "syncing the store");
}

uint64_t Store::MemtableBytes() const {
  std::string v;
  uint64_t bytes = 0;
  if (!db_->GetProperty("leveldb.approximate-memory-usage", &v) ||
      !absl::SimpleAtoi(v, &bytes)) {
    return 0;
  }
  return bytes;
}

void Store::FlushMemtable() {
  // LevelDB writes its memtable to a table first whatever the range; no key
  // of the store sorts after this one, so no table is compacted after that.
  const leveldb::Slice past("\xff\xff\xff\xff");
  db_->CompactRange(&past, &past);
}

absl::Status Store::PutSnapshot(const std::string& id, uint64_t seq,
                                ModelState state, v1::CurvesState curves) {
  std::string sealed;
  {
    v1::Snapshot snap;
    snap.set_seq(seq);
    StateToProto(state, snap.mutable_state(), /*compact=*/true);
    state = ModelState();  // freed: the message holds it now
    *snap.mutable_state()->mutable_curves() = std::move(curves);
    sealed = Seal(snap);
  }  // the message freed: the sealed bytes hold it now
  leveldb::WriteOptions sync;
  sync.sync = true;
  const std::string prefix = SnapshotPrefix(id);
  absl::Status s = FromLevelDb(db_->Put(sync, SeqKey(prefix, seq), sealed),
                               "writing a snapshot");
  sealed = std::string();
  if (!s.ok()) return s;
  // Keep this snapshot and the one before it, and the log after that one.
  std::vector<std::pair<uint64_t, std::string>> snapshots = Keys(prefix);
  if (snapshots.size() < 2) return absl::OkStatus();
  const uint64_t keep_from = snapshots[snapshots.size() - 2].first;
  leveldb::WriteBatch prune;
  for (const auto& [old, key] : snapshots) {
    if (old < keep_from) prune.Delete(key);
  }
  for (const auto& [old, key] : Keys(LogPrefix(id))) {
    if (old > keep_from) break;
    prune.Delete(key);
  }
  return FromLevelDb(db_->Write(leveldb::WriteOptions(), &prune),
                     "pruning the log");
}

absl::Status Store::Reopen() {
  db_.reset();
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(Options(env_.get()), path_, &raw);
  if (!s.ok()) {
    return FromLevelDb(s,
                       absl::StrCat("cannot open the data directory ", path_));
  }
  db_.reset(raw);
  return absl::OkStatus();
}

absl::Status Store::DropLogFrom(const std::string& id, uint64_t seq) {
  leveldb::WriteBatch batch;
  for (const auto& [at, key] : Keys(LogPrefix(id))) {
    if (at >= seq) batch.Delete(key);
  }
  for (const auto& [at, key] : Keys(WaitPrefix(id))) {
    if (at >= seq) batch.Delete(key);
  }
  leveldb::WriteOptions sync;
  sync.sync = true;
  return FromLevelDb(db_->Write(sync, &batch),
                     absl::StrCat("dropping records of model ", id));
}

absl::StatusOr<RecoveredModel> Store::Reload(const std::string& id,
                                             uint32_t max_dimension) {
  rows_->Relist(id);
  return RecoverModel(id, max_dimension);
}

}  // namespace perceptron::server
