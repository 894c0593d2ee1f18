// Readers for labeled data files: LIBSVM/SVMlight ("label index:value ...",
// 1-based indices by default) and CSV (numeric columns, the label in one of
// them, an optional header row).
//
//   ReadOptions options;
//   options.positive_label = "1";      // optional: which raw label is +1
//   absl::StatusOr<Dataset> data = ReadDataFile("train.svm", options);
//
// Labels map to -1/+1: with `positive_label` set, that label is +1 and every
// other -1; otherwise
// "+1"/"1"/"1.0" are +1 and "-1"/"0"/"0.0" are -1, and anything else is an
// error naming the line. Errors are INVALID_ARGUMENT (NOT_FOUND for a missing
// file) and name the file and line.
#ifndef PERCEPTRON_CLIENT_DATA_READER_H_
#define PERCEPTRON_CLIENT_DATA_READER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/example.h"

namespace perceptron::client {

enum class Format { kAuto, kLibsvm, kCsv };

struct ReadOptions {
  // kAuto: ".csv" files are CSV, everything else LIBSVM. Default: kAuto.
  Format format = Format::kAuto;
  // The raw label that maps to +1; empty for the default mapping above.
  std::string positive_label;
  // LIBSVM: indices in the file start at 1 (SVMlight), or at 0. Default: 1.
  int index_base = 1;
  // CSV: the label column, counted from 0; -1 means the last. Default: -1.
  int label_column = -1;
  // Whether every example must have a label. Default: true.
  bool require_labels = true;
};

struct Dataset {
  std::vector<Example> examples;
  // The file's line (1-based) of each example.
  std::vector<size_t> lines;
  // LIBSVM: the index base the file was read with (to name an index as the
  // file writes it); 0 for CSV, whose columns count from 0.
  int index_base = 0;
  // The input dimension: CSV columns less the label; LIBSVM the largest index
  // + 1.
  uint32_t dimension = 0;
  bool sparse = false;
};

absl::StatusOr<Dataset> ReadDataFile(const std::string& path,
                                     const ReadOptions& options);

// Parses `text` as the file named `name` would be (for tests and stdin).
absl::StatusOr<Dataset> ParseData(const std::string& text,
                                  const std::string& name,
                                  const ReadOptions& options);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_DATA_READER_H_
