// The layout of a rows file (docs/formats.md, "The rows files"): a sequence
// of chunks, each
//
//   offset  size  field
//   0       4     CRC-32 of every byte after this field
//   4       4     payload length n
//   8       1     type (ChunkType)
//   9       8     the log record's sequence number
//   17      n     payload
//
// integers little-endian. rows_chunk.h encodes and parses chunks;
// rows_files.h keeps them in files.
#ifndef PERCEPTRON_SERVER_STORAGE_ROWS_FORMAT_H_
#define PERCEPTRON_SERVER_STORAGE_ROWS_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace perceptron::server {

inline constexpr size_t kChunkHeader = 17;

enum ChunkType : uint8_t {
  // A file's first chunk: "<model id>\n<created_at in unix nanoseconds>".
  kHeaderChunk = 0,
  // The rows a log record kept (EncodeRows' payload).
  kRowsChunk = 1,
  // Empty: the rows before it no longer count.
  kClearedChunk = 2,
  // Rows kept before (since the last kClearedChunk) seen again: their counts
  // raised, as pairs of a place and a count (written before 2026-11-30; still
  // read).
  kRepeatsChunk = 3,
  // The same as runs of consecutive places (AppendRepeatsChunk's payload).
  kRepeatRunsChunk = 4,
};

// A rows file is named "<model id>.<created_at>" and this.
inline constexpr absl::string_view kRowsFileSuffix = ".rows";

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_ROWS_FORMAT_H_
