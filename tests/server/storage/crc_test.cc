// The data directory's CRC-32 (server/storage/crc.h) is zlib's, bit for bit:
// every stored record, rows chunk and export blob written before it came from
// ISA-L still checks.
#include "server/storage/crc.h"

#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

uint32_t ZlibCrc32(absl::string_view bytes) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
            static_cast<uInt>(bytes.size())));
}

TEST(Crc32Test, IsTheStandardCheckValue) {
  EXPECT_EQ(Crc32(""), 0u);
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
}

TEST(Crc32Test, EqualsZlibsAtEveryLengthAndAlignment) {
  std::mt19937_64 rng(7);
  std::string bytes(3 << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  const absl::string_view all(bytes);
  // Every length to 600 from every offset to 16 (the vector loops' heads and
  // tails), then long ones.
  for (size_t at = 0; at < 16; ++at) {
    for (size_t n = 0; n <= 600; ++n) {
      ASSERT_EQ(Crc32(all.substr(at, n)), ZlibCrc32(all.substr(at, n)))
          << "at " << at << ", length " << n;
    }
  }
  for (size_t n :
       {size_t{4096}, size_t{8193}, size_t{65537}, size_t{3} << 20}) {
    EXPECT_EQ(Crc32(all.substr(0, n)), ZlibCrc32(all.substr(0, n))) << n;
  }
}

}  // namespace
}  // namespace perceptron::server
