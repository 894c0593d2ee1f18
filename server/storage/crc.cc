#include "server/storage/crc.h"

#include <isa-l/crc.h>

namespace perceptron::server {

// ISA-L's crc32_gzip_refl computes zlib's CRC-32 (the reflected IEEE
// polynomial, inverted before and after) with carry-less multiplication when
// the processor has it, many times zlib's own rate; zlib's showed in the
// server's profile of durability sync while the certificate kept its rows.
uint32_t Crc32(absl::string_view bytes) {
  return crc32_gzip_refl(
      0, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace perceptron::server
