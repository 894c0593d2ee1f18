#include "client/gzip_input.h"

#include <zlib.h>

#include <cstdio>
#include <streambuf>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace perceptron::client {

// The stream's buffer: gzread's output, 256 KiB at a time, inflated by a
// thread of its own one block ahead of the reader, so that inflating (about
// 270 MB/s of output here) and parsing take two cores rather than one in
// turn. Two blocks: the thread fills one while the reader reads the other.
// The reader's side (underflow, seekpos, status, compressed_offset) is one
// thread's, as any stream's.
class GzipInput::Buffer : public std::streambuf {
 public:
  explicit Buffer(const std::string& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_ != nullptr) gzbuffer(file_, kSize);
  }
  ~Buffer() override {
    Stop();
    if (file_ != nullptr) gzclose(file_);
  }

  bool opened() const { return file_ != nullptr; }
  const absl::Status& status() const { return status_; }
  uint64_t compressed_offset() const { return offset_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (file_ == nullptr || ended_) return traits_type::eof();
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { Inflate(); });
    }
    absl::MutexLock lock(&mu_);
    if (reading_) {
      // The block read is given back for the thread to fill.
      --filled_;
      reading_ = false;
      next_read_ ^= 1;
    }
    mu_.Await(absl::Condition(this, &Buffer::AnyFilled));
    const Block& b = blocks_[next_read_];
    reading_ = true;
    offset_ = b.offset;
    if (b.size <= 0) {
      // The end, or zlib's error: the thread has stopped.
      ended_ = true;
      status_ = b.status;
      return traits_type::eof();
    }
    setg(b.data.get(), b.data.get(), b.data.get() + b.size);
    return traits_type::to_int_type(*gptr());
  }

  pos_type seekoff(off_type off, std::ios_base::seekdir dir,
                   std::ios_base::openmode which) override {
    if (off != 0 || dir != std::ios_base::beg) return pos_type(off_type(-1));
    return seekpos(0, which);
  }

  pos_type seekpos(pos_type pos, std::ios_base::openmode) override {
    if (pos != pos_type(0) || file_ == nullptr) return pos_type(off_type(-1));
    Stop();
    if (gzrewind(file_) != 0) return pos_type(off_type(-1));
    gzclearerr(file_);
    {
      absl::MutexLock lock(&mu_);
      filled_ = 0;
      stop_ = false;
    }
    next_read_ = next_fill_ = 0;
    reading_ = ended_ = false;
    status_ = absl::OkStatus();
    offset_ = 0;
    setg(nullptr, nullptr, nullptr);
    return pos_type(0);
  }

 private:
  static constexpr int kSize = 1 << 18;
  struct Block {
    std::unique_ptr<char[]> data = std::make_unique<char[]>(kSize);
    int size = 0;         // <= 0: the end (status says whether by an error)
    uint64_t offset = 0;  // the compressed bytes consumed once it was read
    absl::Status status;
  };

  // The thread's: fills the blocks in turn until the file ends or Stop.
  void Inflate() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &Buffer::FreeOrStopped));
        if (stop_) return;
      }
      // Neither the reader's block nor one it waits for: the thread's alone.
      Block& b = blocks_[next_fill_];
      b.size = gzread(file_, b.data.get(), kSize);
      const z_off_t at = gzoffset(file_);
      b.offset = at < 0 ? 0 : static_cast<uint64_t>(at);
      b.status = absl::OkStatus();
      if (b.size <= 0) {
        // zlib's error (Z_BUF_ERROR: the file ends inside a compressed
        // stream; Z_DATA_ERROR: it is damaged), or none at the end.
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        if (b.size < 0 || (code != Z_OK && code != Z_STREAM_END)) {
          b.status = absl::DataLossError(absl::StrCat(
              "cannot decompress it past byte ", b.offset, ": ",
              code == Z_BUF_ERROR ? "the file ends inside its compressed data"
                                  : message));
        }
      }
      next_fill_ ^= 1;
      absl::MutexLock lock(&mu_);
      ++filled_;
      if (b.size <= 0) return;
    }
  }

  bool AnyFilled() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return filled_ > 0;
  }
  bool FreeOrStopped() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return filled_ < 2 || stop_;
  }

  // Ends the thread (if any); the reader's side only.
  void Stop() {
    if (!thread_.joinable()) return;
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }

  gzFile file_;
  Block blocks_[2];
  absl::Mutex mu_;
  int filled_ ABSL_GUARDED_BY(mu_) = 0;  // blocks filled, not given back
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int next_fill_ = 0;  // the thread's
  // The reader's.
  int next_read_ = 0;
  bool reading_ = false;  // blocks_[next_read_] is the one read
  bool ended_ = false;
  absl::Status status_;
  uint64_t offset_ = 0;
  std::thread thread_;
};

GzipInput::GzipInput(const std::string& path)
    : std::istream(nullptr), buffer_(std::make_unique<Buffer>(path)) {
  rdbuf(buffer_.get());
  if (!buffer_->opened()) setstate(std::ios_base::failbit);
}

GzipInput::~GzipInput() = default;

bool GzipInput::opened() const { return buffer_->opened(); }

absl::Status GzipInput::status() const { return buffer_->status(); }

uint64_t GzipInput::compressed_offset() const {
  return buffer_->compressed_offset();
}

bool GzipInput::IsGzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char magic[2] = {0, 0};
  const size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace perceptron::client
