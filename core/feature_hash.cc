#include "core/feature_hash.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/quoted.h"

namespace perceptron {
namespace {

// The FNV prime VW multiplies the first feature of a pair by.
constexpr uint32_t kFnvPrime = 16777619u;

// One hashed feature: its slot and its value.
struct Term {
  uint32_t slot;
  double value;
};

// Whether two strings are equal; two views of the same bytes (a batch's
// table by name) compare without reading them.
bool Same(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() &&
         (a.data() == b.data() ||
          std::memcmp(a.data(), b.data(), a.size()) == 0);
}

uint32_t RotateLeft(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// MurmurHash3's finalization: every input bit flips each output bit with
// probability about 1/2.
uint32_t FinalMix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// The letter an interaction names a namespace by: its first byte, ' ' for
// the default (empty) namespace.
unsigned char Letter(absl::string_view space) {
  return space.empty() ? ' ' : static_cast<unsigned char>(space[0]);
}

absl::Status CheckText(size_t i, absl::string_view what,
                       absl::string_view text) {
  if (text.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature ", i, ": its ", what, " is ", text.size(),
                     " bytes, over the limit of ", kMaxNameBytes));
  }
  return absl::OkStatus();
}

// Why feature i is refused (OK if it is not), out of the loop that hashes:
// an empty name, a string over kMaxNameBytes, an empty categorical value or
// a value that is not finite.
ABSL_ATTRIBUTE_NOINLINE absl::Status FeatureError(size_t i,
                                                  const NamedFeature& f) {
  if (f.name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature ", i, ": the name is empty"));
  }
  if (absl::Status s = CheckText(i, "namespace", f.space); !s.ok()) return s;
  if (absl::Status s = CheckText(i, "name", f.name); !s.ok()) return s;
  if (f.categorical) {
    if (f.category.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature ", i, " (", f.name, "): the categorical value is empty"));
    }
    return CheckText(i, "categorical value", f.category);
  }
  if (!std::isfinite(f.value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feature ", i, " (", f.name, "): value ", f.value, " is not finite"));
  }
  return absl::OkStatus();
}

// Whether FeatureError has nothing to say about f, in one branch.
bool Acceptable(const NamedFeature& f) {
  const bool sizes = !f.name.empty() && f.space.size() <= kMaxNameBytes &&
                     f.name.size() <= kMaxNameBytes;
  return sizes && (f.categorical ? !f.category.empty() &&
                                       f.category.size() <= kMaxNameBytes
                                 : std::isfinite(f.value));
}

// Batcher's odd-even merge sort of kN keys (a power of two): its
// comparators, pairs of positions in an order that sorts any input, computed
// at compile time and applied unrolled, each a min and a max of two keys
// without a branch. The time is the same whatever the keys, where std::sort
// of 30 random keys mispredicts a branch for most of them: 50 ns against 480
// for W5's 30 (docs/benchmarks.md).
template <size_t kN>
class OddEvenMerge {
 public:
  static void Sort(uint64_t* a) {
    Apply(a, std::make_index_sequence<Count()>());
  }

 private:
  // Calls f(low, high) for each comparator in order.
  template <typename F>
  static constexpr void ForEach(F f) {
    for (size_t p = 1; p < kN; p <<= 1) {
      for (size_t k = p; k >= 1; k >>= 1) {
        for (size_t j = k % p; j + k < kN; j += 2 * k) {
          for (size_t i = 0; i < k && i + j + k < kN; ++i) {
            if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) f(i + j, i + j + k);
          }
        }
      }
    }
  }
  static constexpr size_t Count() {
    size_t count = 0;
    ForEach([&](size_t, size_t) { ++count; });
    return count;
  }
  struct Pairs {
    uint8_t low[Count()];
    uint8_t high[Count()];
  };
  static constexpr Pairs Make() {
    Pairs out{};
    size_t c = 0;
    ForEach([&](size_t low, size_t high) {
      out.low[c] = static_cast<uint8_t>(low);
      out.high[c] = static_cast<uint8_t>(high);
      ++c;
    });
    return out;
  }
  static constexpr Pairs kPairs = Make();

  static void Order(uint64_t& x, uint64_t& y) {
    const uint64_t low = x < y ? x : y;
    const uint64_t high = x < y ? y : x;
    x = low;
    y = high;
  }
  // The comparators in order: a braced list's elements are evaluated in
  // order (a fold over the comma of 543 would pass clang's limit on nested
  // expressions).
  template <size_t... kC>
  static void Apply(uint64_t* a, std::index_sequence<kC...>) {
    [[maybe_unused]] const int done[] = {
        (Order(a[kPairs.low[kC]], a[kPairs.high[kC]]), 0)...};
  }
};

// Sorts keys ascending: up to 64 through the network of the next power of
// two, padded with the largest key (which stays past the end); more through
// std::sort.
void SortKeys(std::vector<uint64_t>& keys) {
  const size_t n = keys.size();
  if (n > 64) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  uint64_t a[64];
  std::copy(keys.begin(), keys.end(), a);
  const size_t width = n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 64;
  std::fill(a + n, a + width, ~uint64_t{0});
  switch (width) {
    case 8:
      OddEvenMerge<8>::Sort(a);
      break;
    case 16:
      OddEvenMerge<16>::Sort(a);
      break;
    case 32:
      OddEvenMerge<32>::Sort(a);
      break;
    default:
      OddEvenMerge<64>::Sort(a);
  }
  std::copy(a, a + n, keys.begin());
}

}  // namespace

