#include "core/prepare.h"

#include <cmath>

namespace perceptron {

double DenseDot(const double* a, const double* b, size_t n) {
  // Four independent partial sums let the compiler pipeline and vectorize the loop while the
  // order of additions stays fixed, so results are reproducible bit for bit.
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

namespace {

double SparseDot(const double* w, const FeatureView& x) {
  double s0 = 0, s1 = 0;
  const size_t n = x.values.size();
  size_t k = 0;
  for (; k + 2 <= n; k += 2) {
    s0 += w[x.indices[k]] * x.values[k];
    s1 += w[x.indices[k + 1]] * x.values[k + 1];
  }
  if (k < n) s0 += w[x.indices[k]] * x.values[k];
  return s0 + s1;
}

double SumSquares(const FeatureView& x) {
  return DenseDot(x.values.data(), x.values.data(), x.values.size());
}

}  // namespace

absl::StatusOr<Prepared> Preparer::Prepare(const FeatureView& x) const {
  Prepared p;
  p.x = x;
  p.dimension = dimension_;
  p.has_bias = bias_;
  p.bias_value = bias_ ? bias_constant_ : 0.0;
  const double norm_sq = SumSquares(x) + p.bias_value * p.bias_value;
  if (normalize_) {
    if (norm_sq == 0) {
      return absl::InvalidArgumentError(
          "features: the example is zero and cannot be normalized to unit length");
    }
    p.scale = 1.0 / std::sqrt(norm_sq);
    p.norm = 1.0;
  } else {
    p.scale = 1.0;
    p.norm = std::sqrt(norm_sq);
  }
  return p;
}

double Dot(absl::Span<const double> w, const Prepared& p) {
  double s = p.x.sparse ? SparseDot(w.data(), p.x)
                        : DenseDot(w.data(), p.x.values.data(), p.x.values.size());
  if (p.has_bias) s += w[p.dimension] * p.bias_value;
  return p.scale * s;
}

void AddScaled(double a, const Prepared& p, absl::Span<double> w) {
  const double f = a * p.scale;
  double* out = w.data();
  const double* v = p.x.values.data();
  const size_t n = p.x.values.size();
  if (p.x.sparse) {
    const uint32_t* idx = p.x.indices.data();
    for (size_t k = 0; k < n; ++k) out[idx[k]] += f * v[k];
  } else {
    for (size_t i = 0; i < n; ++i) out[i] += f * v[i];
  }
  if (p.has_bias) out[p.dimension] += f * p.bias_value;
}

}  // namespace perceptron
