// A gzip-compressed file read as a std::istream, through zlib's gzread
// (Debian's zlib1g-dev), for DataReader: "train digits.csv.gz" reads the CSV
// inside.
//
//   if (GzipInput::IsGzip(path)) {
//     auto in = std::make_unique<GzipInput>(path);
//     if (!in->opened()) ...;               // errno says why
//     std::string line;
//     while (std::getline(*in, line)) ...;
//     if (!in->status().ok()) ...;          // a damaged or truncated file
//   }
//
// Seeking goes back to the start only (seekg(0)), as DataReader::Rewind does.
#ifndef PERCEPTRON_CLIENT_GZIP_INPUT_H_
#define PERCEPTRON_CLIENT_GZIP_INPUT_H_

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace perceptron::client {

class GzipInput : public std::istream {
 public:
  explicit GzipInput(const std::string& path);
  ~GzipInput() override;
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  // Whether the file opened (errno says why not).
  bool opened() const;
  // OK, or DATA_LOSS when the compressed data is damaged or ends inside its
  // stream (what was read before it stands; the stream then ends).
  absl::Status status() const;
  // The compressed bytes consumed so far (for progress against the file's
  // size).
  uint64_t compressed_offset() const;

  // Whether the file at `path` starts with gzip's magic bytes (1f 8b).
  static bool IsGzip(const std::string& path);

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_GZIP_INPUT_H_
