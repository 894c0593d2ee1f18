// The certificate's key of a kept row: 128 bits of xxHash's XXH3 over the
// row's bytes (core/certificate_tracker.h). One function, the same bits on
// every machine; rows longer than XXH3's short inputs (240 bytes) are hashed
// by an AVX2 build of the library's code where the processor has AVX2 (the
// library's own build is SSE2: 8 KB in 500 ns against 210), shorter ones by
// the library. A long row's secret, which XXH3 derives from the seed on each
// call, is kept for the seeds a thread used last (the same bits).
#ifndef PERCEPTRON_CORE_ROW_HASH_H_
#define PERCEPTRON_CORE_ROW_HASH_H_

#include <cstddef>
#include <cstdint>

namespace perceptron {

struct RowHash {
  uint64_t low = 0;
  uint64_t high = 0;
};

// XXH3_128bits_withSeed(data, bytes, seed).
RowHash HashRow(const void* data, size_t bytes, uint64_t seed);

namespace internal {
// The AVX2 build (core/row_hash_avx2.cc); only where the processor has AVX2.
// XXH3_128bits_withSeed(data, bytes, seed) given `secret`,
// XXH3_generateSecret_fromSeed(seed)'s 192 bytes
// (XXH3_128bits_withSecretandSeed: the same bits, without deriving it).
RowHash HashRowAvx2(const void* data, size_t bytes, uint64_t seed,
                    const unsigned char* secret);
}  // namespace internal

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_ROW_HASH_H_
