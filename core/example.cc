#include "core/example.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace perceptron {
namespace {

// Repeated indices are found in O(nnz) with a small open-addressing table on
// the stack; longer vectors are sorted in a copy.
constexpr size_t kHashedDuplicateCheck = 256;

absl::Status Repeated(uint32_t index, size_t first, size_t second) {
  return absl::InvalidArgumentError(absl::StrCat("features: index ", index,
                                                 " repeated at positions ",
                                                 first, " and ", second));
}

// Up to this many indices are first passed through a filter of 8192 bits
// (each index sets one, chosen by a hash, without a branch): when no index
// finds its bit already set, none repeats. Only when one does (a repeat, or
// for 32 distinct indices about one vector in sixteen, two that share a bit)
// does the exact check below run.
constexpr size_t kFilteredDuplicateCheck = 64;

bool MayRepeat(absl::Span<const uint32_t> indices) {
  uint64_t seen[8192 / 64] = {};
  uint64_t hit = 0;
  for (const uint32_t key : indices) {
    const uint32_t h = (key * 2654435761u) >> (32 - 13);
    const uint64_t bit = uint64_t{1} << (h & 63);
    hit |= seen[h >> 6] & bit;
    seen[h >> 6] |= bit;
  }
  return hit != 0;
}

absl::Status CheckDuplicates(absl::Span<const uint32_t> indices) {
  const size_t n = indices.size();
  if (n <= kFilteredDuplicateCheck && !MayRepeat(indices)) {
    return absl::OkStatus();
  }
  if (n <= kHashedDuplicateCheck) {
    constexpr uint32_t kEmpty =
        0xffffffffu;  // never an index: indices are < 2^24
    uint32_t keys[2 * kHashedDuplicateCheck];
    uint16_t where[2 * kHashedDuplicateCheck];
    size_t size = 16;
    while (size < 2 * n) size *= 2;
    std::fill(keys, keys + size, kEmpty);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t key = indices[i];
      size_t slot = (key * 2654435761u) & (size - 1);
      while (keys[slot] != kEmpty) {
        if (keys[slot] == key) return Repeated(key, where[slot], i);
        slot = (slot + 1) & (size - 1);
      }
      keys[slot] = key;
      where[slot] = static_cast<uint16_t>(i);
    }
    return absl::OkStatus();
  }
  std::vector<std::pair<uint32_t, uint32_t>> sorted(n);
  for (size_t i = 0; i < n; ++i)
    sorted[i] = {indices[i], static_cast<uint32_t>(i)};
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < n; ++i) {
    if (sorted[i].first == sorted[i - 1].first) {
      return Repeated(sorted[i].first, sorted[i - 1].second, sorted[i].second);
    }
  }
  return absl::OkStatus();
}

// True if no value is NaN or infinite: v * 0 is 0 for finite v and NaN
// otherwise, and NaN survives the sums. Branch-free with independent partial
// sums, so the compiler vectorizes it.
bool AllFinite(absl::Span<const double> v) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += v[i + k] * 0.0;
  }
  for (; i < v.size(); ++i) s[0] += v[i] * 0.0;
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) == 0;
}

}  // namespace

Features Features::Copy(const FeatureView& view) {
  Features f;
  f.values.assign(view.values.begin(), view.values.end());
  f.indices.assign(view.indices.begin(), view.indices.end());
  f.sparse = view.sparse;
  return f;
}

absl::Status ValidateStructure(const FeatureView& x, uint32_t dimension) {
  if (!x.sparse) {
    if (x.values.size() != dimension) {
      return absl::InvalidArgumentError(
          absl::StrCat("features: dense vector has ", x.values.size(),
                       " values; the model's dimension is ", dimension));
    }
    return absl::OkStatus();
  }
  if (x.indices.size() != x.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("features: sparse vector has ", x.indices.size(),
                     " indices but ", x.values.size(), " values"));
  }
  if (x.values.size() > dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("features: sparse vector has ", x.values.size(),
                     " entries, more than the dimension ", dimension));
  }
  bool increasing = true;
  for (size_t i = 0; i < x.indices.size(); ++i) {
    if (x.indices[i] >= dimension) {
      return absl::InvalidArgumentError(
          absl::StrCat("features: index ", x.indices[i], " at position ", i,
                       " is out of range for dimension ", dimension));
    }
    increasing &= i == 0 || x.indices[i] > x.indices[i - 1];
  }
  // Strictly increasing indices (the usual order) cannot repeat.
  return increasing ? absl::OkStatus() : CheckDuplicates(x.indices);
}

absl::Status ValidateValues(const FeatureView& x) {
  if (AllFinite(x.values)) return absl::OkStatus();
  for (size_t i = 0; i < x.values.size(); ++i) {
    const double v = x.values[i];
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("features: value at position ", i,
                       x.sparse ? absl::StrCat(" (index ", x.indices[i], ")")
                                : std::string(),
                       " is ", v, ", not finite"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateFeatures(const FeatureView& x, uint32_t dimension) {
  if (absl::Status s = ValidateStructure(x, dimension); !s.ok()) return s;
  return ValidateValues(x);
}

absl::Status ValidateLabel(int label) {
  if (IsLabel(label)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("label ", label, " must be -1 or +1"));
}

}  // namespace perceptron
