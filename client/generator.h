// A synthetic stream generator: examples separable by a known unit vector u
// with a chosen margin, then a chosen fraction of labels flipped. The margin
// holds for the examples as a model with the default preparation sees them
// (bias constant 1 appended, then unit norm), so u, of d+1 entries, can be
// passed to CreateModel as the comparator with gamma = margin.
//
//   GeneratorOptions o;
//   o.dimension = 20; o.margin = 0.05; o.noise = 0.02; o.count = 100000;
//   absl::StatusOr<Synthetic> s = Generate(o);   // s->examples, s->separator
//
// or, for streams of any length in memory of O(d):
//
//   std::vector<double> u;
//   absl::Status st = GenerateEach(o, &u, [&](const Example& e) { ...;
//                                  return true; });
#ifndef PERCEPTRON_CLIENT_GENERATOR_H_
#define PERCEPTRON_CLIENT_GENERATOR_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/example.h"

namespace perceptron::client {

struct GeneratorOptions {
  // 1..kMaxDimension (2^24, the most a model takes). Default: 20.
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

// Draws `count` examples, handing each to `each` as it is drawn; `separator`
// (dimension + 1 entries) is set before the first. `each` returning false
// stops the stream (OK). INVALID_ARGUMENT for options out of range, before
// any example; FAILED_PRECONDITION when the margin is out of reach at this
// dimension: after 10^4 points drawn, and after each doubling, if fewer than
// one point in 3,333 had the margin and at that rate the rest of the stream
// would draw over 10^9 more coordinates (half a minute and more); the
// message says which margin is drawn quickly at this dimension.
absl::Status GenerateEach(const GeneratorOptions& options,
                          std::vector<double>* separator,
                          absl::FunctionRef<bool(const Example&)> each);

// The whole stream in memory (GenerateEach's errors).
absl::StatusOr<Synthetic> Generate(const GeneratorOptions& options);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_GENERATOR_H_
