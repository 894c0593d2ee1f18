#include "server/storage/rows_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "server/storage/rows_chunk.h"

namespace perceptron::server {
namespace {

// The most bytes of one record's chunks that wait in the log: a batch of a
// few rows (a predict-then-reveal stream's one row). Larger ones go to the
// file at once, as the log's bytes cost LevelDB's flushes and compactions
// (a W1 batch's 64 new rows, 12 KiB, waiting took durability sync's
// throughput from 0.63-0.76 of none to 0.50-0.56 in durability_bench).
constexpr uint64_t kWaitingRecord = 4 << 10;

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

bool WriteAll(int fd, const std::string& bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads a file's chunks one at a time, so that recovering a model holds one
// chunk (one record's rows) besides the rows themselves.
class ChunkReader {
 public:
  explicit ChunkReader(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st;
    ok_ = fd_ >= 0 && ::fstat(fd_, &st) == 0;
    if (ok_) size_ = static_cast<uint64_t>(st.st_size);
  }
  ~ChunkReader() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Whether the file could be opened and its size read (if not, nothing
  // about it is known, and it is left as it is).
  bool opened() const { return ok_; }
  uint64_t size() const { return size_; }
  uint64_t end() const { return at_; }  // after the last chunk read

  // The next chunk whole and passing its check, or false (the end, a torn
  // chunk or one whose CRC-32 fails).
  bool Next(Chunk* chunk) {
    if (size_ - at_ < kChunkHeader) return false;
    buffer_.resize(kChunkHeader);
    if (!ReadAt(at_, buffer_.data(), kChunkHeader)) return false;
    const uint64_t length = ChunkPayloadLength(buffer_);
    if (length > size_ - at_ - kChunkHeader) return false;  // torn
    buffer_.resize(kChunkHeader + length);
    if (!ReadAt(at_ + kChunkHeader, buffer_.data() + kChunkHeader, length)) {
      return false;
    }
    absl::string_view bytes = buffer_;
    if (NextChunk(&bytes, chunk) != ChunkRead::kChunk) return false;
    at_ += kChunkHeader + length;
    return true;
  }

 private:
  bool ReadAt(uint64_t offset, char* out, size_t n) {
    while (n > 0) {
      const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;  // shorter than it said
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return true;
  }

  const int fd_;
  bool ok_ = false;
  uint64_t size_ = 0;
  uint64_t at_ = 0;
  std::string buffer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RowsFiles>> RowsFiles::Open(std::string dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Errno("cannot create", dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open", dir);
  return std::unique_ptr<RowsFiles>(new RowsFiles(std::move(dir), fd, 64));
}

RowsFiles::~RowsFiles() {
  absl::MutexLock lock(&mu_);
  for (auto& [id, f] : files_) Close(f);
  ::close(dir_fd_);
}

std::string RowsFiles::PathOf(const std::string& id, int64_t created_at) const {
  // Model ids are [A-Za-z0-9._-] (server/model/model_id.h): a file name.
  return absl::StrCat(dir_, "/", id, ".", created_at, kRowsFileSuffix);
}

absl::Status RowsFiles::OpenForWrite(File& f, bool create) {
  if (f.fd >= 0) return absl::OkStatus();
  f.fd = ::open(f.path.c_str(),
                O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
  if (f.fd < 0) return Errno("cannot open", f.path);
  ++held_;
  return absl::OkStatus();
}

void RowsFiles::Close(File& f) {
  if (f.fd < 0) return;
  ::close(f.fd);
  f.fd = -1;
  --held_;
}

absl::Status RowsFiles::SyncDir() {
  if (::fsync(dir_fd_) != 0) return Errno("cannot sync", dir_);
  dir_dirty_ = false;
  return absl::OkStatus();
}

absl::Status RowsFiles::Append(const std::vector<Change>& changes, bool sync,
                               const std::function<absl::Status()>& commit,
                               std::vector<std::string>* gave_way,
                               absl::Status* why, const Log* log) {
  absl::MutexLock lock(&mu_);
  struct Touched {
    int64_t created_at = 0;
    std::string bytes;  // for its file
    uint64_t size_before = 0;
    bool had_file = false;
    bool created = false;
    bool live = false;
    bool grows = false;  // rows or repeats to write, not only a clear
    // The chunks that waited in the log before this call leave it (moved to
    // the file, or cleared); then `waits` wait there.
    bool unwait = false;
    std::vector<std::pair<uint64_t, std::string>> waits;
    uint64_t waits_bytes = 0;
  };
  const uint64_t model_limit = log != nullptr ? waiting_limit_ : 0;
  uint64_t total = waiting_bytes_;  // every model's waiting, as planned
  absl::flat_hash_map<std::string, Touched> touched;  // by model id
  std::string chunk;
  for (const Change& c : changes) {
    const int64_t created_at = absl::ToUnixNanos(c.created_at);
    if (auto stored = incarnations_.find(*c.id);
        stored == incarnations_.end() || stored->second != created_at) {
      // Records of a model deleted or replaced since they were queued: never
      // applied (recovery checks their created_at), so their rows are not
      // kept either.
      continue;
    }
    if (auto lost = gave_way_.find(*c.id); lost != gave_way_.end()) {
      // Its rows gave way: none kept until a change clears them.
      if (!c.cleared) continue;
      gave_way_.erase(lost);
    }
    const bool rows = c.rows != nullptr && c.rows->size() > 0;
    const bool repeats = c.repeats != nullptr && !c.repeats->empty();
    const auto file = files_.find(*c.id);
    const auto waiting = waiting_.find(*c.id);
    const Waiting* before =
        waiting == waiting_.end() ? nullptr : &waiting->second;
    auto found = touched.find(*c.id);
    if (!rows && !repeats &&
        (!c.cleared || (file == files_.end() && before == nullptr &&
                        found == touched.end()))) {
      continue;
    }
    if (found == touched.end()) {
      Touched t;
      t.created_at = created_at;
      t.had_file = file != files_.end();
      if (t.had_file) {
        t.size_before = file->second.size;
        t.live = file->second.live;
      }
      found = touched.emplace(*c.id, std::move(t)).first;
    }
    Touched& t = found->second;
    // What waited before this call leaves the log.
    auto unwait = [&] {
      if (before == nullptr || t.unwait) return false;
      t.unwait = true;
      total -= before->bytes;
      return true;
    };
    if (c.cleared) {
      if (t.had_file || !t.bytes.empty()) {
        AppendChunk(&t.bytes, kClearedChunk, c.seq, "");
      }
      t.live = false;
      unwait();
      total -= t.waits_bytes;
      t.waits.clear();
      t.waits_bytes = 0;
    }
    if (!rows && !repeats) continue;
    chunk.clear();
    if (rows) {
      AppendRowsChunk(&chunk, c.seq, *c.rows);
      AppendCountsChunk(&chunk, c.seq, *c.rows);
    }
    if (repeats) AppendRepeatsChunk(&chunk, c.seq, *c.repeats);
    t.grows = true;
    const uint64_t n = chunk.size();
    const uint64_t model_waiting =
        (before != nullptr && !t.unwait ? before->bytes : 0) + t.waits_bytes;
    if (n <= std::min(model_limit / 4, kWaitingRecord) &&
        model_waiting + n <= model_limit && total + n <= model_limit * 8) {
      t.waits.emplace_back(c.seq, chunk);
      t.waits_bytes += n;
      total += n;
      continue;
    }
    // To the file, after every chunk of the model that waited.
    if (unwait()) {
      for (const auto& [seq, bytes] : before->chunks) t.bytes += bytes;
    }
    for (const auto& [seq, bytes] : t.waits) t.bytes += bytes;
    total -= t.waits_bytes;
    t.waits.clear();
    t.waits_bytes = 0;
    t.bytes += chunk;
    t.live = true;
  }

  // Undoes the writes of this call: files created are deleted, the others
  // truncated to where they were.
  auto roll_back = [&](absl::Status why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [id, t] : touched) {
      auto f = files_.find(id);
      if (t.bytes.empty() || f == files_.end()) continue;
      if (t.created) {
        Close(f->second);
        ::unlink(f->second.path.c_str());
        files_.erase(f);
      } else if (f->second.fd >= 0 || OpenForWrite(f->second, false).ok()) {
        (void)!::ftruncate(f->second.fd, static_cast<off_t>(t.size_before));
      }
    }
    return why;
  };
  // Models whose rows gave way and had chunks waiting in the log.
  std::vector<std::string> unwaited;
  // Drops the files of `ids` whole (their rows give way), and what waits of
  // them in the log, and takes them out of this call.
  auto give_way = [&](const std::vector<std::string>& ids, absl::Status cause)
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                        for (const std::string& id : ids) {
                          if (auto f = files_.find(id); f != files_.end()) {
                            Close(f->second);
                            ::unlink(f->second.path.c_str());
                            files_.erase(f);
                          }
                          if (waiting_.contains(id)) unwaited.push_back(id);
                          touched.erase(id);
                          gave_way_.insert(id);
                          gave_way->push_back(id);
                        }
                        dir_dirty_ = true;
                        if (why != nullptr) *why = std::move(cause);
                      };
  std::vector<std::string> failed;
  absl::Status cause;
  if (gave_way != nullptr && reserve_ > 0) {
    // The log's room first: rows that would leave less than the reserve free
    // give way before they are written, in their files or in the log.
    auto growth_of = [](const Touched& t) {
      return t.grows ? t.bytes.size() + t.waits_bytes : 0;
    };
    uint64_t growth = 0;
    for (auto& [id, t] : touched) growth += growth_of(t);
    struct statvfs fs;
    if (growth > 0 && ::fstatvfs(dir_fd_, &fs) == 0) {
      const uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
      if (free < growth + reserve_) {
        // The models that grow most give way first, until the rest fits.
        std::vector<std::pair<uint64_t, std::string>> growing;
        for (auto& [id, t] : touched) {
          if (t.grows) growing.push_back({growth_of(t), id});
        }
        std::sort(growing.begin(), growing.end(), std::greater<>());
        for (const auto& [bytes, id] : growing) {
          if (free >= growth + reserve_) break;
          failed.push_back(id);
          growth -= bytes;
        }
        cause = absl::ResourceExhaustedError(
            absl::StrCat("the data directory's file system has ", free >> 20,
                         " MiB free and keeps ", reserve_ >> 20,
                         " MiB of it for the log: --rows_reserve_mb"));
        give_way(failed, cause);
        failed.clear();
      }
    }
  }
  bool created = false;
  for (auto& [id, t] : touched) {
    if (t.bytes.empty()) continue;  // its file as it was
    if (!t.had_file) {
      File f;
      f.path = PathOf(id, t.created_at);
      f.created_at = t.created_at;
      files_.emplace(id, std::move(f));
      t.created = true;
      std::string header;
      AppendChunk(&header, kHeaderChunk, 0, HeaderPayload(id, t.created_at));
      t.bytes.insert(0, header);
    }
    File& f = files_[id];
    absl::Status s = OpenForWrite(f, t.created);
    if (s.ok() && !WriteAll(f.fd, t.bytes, t.size_before))
      s = Errno("cannot write", f.path);
    if (!s.ok()) {
      if (gave_way == nullptr) return roll_back(s);
      failed.push_back(id);
      cause = s;
      continue;
    }
    created |= t.created;
  }
  if (!failed.empty()) give_way(failed, cause);
  if (created) dir_dirty_ = true;
  if (sync) {
    std::vector<File*> written;
    std::vector<std::string> ids;
    for (auto& [id, t] : touched) {
      if (t.bytes.empty()) continue;
      written.push_back(&files_[id]);
      ids.push_back(id);
    }
    if (absl::Status s = SyncFiles(written); !s.ok()) {
      if (gave_way == nullptr) return roll_back(s);
      // Which file could not be synced is not known: all of them give way.
      give_way(ids, s);
    }
  }
  if (log != nullptr) {
    for (auto& [id, t] : touched) {
      if (t.unwait) {
        for (const auto& [seq, bytes] : waiting_[id].chunks) {
          log->remove(id, seq);
        }
      }
      for (const auto& [seq, bytes] : t.waits) log->put(id, seq, bytes);
    }
    for (const std::string& id : unwaited) {
      for (const auto& [seq, bytes] : waiting_[id].chunks) {
        log->remove(id, seq);
      }
    }
  }
  if (absl::Status s = commit(); !s.ok()) return roll_back(s);

  for (const std::string& id : unwaited) Unwait(id);
  for (auto& [id, t] : touched) {
    if (t.unwait) Unwait(id);
    if (!t.waits.empty()) {
      Waiting& w = waiting_[id];
      w.bytes += t.waits_bytes;
      waiting_bytes_ += t.waits_bytes;
      for (auto& e : t.waits) w.chunks.push_back(std::move(e));
    }
    if (t.bytes.empty()) continue;
    File& f = files_[id];
    f.size = t.size_before + t.bytes.size();
    f.live = t.live;
    f.dirty = !sync;
    if (!f.live) {
      // Its rows no longer count: the chunk saying so is on disk, should
      // the file outlive a crash.
      Close(f);
      ::unlink(f.path.c_str());
      files_.erase(id);
      dir_dirty_ = true;
    }
  }
  // Descriptors past the limit are closed (reopened at the next write).
  for (auto& [id, f] : files_) {
    if (held_ <= max_held_) break;
    if (!f.dirty) Close(f);
  }
  return absl::OkStatus();
}

void RowsFiles::Unwait(const std::string& id) {
  auto w = waiting_.find(id);
  if (w == waiting_.end()) return;
  waiting_bytes_ -= w->second.bytes;
  waiting_.erase(w);
}

absl::Status RowsFiles::Put(const std::string& id, absl::Time created_at,
                            const KeptRows* rows,
                            const std::function<absl::Status()>& commit) {
  absl::MutexLock lock(&mu_);
  gave_way_.erase(id);  // a new incarnation keeps its rows again
  const int64_t nanos = absl::ToUnixNanos(created_at);
  File f;
  f.path = PathOf(id, nanos);
  f.created_at = nanos;
  auto old = files_.find(id);
  if (old != files_.end() && old->second.path == f.path) {
    // The same incarnation stored again: its file is rewritten (should the
    // commit fail, that model's rows are no longer stored).
    Close(old->second);
    ::unlink(f.path.c_str());
    files_.erase(old);
    old = files_.end();
  }
  const bool has_rows = rows != nullptr && rows->size() > 0;
  if (has_rows) {
    std::string bytes;
    AppendChunk(&bytes, kHeaderChunk, 0, HeaderPayload(id, nanos));
    AppendRowsChunk(&bytes, 0, *rows);
    AppendCountsChunk(&bytes, 0, *rows);
    absl::Status s = OpenForWrite(f, /*create=*/true);
    if (s.ok() && !WriteAll(f.fd, bytes, 0)) s = Errno("cannot write", f.path);
    if (s.ok() && ::fdatasync(f.fd) != 0) s = Errno("cannot sync", f.path);
    if (s.ok()) s = SyncDir();
    if (!s.ok()) {
      Close(f);
      ::unlink(f.path.c_str());
      return s;
    }
    f.size = bytes.size();
    f.live = true;
  }
  if (absl::Status s = commit(); !s.ok()) {
    if (has_rows) {
      Close(f);
      ::unlink(f.path.c_str());
    }
    return s;
  }
  if (old != files_.end()) {
    Close(old->second);
    ::unlink(old->second.path.c_str());
    files_.erase(old);
    dir_dirty_ = true;
  }
  incarnations_[id] = nanos;
  Unwait(id);  // the commit removed them from the log
  if (has_rows) {
    if (held_ > max_held_) Close(f);
    files_.emplace(id, std::move(f));
  }
  return absl::OkStatus();
}

absl::Status RowsFiles::Delete(const std::string& id,
                               const std::function<absl::Status()>& commit) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = commit(); !s.ok()) return s;
  incarnations_.erase(id);
  gave_way_.erase(id);
  Unwait(id);
  if (auto it = files_.find(id); it != files_.end()) {
    Close(it->second);
    ::unlink(it->second.path.c_str());
    files_.erase(it);
    dir_dirty_ = true;
  }
  return absl::OkStatus();
}

absl::Status RowsFiles::SyncAll() {
  if (::syncfs(dir_fd_) != 0)
    return Errno("cannot sync the file system of", dir_);
  for (auto& [id, f] : files_) f.dirty = false;
  dir_dirty_ = false;
  return absl::OkStatus();
}

absl::Status RowsFiles::SyncFiles(absl::Span<File* const> files) {
  if (files.size() > 1) return SyncAll();
  for (File* f : files) {
    if (absl::Status s = OpenForWrite(*f, false); !s.ok()) return s;
    if (::fdatasync(f->fd) != 0) return Errno("cannot sync", f->path);
  }
  if (dir_dirty_) return SyncDir();
  return absl::OkStatus();
}

absl::Status RowsFiles::Sync() {
  absl::MutexLock lock(&mu_);
  std::vector<File*> dirty;
  for (auto& [id, f] : files_) {
    if (f.dirty) dirty.push_back(&f);
  }
  absl::Status s = SyncFiles(dirty);
  if (s.ok()) {
    for (File* f : dirty) f->dirty = false;
  }
  return s;
}

void RowsFiles::List() {
  absl::MutexLock lock(&mu_);
  listed_.clear();
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    absl::string_view name(e->d_name);
    if (!absl::ConsumeSuffix(&name, kRowsFileSuffix)) continue;
    const size_t dot = name.rfind('.');
    int64_t created_at = 0;
    if (dot == absl::string_view::npos ||
        !absl::SimpleAtoi(name.substr(dot + 1), &created_at)) {
      continue;
    }
    listed_[std::string(name.substr(0, dot))].emplace_back(
        created_at, absl::StrCat(dir_, "/", e->d_name));
  }
  ::closedir(d);
}

void RowsFiles::Recover(const std::string& id, absl::Time created_at,
                        uint64_t last_seq, KeptRows* rows, bool* ok,
                        std::vector<std::pair<uint64_t, std::string>> logged,
                        std::vector<uint64_t>* drop) {
  absl::MutexLock lock(&mu_);
  const int64_t nanos = absl::ToUnixNanos(created_at);
  incarnations_[id] = nanos;
  Unwait(id);
  const uint64_t moved = RecoverFile(id, nanos, last_seq, rows, ok);
  // Then what waited in the log, after the file's last rows: a record whose
  // rows the file holds too was moved there, by a commit that did not reach
  // the disk (the file is synced before it).
  Waiting w;
  for (auto& [seq, bytes] : logged) {
    if (seq <= moved || seq > last_seq) {
      if (drop != nullptr) drop->push_back(seq);
      continue;
    }
    absl::string_view rest = bytes;
    Chunk chunk;
    bool good = !rest.empty();
    ChunkRead read;
    while ((read = NextChunk(&rest, &chunk)) == ChunkRead::kChunk) {
      if (chunk.seq == seq && chunk.type == kRowsChunk) {
        good = good && ParseRows(chunk.payload, rows);
      } else if (chunk.seq == seq && RaisesCounts(chunk.type)) {
        good = good && ParseRepeats(chunk, rows);
      } else {
        good = false;
      }
    }
    *ok = *ok && good && read == ChunkRead::kEnd;
    w.bytes += bytes.size();
    w.chunks.emplace_back(seq, std::move(bytes));
  }
  if (!w.chunks.empty()) {
    waiting_bytes_ += w.bytes;
    waiting_[id] = std::move(w);
  }
}

uint64_t RowsFiles::RecoverFile(const std::string& id, int64_t nanos,
                                uint64_t last_seq, KeptRows* rows, bool* ok) {
  auto listed = listed_.find(id);
  if (listed == listed_.end()) return 0;
  std::string path;
  for (const auto& [at, p] : listed->second) {
    if (at == nanos) {
      path = p;
    } else {
      ::unlink(p.c_str());  // an earlier incarnation's
    }
  }
  listed_.erase(listed);
  if (path.empty()) return 0;
  ChunkReader chunks(path);
  if (!chunks.opened()) return 0;

  bool header = false, live = false;
  Chunk chunk;
  uint64_t good_end = 0;
  uint64_t moved = 0;  // the last record whose rows it holds
  while (chunks.Next(&chunk)) {
    if (!header) {
      if (chunk.type != kHeaderChunk ||
          chunk.payload != HeaderPayload(id, nanos)) {
        break;
      }
      header = true;
    } else if (chunk.seq > last_seq || chunk.type == kHeaderChunk) {
      break;  // a record not applied, and everything after it
    } else if (chunk.type == kClearedChunk) {
      rows->Clear();
      *ok = true;
      live = false;
    } else if (chunk.type == kRowsChunk) {
      *ok = *ok && ParseRows(chunk.payload, rows);
      live = true;
      moved = chunk.seq;
    } else if (RaisesCounts(chunk.type)) {
      *ok = *ok && ParseRepeats(chunk, rows);
      live = true;
      moved = chunk.seq;
    } else {
      break;
    }
    good_end = chunks.end();
  }
  if (!header || !live) {
    // Nothing that counts: no file is the same.
    ::unlink(path.c_str());
    return moved;
  }
  File f;
  f.path = path;
  f.created_at = nanos;
  f.size = good_end;
  f.live = true;
  if (good_end < chunks.size() && OpenForWrite(f, false).ok()) {
    // The torn tail goes now: the next append writes after good_end.
    if (::ftruncate(f.fd, static_cast<off_t>(good_end)) == 0) ::fdatasync(f.fd);
    if (held_ > max_held_) Close(f);
  }
  files_[id] = std::move(f);
  return moved;
}

void RowsFiles::Relist(const std::string& id) {
  absl::MutexLock lock(&mu_);
  Unwait(id);  // Recover reads them again
  auto it = files_.find(id);
  if (it == files_.end()) return;
  Close(it->second);
  listed_[id] = {{it->second.created_at, it->second.path}};
  files_.erase(it);
}

void RowsFiles::RemoveUnclaimed(const absl::flat_hash_set<std::string>& keep) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, found] : listed_) {
    if (keep.contains(id)) continue;
    for (const auto& [at, path] : found) ::unlink(path.c_str());
  }
  listed_.clear();
}

}  // namespace perceptron::server
