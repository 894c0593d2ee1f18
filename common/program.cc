#include "common/program.h"

#include <pthread.h>

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron {

std::string VersionLine(const std::string& program) {
  return absl::StrCat(program, " " PERCEPTRON_VERSION " (wire contract ",
                      v1::PerceptronService::service_full_name(), ")");
}

namespace {

sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int WaitForStopSignal() {
  const sigset_t signals = StopSignals();
  int signal = 0;
  sigwait(&signals, &signal);
  return signal;
}

void SetProgramUsage(const std::string& program, const std::string& flags_file,
                     absl::string_view usage) {
  absl::SetProgramUsageMessage(usage);
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [flags_file](absl::string_view file) {
    return absl::EndsWith(file, flags_file);
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  // Flags are listed under the file's last two path components.
  config.normalize_filename = [](absl::string_view file) {
    const size_t slash = file.rfind('/', file.rfind('/') - 1);
    return std::string(
        slash == absl::string_view::npos ? file : file.substr(slash + 1));
  };
  config.version_string = [program] { return VersionLine(program) + "\n"; };
  absl::SetFlagsUsageConfig(config);
}

}  // namespace perceptron
