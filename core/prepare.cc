#include "core/prepare.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/prefetch.h"

namespace perceptron {

// The dense loops are compiled twice, for AVX2 and for the baseline, and the
// better one is chosen when the program starts. Both add in the same order, so
// results are the same bits. ThreadSanitizer builds have one version: their
// instrumented resolver would run before the sanitizer's runtime is ready.
#if defined(__SANITIZE_THREAD__)
#define PERCEPTRON_DENSE_CLONES
#else
#define PERCEPTRON_DENSE_CLONES \
  __attribute__((target_clones("avx2", "default")))
#endif

namespace {

// Four doubles (GCC's vector extension): lanes 0-3 or 4-7 of DenseDot's eight
// partial sums, each lane summed in the same order, so that the compiler
// keeps each sum in one register instead of reshuffling the arrays. The
// helpers below take Lanes by reference, never by value: a vector of 32 bytes
// passed by value has another ABI with AVX than without (clang refuses it in
// the default build).
using Lanes = double __attribute__((vector_size(32)));
using Pair = double __attribute__((vector_size(16)));

// Loads p[0..7] into lanes 0-3 (`lo`) and 4-7 (`hi`).
[[gnu::always_inline]] inline void LoadEight(const double* p, Lanes* lo,
                                             Lanes* hi) {
  __builtin_memcpy(lo, p, sizeof *lo);
  __builtin_memcpy(hi, p + 4, sizeof *hi);
}

// How far ahead of a dense loop the example's values are asked for, in
// doubles: a batch's rows are read one after another from memory the caches
// do not hold (the processor's own prefetcher stops at each 4 KiB page).
// A hint: a prefetch past the row's end (into the next row, or nowhere)
// changes nothing and never faults. Rows shorter than this are not read
// ahead.
constexpr size_t kReadAhead = 128;

// Calls f(a_lo, a_hi, b_lo, b_hi) on a[i..i+7] and b[i..i+7] for each whole
// block of eight (i = 0, 8, ...); returns where the tail begins. b is the
// example's values (read ahead), a the weights or the example again.
template <typename F>
[[gnu::always_inline]] inline size_t ForEachEight(const double* a,
                                                  const double* b, size_t n,
                                                  F f) {
  size_t i = 0;
  if (n >= kReadAhead) {
    for (; i + 8 <= n; i += 8) {
      PrefetchLine(b + i + kReadAhead);
      Lanes a_lo, a_hi, b_lo, b_hi;
      LoadEight(a + i, &a_lo, &a_hi);
      LoadEight(b + i, &b_lo, &b_hi);
      f(a_lo, a_hi, b_lo, b_hi);
    }
    return i;
  }
  // A short row: the processor's prefetcher keeps up.
  for (; i + 8 <= n; i += 8) {
    Lanes a_lo, a_hi, b_lo, b_hi;
    LoadEight(a + i, &a_lo, &a_hi);
    LoadEight(b + i, &b_lo, &b_hi);
    f(a_lo, a_hi, b_lo, b_hi);
  }
  return i;
}

// s + a[0] * b[0] + ... + a[k-1] * b[k-1], added one at a time in that
// order, for the k doubles of a Vector (Lanes or Pair): the k products are
// taken in one multiplication, each rounded as it would be alone.
template <typename Vector>
[[gnu::always_inline]] inline double AddProducts(const double* a,
                                                 const double* b, double s) {
  Vector va, vb;
  __builtin_memcpy(&va, a, sizeof va);
  __builtin_memcpy(&vb, b, sizeof vb);
  const Vector p = va * vb;
  s += p[0];
  s += p[1];
  if constexpr (sizeof(Vector) == 4 * sizeof(double)) {
    s += p[2];
    s += p[3];
  }
  return s;
}

// s + a[i] * b[i] + ... + a[n-1] * b[n-1], the tail after the whole blocks
// of eight (fewer than eight terms), added one at a time in that order: four
// products at a time, then two, then one.
[[gnu::always_inline]] inline double AddTail(const double* a, const double* b,
                                             size_t i, size_t n, double s) {
  const size_t rest = n - i;
  if (rest & 4) {
    s = AddProducts<Lanes>(a + i, b + i, s);
    i += 4;
  }
  if (rest & 2) {
    s = AddProducts<Pair>(a + i, b + i, s);
    i += 2;
  }
  if (rest & 1) s += a[i] * b[i];
  return s;
}

// ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((hi[0] + hi[1]) + (hi[2] + hi[3])),
// each addition of the same two numbers as written (so the same bits), four
// of them at a time, then two, then one.
[[gnu::always_inline]] inline double Combine(const Lanes& lo, const Lanes& hi) {
  const Lanes even = __builtin_shufflevector(lo, hi, 0, 4, 2, 6);
  const Lanes odd = __builtin_shufflevector(lo, hi, 1, 5, 3, 7);
  // lo[0] + lo[1], hi[0] + hi[1], lo[2] + lo[3], hi[2] + hi[3].
  const Lanes pairs = even + odd;
  const Pair halves = __builtin_shufflevector(pairs, pairs, 0, 1) +
                      __builtin_shufflevector(pairs, pairs, 2, 3);
  return halves[0] + halves[1];
}

// DenseDot's sum, inlined into each clone of the functions below. Eight
// independent partial sums hide the latency of floating-point addition and
// let the compiler vectorize, while the order of additions stays fixed:
// results are reproducible bit for bit on every machine (the build also
// forbids contracting a*b+c into an FMA). The tail after the whole blocks of
// eight is added to the first partial sum, in turn.
[[gnu::always_inline]] inline double OrderedDot(const double* a,
                                                const double* b, size_t n) {
  Lanes lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
  const size_t i = ForEachEight(
      a, b, n,
      [&](const Lanes& a_lo, const Lanes& a_hi, const Lanes& b_lo,
          const Lanes& b_hi) __attribute__((always_inline)) {
        lo += a_lo * b_lo;
        hi += a_hi * b_hi;
      });
  lo[0] = AddTail(a, b, i, n, lo[0]);
  return Combine(lo, hi);
}

}  // namespace

PERCEPTRON_DENSE_CLONES double DenseDot(const double* a, const double* b,
                                        size_t n) {
  return OrderedDot(a, b, n);
}

PERCEPTRON_DENSE_CLONES void DenseSquares(const double* x, size_t m, size_t n,
                                          double* out) {
  for (size_t k = 0; k < m; ++k, x += n) out[k] = OrderedDot(x, x, n);
}

PERCEPTRON_DENSE_CLONES void DenseDots(const double* w, const double* x,
                                       size_t n, double* w_dot_x,
                                       double* x_dot_x) {
  Lanes s_lo = {0, 0, 0, 0}, s_hi = {0, 0, 0, 0};
  Lanes q_lo = {0, 0, 0, 0}, q_hi = {0, 0, 0, 0};
  size_t i = ForEachEight(
      w, x, n,
      [&](const Lanes& w_lo, const Lanes& w_hi, const Lanes& x_lo,
          const Lanes& x_hi) __attribute__((always_inline)) {
        s_lo += w_lo * x_lo;
        s_hi += w_hi * x_hi;
        q_lo += x_lo * x_lo;
        q_hi += x_hi * x_hi;
      });
  s_lo[0] = AddTail(w, x, i, n, s_lo[0]);
  q_lo[0] = AddTail(x, x, i, n, q_lo[0]);
  *w_dot_x = Combine(s_lo, s_hi);
  *x_dot_x = Combine(q_lo, q_hi);
}

namespace {

// DenseDotsOf for M <= 4 vectors: two lanes of sums each, in registers.
// Inlined into each of DenseDotsOf's clones, so that it is built for AVX2 too.
template <int M>
[[gnu::always_inline]] inline void DotsOf(const double* const* vs,
                                          const double* x, size_t n,
                                          double* out) {
  Lanes lo[M], hi[M];
  for (int k = 0; k < M; ++k) lo[k] = hi[k] = Lanes{0, 0, 0, 0};
  size_t i = 0;
  const bool ahead = n >= kReadAhead;  // as ForEachEight
  for (; i + 8 <= n; i += 8) {
    if (ahead) PrefetchLine(x + i + kReadAhead);
    Lanes x_lo, x_hi;
    LoadEight(x + i, &x_lo, &x_hi);
    for (int k = 0; k < M; ++k) {
      Lanes v_lo, v_hi;
      LoadEight(vs[k] + i, &v_lo, &v_hi);
      lo[k] += v_lo * x_lo;
      hi[k] += v_hi * x_hi;
    }
  }
  for (int k = 0; k < M; ++k) lo[k][0] = AddTail(vs[k], x, i, n, lo[k][0]);
  for (int k = 0; k < M; ++k) out[k] = Combine(lo[k], hi[k]);
}

}  // namespace

PERCEPTRON_DENSE_CLONES void DenseDotsOf(const double* const* vs, size_t m,
                                         const double* x, size_t n,
                                         double* out) {
  for (; m >= 4; m -= 4, vs += 4, out += 4) DotsOf<4>(vs, x, n, out);
  switch (m) {
    case 3:
      DotsOf<3>(vs, x, n, out);
      break;
    case 2:
      DotsOf<2>(vs, x, n, out);
      break;
    case 1:
      DotsOf<1>(vs, x, n, out);
      break;
    default:
      break;
  }
}

PERCEPTRON_DENSE_CLONES bool ScaledCopy(const double* __restrict x, size_t n,
                                        double scale, double* __restrict out) {
  // Zeros counted rather than or-ed as bools, so that the loop vectorizes.
  uint64_t zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = scale * x[i];
    out[i] = v;
    zeros += v == 0;
  }
  return zeros > 0;
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

// ||(x, bias)|| for finite values whose squares overflow: m sqrt(sum (v/m)^2),
// m the largest magnitude.
double ScaledNorm(const FeatureView& x, double bias) {
  double m = std::abs(bias);
  for (double v : x.values) m = std::max(m, std::abs(v));
  double sum = (bias / m) * (bias / m);
  for (double v : x.values) sum += (v / m) * (v / m);
  return m * std::sqrt(sum);
}

}  // namespace

