#include "client/generator.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace perceptron::client {

absl::StatusOr<Synthetic> Generate(const GeneratorOptions& o) {
  if (o.dimension == 0)
    return absl::InvalidArgumentError("generator: dimension must be >= 1");
  if (!(o.margin >= 0 && o.margin <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("generator: margin ", o.margin, " not in [0, 0.5]"));
  }
  if (!(o.noise >= 0 && o.noise <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("generator: noise ", o.noise, " not in [0, 0.5]"));
  }
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  Synthetic s;
  s.separator.resize(o.dimension + 1);
  double n2 = 0;
  for (double& v : s.separator) {
    v = normal(rng);
    n2 += v * v;
  }
  // A small bias component keeps both classes common.
  s.separator.back() *= 0.2;
  n2 = 0;
  for (double v : s.separator) n2 += v * v;
  for (double& v : s.separator) v /= std::sqrt(n2);
  s.examples.reserve(o.count);
  std::vector<double> x(o.dimension);
  while (s.examples.size() < o.count) {
    double sq = 1, dot = s.separator.back();  // the bias coordinate, 1
    for (uint32_t i = 0; i < o.dimension; ++i) {
      x[i] = normal(rng);
      sq += x[i] * x[i];
      dot += s.separator[i] * x[i];
    }
    const double m = dot / std::sqrt(sq);
    if (std::abs(m) < o.margin || m == 0) continue;
    Example e;
    e.values = x;
    e.label = (m > 0) == (unit(rng) >= o.noise) ? 1 : -1;
    s.examples.push_back(std::move(e));
  }
  return s;
}

}  // namespace perceptron::client
