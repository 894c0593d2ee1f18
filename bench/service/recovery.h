// Issue 51's figures that are not rates: a restart after kill -9 of a model
// with a long history, and the server's memory after hostile bursts
// (bench/service/burst_bench.py), each measured in this run.
#ifndef PERCEPTRON_BENCH_SERVICE_RECOVERY_H_
#define PERCEPTRON_BENCH_SERVICE_RECOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/service/data.h"
#include "grpcpp/grpcpp.h"

namespace perceptron::bench {

struct Recovery {
  bool ok = false;
  std::string error;          // when not ok
  uint64_t acknowledged = 0;  // the model's examples before the kill
  uint64_t restored = 0;      // and after the restart
  double stream_s = 0;        // streaming them, durability sync
  double start_s = 0;         // from exec to listening (recovery inside)
  double ready_s = 0;         // from exec to the model's status answered
  double dir_mib = 0;         // the data directory after the kill
};

// Streams `examples` of W1 (`pool`, requests for model "bench" of
// `w.batch` items) into a perceptrond with durability sync (the default),
// kills it with SIGKILL, and starts it again on the same data directory.
Recovery MeasureRecovery(const Workload& w,
                         const std::vector<grpc::ByteBuffer>& pool,
                         uint64_t examples);

struct Bursts {
  bool ok = false;
  std::string error;
  double baseline_mb = 0;
  std::vector<double> after_mb;  // RSS `seconds` after each burst
  double seconds = 0;
};

// Runs burst_bench.py (beside this source) with Options().python against
// the build's perceptrond: its RSS at the baseline and `seconds` after each
// of `bursts` bursts.
Bursts MeasureBursts(double seconds, int bursts);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_RECOVERY_H_
