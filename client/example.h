// An example as the client library sends it: dense or sparse features, or
// features by name (for a model with hash_bits), and, when known, a label.
#ifndef PERCEPTRON_CLIENT_EXAMPLE_H_
#define PERCEPTRON_CLIENT_EXAMPLE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::client {

namespace v1 = ::perceptron::v1;

struct Example {
  // Dense: one value per coordinate. Sparse: the values of `indices`.
  std::vector<double> values;
  std::vector<uint32_t> indices;
  bool sparse = false;
  // Not empty: the example is these features by name (values and indices are
  // then unused).
  std::vector<v1::NamedFeature> named;
  // -1 or +1 when known.
  std::optional<int> label;
};

// The one place the client converts its types to the wire's.
void FeaturesToProto(const Example& e, v1::Features* out);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_EXAMPLE_H_
