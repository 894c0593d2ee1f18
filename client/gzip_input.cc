#include "client/gzip_input.h"

#include <zlib.h>

#include <cstdio>
#include <streambuf>

#include "absl/strings/str_cat.h"

namespace perceptron::client {

// The stream's buffer: gzread's output, 64 KiB at a time.
class GzipInput::Buffer : public std::streambuf {
 public:
  explicit Buffer(const std::string& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_ != nullptr) gzbuffer(file_, kSize);
  }
  ~Buffer() override {
    if (file_ != nullptr) gzclose(file_);
  }

  bool opened() const { return file_ != nullptr; }
  const absl::Status& status() const { return status_; }
  uint64_t compressed_offset() const {
    if (file_ == nullptr) return 0;
    const z_off_t at = gzoffset(file_);
    return at < 0 ? 0 : static_cast<uint64_t>(at);
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (file_ == nullptr || !status_.ok()) return traits_type::eof();
    const int n = gzread(file_, data_, kSize);
    if (n <= 0) {
      // The end, or zlib's error (Z_BUF_ERROR: the file ends inside a
      // compressed stream; Z_DATA_ERROR: it is damaged).
      int code = Z_OK;
      const char* message = gzerror(file_, &code);
      if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
        status_ = absl::DataLossError(absl::StrCat(
            "cannot decompress it past byte ", compressed_offset(), ": ",
            code == Z_BUF_ERROR ? "the file ends inside its compressed data"
                                : message));
      }
      return traits_type::eof();
    }
    setg(data_, data_, data_ + n);
    return traits_type::to_int_type(*gptr());
  }

  pos_type seekoff(off_type off, std::ios_base::seekdir dir,
                   std::ios_base::openmode which) override {
    if (off != 0 || dir != std::ios_base::beg) return pos_type(off_type(-1));
    return seekpos(0, which);
  }

  pos_type seekpos(pos_type pos, std::ios_base::openmode) override {
    if (pos != pos_type(0) || file_ == nullptr || gzrewind(file_) != 0) {
      return pos_type(off_type(-1));
    }
    gzclearerr(file_);
    status_ = absl::OkStatus();
    setg(data_, data_, data_);
    return pos_type(0);
  }

 private:
  static constexpr int kSize = 1 << 16;
  gzFile file_;
  absl::Status status_;
  char data_[kSize];
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
