#include "bench/service/refresh.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "bench/service/measure.h"
#include "core/certificate.h"
#include "core/model.h"
#include "core/prepare.h"
#include "echo.grpc.pb.h"

namespace perceptron::bench {

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

Refresh MeasureRefresh(size_t n, int repeats) {
  constexpr uint32_t kDim = 20;
  ModelConfig config;
  config.dimension = kDim;
  const Preparer preparer(config);
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  std::vector<double> separator(kDim);
  for (double& v : separator) v = normal(rng);
  const size_t total = n + n / 100;
  std::vector<std::vector<double>> xs(total, std::vector<double>(kDim));
  std::vector<int> labels;
  for (std::vector<double>& x : xs) {
    double s = 0;
    for (uint32_t i = 0; i < kDim; ++i)
      s += separator[i] * (x[i] = normal(rng));
    labels.push_back((s >= 0) == (rng() % 10 != 0) ? 1 : -1);
  }
  // Prepared rows borrow the features: xs outlives them.
  std::vector<Prepared> rows;
  for (const std::vector<double>& x : xs) {
    rows.push_back(*preparer.Prepare(FeatureView::Dense(x)));
  }
  std::vector<double> cold, warm, per;
  Refresh r;
  r.kept = n;
  // To the gap the server's refresher solves to.
  CertificateOptions options;
  options.tolerance = kConvergedGap;
  for (int k = 0; k < repeats; ++k) {
    CertificateSolver solver(kDim + 1);
    for (size_t t = 0; t < n; ++t) solver.Add(rows[t], labels[t]);
    double start = ThreadCpuSeconds();
    const Certificate c = solver.Solve(1.0, options);
    cold.push_back(ThreadCpuSeconds() - start);
    per.push_back(1e9 * cold.back() / (static_cast<double>(n) * c.passes));
    r.cold_passes = c.passes;
    r.converged = c.converged;
    r.bytes_per_example = static_cast<double>(solver.bytes()) / n;
    for (size_t t = n; t < total; ++t) solver.Add(rows[t], labels[t]);
    start = ThreadCpuSeconds();
    r.warm_passes = solver.Solve(1.0, options).passes;
    warm.push_back(ThreadCpuSeconds() - start);
  }
  r.cold_cpu_s = Median(cold);
  r.ns_per_example_pass = Median(per);
  r.warm_cpu_s = Median(warm);
  return r;
}

std::vector<Refresh> RefreshTable(int repeats) {
  std::printf(
      "## The certificate's refresh (core, one thread's CPU time, medians of "
      "%d: a cold solve of the kept examples, d=20, 10%% noise, to the 1e-3 "
      "gap; then a warm one after 1%% more)\n\n",
      repeats);
  std::printf(
      "| kept | cold solve, CPU | passes | converged | ns per example per "
      "pass | kept bytes per example | warm refresh, CPU | passes |\n"
      "|---|---|---|---|---|---|---|---|\n");
  std::vector<Refresh> out;
  for (size_t n : {10000, 100000, 300000}) {
    const Refresh r = MeasureRefresh(n, repeats);
    std::printf("| %zu | %.3f s | %d | %s | %.2f | %.0f | %.3f s | %d |\n",
                r.kept, r.cold_cpu_s, r.cold_passes, r.converged ? "yes" : "no",
                r.ns_per_example_pass, r.bytes_per_example, r.warm_cpu_s,
                r.warm_passes);
    out.push_back(r);
  }
  std::printf("\n");
  std::fflush(stdout);
  return out;
}

}  // namespace perceptron::bench
