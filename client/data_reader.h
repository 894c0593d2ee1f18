// Readers for labeled data files: LIBSVM/SVMlight ("label index:value ...",
// 1-based indices by default), CSV (numeric columns, the label in one of
// them, an optional header row; or, for a model with hash_bits, named columns
// whose non-numeric cells are categorical) and Vowpal Wabbit's text format
// ("label [1] ['tag]|namespace[:scale] name[:value] ...", features by name)
// and JSON lines ({"label": 1, "features": {"name": value, "namespace":
// {"name": value}}}, features by name; a string value is categorical). Any of
// them may be gzip-compressed (GzipInput; the format is the name's without
// ".gz").
//
//   ReadOptions options;
//   options.positive_label = "1";      // optional: which raw label is +1
//   absl::StatusOr<Dataset> data = ReadDataFile("train.svm", options);
//
// or, one example at a time in bounded memory (the path "-" is standard
// input):
//
//   absl::StatusOr<std::unique_ptr<DataReader>> r = DataReader::Open(path, o);
//   Example e;
//   while (true) {
//     absl::StatusOr<bool> more = (*r)->Next(&e);
//     if (!more.ok()) ...;  // names the file and line
//     if (!*more) break;
//     ... (*r)->line() ...
//   }
//
// Labels map to -1/+1: with `positive_label` set, that label is +1 and every
// other -1; otherwise
// "+1"/"1"/"1.0" are +1 and "-1"/"0"/"0.0" are -1, and anything else is an
// error naming the line. Errors are INVALID_ARGUMENT (NOT_FOUND for a missing
// file) and name the file and line.
#ifndef PERCEPTRON_CLIENT_DATA_READER_H_
#define PERCEPTRON_CLIENT_DATA_READER_H_

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/example.h"
#include "client/gzip_input.h"

namespace perceptron::client {

enum class Format { kAuto, kLibsvm, kCsv, kVw, kJsonl };

struct ReadOptions {
  // kAuto: ".csv" files are CSV, ".vw" Vowpal Wabbit's, ".jsonl" and
  // ".ndjson" JSON lines, everything else LIBSVM. Default: kAuto.
  Format format = Format::kAuto;
  // The raw label that maps to +1; empty for the default mapping above.
  std::string positive_label;
  // LIBSVM: indices in the file start at 1 (SVMlight), or at 0. Default: 1.
  int index_base = 1;
  // CSV: the label column, counted from 0; -1 means the one the header names
  // "label" (in any case) if the file has a header and one is so named, else
  // the last. Default: -1.
  int label_column = -1;
  // CSV: the label column by its name in the header, which must then have
  // one so named (label_column does not apply). Default: none.
  std::string label_name;
  // Whether every example must have a label. Default: true.
  bool require_labels = true;
  // CSV without require_labels: a row of exactly this many cells has no
  // label (its cells are all features), unless a label column is named
  // (label_name, label_column, or a header's "label"); predict gives it the
  // model's dimension. Default: 0 (every row has a label).
  uint32_t unlabeled_width = 0;
  // CSV by name (for a model with hash_bits): the first row is a header
  // naming the columns; each other cell is the feature of its column's name,
  // its value if it is a number, else the categorical feature name=cell; an
  // empty cell is no feature. Default: false.
  bool named = false;
  // A multiclass model's classes (docs/design.md section 2.8): each label
  // names one (ClassKey), and maps to its index; a label naming none is an
  // error. positive_label then does not apply. Default: none.
  std::vector<std::string> classes;
  // Labels are not mapped: each example's label is 0 and raw_label its
  // ClassKey (to collect a file's classes). Default: false.
  bool raw_labels = false;
};

// The format a file of this name is read in: `f`, or for kAuto the one its
// extension says (ReadOptions::format), that of the name within for a gzip
// file's (digits.csv.gz is CSV).
Format ResolveFormat(const std::string& name, Format f);

// A label as the name of a class: a number written as an integer where it is
// one ("3", "3.0" and "+3" name class "3"), anything else as written (spaces
// around it removed).
std::string ClassKey(absl::string_view raw);

// One example at a time from a file or standard input ("-"), holding one
// line in memory.
class DataReader {
 public:
  // NOT_FOUND if `path` cannot be opened.
  static absl::StatusOr<std::unique_ptr<DataReader>> Open(
      const std::string& path, const ReadOptions& options);
  // Over `in`, named `name` in messages (the format from the name as for a
  // path); `in` must outlive the reader.
  DataReader(std::istream* in, const std::string& name,
             const ReadOptions& options);
  ~DataReader();

  // The next example: true and `*e` filled, false at the end (an error if
  // the whole input held no example), or an error naming the file and line.
  absl::StatusOr<bool> Next(Example* e);
  // Back to the first example; FAILED_PRECONDITION on standard input.
  absl::Status Rewind();

