// Random labeled streams for the core tests: separable with a known margin, or
// not, with label noise, normalized or not. Deterministic for a given seed.
#ifndef PERCEPTRON_TESTS_CORE_STREAMS_H_
#define PERCEPTRON_TESTS_CORE_STREAMS_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/config.h"
#include "core/example.h"
#include "core/prepare.h"

namespace perceptron::testing {

struct StreamSpec {
  uint32_t dimension = 5;
  size_t length = 500;
  bool bias = true;
  bool normalize = true;
  // Examples with |u . x^| < margin are redrawn, so the clean stream is
  // separable by u with margin `margin` (0: no such guarantee).
  double margin = 0.05;
  // Probability that a label is flipped after drawing.
  double noise = 0.0;
  // Raw norms are spread over [1/norm_spread, norm_spread] (matters without
  // normalization).
  double norm_spread = 1.0;
  uint64_t seed = 1;
};

struct Stream {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  std::vector<double> separator;  // unit, weight dimension entries
  double min_margin = 0;  // min_t y_t (u . x^_t) over the stream as labeled
};

inline ModelConfig StreamConfig(const StreamSpec& spec) {
  ModelConfig c;
  c.dimension = spec.dimension;
  c.bias = spec.bias;
  c.normalize = spec.normalize;
  return c;
}

inline Stream MakeStream(const StreamSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  const ModelConfig config = StreamConfig(spec);
  const Preparer preparer(config);
  Stream s;
  s.separator.resize(config.weight_dimension());
  double n2 = 0;
  for (double& v : s.separator) {
    v = normal(rng);
    n2 += v * v;
  }
  for (double& v : s.separator) v /= std::sqrt(n2);
  s.min_margin = INFINITY;
  while (s.x.size() < spec.length) {
    std::vector<double> x(spec.dimension);
    const double scale =
        spec.norm_spread == 1.0
            ? 1.0
            : std::exp((2 * unit(rng) - 1) * std::log(spec.norm_spread));
    for (double& v : x) v = scale * normal(rng);
    const Prepared p = *preparer.Prepare(FeatureView::Dense(x));
    const double m = Dot(s.separator, p);
    if (std::abs(m) < spec.margin || m == 0) continue;
    int y = m > 0 ? 1 : -1;
    if (unit(rng) < spec.noise) y = -y;
    s.min_margin = std::min(s.min_margin, y * m);
    s.x.push_back(std::move(x));
    s.y.push_back(y);
  }
  return s;
}

// x^ computed directly from docs/design.md section 2, 1, independently of
// Preparer: for naive references.
inline std::vector<double> Augmented(const std::vector<double>& x,
                                     const ModelConfig& c) {
  std::vector<double> a = x;
  if (c.bias) a.push_back(c.bias_constant);
  if (c.normalize) {
    double n2 = 0;
    for (double v : a) n2 += v * v;
    for (double& v : a) v /= std::sqrt(n2);
  }
  return a;
}

inline double NaiveDot(const std::vector<double>& a,
                       const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_CORE_STREAMS_H_
