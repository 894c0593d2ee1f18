// An upper bound on the magnitude of every coordinate of a weight vector,
// kept as the vector changes (docs/design.md section 2, "Numbers").
//
//   perceptron::MagnitudeBound bound;  // w is all zeros
//   if (!perceptron::UpdateStaysFinite(bound, a, x, w)) return refused;
//   perceptron::AddScaled(a, x, absl::MakeSpan(w));
//   bound.Added(a, x);
#ifndef PERCEPTRON_CORE_MAGNITUDE_BOUND_H_
#define PERCEPTRON_CORE_MAGNITUDE_BOUND_H_

#include <algorithm>
#include <cmath>

#include "absl/types/span.h"
#include "core/journal.h"
#include "core/prepare.h"

namespace perceptron {

// An upper bound on the magnitude of every coordinate of a vector, kept as
// the vector changes, so that an update w + a x^ that cannot come near
// overflow skips AddScaledStaysFinite's pass over w. The update itself and
// its result are the same either way: the bound only answers "certainly
// finite" early, and the exact check decides every other case.
class MagnitudeBound {
 public:
  // Whether w + a x^ (AddScaled) is certainly finite in every coordinate.
  bool Covers(double a, const Prepared& x) const {
    return bound_ + Step(a, x) <= kLimit;
  }
  // After w <- w + a x^.
  void Added(double a, const Prepared& x) {
    // Each coordinate's sum is rounded once: 2^-40 covers that and the
    // rounding of this sum, so the bound stays an upper bound.
    bound_ = (bound_ + Step(a, x)) * (1 + 0x1p-40);
  }
  // After coordinates were set to `values` (the others unchanged).
  void Raise(absl::Span<const double> values) {
    for (const double v : values) bound_ = std::max(bound_, std::abs(v));
  }
  // After every coordinate was set to `values`.
  void Set(absl::Span<const double> values) {
    bound_ = 0;
    Raise(values);
  }
  // After a journal's delta was applied (all of the vector if it was full).
  void Raise(const VectorDelta& d) {
    if (d.full) {
      Set(d.values);
    } else {
      Raise(d.values);
    }
  }
  void Clear() { bound_ = 0; }
  double value() const { return bound_; }

 private:
  // Far below the largest double (about 2^1024): what is under it stays
  // finite through any one more update the bound covers.
  static constexpr double kLimit = 0x1p1000;
  // At least |a| times the largest coordinate of x^: x^'s coordinates are
  // scale * v for the raw values and the bias, and none of those exceeds the
  // norm they are scaled by (||x^|| = x.norm); twice that covers the rounding
  // of a norm summed from subnormal squares.
  static double Step(double a, const Prepared& x) {
    return 2 * std::abs(a) * x.norm;
  }

  double bound_ = 0;
};

// w + a x^ stays finite: the bound says so, or the exact check does.
inline bool UpdateStaysFinite(const MagnitudeBound& bound, double a,
                              const Prepared& x, absl::Span<const double> w) {
  return bound.Covers(a, x) || AddScaledStaysFinite(a, x, w);
}

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_MAGNITUDE_BOUND_H_
