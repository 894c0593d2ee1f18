// What the benchmark's parts share from its command line (service_bench.cc's
// flags): set once by main before any part runs, read everywhere after.
#ifndef PERCEPTRON_BENCH_SERVICE_OPTIONS_H_
#define PERCEPTRON_BENCH_SERVICE_OPTIONS_H_

#include <string>
#include <vector>

namespace perceptron::bench {

struct BenchOptions {
  // The build directory with the binaries.
  std::string bin = "build/release";
  // Debian's Python, which sees python3-sklearn.
  std::string python = "/usr/bin/python3";
  // The deploy directory, for nginx/nginx.conf.
  std::string deploy = "deploy";
  // Flags added to every perceptrond started.
  std::vector<std::string> server_flags;
  std::vector<std::string> echo_flags;  // the same for the echo servers
  // Batches in flight on a pipelined stream.
  int in_flight = 64;
};

inline BenchOptions& Options() {
  static BenchOptions options;
  return options;
}

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_OPTIONS_H_
