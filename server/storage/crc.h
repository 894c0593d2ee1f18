// The data directory's checksums and little-endian integers: CRC-32 (the one
// zlib, gzip and PNG use; ISA-L's implementation) over bytes of any length,
// and fixed-width integers in the byte order every stored format here uses.
#ifndef PERCEPTRON_SERVER_STORAGE_CRC_H_
#define PERCEPTRON_SERVER_STORAGE_CRC_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace perceptron::server {

// CRC-32 of `bytes` (zlib's crc32(0, bytes, n), bit for bit).
uint32_t Crc32(absl::string_view bytes);

// Writes the low `bytes` bytes of `v` at `at`, least significant first.
inline void PutLittle(char* at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    at[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
// Reads what PutLittle wrote.
inline uint64_t GetLittle(const char* at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(at[i])) << (8 * i);
  return v;
}

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_CRC_H_
