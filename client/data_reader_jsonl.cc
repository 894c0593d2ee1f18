// DataReader's JSON lines (".jsonl"): one object a line, read with simdjson
// (Debian's libsimdjson-dev); a line it cannot read whole, or with a repeated
// key, again with nlohmann/json (Debian's nlohmann-json3-dev), whose reading
// is the reference and whose messages say what is wrong.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "client/data_reader.h"
#include "client/utf8_text.h"
#include "core/quoted.h"
#include "nlohmann/json.hpp"
#include "simdjson.h"

namespace perceptron::client {

struct DataReader::JsonParser {
  simdjson::dom::parser parser;
  // The line and simdjson's padding after it (zeros).
  std::string line;
  // The keys of the features object and of one namespace, to find a repeat.
  std::vector<std::string_view> keys, inner_keys;
};

void DataReader::JsonParserDeleter::operator()(JsonParser* p) const {
  delete p;
}

namespace {

// Whether a key is in `keys` twice.
bool Repeats(std::vector<std::string_view>& keys) {
  if (keys.size() <= 16) {
    for (size_t i = 1; i < keys.size(); ++i) {
      for (size_t k = 0; k < i; ++k) {
        if (keys[i] == keys[k]) return true;
      }
    }
    return false;
  }
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

// One feature of a line simdjson read, as AddJsonFeature adds it: false
// (nothing added) for a value AddJsonFeature refuses. The value's type is
// checked before it is read (value_unsafe: no error to see, no exception). A
// number is the double nlohmann/json's get<double> gives: an integer converted,
// any other rounded from its decimal text (both read it correctly rounded;
// simdjson refuses a number past a double's range, which the other path then
// refuses).
bool AddFastFeature(std::string_view space, std::string_view name,
                    simdjson::dom::element value, Example* e) {
  if (name.empty()) return false;
  using Type = simdjson::dom::element_type;
  double number = 0;
  std::string_view category;
  switch (value.type()) {
    case Type::INT64:
      number = static_cast<double>(value.get_int64().value_unsafe());
      break;
    case Type::UINT64:
      number = static_cast<double>(value.get_uint64().value_unsafe());
      break;
    case Type::DOUBLE:
      number = value.get_double().value_unsafe();
      break;
    case Type::STRING:
      category = value.get_string().value_unsafe();
      if (category.empty()) return false;
      break;
    case Type::BOOL:
      if (!value.get_bool().value_unsafe()) return true;  // false: no feature
      break;
    case Type::NULL_VALUE:
      return true;
    default:
      return false;
  }
  v1::NamedFeature* f = e->named.Add();
  f->set_space(space.data(), space.size());
  f->set_name(name.data(), name.size());
  if (value.type() == Type::STRING) {
    f->set_category(category.data(), category.size());
  } else if (value.type() != Type::BOOL) {
    f->set_number(number);
  }
  return true;
}

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
      // A line is parsed alone: its "line 1, " says nothing.
      error = e.what();
      const size_t at = error.find("] ");
      if (at != std::string::npos) error.erase(0, at + 2);
      absl::StrReplaceAll({{"at line 1, column", "at column"}}, &error);
      return false;
    }
  } events;
  Json::sax_parse(text.begin(), text.end(), &events);
  return events.error;
}

}  // namespace

bool DataReader::ReadJsonFast(absl::string_view text, Example* e) {
  using Type = simdjson::dom::element_type;
  // simdjson's parser takes about 10 bytes of memory a byte of the longest
  // line it has read, and keeps them: a longer line goes the other way.
  constexpr size_t kLongestLine = size_t{1} << 20;
  if (text.size() > kLongestLine) return false;
  if (json_ == nullptr) json_.reset(new JsonParser);
  JsonParser& j = *json_;
  j.line.assign(text.data(), text.size());
  j.line.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::dom::object top;
  if (j.parser.parse(j.line.data(), text.size(), false).get(top)) return false;
  // nlohmann/json keeps the last of a repeated key: such a line goes there.
  simdjson::dom::element label, features;
  int labels = 0, features_seen = 0;
  for (const simdjson::dom::key_value_pair field : top) {
    if (field.key == "label") {
      label = field.value;
      ++labels;
    } else if (field.key == "features") {
      features = field.value;
      ++features_seen;
    }
  }
  if (labels > 1 || features_seen != 1) return false;
  if (labels == 1 && label.type() != Type::NULL_VALUE) {
    // The label's text as the other path writes it (nlohmann/json's dump).
    std::string raw;
    switch (label.type()) {
      case Type::STRING:
        raw = label.get_string().value_unsafe();
        break;
      case Type::BOOL:
        raw = label.get_bool().value_unsafe() ? "1" : "0";
        break;
      case Type::INT64:
        raw = absl::StrCat(label.get_int64().value_unsafe());
        break;
      case Type::UINT64:
        raw = absl::StrCat(label.get_uint64().value_unsafe());
        break;
      case Type::DOUBLE:
        // A number with a fraction or an exponent to both libraries (an
        // integer is an INT64 or UINT64 here, or out of range and an error).
        raw = nlohmann::json(label.get_double().value_unsafe()).dump();
        break;
      default:
        return false;
    }
    if (!SetLabel(raw, e).ok()) return false;
  } else if (options_.require_labels) {
    return false;
  }
  simdjson::dom::object all;
  if (features.get_object().get(all)) return false;
  j.keys.clear();
  for (const simdjson::dom::key_value_pair field : all) {
    j.keys.push_back(field.key);
    simdjson::dom::object space;
    if (field.value.get_object().get(space)) {
      if (!AddFastFeature("", field.key, field.value, e)) return false;
      continue;
    }
    j.inner_keys.clear();
    for (const simdjson::dom::key_value_pair inner : space) {
      j.inner_keys.push_back(inner.key);
      if (!AddFastFeature(field.key, inner.key, inner.value, e)) return false;
    }
    if (Repeats(j.inner_keys)) return false;
  }
  return !Repeats(j.keys);
}

absl::StatusOr<bool> DataReader::ParseJsonl(absl::string_view text,
                                            Example* e) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  // JSON is UTF-8 text (RFC 8259): said here rather than as a line that does
  // not parse.
  if (absl::Status s = CheckUtf8("the line", text, false); !s.ok()) {
    return Bad(s.message());
  }
  if (ReadJsonFast(text, e)) return true;
  e->Clear();
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
  if (features == j.end()) return Bad("no \"features\" object");
  if (!features->is_object()) {
    const std::string type = features->type_name();
    const char* article = features->is_null()    ? ""
                          : features->is_array() ? "an "
                                                 : "a ";
    return Bad(absl::StrCat("\"features\" is ", article, type,
                            ", not an object {\"name\": value, ...}"));
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
