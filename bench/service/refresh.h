// The certificate's refresh in-process (core/certificate.h, what the server's
// refresher runs) at growing numbers of kept examples.
#ifndef PERCEPTRON_BENCH_SERVICE_REFRESH_H_
#define PERCEPTRON_BENCH_SERVICE_REFRESH_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::bench {

namespace v1 = ::perceptron::v1;

// The calling thread's CPU time.
double ThreadCpuSeconds();

// A certificate refresh (core/certificate.h, what the server's refresher runs)
// on issue 14's shape: n kept examples of d = 20, normalized with a bias, the
// labels of a random separator with 10% flipped.
struct Refresh {
  size_t kept = 0;
  double cold_cpu_s = 0;  // medians over the repeats
  int cold_passes = 0;
  bool converged = false;
  double ns_per_example_pass = 0;
  double bytes_per_example = 0;
  double warm_cpu_s = 0;  // after 1% more examples
  int warm_passes = 0;
};

Refresh MeasureRefresh(size_t n, int repeats);

// The refresh's cost at 10^4, 10^5 and 3 x 10^5 kept examples (3.6, 32 and
// 94 MB of rows: in the caches, about the size of this machine's L3, past it),
// as a table.
std::vector<Refresh> RefreshTable(int repeats);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_REFRESH_H_
