#include "client/cli/labels.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/data_reader.h"
#include "core/quoted.h"

namespace perceptron::client::cli {

std::vector<std::string> ClassesOf(const v1::ModelConfig& c) {
  return {c.classes().begin(), c.classes().end()};
}

absl::StatusOr<std::vector<std::string>> ClassesOfLabels(
    const std::string& name, const std::vector<std::string>& seen) {
  bool binary = true, integers = true;
  for (const std::string& k : seen) {
    binary &= k == "1" || k == "-1" || k == "0";
    int64_t v;
    integers &= absl::SimpleAtoi(k, &v);
  }
  if (binary) return std::vector<std::string>();
  if (seen.size() == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": every label is ", Quoted(seen[0]),
        ", one class: a model's labels are -1/+1 (or 0/1), or two classes "
        "or more (--classes=a,b,... names them before the file has them all)"));
  }
  if (seen.size() > kMaxFileClasses) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", seen.size(),
                     " different labels; a multiclass model has "
                     "at most ",
                     kMaxFileClasses, " classes"));
  }
  std::vector<std::string> classes = seen;
  if (integers) {
    std::sort(classes.begin(), classes.end(),
              [](const std::string& a, const std::string& b) {
                int64_t x = 0, y = 0;
                (void)absl::SimpleAtoi(a, &x);
                (void)absl::SimpleAtoi(b, &y);
                return x < y;
              });
  } else {
    std::sort(classes.begin(), classes.end());
  }
  return classes;
}

absl::Status LabelsSeen::See(const std::string& key, const std::string& name,
                             size_t line) {
  if (key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ":", line, ": the label is empty"));
  }
  if (distinct_.size() <= kMaxFileClasses && distinct_.insert(key).second) {
    seen_.push_back(key);
  }
  return absl::OkStatus();
}

bool ParseLabel(absl::string_view text, int* label) {
  double v;
  if (!absl::SimpleAtod(text, &v)) return false;
  if (v == 1) {
    *label = 1;
  } else if (v == -1 || v == 0) {
    *label = -1;
  } else {
    return false;
  }
  return true;
}

bool LabelOf(absl::string_view text, const std::vector<std::string>& classes,
             int* label) {
  if (classes.empty()) return ParseLabel(text, label);
  const auto at = std::find(classes.begin(), classes.end(), ClassKey(text));
  if (at == classes.end()) return false;
  *label = static_cast<int>(at - classes.begin());
  return true;
}

}  // namespace perceptron::client::cli