absl::StatusOr<Prepared> Preparer::Prepare(const FeatureView& x) const {
  return Prepare(x, SumSquares(x));
}

absl::StatusOr<Prepared> Preparer::Prepare(const FeatureView& x,
                                           double sum_squares) const {
  Prepared p;
  if (TryPrepare(x, sum_squares, &p)) return p;
  // Every field is set but the scale and norm: the squared norm is not
  // finite, or it is zero and the model normalizes.
  double norm = 0;
  if (!std::isfinite(sum_squares + p.bias_value * p.bias_value)) {
    // A NaN or infinity makes the sum non-finite too: name it if there is one.
    if (absl::Status s = ValidateValues(x); !s.ok()) return s;
    // Finite values whose squares overflow: the norm scaled by the largest.
    norm = ScaledNorm(x, p.bias_value);
    if (!std::isfinite(norm)) {
      return absl::InvalidArgumentError(
          "features: the norm overflows a double");
    }
  }
  if (!SetNorm(norm, &p)) {
    return absl::InvalidArgumentError(
        "features: the example is zero and cannot be normalized to unit "
        "length");
  }
  return p;
}

double Dot(absl::Span<const double> w, const Prepared& p) {
  return DotFrom(p.x.sparse
                     ? SparseDot(w.data(), p.x)
                     : DenseDot(w.data(), p.x.values.data(), p.x.values.size()),
                 w, p);
}

