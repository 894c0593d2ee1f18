#include "client/generator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/config.h"

namespace perceptron::client {
namespace {

// When the margin is judged: after this many points drawn, and again each
// time as many more have been drawn (a stream done before then never is).
constexpr uint64_t kJudgedAfter = 10000;
// Out of reach: fewer than one point in this many had the margin (counting
// one more than had it), and at that rate the rest of the stream would draw
// more than kTooMuchWork coordinates (half a minute of one core).
constexpr uint64_t kTooRare = 3333;
constexpr double kTooMuchWork = 1e9;

}  // namespace

absl::Status GenerateEach(const GeneratorOptions& o,
                          std::vector<double>* separator,
                          absl::FunctionRef<bool(const Example&)> each) {
  if (o.dimension == 0 || o.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("generator: dimension ", o.dimension, " not in [1, ",
                     kMaxDimension, "] (the most a model takes)"));
  }
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
  std::vector<double>& u = *separator;
  u.assign(o.dimension + 1, 0.0);
  double n2 = 0;
  for (double& v : u) {
    v = normal(rng);
    n2 += v * v;
  }
  // A small bias component keeps both classes common.
  u.back() *= 0.2;
  n2 = 0;
  for (double v : u) n2 += v * v;
  for (double& v : u) v /= std::sqrt(n2);
  Example e;
  e.values.resize(o.dimension);
  uint64_t made = 0, drawn = 0, judged_at = kJudgedAfter;
  while (made < o.count) {
    if (drawn == judged_at) {
      judged_at *= 2;
      // At the rate seen the rest takes (count - made) * drawn / (made + 1)
      // more points of d coordinates each (or more: made + 1 is kind).
      const double work = static_cast<double>(o.count - made) *
                          static_cast<double>(drawn) /
                          static_cast<double>(made + 1) * o.dimension;
      if ((made + 1) * kTooRare < drawn && work > kTooMuchWork) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "generator: margin %g is out of reach at d=%u: %u of the first "
            "%u points drawn had it, and the %u asked for would take over %.0e "
            "more draws; at this dimension a random point's margin is about "
            "1/sqrt(d+1), and margins up to about %.2g are drawn quickly",
            o.margin, o.dimension, made, drawn, o.count, work / o.dimension,
            std::min(0.5, 2 / std::sqrt(o.dimension + 1.0))));
      }
    }
    ++drawn;
    double sq = 1, dot = u.back();  // the bias coordinate, 1
    for (uint32_t i = 0; i < o.dimension; ++i) {
      const double x = normal(rng);
      e.values[i] = x;
      sq += x * x;
      dot += u[i] * x;
    }
    const double m = dot / std::sqrt(sq);
    if (std::abs(m) < o.margin || m == 0) continue;
    e.label = (m > 0) == (unit(rng) >= o.noise) ? 1 : -1;
    ++made;
    if (!each(e)) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<Synthetic> Generate(const GeneratorOptions& o) {
  Synthetic s;
  absl::Status status = GenerateEach(o, &s.separator, [&](const Example& e) {
    s.examples.push_back(e);
    return true;
  });
  if (!status.ok()) return status;
  return s;
}

}  // namespace perceptron::client
