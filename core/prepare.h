// Preparation of an example (docs/design.md section 2, 1) and the linear
// algebra on prepared examples.
//
// A prepared example x^ is scale * [x, c]: the bias constant c is appended when
// the model has a bias, and scale is 1/||[x, c]|| when the model normalizes
// (else 1). It borrows x.
//
//   perceptron::Preparer preparer(config);
//   // `view` already validated:
//   absl::StatusOr<perceptron::Prepared> p = preparer.Prepare(view);
//   double score = perceptron::Dot(weights, *p);
//   perceptron::AddScaled(eta * label, *p, absl::MakeSpan(weights));
//
// Every operation is deterministic: the same inputs give bit-identical outputs.
#ifndef PERCEPTRON_CORE_PREPARE_H_
#define PERCEPTRON_CORE_PREPARE_H_

#include <cmath>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/config.h"
#include "core/example.h"

namespace perceptron {

struct Prepared {
  FeatureView x;           // the raw features (borrowed)
  uint32_t dimension = 0;  // d; the bias coordinate, if any, is index d
  bool has_bias = false;
  double bias_value = 0;  // c
  double scale = 1;       // x^ = scale * [x, c]
  double norm = 0;        // ||x^||: exactly 1 when normalized

  // Coordinate i of x^ for a dense x (i < d), or the bias coordinate (i == d).
  double dense_at(uint32_t i) const {
    return scale * (i == dimension ? bias_value : x.values[i]);
  }
};

// Prepares examples for one model configuration. Thread-compatible; immutable
// after construction.
class Preparer {
 public:
  explicit Preparer(const ModelConfig& config)
      : dimension_(config.dimension),
        bias_(config.bias),
        bias_constant_(config.bias_constant),
        normalize_(config.normalize) {}

  // Prepares `x`, whose shape must already have passed ValidateStructure (or
  // ValidateFeatures). INVALID_ARGUMENT, naming the value, if one is NaN or
  // infinite; if the squared norm of the augmented vector overflows; or if the
  // model normalizes and it is zero. The result borrows `x`.
  absl::StatusOr<Prepared> Prepare(const FeatureView& x) const;
  // Prepare, given sum_squares = DenseDot(x.values, x.values) for a dense x
  // (computed with another sum: DenseDots). The same result bit for bit.
  absl::StatusOr<Prepared> Prepare(const FeatureView& x,
                                   double sum_squares) const;
  // Prepare(x, sum_squares)'s common case inline: fills `p` and returns true
  // when the squared norm is finite (and not zero if the model normalizes);
  // else returns false and Prepare gives the error or the scaled norm.
  bool TryPrepare(const FeatureView& x, double sum_squares, Prepared* p) const {
    p->x = x;
    p->dimension = dimension_;
    p->has_bias = bias_;
    p->bias_value = bias_ ? bias_constant_ : 0.0;
    const double norm_sq = sum_squares + p->bias_value * p->bias_value;
    return std::isfinite(norm_sq) && SetNorm(std::sqrt(norm_sq), p);
  }

 private:
  // Sets p's scale and norm for the norm of [x, c]; false, with nothing set,
  // if it is zero and the model normalizes.
  bool SetNorm(double norm, Prepared* p) const {
    if (normalize_) {
      if (norm == 0) return false;
      p->scale = 1.0 / norm;
      p->norm = 1.0;
    } else {
      p->scale = 1.0;
      p->norm = norm;
    }
    return true;
  }

  uint32_t dimension_;
  bool bias_;
  double bias_constant_;
  bool normalize_;
};

// w . x^, where w has the model's weight dimension.
double Dot(absl::Span<const double> w, const Prepared& x);
// Dot(w, x), given raw = DenseDot(w, x.x.values) for a dense x: the bias and
// the scale applied as Dot applies them. w has the weight dimension, so the
// bias's weight w[x.dimension] is read unchecked (this is on every example's
// path).
inline double DotFrom(double raw, absl::Span<const double> w,
                      const Prepared& x) {
  if (x.has_bias) raw += w.data()[x.dimension] * x.bias_value;
  return x.scale * raw;
}

// w <- w + a * x^.
void AddScaled(double a, const Prepared& x, absl::Span<double> w);

// Whether every coordinate AddScaled(a, x, w) would write stays finite
// (computed the same way, so the answer is exact). O(nnz).
bool AddScaledStaysFinite(double a, const Prepared& x,
                          absl::Span<const double> w);

// The errors a learner gives, with its state unchanged, when a number it would
// compute or store is not finite as a double (docs/design.md section 2, 5): the
// score it decides on, or a value an update would write (`what` names it).
absl::Status NonFiniteScore(double score);
absl::Status NonFiniteUpdate(absl::string_view what);

// sum_i a_i b_i over two dense arrays of length n, with a fixed summation
// order.
double DenseDot(const double* a, const double* b, size_t n);
// DenseDot(w, x, n) and DenseDot(x, x, n) in one pass over x, each sum in
// DenseDot's order (the same results bit for bit): the two chains of
// additions overlap instead of waiting on each other's latency.
void DenseDots(const double* w, const double* x, size_t n, double* w_dot_x,
               double* x_dot_x);
// DenseDot(x_k, x_k, n) into out[k] for each of the m rows x_k = x + k n
// (packed one after another): each row's squared norm in DenseDot's order
// (the same bits), in one call.
void DenseSquares(const double* x, size_t m, size_t n, double* out);
// DenseDot(vs[k], x, n) into out[k] for each of the m vectors vs, in one pass
// over x per four of them, each sum in DenseDot's order (the same bits).
void DenseDotsOf(const double* const* vs, size_t m, const double* x, size_t n,
                 double* out);
// out[i] = scale * x[i] for i < n (out and x apart); whether any of them is 0.
bool ScaledCopy(const double* x, size_t n, double scale, double* out);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_PREPARE_H_
