#include "server/model/model_id.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace perceptron::server {

absl::Status ValidateModelId(absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("model_id is empty");
  if (id.size() > kMaxModelIdLength) {
    return absl::InvalidArgumentError(absl::StrCat("model_id has ", id.size(),
                                                   " characters; at most ",
                                                   kMaxModelIdLength));
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      return absl::InvalidArgumentError(absl::StrCat(
          "model_id has character 0x", absl::Hex(static_cast<unsigned char>(c)),
          " at position ", i, "; allowed are A-Z a-z 0-9 . _ -"));
    }
  }
  if (id.find_first_not_of('.') == absl::string_view::npos) {
    // "." and ".." are path segments: in a URL (the HTTP API, the live page)
    // they would name another resource.
    return absl::InvalidArgumentError(
        absl::StrCat("model_id \"", id,
                     "\" is only dots; an id needs a letter, digit, _ or -"));
  }
  return absl::OkStatus();
}

}  // namespace perceptron::server
