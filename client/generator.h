// A synthetic stream generator: examples separable by a known unit vector u
// with a chosen margin, then a chosen fraction of labels flipped. The margin
// holds for the examples as a model with the default preparation sees them
// (bias constant 1 appended, then unit norm), so u, of d+1 entries, can be
// passed to CreateModel as the comparator with gamma = margin.
//
//   GeneratorOptions o;
//   o.dimension = 20; o.margin = 0.05; o.noise = 0.02; o.count = 100000;
//   absl::StatusOr<Synthetic> s = Generate(o);   // s->examples, s->separator
#ifndef PERCEPTRON_CLIENT_GENERATOR_H_
#define PERCEPTRON_CLIENT_GENERATOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "client/example.h"

namespace perceptron::client {

struct GeneratorOptions {
  uint32_t dimension = 20;
  // Examples with |u . x^| < margin are redrawn; in [0, 0.5]. Default: 0.05.
  double margin = 0.05;
  // Fraction of labels flipped after drawing, in [0, 0.5]. Default: 0.
  double noise = 0.0;
  uint64_t count = 10000;
  uint64_t seed = 1;
};

struct Synthetic {
  std::vector<Example> examples;
  // Unit length, dimension + 1 entries (the last for the bias coordinate).
  std::vector<double> separator;
};

// INVALID_ARGUMENT for options out of range.
absl::StatusOr<Synthetic> Generate(const GeneratorOptions& options);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_GENERATOR_H_
