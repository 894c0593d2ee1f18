// Encoding and parsing of rows-file chunks (rows_format.h) as byte strings;
// no I/O.
//
//   std::string bytes;
//   AppendChunk(&bytes, kHeaderChunk, 0, HeaderPayload(id, created_at));
//   AppendRowsChunk(&bytes, seq, rows);
//   ...
//   absl::string_view rest = bytes;
//   Chunk chunk;
//   while (NextChunk(&rest, &chunk) == ChunkRead::kChunk) { ... }
#ifndef PERCEPTRON_SERVER_STORAGE_ROWS_CHUNK_H_
#define PERCEPTRON_SERVER_STORAGE_ROWS_CHUNK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/kept_rows.h"
#include "server/storage/rows_format.h"

namespace perceptron::server {

// A chunk as NextChunk reads it.
struct Chunk {
  uint8_t type = 0;
  uint64_t seq = 0;
  absl::string_view payload;  // points into the bytes parsed
};

// Appends one chunk to `out`.
void AppendChunk(std::string* out, ChunkType type, uint64_t seq,
                 absl::string_view payload);
// Appends a kRowsChunk holding `rows`, written from their blocks in one copy.
// A rows payload: the number of rows n (4 bytes); n labels (1 byte, +1 or
// -1, or a multiclass model's class 0..63); n marks (1 byte: 1 if the row is
// dense, its non-zeros coordinates 0..k-1, whose indices are then not written);
// n counts of non-zeros (4 bytes); the sparse rows' indices (4 bytes each),
// then every row's values (8-byte doubles), rows in order.
void AppendRowsChunk(std::string* out, uint64_t seq, const KeptRows& rows);
// Appends a kRepeatRunsChunk raising the counts of the rows at `places`
// (among every row since the last kClearedChunk, in order; any order, a place
// listed as often as its row was seen again) by one each, or, for
// AppendCountsChunk, every row of `rows` whose count is above 1 to it. Its
// payload is runs of consecutive places whose rows stand for as many more
// examples each (a cycling stream's batch is one run), as unsigned LEB128
// varints (7 bits a byte, the low first; at most 5 bytes, below 2^32): the
// number of runs m, then m triples of the gap from the end of the run before
// (the first, from place 0), the run's length (>= 1) and how many more
// examples each of its rows stands for (>= 1).
void AppendRepeatsChunk(std::string* out, uint64_t seq,
                        const std::vector<uint32_t>& places);
void AppendCountsChunk(std::string* out, uint64_t seq, const KeptRows& rows);
// Raises the counts of `rows` as the payload of a kRepeatRunsChunk, or of a
// kRepeatsChunk (m, 4 bytes, then m pairs of a place and how many more
// examples its row stands for, 4 bytes each), says; false if it does not add
// up, names a row not in `rows` or would raise a count past 2^32 - 1, with
// nothing raised (but for the pairs before one that would pass it).
bool ParseRepeats(const Chunk& chunk, KeptRows* rows);
// Whether a chunk of `type` raises counts (kRepeatsChunk or kRepeatRunsChunk).
inline bool RaisesCounts(uint8_t type) {
  return type == kRepeatsChunk || type == kRepeatRunsChunk;
}
// The payload of a file's kHeaderChunk.
std::string HeaderPayload(absl::string_view id, int64_t created_at);

// Appends the rows of a payload AppendRowsChunk wrote to `rows`; false (some
// may have been appended) if it does not add up. The rows' indices and values
// are checked by the certificate that takes them.
bool ParseRows(absl::string_view payload, KeptRows* rows);

enum class ChunkRead {
  kChunk,    // a whole chunk passing its check
  kEnd,      // no byte left
  kTorn,     // fewer bytes than a header, or than the length it states
  kCorrupt,  // its CRC-32 fails
};

// The payload length a chunk's header states (`header` holds at least
// kChunkHeader bytes).
uint64_t ChunkPayloadLength(absl::string_view header);
// Reads the chunk at the start of `*bytes` and on kChunk moves `*bytes` past
// it; on anything else leaves both unchanged.
ChunkRead NextChunk(absl::string_view* bytes, Chunk* chunk);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_ROWS_CHUNK_H_
