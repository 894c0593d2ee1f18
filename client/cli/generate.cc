// perceptron generate: a synthetic stream separable with a margin (and
// noise), as LIBSVM lines (client/generator.h).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"
#include "client/generator.h"

namespace perceptron::client::cli {

int Generate(const Args& args) {
  if (!args.empty()) return Usage("generate takes no arguments");
  // 0 stands for a flag not given; given, it is a mistake.
  if (FlagGiven("dim") && absl::GetFlag(FLAGS_dim) == 0) {
    return Usage("--dim must be at least 1");
  }
  if (FlagGiven("count") && absl::GetFlag(FLAGS_count) == 0) {
    return Usage("--count must be at least 1");
  }
  GeneratorOptions o;
  o.dimension = absl::GetFlag(FLAGS_dim) == 0 ? 20 : absl::GetFlag(FLAGS_dim);
  o.count =
      absl::GetFlag(FLAGS_count) == 0 ? 10000 : absl::GetFlag(FLAGS_count);
  o.margin = absl::GetFlag(FLAGS_margin);
  o.noise = absl::GetFlag(FLAGS_noise);
  o.seed = absl::GetFlag(FLAGS_seed);
  const std::string out_path = absl::GetFlag(FLAGS_out);
  const std::string separator_path = absl::GetFlag(FLAGS_separator_out);
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path);
    if (!file)
      return FailLocal(absl::PermissionDeniedError(
          absl::StrCat("cannot write ", out_path, ": ", Errno())));
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  // Progress where the lines do not go to the terminal it is drawn on.
  ProgressLine progress(ShowProgress() &&
                        (!out_path.empty() || !isatty(STDOUT_FILENO)));
  // Each example is written as it is drawn: memory of O(d) for any count.
  std::vector<double> separator;
  uint64_t written = 0;
  const absl::Status drawn = GenerateEach(o, &separator, [&](const Example& e) {
    out << (*e.label > 0 ? "+1" : "-1");
    for (size_t i = 0; i < e.values.size(); ++i) {
      out << ' ' << i + 1 << ':' << absl::StrFormat("%.17g", e.values[i]);
    }
    out << '\n';
    ++written;
    progress.Draw(written, o.count, [&] {
      return absl::StrCat(written, " of ", o.count, " examples");
    });
    return static_cast<bool>(out);
  });
  progress.End();
  // A full disk (or a closed pipe) shows when the buffer goes out.
  bool whole;
  if (out_path.empty()) {
    whole = static_cast<bool>(out.flush());
  } else {
    file.close();
    whole = static_cast<bool>(file);
  }
  if (!drawn.ok() || !whole) {
    // No partial file is left to be taken for a whole one (a regular file
    // only: --out=/dev/full or a pipe is not ours to remove).
    struct stat st;
    if (!out_path.empty() && stat(out_path.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      std::remove(out_path.c_str());
    }
    if (!drawn.ok()) return FailLocal(drawn);
    return FailLocal(absl::DataLossError(absl::StrCat(
        "cannot write ", out_path.empty() ? "standard output" : out_path, ": ",
        Errno())));
  }
  if (!separator_path.empty()) {
    std::ofstream sep(separator_path);
    for (double v : separator) sep << absl::StrFormat("%.17g\n", v);
    sep.close();
    if (!sep)
      return FailLocal(absl::PermissionDeniedError(
          absl::StrCat("cannot write ", separator_path, ": ", Errno())));
  }
  if (!out_path.empty()) {
    std::fprintf(stderr,
                 "wrote %llu examples (d=%u, margin %g, noise %g) to %s\n",
                 static_cast<unsigned long long>(o.count), o.dimension,
                 o.margin, o.noise, out_path.c_str());
  }
  return 0;
}

}  // namespace perceptron::client::cli