uint32_t MurmurHash3X86_32(absl::string_view data, uint32_t seed) {
  constexpr uint32_t c1 = 0xcc9e2d51u;
  constexpr uint32_t c2 = 0x1b873593u;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  const size_t blocks = n / 4;
  uint32_t h = seed;
  for (size_t b = 0; b < blocks; ++b) {
    // Little-endian whatever the machine, as the reference reads x86.
    const unsigned char* p = bytes + 4 * b;
    uint32_t k = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
                 uint32_t{p[3]} << 24;
    k *= c1;
    k = RotateLeft(k, 15);
    k *= c2;
    h ^= k;
    h = RotateLeft(h, 13);
    h = h * 5 + 0xe6546b64u;
  }
  const unsigned char* tail = bytes + 4 * blocks;
  uint32_t k = 0;
  switch (n & 3) {
    case 3:
      k ^= uint32_t{tail[2]} << 16;
      [[fallthrough]];
    case 2:
      k ^= uint32_t{tail[1]} << 8;
      [[fallthrough]];
    case 1:
      k ^= uint32_t{tail[0]};
      k *= c1;
      k = RotateLeft(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= static_cast<uint32_t>(n);
  return FinalMix(h);
}

uint32_t VwHashString(absl::string_view s, uint32_t seed) {
  // Bytes 0x00..0x20 are trimmed; UTF-8's bytes (>= 0x80) never are.
  auto blank = [](char c) { return static_cast<unsigned char>(c) <= 0x20; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  uint32_t number = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return MurmurHash3X86_32(s, seed);
    number = 10 * number + static_cast<uint32_t>(c - '0');
  }
  return number + seed;
}

FeatureHasher::FeatureHasher(uint32_t bits,
                             std::vector<std::string> interactions)
    : bits_(bits),
      mask_(bits >= 32 ? ~uint32_t{0} : (uint32_t{1} << bits) - 1),
      interactions_(std::move(interactions)) {}

std::string FeatureKey(const NamedFeature& f) {
  std::string key;
  if (!f.space.empty()) absl::StrAppend(&key, f.space, "^");
  absl::StrAppend(&key, f.name);
  if (f.categorical) absl::StrAppend(&key, "=", f.category);
  return key;
}

FeatureHasher FeatureHasher::Listed(const std::vector<std::string>& names) {
  auto index = std::make_shared<absl::flat_hash_map<std::string, uint32_t>>();
  index->reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    index->emplace(names[i], static_cast<uint32_t>(i));
  }
  FeatureHasher h(0, {});
  h.mask_ = ~uint32_t{0};
  h.listed_ = std::move(index);
  return h;
}

uint32_t FeatureHasher::Slot(const NamedFeature& f) const {
  if (listed_) {
    const auto it = listed_->find(FeatureKey(f));
    return it == listed_->end() ? kNoSlot : it->second;
  }
  const uint32_t space = f.space.empty() ? 0 : VwHashString(f.space, 0);
  uint32_t h = VwHashString(f.name, space);
  if (f.categorical) h = VwHashString(f.category, h);
  return h & mask_;
}

absl::Status FeatureHasher::Hash(absl::Span<const NamedFeature> x,
                                 Features* out, HashTrace* trace) const {
  if (listed_) trace = nullptr;
  if (trace != nullptr) trace->terms.clear();
  if (x.size() > kMaxNamedFeatures) {
    return absl::InvalidArgumentError(
        absl::StrCat("the example has ", x.size(),
                     " named features, over the limit of ", kMaxNamedFeatures));
  }
  // Each feature's slot and value, in the order given; zeros dropped. The
  // buffers are the thread's, reused: no allocation once they have grown.
  thread_local std::vector<Term> terms;
  thread_local std::vector<unsigned char> letters;
  terms.clear();
  letters.clear();
  // An example has few namespaces, its features often taking them in turn:
  // the hashes of the last kSpaces namespaces met are reused.
  constexpr size_t kSpaces = 4;
  absl::string_view spaces[kSpaces];
  uint32_t space_hashes[kSpaces] = {};
  size_t known = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const NamedFeature& f = x[i];
    if (!Acceptable(f)) return FeatureError(i, f);
    const double v = f.categorical ? 1.0 : f.value;
    if (v == 0.0) continue;
    uint32_t space_hash = 0;
    if (!listed_ && !f.space.empty()) {
      const size_t held = std::min(known, kSpaces);
      size_t k = 0;
      while (k < held && !Same(spaces[k], f.space)) ++k;
      if (k < held) {
        space_hash = space_hashes[k];
      } else {
        space_hash = VwHashString(f.space, 0);
        spaces[known % kSpaces] = f.space;
        space_hashes[known % kSpaces] = space_hash;
        ++known;
      }
    }
    uint32_t h;
    if (listed_) {
      h = Slot(f);
      if (h == kNoSlot) {
        return absl::InvalidArgumentError(
            absl::StrCat("feature ", i, ": ", Quoted(FeatureKey(f)),
                         " is not in the model's list of feature names"));
      }
    } else {
      h = VwHashString(f.name, space_hash);
      if (f.categorical) h = VwHashString(f.category, h);
    }
    if (trace != nullptr) {
      trace->terms.push_back({h, static_cast<uint32_t>(i), HashTrace::kNone});
    }
    terms.push_back({h & mask_, v});
    if (!interactions_.empty()) letters.push_back(Letter(f.space));
  }
  const size_t singles = terms.size();
  for (const std::string& pair : interactions_) {
    const unsigned char a = static_cast<unsigned char>(pair[0]);
    const unsigned char b = static_cast<unsigned char>(pair[1]);
    // Positions of each side's features, in the order given.
    thread_local std::vector<size_t> first, second;
    first.clear();
    second.clear();
    for (size_t i = 0; i < singles; ++i) {
      if (letters[i] == a) first.push_back(i);
      if (letters[i] == b) second.push_back(i);
    }
    for (size_t p = 0; p < first.size(); ++p) {
      const uint32_t h1 = terms[first[p]].slot;
      const double v1 = terms[first[p]].value;
      const uint32_t half = h1 * kFnvPrime;
      // One namespace with itself: each unordered pair once, and a feature
      // with itself only when its value is not 1 (x * x = x for x = 1).
      size_t q = 0;
      if (a == b) q = v1 != 1.0 ? p : p + 1;
      for (; q < second.size(); ++q) {
        const uint32_t h2 = terms[second[q]].slot;
        const double v2 = terms[second[q]].value;
        const double v = v1 * v2;
        if (!std::isfinite(v)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "interaction ", pair, " of features ", first[p], " and ",
              second[q], ": the product ", v1, " * ", v2, " is not finite"));
        }
        if (trace != nullptr) {
          trace->terms.push_back({half ^ h2, trace->terms[first[p]].first,
                                  trace->terms[second[q]].first});
        }
        terms.push_back({(half ^ h2) & mask_, v});
      }
      if (terms.size() > kMaxHashedFeatures) {
        return absl::InvalidArgumentError(
            absl::StrCat("the example's interactions make more than ",
                         kMaxHashedFeatures, " features"));
      }
    }
  }
  // Sum by slot in the order given (by slot, then position), so that the
  // result is the same on every machine and every call: the terms sorted as
  // one number each, the slot above the position.
  thread_local std::vector<uint64_t> order;
  order.resize(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    order[i] = uint64_t{terms[i].slot} << 32 | i;
  }
  SortKeys(order);
  out->sparse = true;
  out->indices.clear();
  out->values.clear();
  for (size_t i = 0; i < order.size();) {
    const uint32_t slot = static_cast<uint32_t>(order[i] >> 32);
    double sum = 0.0;
    for (; i < order.size() && order[i] >> 32 == slot; ++i) {
      sum += terms[static_cast<uint32_t>(order[i])].value;
    }
    if (!std::isfinite(sum)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the features on coordinate ", slot, " add up to ", sum));
    }
    if (sum == 0.0) continue;
    out->indices.push_back(slot);
    out->values.push_back(sum);
  }
  return absl::OkStatus();
}

