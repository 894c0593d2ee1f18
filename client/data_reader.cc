#include "client/data_reader.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace perceptron::client {
namespace {

absl::Status Bad(const std::string& name, size_t line, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ": ", why));
}

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

absl::StatusOr<Dataset> ParseLibsvm(std::istream& in, const std::string& name,
                                    const ReadOptions& options) {
  Dataset d;
  d.sparse = true;
  d.index_base = options.index_base;
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    absl::string_view text = line;
    if (size_t hash = text.find('#'); hash != absl::string_view::npos)
      text = text.substr(0, hash);
    text = absl::StripAsciiWhitespace(text);
    if (text.empty()) continue;
    std::vector<absl::string_view> tokens =
        absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    Example e;
    e.sparse = true;
    size_t first = 0;
    if (!absl::StrContains(tokens[0], ':')) {
      absl::StatusOr<int> label = MapLabel(tokens[0], options);
      if (!label.ok()) return Bad(name, n, label.status().message());
      e.label = *label;
      first = 1;
    } else if (options.require_labels) {
      return Bad(name, n, "no label");
    }
    for (size_t k = first; k < tokens.size(); ++k) {
      std::pair<absl::string_view, absl::string_view> kv =
          absl::StrSplit(tokens[k], absl::MaxSplits(':', 1));
      uint64_t index;
      double value;
      if (!absl::SimpleAtoi(kv.first, &index) ||
          !ParseDouble(kv.second, &value)) {
        return Bad(
            name, n,
            absl::StrCat("cannot read \"", tokens[k], "\" as index:value"));
      }
      if (index < static_cast<uint64_t>(options.index_base) ||
          index - options.index_base >= (1ull << 32) - 1) {
        return Bad(
            name, n,
            absl::StrCat("index ", index, " is out of range (indices start at ",
                         options.index_base, ")"));
      }
      const uint32_t i = static_cast<uint32_t>(index - options.index_base);
      e.indices.push_back(i);
      e.values.push_back(value);
      d.dimension = std::max(d.dimension, i + 1);
    }
    d.examples.push_back(std::move(e));
    d.lines.push_back(n);
  }
  if (d.examples.empty()) return Bad(name, n, "no examples in the file");
  return d;
}

absl::StatusOr<Dataset> ParseCsv(std::istream& in, const std::string& name,
                                 const ReadOptions& options) {
  Dataset d;
  std::string line;
  size_t n = 0;
  size_t columns = 0;
  size_t n_rows = 0;  // non-empty rows so far
  while (std::getline(in, line)) {
    ++n;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty()) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(text, ',');
    if (n_rows++ == 0) {
      // The first row is a header if a feature cell is not a number (the
      // label may be a class name in every row); only the first row can be,
      // and its width is its own (scikit-learn's files start with a summary
      // row).
      const size_t label_at = options.label_column < 0
                                  ? cells.size() - 1
                                  : static_cast<size_t>(options.label_column);
      bool header = false;
      double v;
      for (size_t k = 0; k < cells.size(); ++k) {
        header |= k != label_at && !ParseDouble(cells[k], &v);
      }
      if (header) continue;
    }
    if (columns == 0) {
      columns = cells.size();
      if (columns < 2)
        return Bad(name, n, "a CSV row needs at least a feature and a label");
    }
    if (cells.size() != columns) {
      return Bad(name, n,
                 absl::StrCat(cells.size(), " columns; the first data row has ",
                              columns));
    }
    const size_t label_at =
        options.label_column < 0 ? columns - 1 : options.label_column;
    if (label_at >= columns) {
      return Bad(
          name, n,
          absl::StrCat("label column ", label_at, " is past the last column"));
    }
    Example e;
    for (size_t k = 0; k < columns; ++k) {
      if (k == label_at) {
        absl::StatusOr<int> label = MapLabel(cells[k], options);
        if (!label.ok()) return Bad(name, n, label.status().message());
        e.label = *label;
        continue;
      }
      double v;
      if (!ParseDouble(cells[k], &v)) {
        return Bad(
            name, n,
            absl::StrCat("column ", k, " \"", cells[k], "\" is not a number"));
      }
      e.values.push_back(v);
    }
    d.examples.push_back(std::move(e));
    d.lines.push_back(n);
  }
  d.dimension = columns == 0 ? 0 : columns - 1;
  if (d.examples.empty()) return Bad(name, n, "no examples in the file");
  return d;
}

Format Resolve(const std::string& name, Format f) {
  if (f != Format::kAuto) return f;
  return absl::EndsWithIgnoreCase(name, ".csv") ? Format::kCsv
                                                : Format::kLibsvm;
}

}  // namespace

absl::StatusOr<Dataset> ParseData(const std::string& text,
                                  const std::string& name,
                                  const ReadOptions& options) {
  std::istringstream in(text);
  return Resolve(name, options.format) == Format::kCsv
             ? ParseCsv(in, name, options)
             : ParseLibsvm(in, name, options);
}

absl::StatusOr<Dataset> ReadDataFile(const std::string& path,
                                     const ReadOptions& options) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return Resolve(path, options.format) == Format::kCsv
             ? ParseCsv(in, path, options)
             : ParseLibsvm(in, path, options);
}

}  // namespace perceptron::client
