// JSON lines read by DataReader against the test's own reading of each line
// with nlohmann/json's DOM, from docs/clients.md's rules: a nested object is
// a namespace, a number its double, a string a category, true the value 1,
// false and null no feature, a repeated key its last value in its first
// place (an object's keys are a map); the label as the JSON text writes it.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/data_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace perceptron::client {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

// A feature as a string that tells every bit of it apart.
std::string Show(const std::string& space, const std::string& name,
                 const std::string& value) {
  return absl::StrCat(space, "|", name, "|", value);
}

std::string ShowNumber(double v) {
  return absl::StrCat("n", std::bit_cast<uint64_t>(v));
}

// The features and label the rules above give `line`.
void Expect(const std::string& line, std::vector<std::string>* features,
            std::string* label) {
  const Json j = Json::parse(line);
  const auto add = [&](const std::string& space, const std::string& name,
                       const Json& v) {
    if (v.is_number()) {
      features->push_back(Show(space, name, ShowNumber(v.get<double>())));
    } else if (v.is_string()) {
      features->push_back(Show(space, name, "c" + v.get<std::string>()));
    } else if (v.is_boolean() && v.get<bool>()) {
      features->push_back(Show(space, name, "1"));
    }
  };
  for (const auto& [key, value] : j.at("features").items()) {
    if (value.is_object()) {
      for (const auto& [name, inner] : value.items()) add(key, name, inner);
    } else {
      add("", key, value);
    }
  }
  label->clear();
  const auto l = j.find("label");
  if (l == j.end() || l->is_null()) return;
  *label = l->is_string()    ? l->get<std::string>()
           : l->is_boolean() ? (l->get<bool>() ? "1" : "0")
                             : l->dump();
}

std::vector<std::string> Read(const Example& e) {
  std::vector<std::string> out;
  for (const v1::NamedFeature& f : e.named) {
    out.push_back(Show(f.space(), f.name(),
                       f.has_category() ? "c" + f.category()
                       : f.has_number() ? ShowNumber(f.number())
                                        : "1"));
  }
  return out;
}

// Random lines of every form a value and a key take, repeats included.
class Lines {
 public:
  // Whether the last line repeats a key of the label's object, the features
  // object or a namespace.
  bool repeats() const { return repeats_; }

  std::string Line() {
    repeats_ = false;
    std::vector<std::string> fields;
    const int labels = Pick({6, 3, 1});  // none, one, two
    repeats_ = labels == 2;
    for (int i = 0; i < labels; ++i) fields.push_back("\"label\":" + Label());
    fields.push_back("\"features\":" + Features());
    if (Pick({9, 1}) == 1) {
      fields.push_back("\"features\":" + Features());
      repeats_ = true;
    }
    if (Pick({3, 1}) == 1) {
      fields.push_back("\"tag\":" +
                       Pick<std::string>({"\"x\"", "[1,{\"a\":2}]", "null"}));
    }
    std::shuffle(fields.begin(), fields.end(), random_);
    std::string line = "{";
    for (size_t i = 0; i < fields.size(); ++i) {
      absl::StrAppend(&line, i == 0 ? "" : ",", Space(), fields[i], Space());
    }
    return line + "}";
  }

 private:
  template <typename T>
  T Pick(const std::vector<T>& from) {
    return from[std::uniform_int_distribution<size_t>(
        0, from.size() - 1)(random_)];
  }
  // 0, 1, ... with the given weights.
  int Pick(std::initializer_list<double> weights) {
    return std::discrete_distribution<int>(weights)(random_);
  }
  std::string Space() { return Pick<std::string>({"", "", " ", "\t ", " \t"}); }

  std::string Label() {
    return Pick<std::string>({"1",
                              "-1",
                              "0",
                              "\"1\"",
                              "\"-1\"",
                              "true",
                              "false",
                              "null",
                              "1.0",
                              "-1e0",
                              "-0",
                              "-0.0",
                              "0.0",
                              "2",
                              "\"cat\"",
                              "\"caf\\u00e9\"",
                              "7.5",
                              "10e-1",
                              "18446744073709551615",
                              "1e20"});
  }

  std::string Number() {
    switch (Pick({4, 3, 3, 1, 2})) {
      case 0:
        return absl::StrCat(
            std::uniform_int_distribution<int>(-1000, 1000)(random_));
      case 1:
        return absl::StrFormat(
            "%.17g", std::normal_distribution<double>(0, 1e3)(random_));
      case 2:
        return absl::StrFormat("%.3g",
                               std::normal_distribution<double>(0, 1)(random_));
      case 3:
        return absl::StrFormat(
            "%.25e", std::uniform_real_distribution<double>(-1, 1)(random_));
      default:
        return Pick<std::string>(
            {"-0", "0", "-0.0", "0.0", "1E+2", "2.5e-3", "-7E0",
             "18446744073709551615", "18446744073709551616",
             "-9223372036854775808", "-9223372036854775809",
             "123456789012345678901234567890", "4.9e-324",
             "2.2250738585072011e-308", "1.7976931348623157e308",
             "9007199254740993", "0.1000000000000000055511151231257827"});
    }
  }

  std::string Value() {
    switch (Pick({6, 3, 1, 1, 1})) {
      case 0:
        return Number();
      case 1:
        return Pick<std::string>({"\"paris\"", "\"caf\\u00e9\"",
                                  "\"\\ud83d\\ude00\"", "\"a\\\"b\"",
                                  "\"tab\\there\"", "\"\\u0041\""});
      case 2:
        return "true";
      case 3:
        return "false";
      default:
        return "null";
    }
  }

