// libFuzzer target: the LIBSVM, CSV, CSV by name, Vowpal Wabbit and JSON lines
// readers on arbitrary text. Whatever they accept must be well formed: labels
// +-1, sparse indices below the dimension, dense rows of the dimension, named
// features with a name and a finite number or a non-empty category.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "client/data_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perceptron::client;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"x.svm", "x.csv", "n.csv", "x.vw", "x.jsonl"}) {
    for (bool labels : {true, false}) {
      ReadOptions o;
      o.require_labels = labels;
      o.named = name[0] == 'n';
      absl::StatusOr<Dataset> d = ParseData(text, name, o);
      if (!d.ok()) continue;
      for (const Example& e : d->examples) {
        if (e.label && *e.label != 1 && *e.label != -1) std::abort();
        if (labels && !e.label) std::abort();
        if (!e.named.empty()) {
          for (const auto& f : e.named) {
            if (f.name().empty()) std::abort();
            if (f.has_number() && !std::isfinite(f.number())) std::abort();
            if (f.has_category() && f.category().empty()) std::abort();
          }
        } else if (o.named || name[2] == 'v' || name[2] == 'j') {
          continue;  // an example by name with no feature: nothing to check
        } else if (e.sparse) {
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
