#include "core/example.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace perceptron {
namespace {

// Sparse vectors up to this many entries are checked for repeated indices
// pairwise, with no allocation; longer ones are sorted in a copy.
constexpr size_t kPairwiseDuplicateCheck = 64;

absl::Status CheckDuplicates(absl::Span<const uint32_t> indices) {
  const size_t n = indices.size();
  if (n <= kPairwiseDuplicateCheck) {
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (indices[i] == indices[j]) {
          return absl::InvalidArgumentError(
              absl::StrCat("features: index ", indices[i],
                           " repeated at positions ", j, " and ", i));
        }
      }
    }
    return absl::OkStatus();
  }
  std::vector<std::pair<uint32_t, uint32_t>> sorted(n);
  for (size_t i = 0; i < n; ++i)
    sorted[i] = {indices[i], static_cast<uint32_t>(i)};
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < n; ++i) {
    if (sorted[i].first == sorted[i - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat(
          "features: index ", sorted[i].first, " repeated at positions ",
          sorted[i - 1].second, " and ", sorted[i].second));
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

absl::Status ValidateFeatures(const FeatureView& x, uint32_t dimension) {
  if (!x.sparse) {
    if (x.values.size() != dimension) {
      return absl::InvalidArgumentError(
          absl::StrCat("features: dense vector has ", x.values.size(),
                       " values; the model's dimension is ", dimension));
    }
  } else {
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
    for (size_t i = 0; i < x.indices.size(); ++i) {
      if (x.indices[i] >= dimension) {
        return absl::InvalidArgumentError(
            absl::StrCat("features: index ", x.indices[i], " at position ", i,
                         " is out of range for dimension ", dimension));
      }
    }
  }
  if (!AllFinite(x.values)) {
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
  }
  return x.sparse ? CheckDuplicates(x.indices) : absl::OkStatus();
}

absl::Status ValidateLabel(int label) {
  if (label == 1 || label == -1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("label ", label, " must be -1 or +1"));
}

}  // namespace perceptron
