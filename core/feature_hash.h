// Named features and their hashing into a model's coordinates
// (docs/design.md section 2.9), with Vowpal Wabbit's function for its text
// format, so that a VW file hashes here as VW hashes it.
//
//   perceptron::FeatureHasher hasher(/*bits=*/20, /*interactions=*/{"ab"});
//   std::vector<perceptron::NamedFeature> x = {
//       {.space = "a", .name = "age", .value = 34},
//       {.space = "b", .name = "city", .category = "paris"},
//   };
//   perceptron::Features out;
//   absl::Status s = hasher.Hash(x, &out);  // sparse, indices < 2^20, sorted
//
// The mapping, as VW's text parser and its quadratic interactions compute it:
//   - a namespace's hash is VwHashString(namespace, 0); the empty namespace
//     (VW's default, "| a b") hashes to 0;
//   - a name's slot is VwHashString(name, namespace hash), masked to `bits`;
//   - a categorical value v of name n (VW's "n:v" where v is not a number)
//     hashes as VwHashString(v, VwHashString(n, namespace hash)), value 1;
//   - an interaction "ab" (VW's -q ab) pairs every feature of the namespaces
//     whose name starts with 'a' with every feature of those starting with
//     'b' (' ' names the empty namespace): slot ((h1 * 16777619) ^ h2),
//     value v1 * v2; within one namespace letter ("aa") only pairs i <= j,
//     and i == j only when v_i != 1, as VW does without --permutations;
//   - features with value 0 are dropped; features landing on one slot
//     (repeated names, collisions) add their values, in the order given.
// Values are doubles here (VW keeps floats).
//
// A FeatureHasher is immutable once built; Hash may be called from any
// thread.
#ifndef PERCEPTRON_CORE_FEATURE_HASH_H_
#define PERCEPTRON_CORE_FEATURE_HASH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/example.h"

namespace perceptron {

// The most hash bits a model may have: 2^24 = kMaxDimension coordinates.
inline constexpr uint32_t kMaxHashBits = 24;
// The longest namespace, name or categorical value, in bytes.
inline constexpr size_t kMaxNameBytes = 1024;
// The most named features in one example (before interactions), and the most
// coordinates one example may produce with its interactions.
inline constexpr size_t kMaxNamedFeatures = 10000;
inline constexpr size_t kMaxHashedFeatures = 1000000;
// The most interactions a model may declare.
inline constexpr size_t kMaxInteractions = 64;

// MurmurHash3_x86_32 (Austin Appleby's public-domain function) of `data`.
uint32_t MurmurHash3X86_32(absl::string_view data, uint32_t seed);

// VW's hashstring: leading and trailing ASCII whitespace and control bytes
// (<= 0x20) trimmed; a name of decimal digits only is its number plus `seed`
// (modulo 2^32), anything else MurmurHash3X86_32(trimmed, seed).
uint32_t VwHashString(absl::string_view s, uint32_t seed);

// One feature by name. `category` set: the categorical feature
// "name=category" with value 1 (`value` ignored).
struct NamedFeature {
  absl::string_view space = {};  // the namespace; empty for the default one
  absl::string_view name = {};
  double value = 1.0;
  absl::string_view category = {};
  bool categorical = false;
};

// The key of a feature in an explicit list of names: "namespace^name" (just
// "name" in the default namespace), with "=value" for a categorical value, as
// Vowpal Wabbit's audit output writes features.
std::string FeatureKey(const NamedFeature& f);

// The most names an explicit list may hold.
inline constexpr size_t kMaxListedNames = 100000;

// Where each coordinate of a hashed example came from, for a NameTable
// (core/name_table.h): one entry per term Hash summed, in the order it made
// them (each single feature, then each interaction's pairs).
struct HashTrace {
  static constexpr uint32_t kNone = ~uint32_t{0};
  struct Term {
    uint32_t hash;    // the 32-bit hash before it is masked to the slot
    uint32_t first;   // the feature's position in the example
    uint32_t second;  // an interaction's second feature, else kNone
  };
  std::vector<Term> terms;
};

class FeatureHasher {
 public:
  // `bits` in 1..kMaxHashBits; each interaction two namespace letters.
  // ValidateHashing checks them first.
  FeatureHasher(uint32_t bits, std::vector<std::string> interactions);
  // No hashing: feature FeatureKey(f) is coordinate i of `names` (each
  // unique; ValidateNames checks them first), and a name not in the list is
  // an error.
  static FeatureHasher Listed(const std::vector<std::string>& names);

  // The sparse vector of `x`: indices < 2^bits, ascending, unique. On error
  // (INVALID_ARGUMENT naming the feature: an empty or over-long name, a
  // non-finite value, too many features) `*out` is unspecified. With
  // `trace` (a hashing model's, not a list's) it also says where each term
  // came from.
  absl::Status Hash(absl::Span<const NamedFeature> x, Features* out,
                    HashTrace* trace = nullptr) const;

  // The slot of one feature, without interactions (for tools and tests);
  // kNoSlot for a name not in an explicit list.
  uint32_t Slot(const NamedFeature& f) const;
  static constexpr uint32_t kNoSlot = ~uint32_t{0};

  uint32_t bits() const { return bits_; }
  bool listed() const { return listed_ != nullptr; }
  const std::vector<std::string>& interactions() const { return interactions_; }

 private:
  uint32_t bits_;
  uint32_t mask_;
  std::vector<std::string> interactions_;
  // An explicit list's coordinates by key; shared by copies.
  std::shared_ptr<const absl::flat_hash_map<std::string, uint32_t>> listed_;
};

// OK if `bits` and `interactions` describe a hasher, else INVALID_ARGUMENT
// naming the bad one.
absl::Status ValidateHashing(uint32_t bits,
                             absl::Span<const std::string> interactions);

// OK if `names` is a list a model may take instead of hashing: at most
// kMaxListedNames, each non-empty, at most kMaxNameBytes, none repeated; else
// INVALID_ARGUMENT naming the first bad one.
absl::Status ValidateNames(absl::Span<const std::string> names);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_FEATURE_HASH_H_
