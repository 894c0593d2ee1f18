// The targets of docs/design.md section 7 and of the issues that set them,
// each read from the figures of one run and printed as pass or FAIL.
#ifndef PERCEPTRON_BENCH_SERVICE_TARGETS_H_
#define PERCEPTRON_BENCH_SERVICE_TARGETS_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/service/memory.h"
#include "bench/service/recovery.h"
#include "bench/service/refresh.h"

namespace perceptron::bench {

// What the parts of one run measured (each part fills its own; a target whose
// figures no part measured is printed as not measured).
struct RunFigures {
  bool quick = false;
  // Examples/s by "WORKLOAD PATH" (and "WORKLOAD core"), one a repeat.
  std::map<std::string, std::vector<double>> rates;
  // W4's p50 by path, microseconds, one a repeat.
  std::map<std::string, std::vector<double>> p50;
  // In-process examples/s by workload: scikit-learn's epoch, the core's.
  std::map<std::string, double> sk_epoch, core_same;
  std::vector<double> py_items, py_columns;  // the Python package
  std::vector<Refresh> refresh;
  std::optional<MemoryFigures> memory;
  // W5's and W6's ratios, by the names their tables print.
  std::vector<std::pair<std::string, double>> w5, w6;
  double hash_ns = 0;  // W5's names hashed in-process, ns a feature
  std::optional<Recovery> recovery;
  std::optional<Bursts> bursts;
};

void PrintTargets(const RunFigures& f);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_TARGETS_H_