  // Few names, so that an object repeats one now and then; "\u00e9" and "é"
  // are the same key once read.
  std::string Name() {
    return Pick<std::string>({"\"a\"", "\"b\"", "\"w1\"", "\"w2\"", "\"w3\"",
                              "\"x y\"", "\"\xc3\xa9\"", "\"\\u00e9\"",
                              "\"k5\"", "\"k6\"", "\"k7\"", "\"k8\""});
  }

  std::string Object(bool top) {
    std::string o = "{";
    std::set<std::string> names;
    const int n = Pick({1, 3, 3, 2, 1}) * (top ? 3 : 2);
    for (int i = 0; i < n; ++i) {
      const std::string name = Name();
      repeats_ |=
          !names.insert(name == "\"\\u00e9\"" ? "\"\xc3\xa9\"" : name).second;
      absl::StrAppend(&o, i == 0 ? "" : ",", Space(), name, Space(), ":",
                      Space(),
                      top && Pick({3, 1}) == 1 ? Object(false) : Value());
    }
    return o + "}";
  }
  std::string Features() { return Object(true); }

  std::mt19937_64 random_{20261207};
  bool repeats_ = false;
};

TEST(DataReaderJsonTest, LinesAreReadAsTheRulesReadThem) {
  Lines lines;
  ReadOptions o;
  o.require_labels = false;
  o.raw_labels = true;  // the label's text, as ClassKey keeps it
  ReadOptions positive;
  positive.require_labels = false;
  positive.positive_label = "1.0";
  int repeats = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string line = lines.Line();
    std::vector<std::string> want;
    std::string want_label;
    Expect(line, &want, &want_label);
    absl::StatusOr<Dataset> d = ParseData(line + "\n", "r.jsonl", o);
    ASSERT_TRUE(d.ok()) << line << ": " << d.status();
    ASSERT_EQ(d->examples.size(), 1u) << line;
    const Example& e = d->examples[0];
    EXPECT_EQ(Read(e), want) << line;
    EXPECT_EQ(e.label.has_value(), !want_label.empty()) << line;
    if (e.label) {
      EXPECT_EQ(e.raw_label, ClassKey(want_label)) << line;
    }
    // --positive compares the label's text itself.
    d = ParseData(line + "\n", "r.jsonl", positive);
    ASSERT_TRUE(d.ok()) << line << ": " << d.status();
    ASSERT_EQ(d->examples.size(), 1u) << line;
    if (!want_label.empty()) {
      EXPECT_EQ(d->examples[0].label, want_label == "1.0" ? 1 : -1) << line;
    }
    repeats += lines.repeats();
  }
  // Both kinds of line, many of each.
  EXPECT_GT(repeats, 2000);
  EXPECT_LT(repeats, 18000);
}

TEST(DataReaderJsonTest, LongLinesAreReadToo) {
  // Past the MiB a line that simdjson reads.
  const std::string value(3 << 20, 'v');
  absl::StatusOr<Dataset> d = ParseData(
      absl::StrCat("{\"label\": 1, \"features\": {\"a\": 2, \"s\": {\"b\": \"",
                   value,
                   "\"}}}\n{\"label\": 0, \"features\": {\"c\": true}}\n"),
      "l.jsonl", {});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->examples.size(), 2u);
  EXPECT_EQ(Read(d->examples[0]),
            (std::vector<std::string>{Show("", "a", ShowNumber(2)),
                                      Show("s", "b", "c" + value)}));
  EXPECT_EQ(d->examples[0].label, 1);
  EXPECT_EQ(Read(d->examples[1]), std::vector<std::string>{Show("", "c", "1")});
  EXPECT_EQ(d->examples[1].label, -1);
}

TEST(DataReaderJsonTest, BadLinesSayWhy) {
  struct Case {
    std::string line, says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"label": 1, "features": {"a": 1e400}})", "number overflow"},
           {R"({"label": 1, "features": {"": 1}})",
            "a feature's name is empty"},
           {R"({"label": 1, "features": {"a": ""}})", "categorical value is"},
           {R"({"label": 1, "features": {"s": {"a": [1]}}})", "namespace s:"},
           {R"({"label": 1, "features": {"s": {"a": {"b": 1}}}})",
            "is not a number, a string or a boolean"},
           {R"({"label": 1, "features": [1]})",
            "\"features\" is an array, not an object {\"name\": value, ...}"},
           {R"({"label": 1, "features": "a"})", "\"features\" is a string,"},
           {R"({"label": 1, "features": null})", "\"features\" is null,"},
           {R"({"label": 1})", "no \"features\" object"},
           {R"({"label": [1], "features": {}})", "label \"[1]\""},
           {R"({"label": 5, "features": {}})", "label \"5\""},
           {R"({"features": {}})", "no label"},
           {R"({"label": 1, "features": {"a": "\ud800"}})", "parse error"},
       }) {
    const std::string message(
        ParseData(c.line + "\n", "b.jsonl", {}).status().message());
    EXPECT_THAT(message, HasSubstr("b.jsonl:1: ")) << c.line;
    EXPECT_THAT(message, HasSubstr(c.says)) << c.line;
  }
}

}  // namespace
}  // namespace perceptron::client
