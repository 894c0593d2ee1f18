#include "core/row_hash.h"

// XXH3_generateSecret_fromSeed and XXH3_128bits_withSecretandSeed (exported
// by libxxhash, declared in its static-linking section).
#define XXH_STATIC_LINKING_ONLY
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

// XXH3_128bits_withSeed derives a secret from a non-zero seed for each long
// input (192 bytes, 6 ns of a 29 ns hash of 512 bytes); the secrets of the
// seeds a thread used last are kept instead, one slot for each of 16 classes
// of seeds (a tracker's seed is the label in the high half and the count of
// indices in the low: the labels of a stream and the shapes of its rows).
struct Secret {
  alignas(64) unsigned char bytes[XXH3_SECRET_DEFAULT_SIZE];
  uint64_t seed = 0;
  bool made = false;
};

const unsigned char* SecretOf(uint64_t seed) {
  thread_local Secret secrets[16];
  Secret& s = secrets[(seed ^ (seed >> 32)) & 15];
  if (!s.made || s.seed != seed) {
    XXH3_generateSecret_fromSeed(s.bytes, seed);
    s.seed = seed;
    s.made = true;
  }
  return s.bytes;
}

}  // namespace

RowHash HashRow(const void* data, size_t bytes, uint64_t seed) {
  if (bytes <= kShortInput) {
    const XXH128_hash_t h = XXH3_128bits_withSeed(data, bytes, seed);
    return {h.low64, h.high64};
  }
  // The same bits as XXH3_128bits_withSeed: a secret made by
  // XXH3_generateSecret_fromSeed is the one it derives (xxhash.h).
  const unsigned char* secret = SecretOf(seed);
  if (HasAvx2()) return internal::HashRowAvx2(data, bytes, seed, secret);
  const XXH128_hash_t h = XXH3_128bits_withSecretandSeed(
      data, bytes, secret, XXH3_SECRET_DEFAULT_SIZE, seed);
  return {h.low64, h.high64};
}

}  // namespace perceptron
