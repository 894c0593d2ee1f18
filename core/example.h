// Examples: dense or sparse feature vectors, their validation, and labels
// (docs/design.md sections 4, 6).
//
//   std::vector<double> x = {0.5, -1.0, 2.0};
//   perceptron::FeatureView dense = perceptron::FeatureView::Dense(x);
//   absl::Status s = perceptron::ValidateFeatures(dense, /*dimension=*/3);
//
//   std::vector<uint32_t> idx = {7, 2};
//   std::vector<double> val = {1.0, 0.25};
//   perceptron::FeatureView sparse = perceptron::FeatureView::Sparse(idx, val);
//
// A FeatureView borrows its arrays; Features owns them. Neither is
// synchronized.
#ifndef PERCEPTRON_CORE_EXAMPLE_H_
#define PERCEPTRON_CORE_EXAMPLE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace perceptron {

// A borrowed feature vector. Dense: `values` holds d entries. Sparse:
// `indices[k]` is the coordinate of `values[k]`; indices are < d, unique, in
// any order; absent coordinates are 0.
struct FeatureView {
  absl::Span<const double> values;
  absl::Span<const uint32_t> indices;
  bool sparse = false;

  static FeatureView Dense(absl::Span<const double> values) {
    return {values, {}, false};
  }
  static FeatureView Sparse(absl::Span<const uint32_t> indices,
                            absl::Span<const double> values) {
    return {values, indices, true};
  }
};

// An owned feature vector, as FeatureView describes.
struct Features {
  std::vector<double> values;
  std::vector<uint32_t> indices;
  bool sparse = false;

  static Features Copy(const FeatureView& view);
  FeatureView view() const { return {values, indices, sparse}; }
  friend bool operator==(const Features& a, const Features& b) {
    return a.sparse == b.sparse && a.values == b.values &&
           a.indices == b.indices;
  }
};

// OK if `x` is a valid example for a model of input dimension `dimension`;
// otherwise INVALID_ARGUMENT naming the offending position and value: a
// non-finite value, a dense vector of the wrong length, a sparse index out of
// range or repeated, or mismatched index/value counts. The norm (overflow, zero
// under normalization) is checked by Preparer::Prepare, which computes it.
absl::Status ValidateFeatures(const FeatureView& x, uint32_t dimension);

// The two halves of ValidateFeatures: the shape (lengths, index range, repeated
// indices) and the values (finite). Preparer::Prepare needs only the shape
// checked first: it finds non-finite values itself while computing the norm, in
// the same pass.
absl::Status ValidateStructure(const FeatureView& x, uint32_t dimension);
absl::Status ValidateValues(const FeatureView& x);

// Whether `label` is -1 or +1 (ValidateLabel's condition, inline).
inline bool IsLabel(int label) { return label == 1 || label == -1; }
// OK if IsLabel(label), else INVALID_ARGUMENT naming it.
absl::Status ValidateLabel(int label);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_EXAMPLE_H_