  // The line (1-based) of the last example returned.
  size_t line() const { return example_line_; }
  // Examples returned since the start (or the last Rewind).
  uint64_t examples() const { return examples_; }
  // Bytes consumed so far, and the input's size (0 when not known, as for a
  // pipe); for a gzip file, its compressed bytes.
  uint64_t bytes_read() const;
  uint64_t size() const { return size_; }
  // Whether Rewind can work (a regular file).
  bool seekable() const { return seekable_; }
  const std::string& name() const { return name_; }
  // LIBSVM: the index base (to name an index as the file writes it); 0 for
  // CSV, whose columns count from 0.
  int index_base() const;
  bool sparse() const;
  // Whether the examples come by name (VW, JSON lines, or CSV with `named`).
  bool named() const;
  // The input dimension seen so far: CSV columns less the label; LIBSVM the
  // largest index + 1.
  uint32_t dimension() const { return dimension_; }
  // CSV read by number (ReadOptions::named off): after Next stopped at a
  // feature cell that is not a number (nor empty) in a file with a header,
  // that cell ("line 2: column 0 \"red\""); else empty. Such a file is read
  // by name by a model with hash_bits.
  const std::string& categorical_cell() const { return categorical_cell_; }
  // CSV with a header, whose label is the last column for want of another
  // (no label_column or label_name given, no column named "label"): that
  // column, as `column 3 (species)`; else empty. Read before Rewind.
  std::string DefaultLabelColumn() const;
  // From the next example on, ReadOptions::unlabeled_width.
  void set_unlabeled_width(uint32_t width) { options_.unlabeled_width = width; }
  // From the next example on, labels name these classes (ReadOptions::classes;
  // raw_labels off).
  void set_classes(std::vector<std::string> classes) {
    options_.classes = std::move(classes);
    options_.raw_labels = false;
  }

 private:
  // One line: true and `*e` filled for an example; false for a blank,
  // comment or header line.
  absl::StatusOr<bool> ParseLine(absl::string_view text, Example* e);
  absl::StatusOr<bool> ParseLibsvm(absl::string_view text, Example* e);
  absl::StatusOr<bool> ParseCsv(absl::string_view text, Example* e);
  absl::StatusOr<bool> ParseNamedCsv(absl::string_view text, Example* e);
  absl::StatusOr<bool> ParseVw(absl::string_view text, Example* e);
  absl::StatusOr<bool> ParseJsonl(absl::string_view text, Example* e);
  // JSON lines: `text` (one JSON value, UTF-8) read into *e through simdjson
  // if the line needs nothing else (a well-formed example with no repeated
  // key); false otherwise, *e then to be cleared and the line read by
  // ParseJsonl's own path (nlohmann/json), which says what is wrong.
  bool ReadJsonFast(absl::string_view text, Example* e);
  absl::Status Bad(absl::string_view why) const;
  // Sets e's label from its text as options_ say; the error names the line.
  absl::Status SetLabel(absl::string_view raw, Example* e) const;

  std::unique_ptr<std::istream> owned_;
  std::istream* in_;
  GzipInput* gzip_ = nullptr;  // in_, for a gzip file
  std::string name_;
  ReadOptions options_;
  Format format_;
  bool seekable_ = false;
  std::string buffer_;
  size_t line_ = 0;
  size_t example_line_ = 0;
  uint64_t examples_ = 0;
  uint64_t bytes_ = 0;
  uint64_t size_ = 0;
  uint32_t dimension_ = 0;
  // CSV: non-empty rows so far and the first data row's width.
  size_t rows_ = 0;
  size_t columns_ = 0;
  // CSV: the header's names (a CSV by number's, if it has a header).
  std::vector<std::string> header_;
  // CSV by number: whether the first row was a header, and
  // categorical_cell().
  bool csv_header_ = false;
  std::string categorical_cell_;
  // CSV: splits a line into its cells (cells_, valid until the next call),
  // quotes read as RFC 4180 says; an error names the line.
  absl::Status SplitCsv(absl::string_view text);
  class CsvParser;
  std::unique_ptr<CsvParser> csv_;
  std::vector<absl::string_view> cells_;
  std::vector<std::string> quoted_;  // the cells of a line with quotes
  // JSON lines: simdjson's parser and its padded copy of the line
  // (data_reader_jsonl.cc).
  struct JsonParser;
  struct JsonParserDeleter {
    void operator()(JsonParser* p) const;
  };
  std::unique_ptr<JsonParser, JsonParserDeleter> json_;
  // CSV: the label's column as the header names it (ReadOptions), or npos.
  size_t label_at_ = std::string::npos;
  // CSV: the label's column in a row of `width` cells (after the header).
  absl::StatusOr<size_t> LabelAt(size_t width) const;
  // CSV: notes which column of this header names the label (label_at_), or
  // an error if label_name names none.
  absl::Status FindLabel(const std::vector<absl::string_view>& header);
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
  // DataReader::DefaultLabelColumn.
  std::string default_label_column;
};

// The whole of a file ("-": standard input) in memory.
absl::StatusOr<Dataset> ReadDataFile(const std::string& path,
                                     const ReadOptions& options);

// Parses `text` as the file named `name` would be (for tests and stdin).
absl::StatusOr<Dataset> ParseData(const std::string& text,
                                  const std::string& name,
                                  const ReadOptions& options);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_DATA_READER_H_
