// libFuzzer target: the LIBSVM and CSV readers on arbitrary text. Whatever they
// accept must be well formed: labels +-1, sparse indices below the dimension,
// dense rows of the dimension.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "client/data_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perceptron::client;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"x.svm", "x.csv"}) {
    for (bool labels : {true, false}) {
      ReadOptions o;
      o.require_labels = labels;
      absl::StatusOr<Dataset> d = ParseData(text, name, o);
      if (!d.ok()) continue;
      for (const Example& e : d->examples) {
        if (e.label && *e.label != 1 && *e.label != -1) std::abort();
        if (labels && !e.label) std::abort();
        if (e.sparse) {
          if (e.indices.size() != e.values.size()) std::abort();
          for (uint32_t i : e.indices) {
            if (i >= d->dimension) std::abort();
          }
        } else if (e.values.size() != d->dimension) {
          std::abort();
        }
      }
    }
  }
  return 0;
}
