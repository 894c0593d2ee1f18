#include "core/row_hash.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
// XXH3_generateSecret_fromSeed (libxxhash's static-linking section).
#define XXH_STATIC_LINKING_ONLY
#include "xxhash.h"

namespace perceptron {
namespace {

// The library's XXH3 (libxxhash, its own SSE2 build): what HashRow must equal.
RowHash Library(const void* data, size_t bytes, uint64_t seed) {
  const XXH128_hash_t h = XXH3_128bits_withSeed(data, bytes, seed);
  return {h.low64, h.high64};
}

// Every length up to 1,100 bytes (XXH3's short inputs end at 240; its
// vector loop takes stripes of 64 bytes and blocks of 1,024) and some longer
// ones, at unaligned starts, with several seeds.
std::vector<size_t> Lengths() {
  std::vector<size_t> n;
  for (size_t i = 0; i <= 1100; ++i) n.push_back(i);
  for (size_t i : {2047, 2048, 2049, 4096, 8008, 65536 + 17}) n.push_back(i);
  return n;
}

TEST(RowHashTest, IsTheLibrarysXxh3ForEveryLength) {
  std::mt19937_64 random(7);
  std::vector<unsigned char> bytes(65536 + 64);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(random());
  size_t checked = 0;
  for (size_t n : Lengths()) {
    for (uint64_t seed :
         {uint64_t{0}, uint64_t{20}, (uint64_t{1} << 32) ^ 7, ~uint64_t{0}}) {
      const unsigned char* at = bytes.data() + (n % 8);
      const RowHash want = Library(at, n, seed), got = HashRow(at, n, seed);
      ASSERT_EQ(got.low, want.low) << n << " bytes, seed " << seed;
      ASSERT_EQ(got.high, want.high) << n << " bytes, seed " << seed;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * Lengths().size());
}

// Long rows are hashed with the secrets of the seeds used last, kept: many
// seeds taking turns (more than the kept ones, some sharing a slot) each
// still give the library's bits.
TEST(RowHashTest, KeptSecretsGiveTheLibrarysXxh3) {
  std::mt19937_64 random(11);
  std::vector<unsigned char> bytes(2048);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(random());
  std::vector<uint64_t> seeds;
  for (uint64_t label : {uint64_t{1}, uint64_t{0xFFFFFFFF}}) {
    for (uint64_t count : {0, 1, 17, 32, 33})
      seeds.push_back(label << 32 ^ count);
  }
  for (uint64_t c = 0; c < 40; ++c) seeds.push_back(c << 32);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t seed : seeds) {
      for (size_t n : {241, 512, 1100, 2048}) {
        const RowHash want = Library(bytes.data(), n, seed);
        const RowHash got = HashRow(bytes.data(), n, seed);
        ASSERT_EQ(got.low, want.low) << n << " bytes, seed " << seed;
        ASSERT_EQ(got.high, want.high) << n << " bytes, seed " << seed;
      }
    }
  }
}

#if defined(__x86_64__)
TEST(RowHashTest, TheAvx2BuildIsTheLibrarysXxh3) {
  if (!__builtin_cpu_supports("avx2")) {
    GTEST_SKIP() << "this processor has no AVX2";
  }
  std::mt19937_64 random(9);
  std::vector<unsigned char> bytes(65536 + 64);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(random());
  unsigned char secret[XXH3_SECRET_DEFAULT_SIZE];
  for (size_t n : Lengths()) {
    XXH3_generateSecret_fromSeed(secret, n);
    const RowHash want = Library(bytes.data() + 3, n, n);
    const RowHash got = internal::HashRowAvx2(bytes.data() + 3, n, n, secret);
    ASSERT_EQ(got.low, want.low) << n << " bytes";
    ASSERT_EQ(got.high, want.high) << n << " bytes";
  }
}
#endif

}  // namespace
}  // namespace perceptron
