#include "core/row_hash.h"

#include "xxhash.h"

namespace perceptron {
namespace {

// XXH3 reads inputs of at most 240 bytes without its vector loop.
constexpr size_t kShortInput = 240;

bool HasAvx2() {
#if defined(PERCEPTRON_ROW_HASH_AVX2)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace

RowHash HashRow(const void* data, size_t bytes, uint64_t seed) {
  if (bytes > kShortInput && HasAvx2()) {
    return internal::HashRowAvx2(data, bytes, seed);
  }
  const XXH128_hash_t h = XXH3_128bits_withSeed(data, bytes, seed);
  return {h.low64, h.high64};
}

}  // namespace perceptron
