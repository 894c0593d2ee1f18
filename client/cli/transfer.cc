// export and import: a model as a portable blob.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"

namespace perceptron::client::cli {

// export: the blob goes to FILE.partial, renamed to FILE once whole (so a
// failed export leaves no file and an existing FILE untouched); "-" writes
// standard output, and a FILE that exists and is not a regular file (a
// device, a pipe, /dev/stdout) is written as it is, never replaced.
int Export(const Args& args) {
  if (args.size() != 2) return Usage("export takes MODEL FILE");
  const std::string& path = args[1];
  const bool to_stdout = path == "-";
  struct stat st;
  const bool renamed =
      !to_stdout && !(stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode));
  const std::string target = renamed ? path + ".partial" : path;
  const std::string shown = to_stdout ? "standard output" : path;
  std::FILE* out = to_stdout ? stdout : std::fopen(target.c_str(), "wb");
  if (out == nullptr) {
    return FailLocal(absl::PermissionDeniedError(
        absl::StrCat("cannot write ", shown, ": ", Errno())));
  }
  absl::StatusOr<std::string> blob = Connect()->ExportModel(args[0]);
  bool written =
      blob.ok() &&
      std::fwrite(blob->data(), 1, blob->size(), out) == blob->size() &&
      std::fflush(out) == 0;
  if (!to_stdout) written = std::fclose(out) == 0 && written;
  if (written && renamed) {
    written = std::rename(target.c_str(), path.c_str()) == 0;
  }
  if (!written) {
    const std::string why = Errno();
    if (renamed) std::remove(target.c_str());
    if (!blob.ok()) return Fail(blob.status());
    return FailLocal(
        absl::DataLossError(absl::StrCat("cannot write ", shown, ": ", why)));
  }
  if (renamed) {
    std::printf("exported %s to %s (%zu bytes)\n", args[0].c_str(),
                path.c_str(), blob->size());
  }
  return 0;
}

// import: FILE, or "-" for standard input.
int Import(const Args& args) {
  if (args.size() != 1) return Usage("import takes one FILE");
  std::ifstream file;
  if (args[0] != "-") {
    file.open(args[0], std::ios::binary);
    if (!file) {
      return FailLocal(absl::NotFoundError(
          absl::StrCat("cannot read ", args[0], ": ", Errno())));
    }
  }
  std::istream& in = args[0] == "-" ? std::cin : file;
  const std::string blob((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  if (in.bad()) {
    return FailLocal(absl::DataLossError(
        absl::StrCat("cannot read ", args[0], ": ", Errno())));
  }
  absl::StatusOr<v1::Model> m =
      Connect()->ImportModel(blob, absl::GetFlag(FLAGS_as));
  if (!m.ok()) {
    if (m.status().code() == absl::StatusCode::kAlreadyExists) {
      return Fail(absl::AlreadyExistsError(
          absl::StrCat(m.status().message(),
                       " (--as=NEW_ID imports the blob under another id)")));
    }
    return Fail(m.status());
  }
  std::printf("imported %s (%s, %s) from %s\n", m->model_id().c_str(),
              AlgorithmText(m->config().algorithm()),
              ShapeText(m->config()).c_str(),
              args[0] == "-" ? "standard input" : args[0].c_str());
  return 0;
}

}  // namespace perceptron::client::cli
