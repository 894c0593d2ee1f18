// Labels as the data commands read them: +1/-1, or the classes a
// multiclass model names, and the classes a file's labels name (train and
// fit --create without --classes).
#ifndef PERCEPTRON_CLIENT_CLI_LABELS_H_
#define PERCEPTRON_CLIENT_CLI_LABELS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::client::cli {

// A model's classes (empty for a binary model).
std::vector<std::string> ClassesOf(const v1::ModelConfig& c);

// The most classes a file's labels may name.
constexpr size_t kMaxFileClasses = 64;

// The classes a file's labels name, from their ClassKeys in order of first
// appearance: none (a binary model) when they are all -1/0/+1; else numbers
// in increasing order when all are integers, names in byte order otherwise.
// INVALID_ARGUMENT (naming the file `name`) for one class, or past
// kMaxFileClasses.
absl::StatusOr<std::vector<std::string>> ClassesOfLabels(
    const std::string& name, const std::vector<std::string>& seen);

// The labels of a file read with raw labels (ReadOptions::raw_labels), in
// order of first appearance (up to one past kMaxFileClasses), and the
// classes they name (ClassesOfLabels).
class LabelsSeen {
 public:
  // INVALID_ARGUMENT naming the file and line for an empty label (a CSV
  // cell left empty), which names no class.
  absl::Status See(const std::string& key, const std::string& name,
                   size_t line);
  absl::StatusOr<std::vector<std::string>> Classes(
      const std::string& name) const {
    return ClassesOfLabels(name, seen_);
  }

 private:
  std::vector<std::string> seen_;
  absl::flat_hash_set<std::string> distinct_;
};

// A label as data files write it: +1/1 or -1/0.
bool ParseLabel(absl::string_view text, int* label);

// A label given as text: for a multiclass model (`classes`) the index of the
// class it names (ClassKey), else +1/-1 as ParseLabel reads it. False if it
// is neither.
bool LabelOf(absl::string_view text, const std::vector<std::string>& classes,
             int* label);

}  // namespace perceptron::client::cli

#endif  // PERCEPTRON_CLIENT_CLI_LABELS_H_
