#include "server/storage/prewritten_logs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace perceptron::server {
namespace {

// A log file over a file of zeros: written from its start, with a buffer as
// LevelDB's own writable file has, synced with fdatasync.
class OverwriteFile final : public leveldb::WritableFile {
 public:
  OverwriteFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~OverwriteFile() override {
    if (fd_ >= 0) Close().ok();  // an error has nowhere to go
  }

  leveldb::Status Append(const leveldb::Slice& data) override {
    if (buffer_.size() + data.size() <= kBuffer) {
      buffer_.append(data.data(), data.size());
      return leveldb::Status::OK();
    }
    leveldb::Status s = Flush();
    if (!s.ok()) return s;
    if (data.size() <= kBuffer) {
      buffer_.append(data.data(), data.size());
      return leveldb::Status::OK();
    }
    return Write(data.data(), data.size());
  }

  leveldb::Status Close() override {
    leveldb::Status s = Flush();
    if (::close(fd_) != 0 && s.ok()) s = Error(errno);
    fd_ = -1;
    return s;
  }

  // The buffer is emptied even if the write fails, as LevelDB's file does.
  leveldb::Status Flush() override {
    leveldb::Status s = Write(buffer_.data(), buffer_.size());
    buffer_.clear();
    return s;
  }

  leveldb::Status Sync() override {
    leveldb::Status s = Flush();
    if (s.ok() && ::fdatasync(fd_) != 0) s = Error(errno);
    return s;
  }

 private:
  static constexpr size_t kBuffer = 64 << 10;

  leveldb::Status Write(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return Error(errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return leveldb::Status::OK();
  }

  leveldb::Status Error(int error) const {
    return leveldb::Status::IOError(name_, std::strerror(error));
  }

  const std::string name_;
  int fd_;
  std::string buffer_;
};

bool InMemory(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return true;  // nothing to write into
  return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

bool SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  return synced;
}

}  // namespace

PrewrittenLogs::PrewrittenLogs(std::string dir, uint64_t bytes)
    : dir_(std::move(dir)), bytes_(bytes) {
  if (bytes_ == 0) return;
  const std::string spare = dir_ + "/" + kSpareName;
  ::unlink((spare + ".tmp").c_str());  // one being written when a server ended
  struct stat st {};
  const bool ready = ::stat(spare.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                     static_cast<uint64_t>(st.st_size) == bytes_;
  if (!ready) ::unlink(spare.c_str());  // of another size, or none
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = ready;
}

void PrewrittenLogs::PrepareIfNew() {
  if (bytes_ == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready_) return;
  }
  // Created as LevelDB would create it (one level).
  if (::mkdir(dir_.c_str(), 0755) != 0) {
    if (errno != EEXIST) return;
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return;
    bool empty = true;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") empty = false;
    }
    ::closedir(d);
    if (!empty) return;
  }
  const bool made = Prepare();
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = made;
  changed_.notify_all();
}

void PrewrittenLogs::Start() {
  if (bytes_ == 0 || writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wanted_ = true;
  }
  writer_ = std::thread([this] { Loop(); });
}

PrewrittenLogs::~PrewrittenLogs() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  writer_.join();
}

bool PrewrittenLogs::IsLogName(const std::string& name) {
  const size_t slash = name.rfind('/');
  absl::string_view base(name);
  if (slash != std::string::npos) base.remove_prefix(slash + 1);
  if (!absl::ConsumeSuffix(&base, ".log") || base.empty()) return false;
  return std::all_of(base.begin(), base.end(),
                     [](char c) { return absl::ascii_isdigit(c); });
}

leveldb::WritableFile* PrewrittenLogs::Take(const std::string& name) {
  if (bytes_ == 0) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_) return nullptr;  // being written, or it could not be
    ready_ = false;
  }
  // The name made durable before any record is written under it: an
  // fdatasync of the file itself then has no metadata to commit.
  leveldb::WritableFile* file = nullptr;
  const std::string spare = dir_ + "/" + kSpareName;
  if (::rename(spare.c_str(), name.c_str()) == 0 && SyncDirectory(dir_)) {
    const int fd = ::open(name.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) file = new OverwriteFile(name, fd);
  }
  // Else the caller creates `name` (truncating it if it was moved).
  {
    std::lock_guard<std::mutex> lock(mu_);
    wanted_ = true;
    if (file != nullptr) ++taken_;
  }
  changed_.notify_all();
  return file;
}

uint64_t PrewrittenLogs::taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return taken_;
}

bool PrewrittenLogs::AwaitReady(absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                           [this] { return ready_; });
}

bool PrewrittenLogs::Prepare() const {
  if (InMemory(dir_)) return false;
  const std::string spare = dir_ + "/" + kSpareName;
  const std::string tmp = spare + ".tmp";
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  static const char kZeros[64 << 10] = {};
  bool written = true;
  for (uint64_t done = 0; written && done < bytes_;) {
    const ssize_t w =
        ::write(fd, kZeros, std::min<uint64_t>(sizeof(kZeros), bytes_ - done));
    if (w < 0 && errno == EINTR) continue;
    written = w > 0;
    if (written) done += static_cast<uint64_t>(w);
  }
  written = written && ::fdatasync(fd) == 0;
  written = ::close(fd) == 0 && written;
  written = written && ::rename(tmp.c_str(), spare.c_str()) == 0;
  if (!written) ::unlink(tmp.c_str());  // a full disk: tried again later
  return written;
}

void PrewrittenLogs::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || (wanted_ && !ready_); });
    if (stopping_) return;
    wanted_ = false;  // asked again by the next Take if this one fails
    lock.unlock();
    const bool made = Prepare();
    lock.lock();
    ready_ = made;
    changed_.notify_all();
  }
}

}  // namespace perceptron::server
