#include "server/storage/crc.h"

#include <zlib.h>

#include <algorithm>

namespace perceptron::server {

uint32_t Crc32(absl::string_view bytes) {
  const char* data = bytes.data();
  size_t n = bytes.size();
  uLong crc = crc32(0, nullptr, 0);
  while (n > 0) {
    const uInt step = static_cast<uInt>(std::min<size_t>(n, size_t{1} << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), step);
    data += step;
    n -= step;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace perceptron::server
