// DataReader's JSON lines (".jsonl"): one object a line, read with
// nlohmann/json (Debian's nlohmann-json3-dev).
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/data_reader.h"
#include "client/utf8_text.h"
#include "core/quoted.h"
#include "nlohmann/json.hpp"

namespace perceptron::client {
namespace {

// One JSON feature: a number, a string (categorical), or true (1; false is
// 0, no feature).
absl::Status AddJsonFeature(const std::string& space, const std::string& name,
                            const nlohmann::ordered_json& value, Example* e) {
  if (name.empty()) {
    return absl::InvalidArgumentError("a feature's name is empty");
  }
  v1::NamedFeature f;
  f.set_space(space);
  f.set_name(name);
  if (value.is_number()) {
    const double v = value.get<double>();
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", Excerpt(name), ": value ",
                       Excerpt(value.dump()), " is not a finite number"));
    }
    f.set_number(v);
  } else if (value.is_string()) {
    if (value.get_ref<const std::string&>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature ", Excerpt(name), ": the categorical value is empty"));
    }
    f.set_category(value.get<std::string>());
  } else if (value.is_boolean()) {
    if (!value.get<bool>()) return absl::OkStatus();
  } else if (value.is_null()) {
    return absl::OkStatus();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("feature ", Excerpt(name), ": ", Excerpt(value.dump()),
                     " is not a number, a string or a boolean"));
  }
  *e->named.Add() = std::move(f);
  return absl::OkStatus();
}

// Where `text` stops being JSON, as the JSON parser says it ("parse error at
// line 1, column 34: ..."), from its event interface (which reports errors
// without throwing); empty if it parses.
std::string JsonError(absl::string_view text) {
  using Json = nlohmann::json;
  struct Events final : nlohmann::json_sax<Json> {
    std::string error;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& e) override {
      // "[json.exception.parse_error.101] parse error at line 1, ...".
      error = e.what();
      const size_t at = error.find("] ");
      if (at != std::string::npos) error.erase(0, at + 2);
      return false;
    }
  } events;
  Json::sax_parse(text.begin(), text.end(), &events);
  return events.error;
}

}  // namespace

absl::StatusOr<bool> DataReader::ParseJsonl(absl::string_view text,
                                            Example* e) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  // JSON is UTF-8 text (RFC 8259): said here rather than as a line that does
  // not parse.
  if (absl::Status s = CheckUtf8("the line", text, false); !s.ok()) {
    return Bad(s.message());
  }
  // ordered_json keeps the features in the line's order, the order in which
  // colliding features are added.
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    // Where the line stops being JSON, in the parser's words.
    std::string where;
    if (j.is_discarded()) where = absl::StrCat(" (", JsonError(text), ")");
    return Bad(absl::StrCat(
        "not a JSON object", where,
        "; a line is {\"label\": 1, \"features\": {\"name\": value, "
        "\"namespace\": {\"name\": value}}}"));
  }
  const auto label = j.find("label");
  if (label != j.end() && !label->is_null()) {
    // true and false are 1 and 0 (+1 and -1), as a feature's are 1 and none.
    const std::string raw = label->is_string()    ? label->get<std::string>()
                            : label->is_boolean() ? (*label ? "1" : "0")
                                                  : label->dump();
    if (absl::Status s = SetLabel(raw, e); !s.ok()) return s;
  } else if (options_.require_labels) {
    return Bad("no label");
  }
  const auto features = j.find("features");
  if (features == j.end() || !features->is_object()) {
    return Bad("no \"features\" object");
  }
  for (const auto& [key, value] : features->items()) {
    if (value.is_object()) {
      for (const auto& [name, inner] : value.items()) {
        if (absl::Status s = AddJsonFeature(key, name, inner, e); !s.ok()) {
          return Bad(
              absl::StrCat("namespace ", Excerpt(key), ": ", s.message()));
        }
      }
    } else if (absl::Status s = AddJsonFeature("", key, value, e); !s.ok()) {
      return Bad(s.message());
    }
  }
  return true;
}

}  // namespace perceptron::client
