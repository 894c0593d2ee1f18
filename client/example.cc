#include "client/example.h"

namespace perceptron::client {

void FeaturesToProto(const Example& e, v1::Features* out) {
  if (!e.named.empty()) {
    out->mutable_named()->mutable_features()->Add(e.named.begin(),
                                                  e.named.end());
  } else if (e.sparse) {
    v1::SparseVector* s = out->mutable_sparse();
    s->mutable_indices()->Add(e.indices.begin(), e.indices.end());
    s->mutable_values()->Add(e.values.begin(), e.values.end());
  } else {
    out->mutable_dense()->mutable_values()->Add(e.values.begin(),
                                                e.values.end());
  }
}

}  // namespace perceptron::client