PERCEPTRON_DENSE_CLONES void AddScaled(double a, const Prepared& p,
                                       absl::Span<double> w) {
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

PERCEPTRON_DENSE_CLONES bool AddScaledStaysFinite(double a, const Prepared& p,
                                                  absl::Span<const double> w) {
  const double f = a * p.scale;
  if (!std::isfinite(f)) return false;
  const double* in = w.data();
  const double* v = p.x.values.data();
  const size_t n = p.x.values.size();
  bool finite = true;
  if (p.x.sparse) {
    const uint32_t* idx = p.x.indices.data();
    for (size_t k = 0; k < n; ++k)
      finite &= std::isfinite(in[idx[k]] + f * v[k]);
  } else {
    // y - y is 0 for a finite y and NaN otherwise: sums of them, in lanes as
    // DenseDots keeps its sums, check eight coordinates at a time.
    Lanes z_lo = {0, 0, 0, 0}, z_hi = {0, 0, 0, 0};
    size_t i = ForEachEight(
        in, v, n,
        [&](const Lanes& w_lo, const Lanes& w_hi, const Lanes& v_lo,
            const Lanes& v_hi) __attribute__((always_inline)) {
          const Lanes y_lo = w_lo + f * v_lo;
          const Lanes y_hi = w_hi + f * v_hi;
          z_lo += y_lo - y_lo;
          z_hi += y_hi - y_hi;
        });
    for (; i < n; ++i) finite &= std::isfinite(in[i] + f * v[i]);
    finite &= Combine(z_lo, z_hi) == 0;
  }
  if (p.has_bias) finite &= std::isfinite(in[p.dimension] + f * p.bias_value);
  return finite;
}

absl::Status NonFiniteScore(double score) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the score is ", score,
      ", not a finite double: the features are too large for the model's "
      "weights"));
}

absl::Status NonFiniteUpdate(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("learning this example would make ", what,
                   " overflow a double; nothing was learned"));
}

}  // namespace perceptron
