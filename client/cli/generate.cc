// perceptron generate: a synthetic stream separable with a margin (and
// noise), as LIBSVM lines (client/generator.h).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

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
  GeneratorOptions o;
  o.dimension = absl::GetFlag(FLAGS_dim) == 0 ? 20 : absl::GetFlag(FLAGS_dim);
  o.count =
      absl::GetFlag(FLAGS_count) == 0 ? 10000 : absl::GetFlag(FLAGS_count);
  o.margin = absl::GetFlag(FLAGS_margin);
  o.noise = absl::GetFlag(FLAGS_noise);
  o.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<Synthetic> s = Generate(o);
  if (!s.ok()) return FailLocal(s.status());
  const std::string out_path = absl::GetFlag(FLAGS_out);
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path);
    if (!file)
      return FailLocal(absl::PermissionDeniedError(
          absl::StrCat("cannot write ", out_path, ": ", Errno())));
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  for (const Example& e : s->examples) {
    out << (*e.label > 0 ? "+1" : "-1");
    for (size_t i = 0; i < e.values.size(); ++i) {
      out << ' ' << i + 1 << ':' << absl::StrFormat("%.17g", e.values[i]);
    }
    out << '\n';
  }
  // A full disk (or a closed pipe) shows when the buffer goes out.
  bool written;
  if (out_path.empty()) {
    written = static_cast<bool>(out.flush());
  } else {
    file.close();
    written = static_cast<bool>(file);
  }
  if (!written) {
    return FailLocal(absl::DataLossError(absl::StrCat(
        "cannot write ", out_path.empty() ? "standard output" : out_path, ": ",
        Errno())));
  }
  if (!absl::GetFlag(FLAGS_separator_out).empty()) {
    std::ofstream sep(absl::GetFlag(FLAGS_separator_out));
    for (double v : s->separator) sep << absl::StrFormat("%.17g\n", v);
    sep.close();
    if (!sep)
      return FailLocal(absl::PermissionDeniedError(absl::StrCat(
          "cannot write ", absl::GetFlag(FLAGS_separator_out), ": ", Errno())));
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
