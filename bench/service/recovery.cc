#include "bench/service/recovery.h"

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/service/measure.h"
#include "bench/service/options.h"
#include "bench/service/processes.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::bench {
namespace {

// The examples of model "bench" on the server at `target`, or nullopt.
std::optional<uint64_t> ExamplesOf(const std::string& target) {
  auto stub = v1::PerceptronService::NewStub(Channel(target));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(60));
  v1::GetStatusRequest request;
  request.set_model_id("bench");
  v1::ModelStatus status;
  if (!stub->GetStatus(&context, request, &status).ok()) return std::nullopt;
  return status.stats().examples();
}

double MiBUnder(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (f.is_regular_file(ec)) bytes += f.file_size(ec);
  }
  return static_cast<double>(bytes) / (1 << 20);
}

}  // namespace

Recovery MeasureRecovery(const Workload& w,
                         const std::vector<grpc::ByteBuffer>& pool,
                         uint64_t examples) {
  Recovery r;
  std::string dir =
      std::filesystem::temp_directory_path() / "perceptrond-recovery-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    r.error = "mkdtemp failed";
    return r;
  }
  std::vector<std::string> argv = {Options().bin + "/server/perceptrond",
                                   "--port=0", "--http_port=0",
                                   "--durability=sync", "--data_dir=" + dir};
  for (const std::string& flag : Options().server_flags) argv.push_back(flag);
  {
    std::unique_ptr<Process> server = Launch(argv);  // the directory stays
    CreateModel(server->target(), "bench", w.dimension);
    const absl::Time t0 = absl::Now();
    ServiceRate(server->target(), pool,
                static_cast<int64_t>(examples / w.batch), w.batch);
    r.stream_s = absl::ToDoubleSeconds(absl::Now() - t0);
    const std::optional<uint64_t> before = ExamplesOf(server->target());
    r.acknowledged = before.value_or(0);
    server->process->Stop(SIGKILL);
  }
  r.dir_mib = MiBUnder(dir);
  {
    const absl::Time t0 = absl::Now();
    std::unique_ptr<Process> server = Launch(argv);
    r.start_s = absl::ToDoubleSeconds(absl::Now() - t0);
    const std::optional<uint64_t> after = ExamplesOf(server->target());
    r.ready_s = absl::ToDoubleSeconds(absl::Now() - t0);
    r.restored = after.value_or(0);
    r.ok = after.has_value() && r.acknowledged > 0;
    if (!r.ok) r.error = "the model's status was not answered";
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return r;
}

Bursts MeasureBursts(double seconds, int bursts) {
  Bursts b;
  b.seconds = seconds;
  const std::string here =
      std::filesystem::path(__FILE__).parent_path().string();
  const std::string cmd =
      absl::StrCat("PYTHONPATH=", Options().bin, "/python ", Options().python,
                   " ", here, "/burst_bench.py ", Options().bin,
                   "/server/perceptrond ", seconds, " ", bursts);
  // "baseline: RSS 30.4 MB (...)" and "burst 1: RSS 84.0 MB during it,
  // 50.8 MB 30 s after (...)".
  bool base_seen = false;
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) {
    b.error = "could not run " + cmd;
    return b;
  }
  char line[4096];
  while (fgets(line, sizeof line, out) != nullptr) {
    double v = 0, peak = 0;
    int k = 0;
    if (std::sscanf(line, "baseline: RSS %lf MB", &v) == 1) {
      b.baseline_mb = v;
      base_seen = true;
    } else if (std::sscanf(line, "burst %d: RSS %lf MB during it, %lf MB", &k,
                           &peak, &v) == 3) {
      b.after_mb.push_back(v);
    }
  }
  const int status = pclose(out);
  b.ok = status == 0 && base_seen &&
         b.after_mb.size() == static_cast<size_t>(bursts);
  if (!b.ok) b.error = "burst_bench.py failed: " + cmd;
  return b;
}

}  // namespace perceptron::bench
