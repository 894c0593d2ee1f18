#include "client/utf8_text.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/quoted.h"
#include "utf8.h"

namespace perceptron::client {

absl::Status CheckUtf8(absl::string_view what, absl::string_view text,
                       bool quote) {
  if (Ascii(text)) return absl::OkStatus();
  const auto bad = utf8::find_invalid(text.begin(), text.end());
  if (bad == text.end()) return absl::OkStatus();
  // Escaped byte by byte (it is not text), kQuotedBytes of it at most.
  std::string shown;
  if (quote) {
    shown = absl::StrCat(" \"", absl::CHexEscape(text.substr(0, kQuotedBytes)),
                         text.size() > kQuotedBytes
                             ? absl::StrCat("...\" (", text.size(), " bytes)")
                             : "\"");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, shown, " is not UTF-8 text (byte ", bad - text.begin() + 1,
      "): names and labels are sent as UTF-8; convert the file first, e.g. "
      "with iconv -f latin1 -t utf-8"));
}

}  // namespace perceptron::client
