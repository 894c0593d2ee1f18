#include "client/data_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace perceptron::client {
namespace {

absl::StatusOr<int> MapLabel(absl::string_view raw,
                             const ReadOptions& options) {
  raw = absl::StripAsciiWhitespace(raw);
  if (!options.positive_label.empty())
    return raw == options.positive_label ? 1 : -1;
  double v;
  if (absl::SimpleAtod(raw, &v)) {
    if (v == 1) return 1;
    if (v == -1 || v == 0) return -1;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("label \"", raw,
                   "\" is not +1/1 or -1/0 (name the positive class to map "
                   "other labels)"));
}

bool ParseDouble(absl::string_view s, double* v) {
  return absl::SimpleAtod(absl::StripAsciiWhitespace(s), v);
}

Format Resolve(const std::string& name, Format f) {
  if (f != Format::kAuto) return f;
  return absl::EndsWithIgnoreCase(name, ".csv") ? Format::kCsv
                                                : Format::kLibsvm;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataReader>> DataReader::Open(
    const std::string& path, const ReadOptions& options) {
  if (path == "-") {
    return std::make_unique<DataReader>(&std::cin, "standard input", options);
  }
  auto file = std::make_unique<std::ifstream>(path);
  if (!*file) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  auto r = std::make_unique<DataReader>(file.get(), path, options);
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    r->size_ = static_cast<uint64_t>(st.st_size);
    r->seekable_ = true;
  }
  r->owned_ = std::move(file);
  return r;
}

DataReader::DataReader(std::istream* in, const std::string& name,
                       const ReadOptions& options)
    : in_(in),
      name_(name),
      options_(options),
      format_(Resolve(name, options.format)) {}

DataReader::~DataReader() = default;

int DataReader::index_base() const {
  return format_ == Format::kCsv ? 0 : options_.index_base;
}

bool DataReader::sparse() const { return format_ != Format::kCsv; }

absl::Status DataReader::Bad(absl::string_view why) const {
  return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_, ": ", why));
}

absl::StatusOr<bool> DataReader::Next(Example* e) {
  while (std::getline(*in_, buffer_)) {
    ++line_;
    bytes_ += buffer_.size() + 1;
    absl::StatusOr<bool> got = ParseLine(buffer_, e);
    if (!got.ok() || *got) {
      if (got.ok()) {
        example_line_ = line_;
        ++examples_;
      }
      return got;
    }
  }
  if (in_->bad()) return Bad("read error");
  bytes_ = std::max(bytes_, size_);
  if (examples_ == 0) return Bad("no examples in the file");
  return false;
}

absl::Status DataReader::Rewind() {
  if (!seekable_) {
    return absl::FailedPreconditionError(
        absl::StrCat(name_, " cannot be read twice"));
  }
  in_->clear();
  in_->seekg(0);
  if (!*in_) return absl::DataLossError(absl::StrCat("cannot rewind ", name_));
  line_ = example_line_ = 0;
  examples_ = bytes_ = 0;
  rows_ = columns_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<bool> DataReader::ParseLine(absl::string_view text, Example* e) {
  *e = Example();
  return format_ == Format::kCsv ? ParseCsv(text, e) : ParseLibsvm(text, e);
}

absl::StatusOr<bool> DataReader::ParseLibsvm(absl::string_view text,
                                             Example* e) {
  if (size_t hash = text.find('#'); hash != absl::string_view::npos)
    text = text.substr(0, hash);
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  std::vector<absl::string_view> tokens =
      absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  e->sparse = true;
  size_t first = 0;
  if (!absl::StrContains(tokens[0], ':')) {
    absl::StatusOr<int> label = MapLabel(tokens[0], options_);
    if (!label.ok()) return Bad(label.status().message());
    e->label = *label;
    first = 1;
  } else if (options_.require_labels) {
    return Bad("no label");
  }
  for (size_t k = first; k < tokens.size(); ++k) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(tokens[k], absl::MaxSplits(':', 1));
    uint64_t index;
    double value;
    if (!absl::SimpleAtoi(kv.first, &index) ||
        !ParseDouble(kv.second, &value)) {
      return Bad(
          absl::StrCat("cannot read \"", tokens[k], "\" as index:value"));
    }
    if (index < static_cast<uint64_t>(options_.index_base) ||
        index - options_.index_base >= (1ull << 32) - 1) {
      return Bad(absl::StrCat("index ", index,
                              " is out of range (indices start at ",
                              options_.index_base, ")"));
    }
    const uint32_t i = static_cast<uint32_t>(index - options_.index_base);
    e->indices.push_back(i);
    e->values.push_back(value);
    dimension_ = std::max(dimension_, i + 1);
  }
  return true;
}

absl::StatusOr<bool> DataReader::ParseCsv(absl::string_view text, Example* e) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  std::vector<absl::string_view> cells = absl::StrSplit(text, ',');
  if (rows_++ == 0) {
    // The first row is a header if a feature cell is not a number (the
    // label may be a class name in every row); only the first row can be,
    // and its width is its own (scikit-learn's files start with a summary
    // row).
    const size_t label_at = options_.label_column < 0
                                ? cells.size() - 1
                                : static_cast<size_t>(options_.label_column);
    bool header = false;
    double v;
    for (size_t k = 0; k < cells.size(); ++k) {
      header |= k != label_at && !ParseDouble(cells[k], &v);
    }
    if (header) return false;
  }
  if (columns_ == 0) {
    columns_ = cells.size();
    if (columns_ < 2)
      return Bad("a CSV row needs at least a feature and a label");
  }
  if (cells.size() != columns_) {
    return Bad(absl::StrCat(cells.size(), " columns; the first data row has ",
                            columns_));
  }
  const size_t label_at =
      options_.label_column < 0 ? columns_ - 1 : options_.label_column;
  if (label_at >= columns_) {
    return Bad(
        absl::StrCat("label column ", label_at, " is past the last column"));
  }
  for (size_t k = 0; k < columns_; ++k) {
    if (k == label_at) {
      absl::StatusOr<int> label = MapLabel(cells[k], options_);
      if (!label.ok()) return Bad(label.status().message());
      e->label = *label;
      continue;
    }
    double v;
    if (!ParseDouble(cells[k], &v)) {
      return Bad(
          absl::StrCat("column ", k, " \"", cells[k], "\" is not a number"));
    }
    e->values.push_back(v);
  }
  dimension_ = static_cast<uint32_t>(columns_ - 1);
  return true;
}

namespace {

absl::StatusOr<Dataset> ReadAll(DataReader& r) {
  Dataset d;
  Example e;
  while (true) {
    absl::StatusOr<bool> more = r.Next(&e);
    if (!more.ok()) return more.status();
    if (!*more) break;
    d.examples.push_back(std::move(e));
    d.lines.push_back(r.line());
  }
  d.index_base = r.index_base();
  d.sparse = r.sparse();
  d.dimension = r.dimension();
  return d;
}

}  // namespace

absl::StatusOr<Dataset> ParseData(const std::string& text,
                                  const std::string& name,
                                  const ReadOptions& options) {
  std::istringstream in(text);
  DataReader r(&in, name, options);
  return ReadAll(r);
}

absl::StatusOr<Dataset> ReadDataFile(const std::string& path,
                                     const ReadOptions& options) {
  absl::StatusOr<std::unique_ptr<DataReader>> r =
      DataReader::Open(path, options);
  if (!r.ok()) return r.status();
  return ReadAll(**r);
}

}  // namespace perceptron::client
