// XXH3 built for AVX2 (this file alone is compiled with -mavx2;
// core/row_hash.cc calls it only where the processor has AVX2). The same
// function as the library's: the same bits whatever the build.
#include "core/row_hash.h"

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include "xxhash.h"

namespace perceptron::internal {

RowHash HashRowAvx2(const void* data, size_t bytes, uint64_t seed,
                    const unsigned char* secret) {
  const XXH128_hash_t h = XXH3_128bits_withSecretandSeed(
      data, bytes, secret, XXH3_SECRET_DEFAULT_SIZE, seed);
  return {h.low64, h.high64};
}

}  // namespace perceptron::internal
