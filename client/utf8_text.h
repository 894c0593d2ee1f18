// Whether text is UTF-8, as names and labels on the wire must be, for the
// data readers (client/data_reader.h).
#ifndef PERCEPTRON_CLIENT_UTF8_TEXT_H_
#define PERCEPTRON_CLIENT_UTF8_TEXT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace perceptron::client {

// True if every byte of `text` is ASCII, as most names are: UTF-8 with
// nothing to decode (a loop the compiler makes one of whole vectors).
inline bool Ascii(absl::string_view text) {
  unsigned char any = 0;
  for (const char c : text) any |= static_cast<unsigned char>(c);
  return any < 0x80;
}

// OK if `text` is UTF-8; else INVALID_ARGUMENT naming `what` (quoted, unless
// it is a whole line) and its first byte that is not.
absl::Status CheckUtf8(absl::string_view what, absl::string_view text,
                       bool quote = true);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_UTF8_TEXT_H_
