#include "core/candidate_sums.h"

#include <cmath>

namespace perceptron {

namespace {

// p if `v` is p times `of` coordinate by coordinate, for a power of two p > 0;
// 0 if not.
double PowerOfTwoMultiple(const std::vector<double>& v,
                          const std::vector<double>& of) {
  if (v.size() != of.size()) return 0;
  size_t i = 0;
  while (i < of.size() && of[i] == 0) ++i;
  if (i == of.size()) return 0;
  const double p = v[i] / of[i];
  int exponent = 0;
  if (!(p > 0) || !std::isfinite(p) || std::frexp(p, &exponent) != 0.5) {
    return 0;
  }
  for (size_t j = 0; j < v.size(); ++j) {
    if (v[j] != p * of[j]) return 0;
  }
  return p;
}

}  // namespace

ScaledCandidates::ScaledCandidates(const std::vector<std::vector<double>>& vs) {
  for (uint32_t k = 0; k < vs.size(); ++k) {
    bool found = false;
    for (uint32_t of : summed_) {
      const double p = PowerOfTwoMultiple(vs[k], vs[of]);
      if (p > 0) {
        multiples_.push_back({k, of, p});
        found = true;
        break;
      }
    }
    if (!found) summed_.push_back(k);
  }
}

std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled(vs);
  std::vector<double> scores(vs.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    for (uint32_t k : scaled.summed()) scores[k] = rows.DotUnordered(t, vs[k]);
    scaled.Spread(scores.data());
    for (size_t k = 0; k < vs.size(); ++k) {
      const double h = 1 - rows.label(t) * scores[k];
      if (h > 0) sums[k] += h;
    }
  }
  return sums;
}

}  // namespace perceptron
