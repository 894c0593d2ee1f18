// A piece of someone's input in an error message, bounded:
//
//   absl::StrCat("interaction ", Quoted(pair), " is not two letters")
//
// gives `interaction "abc" is not two letters`, and for an input of 200,000
// bytes its first 64 and `..." (200000 bytes)`. A message that repeated the
// whole input could pass gRPC's limit on a status's size (8 KiB by default:
// the client then sees only that limit's error) and would fill a terminal;
// control characters in it (a terminal's escape sequences) are written out.
#ifndef PERCEPTRON_CORE_QUOTED_H_
#define PERCEPTRON_CORE_QUOTED_H_

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace perceptron {

// The bytes of input a message shows at most.
inline constexpr size_t kQuotedBytes = 64;

// `text` as a message shows it: its control characters (below 0x20, and
// 0x7f) written as \t, \n, \r or \xNN, everything else as it is (UTF-8
// included, so that names in any script read as they were written); past
// kQuotedBytes, cut where a UTF-8 character starts, followed by "..." and,
// after `close` (the closing quote, if any), the input's length.
inline std::string Excerpt(absl::string_view text, absl::string_view close) {
  size_t cut = text.size();
  if (cut > kQuotedBytes) {
    cut = kQuotedBytes;
    // Back to the start of a character (a continuation byte is 10xxxxxx; a
    // character has at most three).
    while (cut > kQuotedBytes - 3 &&
           (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
      --cut;
    }
  }
  std::string out;
  for (const char c : text.substr(0, cut)) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (b < 0x20 || b == 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out += c;
    }
  }
  if (cut < text.size()) {
    absl::StrAppend(&out, "...", close, " (", text.size(), " bytes)");
  } else {
    out.append(close.data(), close.size());
  }
  return out;
}

// Excerpt(text) without quotes around it.
inline std::string Excerpt(absl::string_view text) { return Excerpt(text, ""); }

// Excerpt(text) in double quotes.
inline std::string Quoted(absl::string_view text) {
  return absl::StrCat("\"", Excerpt(text, "\""));
}

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_QUOTED_H_