absl::Status ValidateNames(absl::Span<const std::string> names) {
  if (names.size() > kMaxListedNames) {
    return absl::InvalidArgumentError(absl::StrCat(
        names.size(), " feature names, over the limit of ", kMaxListedNames));
  }
  absl::flat_hash_map<absl::string_view, size_t> seen;
  seen.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature name ", i, " is empty"));
    }
    if (names[i].size() > 3 * kMaxNameBytes + 2) {
      return absl::InvalidArgumentError(absl::StrCat("feature name ", i, " is ",
                                                     names[i].size(),
                                                     " bytes, over the limit"));
    }
    const auto [it, added] = seen.emplace(names[i], i);
    if (!added) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature name ", i, " ", Quoted(names[i]),
                       " repeats name ", it->second));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateHashing(uint32_t bits,
                             absl::Span<const std::string> interactions) {
  if (bits == 0) {
    if (!interactions.empty()) {
      return absl::InvalidArgumentError(
          "interactions need hash_bits: they combine hashed names");
    }
    return absl::OkStatus();
  }
  if (bits > kMaxHashBits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hash_bits ", bits, " is over the limit of ", kMaxHashBits));
  }
  if (interactions.size() > kMaxInteractions) {
    return absl::InvalidArgumentError(
        absl::StrCat(interactions.size(), " interactions, over the limit of ",
                     kMaxInteractions));
  }
  for (const std::string& pair : interactions) {
    if (pair.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "interaction ", Quoted(pair),
          " is not two namespace letters (as Vowpal Wabbit's -q ab; ' ' "
          "names the default namespace)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace perceptron
