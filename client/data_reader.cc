#include "client/data_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/utf8_text.h"
#include "core/quoted.h"
#include "core/status_macros.h"

extern "C" {
#include <csv.h>
}

namespace perceptron::client {
namespace {

absl::StatusOr<int> MapLabel(absl::string_view raw,
                             const ReadOptions& options) {
  raw = absl::StripAsciiWhitespace(raw);
  if (!options.classes.empty()) {
    const std::string key = ClassKey(raw);
    for (size_t r = 0; r < options.classes.size(); ++r) {
      if (options.classes[r] == key) return static_cast<int>(r);
    }
    std::string shown;
    for (size_t r = 0; r < options.classes.size() && r < 10; ++r) {
      absl::StrAppend(&shown, r == 0 ? "" : ", ", options.classes[r]);
    }
    if (options.classes.size() > 10) absl::StrAppend(&shown, ", ...");
    return absl::InvalidArgumentError(
        absl::StrCat("label ", Quoted(raw), " is not one of the model's ",
                     options.classes.size(), " classes (", shown, ")"));
  }
  if (!options.positive_label.empty())
    return raw == options.positive_label ? 1 : -1;
  double v;
  if (absl::SimpleAtod(raw, &v)) {
    if (v == 1) return 1;
    if (v == -1 || v == 0) return -1;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("label ", Quoted(raw),
                   " is not +1/1 or -1/0 (name the positive class to map "
                   "other labels)"));
}

}  // namespace

std::string ClassKey(absl::string_view raw) {
  raw = absl::StripAsciiWhitespace(raw);
  double v;
  if (absl::SimpleAtod(raw, &v) && std::isfinite(v) && v == std::floor(v) &&
      std::abs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return std::string(raw);
}

absl::Status DataReader::SetLabel(absl::string_view raw, Example* e) const {
  if (options_.raw_labels) {
    e->label = 0;
    e->raw_label = ClassKey(raw);
    // A label collected as raw may name a class of the model to be created.
    if (absl::Status s = CheckUtf8("the label", e->raw_label); !s.ok()) {
      return Bad(s.message());
    }
    return absl::OkStatus();
  }
  absl::StatusOr<int> label = MapLabel(raw, options_);
  if (!label.ok()) return Bad(label.status().message());
  e->label = *label;
  return absl::OkStatus();
}

Format ResolveFormat(const std::string& name, Format f) {
  if (f != Format::kAuto) return f;
  absl::string_view within = name;
  if (absl::EndsWithIgnoreCase(within, ".gz")) within.remove_suffix(3);
  if (absl::EndsWithIgnoreCase(within, ".csv")) return Format::kCsv;
  if (absl::EndsWithIgnoreCase(within, ".vw")) return Format::kVw;
  if (absl::EndsWithIgnoreCase(within, ".jsonl") ||
      absl::EndsWithIgnoreCase(within, ".ndjson")) {
    return Format::kJsonl;
  }
  return Format::kLibsvm;
}

namespace {

// The next token of `text` between spaces and tabs, read in place (a data
// file's hot loop): false when none is left; `text` goes on after it.
bool NextToken(absl::string_view* text, absl::string_view* token) {
  const char* p = text->data();
  const char* const end = p + text->size();
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  if (p == end) return false;
  const char* q = p + 1;
  while (q < end && *q != ' ' && *q != '\t') ++q;
  *token = absl::string_view(p, q - p);
  text->remove_prefix(q - text->data());
  return true;
}

// A LIBSVM index as absl::SimpleAtoi reads it (a sign "+" allowed); the
// digits alone without its checks.
bool ParseIndex(absl::string_view s, uint64_t* v) {
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (error == std::errc() && end == s.data() + s.size()) return true;
  return absl::SimpleAtoi(s, v);
}

// A number as absl::SimpleAtod reads it (whitespace around it and a sign "+"
// allowed; out of range, an infinity or zero), through std::from_chars first
// where that reads all of it: the same correctly rounded double, faster.
bool ParseDouble(absl::string_view s, double* v) {
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (error == std::errc() && end == s.data() + s.size()) return true;
  return absl::SimpleAtod(absl::StripAsciiWhitespace(s), v);
}

// A LIBSVM "index:value" at `p` (before `end`) in one pass, the common
// form: digits, ':' and a number std::from_chars reads up to a space, a tab
// or the end. Returns where it ends, or null for any other form (which the
// token's own reading takes: ParseIndex and ParseDouble, or an error); where
// both read a token they read the same numbers.
const char* ReadIndexValue(const char* p, const char* end, uint64_t* index,
                           double* value) {
  const auto [colon, index_error] = std::from_chars(p, end, *index);
  if (index_error != std::errc() || colon == end || *colon != ':') {
    return nullptr;
  }
  const auto [after, value_error] = std::from_chars(colon + 1, end, *value);
  if (value_error != std::errc() ||
      (after != end && *after != ' ' && *after != '\t')) {
    return nullptr;
  }
  return after;
}

// A feature by name: a number is its value (times `scale`), anything else a
// categorical value (VW's "name:value" where value is not a number).
// `ascii`: the line is ASCII (Ascii), so the strings need no check.
absl::Status AddNamed(absl::string_view space, absl::string_view name,
                      absl::string_view value, bool has_value, double scale,
                      bool ascii, Example* e) {
  if (!ascii) {
    PERCEPTRON_RETURN_IF_ERROR(CheckUtf8("the namespace", space));
    PERCEPTRON_RETURN_IF_ERROR(CheckUtf8("the feature", name));
  }
  v1::NamedFeature& f = e->AddNamed();
  if (!space.empty()) f.set_space(space.data(), space.size());
  f.set_name(name.data(), name.size());
  if (!has_value) {
    if (scale != 1.0) f.set_number(scale);
    return absl::OkStatus();
  }
  double v;
  // "nan" and "inf" read as numbers, and are refused as such.
  if (ParseDouble(value, &v)) {
    if (!std::isfinite(v * scale)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", Excerpt(name), ": value ", Excerpt(value),
                       " is not a finite number"));
    }
    f.set_number(v * scale);
  } else if (value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature ", Excerpt(name), ": the value is empty"));
  } else {
    if (!ascii) {
      PERCEPTRON_RETURN_IF_ERROR(CheckUtf8("the categorical value", value));
    }
    f.set_category(std::string(value));
  }
  return absl::OkStatus();
}

// A file read a MiB a read(2), not libstdc++'s 8 KiB: a system call each,
// 56,000 of them for train's two passes over a file of 228 MB.
class BufferedFile : public std::ifstream {
 public:
  explicit BufferedFile(const std::string& path)
      : buffer_(std::make_unique<char[]>(kSize)) {
    rdbuf()->pubsetbuf(buffer_.get(), kSize);  // before open, or ignored
    open(path);
  }
  // Closed while its buffer is there.
  ~BufferedFile() override { close(); }

 private:
  static constexpr std::streamsize kSize = 1 << 20;
  std::unique_ptr<char[]> buffer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DataReader>> DataReader::Open(
    const std::string& path, const ReadOptions& options) {
  if (path == "-") {
    return std::make_unique<DataReader>(&std::cin, "standard input", options);
  }
  // A gzip file is read through zlib, its format named by the name within
  // ("digits.csv.gz" is CSV: ResolveFormat).
  std::unique_ptr<GzipInput> gzip;
  std::unique_ptr<std::istream> file;
  if (GzipInput::IsGzip(path)) {
    gzip = std::make_unique<GzipInput>(path);
  } else {
    file = std::make_unique<BufferedFile>(path);
  }
  if (!(gzip ? gzip->opened() : static_cast<bool>(*file))) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  auto r = std::make_unique<DataReader>(
      gzip ? static_cast<std::istream*>(gzip.get()) : file.get(), path,
      options);
  r->gzip_ = gzip.get();
  if (gzip != nullptr) file = std::move(gzip);
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
      format_(ResolveFormat(name, options.format)) {}

DataReader::~DataReader() = default;

// libcsv's parser (Debian's libcsv-dev), kept from line to line: its buffer is
// reused.
class DataReader::CsvParser {
 public:
  CsvParser() { ok_ = csv_init(&p_, CSV_STRICT | CSV_STRICT_FINI) == 0; }
  ~CsvParser() { csv_free(&p_); }
  CsvParser(const CsvParser&) = delete;
  CsvParser& operator=(const CsvParser&) = delete;

  // The cells of one line as one record; false if it is not one (a quote
  // not closed on the line, or text after a closing quote).
  bool Split(absl::string_view line, std::vector<std::string>* cells) {
    cells->clear();
    if (!ok_) return false;
    const bool parsed = csv_parse(&p_, line.data(), line.size(), &Cell, &EndRow,
                                  cells) == line.size();
    const bool ended = csv_fini(&p_, &Cell, &EndRow, cells) == 0;
    return parsed && ended;
  }

 private:
  static void Cell(void* text, size_t size, void* cells) {
    static_cast<std::vector<std::string>*>(cells)->emplace_back(
        static_cast<const char*>(text), size);
  }
  static void EndRow(int, void*) {}

  struct csv_parser p_;
  bool ok_ = false;
};

absl::Status DataReader::SplitCsv(absl::string_view text) {
  if (!absl::StrContains(text, '"')) {
    // Without quotes, the cells are the text between commas (libcsv's spaces
    // around them are stripped where each cell is read), in the vector of
    // the line before.
    cells_.clear();
    for (size_t comma; (comma = text.find(',')) != absl::string_view::npos;
         text.remove_prefix(comma + 1)) {
      cells_.push_back(text.substr(0, comma));
    }
    cells_.push_back(text);
    return absl::OkStatus();
  }
  if (csv_ == nullptr) csv_ = std::make_unique<CsvParser>();
  if (!csv_->Split(text, &quoted_)) {
    // A failed parse leaves the parser mid-record: a fresh one for the next.
    csv_.reset();
    return Bad(
        "cannot read the line as CSV: a cell in double quotes must close on "
        "its line, a quote inside one is written \"\", and nothing but a "
        "comma follows its closing quote");
  }
  cells_.assign(quoted_.begin(), quoted_.end());
  return absl::OkStatus();
}

int DataReader::index_base() const {
  return format_ == Format::kCsv ? 0 : options_.index_base;
}

bool DataReader::sparse() const { return format_ != Format::kCsv; }

bool DataReader::named() const {
  return format_ == Format::kVw || format_ == Format::kJsonl ||
         (format_ == Format::kCsv && options_.named);
}

absl::Status DataReader::Bad(absl::string_view why) const {
  return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_, ": ", why));
}

absl::StatusOr<bool> DataReader::Next(Example* e) {
  while (std::getline(*in_, buffer_)) {
    ++line_;
    // A line cut short where a gzip file's data stops making sense.
    if (gzip_ != nullptr && !gzip_->status().ok()) {
      return Bad(gzip_->status().message());
    }
    bytes_ += buffer_.size() + 1;
    // A UTF-8 byte order mark (as spreadsheets write one) is not text.
    absl::string_view text = buffer_;
    if (line_ == 1) absl::ConsumePrefix(&text, "\xEF\xBB\xBF");
    absl::StatusOr<bool> got = ParseLine(text, e);
    if (!got.ok() || *got) {
      if (got.ok()) {
        example_line_ = line_;
        ++examples_;
        e->by_name = named();
      }
      return got;
    }
  }
  if (in_->bad()) return Bad("read error");
  if (gzip_ != nullptr && !gzip_->status().ok()) {
    // While reading the line after the last.
    ++line_;
    return Bad(gzip_->status().message());
  }
  bytes_ = std::max(bytes_, size_);
  if (examples_ == 0) return Bad("no examples in the file");
  return false;
}

uint64_t DataReader::bytes_read() const {
  if (gzip_ == nullptr) return bytes_;
  // The compressed bytes, which gzread reads ahead of the lines.
  const uint64_t at = gzip_->compressed_offset();
  return size_ > 0 ? std::min(at, size_) : at;
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
  header_.clear();
  csv_header_ = false;
  categorical_cell_.clear();
  label_at_ = std::string::npos;
  return absl::OkStatus();
}

absl::Status DataReader::FindLabel(
    const std::vector<absl::string_view>& header) {
  if (options_.label_name.empty() && options_.label_column >= 0) {
    return absl::OkStatus();
  }
  for (size_t k = 0; k < header.size(); ++k) {
    const absl::string_view name = absl::StripAsciiWhitespace(header[k]);
    if (options_.label_name.empty() ? absl::EqualsIgnoreCase(name, "label")
                                    : name == options_.label_name) {
      label_at_ = k;
      return absl::OkStatus();
    }
  }
  if (options_.label_name.empty()) return absl::OkStatus();
  return Bad(absl::StrCat("no column of the header is named \"",
                          options_.label_name, "\" (the label's column)"));
}

std::string DataReader::DefaultLabelColumn() const {
  if (format_ != Format::kCsv || header_.empty() ||
      label_at_ != std::string::npos || options_.label_column >= 0 ||
      !options_.label_name.empty()) {
    return "";
  }
  return absl::StrCat("column ", header_.size() - 1, " (",
                      absl::StripAsciiWhitespace(header_.back()), ")");
}

absl::StatusOr<size_t> DataReader::LabelAt(size_t width) const {
  if (label_at_ != std::string::npos) {
    if (label_at_ >= width) {
      return Bad(absl::StrCat(width, " columns; the header names column ",
                              label_at_, " the label's"));
    }
    return label_at_;
  }
  if (!options_.label_name.empty()) {
    return Bad(absl::StrCat("the label's column is named \"",
                            options_.label_name,
                            "\", and the file has no header row"));
  }
  const size_t at =
      options_.label_column < 0 ? width - 1 : options_.label_column;
  if (at >= width) {
    return Bad(absl::StrCat("label column ", at, " is past the last column"));
  }
  return at;
}

absl::StatusOr<bool> DataReader::ParseLine(absl::string_view text, Example* e) {
  e->Clear();
  switch (format_) {
    case Format::kCsv:
      return options_.named ? ParseNamedCsv(text, e) : ParseCsv(text, e);
    case Format::kVw:
      return ParseVw(text, e);
    case Format::kJsonl:
      return ParseJsonl(text, e);
    default:
      return ParseLibsvm(text, e);
  }
}

absl::StatusOr<bool> DataReader::ParseLibsvm(absl::string_view text,
                                             Example* e) {
  if (size_t hash = text.find('#'); hash != absl::string_view::npos)
    text = text.substr(0, hash);
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  e->sparse = true;
  absl::string_view token;
  NextToken(&text, &token);  // text is not empty: one token at least
  if (!absl::StrContains(token, ':')) {
    if (absl::Status s = SetLabel(token, e); !s.ok()) return s;
  } else if (options_.require_labels) {
    return Bad("no label");
  } else {
    // No label: the token is the first index:value.
    text = absl::string_view(token.data(),
                             text.data() + text.size() - token.data());
  }
  const char* p = text.data();
  const char* const end = p + text.size();
  while (true) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    if (p == end) break;
    uint64_t index;
    double value;
    const char* after = ReadIndexValue(p, end, &index, &value);
    if (after == nullptr) {
      // Not digits, ':' and a number that from_chars reads whole: the
      // token, read as ParseIndex and ParseDouble read it, or refused.
      after = p + 1;
      while (after < end && *after != ' ' && *after != '\t') ++after;
      token = absl::string_view(p, after - p);
      const size_t colon = token.find(':');
      if (colon == absl::string_view::npos ||
          !ParseIndex(token.substr(0, colon), &index) ||
          !ParseDouble(token.substr(colon + 1), &value)) {
        return Bad(
            absl::StrCat("cannot read ", Quoted(token), " as index:value"));
      }
    }
    p = after;
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
  if (absl::Status s = SplitCsv(text); !s.ok()) return s;
  const std::vector<absl::string_view>& cells = cells_;
  if (rows_++ == 0) {
    // The first row is a header if a feature cell is not a number (the
    // label may be a class name in every row); only the first row can be,
    // and its width is its own (scikit-learn's files start with a summary
    // row).
    // The label's column is guessed here as if it had no name.
    const size_t label_at = options_.label_column < 0
                                ? cells.size() - 1
                                : static_cast<size_t>(options_.label_column);
    bool header = false;
    double v;
    for (size_t k = 0; k < cells.size(); ++k) {
      header |= k != label_at && !ParseDouble(cells[k], &v);
    }
    if (header) {
      if (absl::Status s = FindLabel(cells); !s.ok()) return s;
      csv_header_ = true;
      for (absl::string_view c : cells) {
        header_.emplace_back(absl::StripAsciiWhitespace(c));
      }
      return false;
    }
  }
  // Rows of exactly unlabeled_width cells, where no label column is named,
  // are features alone.
  const bool unlabeled =
      !options_.require_labels && options_.unlabeled_width > 0 &&
      cells.size() == options_.unlabeled_width &&
      label_at_ == std::string::npos && options_.label_name.empty() &&
      options_.label_column < 0;
  if (columns_ == 0) {
    columns_ = cells.size();
    if (columns_ < 2 && !unlabeled)
      return Bad("a CSV row needs at least a feature and a label");
  }
  if (cells.size() != columns_) {
    return Bad(absl::StrCat(cells.size(), " columns; the first data row has ",
                            columns_));
  }
  size_t label_at = std::string::npos;
  if (!unlabeled) {
    absl::StatusOr<size_t> label = LabelAt(columns_);
    if (!label.ok()) return label.status();
    label_at = *label;
  }
  for (size_t k = 0; k < columns_; ++k) {
    if (k == label_at) {
      if (absl::Status s = SetLabel(cells[k], e); !s.ok()) return s;
      continue;
    }
    double v;
    if (!ParseDouble(cells[k], &v)) {
      // The column by its number, and by its name where the header names
      // the data rows' columns (a summary row of another width does not).
      const std::string column =
          header_.size() == columns_ && !header_[k].empty()
              ? absl::StrCat("column ", k, " (", Excerpt(header_[k], ""), ")")
              : absl::StrCat("column ", k);
      if (csv_header_ && !absl::StripAsciiWhitespace(cells[k]).empty()) {
        categorical_cell_ =
            absl::StrCat("line ", line_, ": ", column, " ", Quoted(cells[k]));
      }
      return Bad(absl::StrCat(
          column, " ", Quoted(cells[k]),
          " is not a number (a model with hash_bits reads a CSV file by its "
          "header's names, a cell that is not a number as a categorical "
          "feature)"));
    }
    e->values.push_back(v);
  }
  dimension_ = static_cast<uint32_t>(unlabeled ? columns_ : columns_ - 1);
  return true;
}

absl::StatusOr<bool> DataReader::ParseNamedCsv(absl::string_view text,
                                               Example* e) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  if (absl::Status s = SplitCsv(text); !s.ok()) return s;
  const std::vector<absl::string_view>& cells = cells_;
  if (header_.empty()) {
    for (absl::string_view c : cells) {
      c = absl::StripAsciiWhitespace(c);
      if (c.empty()) {
        return Bad(absl::StrCat("the header's column ", header_.size(),
                                " has no name (a CSV by name needs a header "
                                "row naming every column)"));
      }
      header_.emplace_back(c);
    }
    if (header_.size() < 2)
      return Bad("a CSV row needs at least a feature and a label");
    if (absl::Status s = FindLabel(cells); !s.ok()) return s;
    return false;
  }
  if (cells.size() != header_.size()) {
    return Bad(absl::StrCat(cells.size(), " columns; the header has ",
                            header_.size()));
  }
  absl::StatusOr<size_t> label = LabelAt(header_.size());
  if (!label.ok()) return label.status();
  const size_t label_at = *label;
  for (size_t k = 0; k < cells.size(); ++k) {
    const absl::string_view cell = absl::StripAsciiWhitespace(cells[k]);
    if (k == label_at) {
      if (absl::Status s = SetLabel(cell, e); !s.ok()) return s;
      continue;
    }
    if (cell.empty()) continue;
    if (absl::Status s = AddNamed("", header_[k], cell, true, 1.0,
                                  /*ascii=*/false, e);
        !s.ok()) {
      return Bad(
          absl::StrCat("column ", k, " (", header_[k], "): ", s.message()));
    }
  }
  return true;
}

absl::StatusOr<bool> DataReader::ParseVw(absl::string_view text, Example* e) {
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (absl::StripAsciiWhitespace(text).empty()) return false;
  // Most lines are ASCII: then no name on them needs a check of its own.
  const bool ascii = Ascii(text);
  const size_t bar = text.find('|');
  if (bar == absl::string_view::npos) {
    return Bad("no '|': a Vowpal Wabbit line is \"label |namespace features\"");
  }
  // The head, as Vowpal Wabbit reads it: [label [importance]] [tag]. Its
  // last word is the tag (ignored) if it begins with ' or touches the '|':
  // "1 'id |a ..." and "1 id|a ..." are both labeled 1 with the tag id.
  absl::string_view head = text.substr(0, bar), token;
  absl::string_view words[4];
  size_t n = 0;
  while (NextToken(&head, &token)) {
    if (n == 4) {
      size_t more = 1;
      while (NextToken(&head, &token)) ++more;
      return Bad(absl::StrCat(4 + more,
                              " words before '|': at most a label, an "
                              "importance weight of 1 and a tag are read "
                              "(label [1] ['tag])"));
    }
    words[n++] = token;
  }
  absl::string_view tag;
  if (n > 0 &&
      (words[n - 1][0] == '\'' ||
       words[n - 1].data() + words[n - 1].size() == text.data() + bar)) {
    tag = words[--n];
  }
  for (size_t k = 0; k < n; ++k) {
    if (words[k][0] == '\'') return Bad("the tag must come last, before '|'");
    if (k == 0) {
      if (absl::StrContains(words[k], ':')) {
        // Vowpal Wabbit's cost-sensitive and contextual-bandit labels.
        return Bad(absl::StrCat(
            "label ", Quoted(words[k]),
            " is Vowpal Wabbit's class:cost form; the perceptron reads a "
            "label alone (a class, or -1/+1)"));
      }
      if (absl::Status s = SetLabel(words[k], e); !s.ok()) return s;
    } else if (k == 1) {
      double w;
      if (!absl::SimpleAtod(words[k], &w) || w != 1.0) {
        return Bad(absl::StrCat(
            "importance weight ", Excerpt(words[k]),
            ": the perceptron learns each example once, so only 1 is "
            "accepted (repeat the line to count it more)"));
      }
    } else if (double v; k == 2 && absl::SimpleAtod(words[k], &v)) {
      return Bad(absl::StrCat(
          "initial prediction ", Excerpt(words[k]),
          " (Vowpal Wabbit's third number before '|'): the perceptron has no "
          "starting score an example (label [1] ['tag] expected)"));
    } else {
      return Bad(absl::StrCat("cannot read ", Quoted(words[k]),
                              " before '|' (label [1] ['tag] expected)"));
    }
  }
  if (!e->label && options_.require_labels) {
    if (n == 0 && !tag.empty() && tag[0] != '\'') {
      // "1|a x": Vowpal Wabbit takes 1 for the tag and learns nothing.
      return Bad(absl::StrCat("no label: ", Quoted(tag),
                              " touches the '|', which makes it the line's "
                              "tag, as Vowpal Wabbit reads it (",
                              Quoted(absl::StrCat(tag, " |...")),
                              " for a label)"));
    }
    return Bad("no label");
  }
  // The namespaces: "|name[:scale] f..." or "| f..." (the default one).
  absl::string_view rest = text.substr(bar + 1);
  for (bool more = true; more;) {
    const size_t next = rest.find('|');
    absl::string_view part = rest.substr(0, next);
    more = next != absl::string_view::npos;
    if (more) rest.remove_prefix(next + 1);
    absl::string_view space;
    double scale = 1.0;
    absl::string_view token;
    if (!part.empty() && part[0] != ' ' && part[0] != '\t') {
      NextToken(&part, &token);
      const size_t colon = token.find(':');
      space = token.substr(0, colon);
      if (space.empty()) return Bad("a namespace's name is empty");
      const absl::string_view scale_text =
          colon == absl::string_view::npos ? "" : token.substr(colon + 1);
      if (colon != absl::string_view::npos &&
          (!absl::SimpleAtod(scale_text, &scale) || !std::isfinite(scale))) {
        return Bad(absl::StrCat("namespace ", Excerpt(space), ": scale ",
                                Quoted(scale_text), " is not a finite number"));
      }
    }
    while (NextToken(&part, &token)) {
      const size_t colon = token.find(':');
      const absl::string_view name = token.substr(0, colon);
      if (name.empty()) {
        return Bad(absl::StrCat("feature ", Quoted(token),
                                " has no name (anonymous features are not "
                                "taken)"));
      }
      // As Vowpal Wabbit reads them: "x:" is x with the value 1, and
      // "x:a:b" the categorical value "a:b" (all after the first ':').
      const absl::string_view value = colon == absl::string_view::npos
                                          ? absl::string_view()
                                          : token.substr(colon + 1);
      const bool has_value = !value.empty();
      if (absl::Status s =
              AddNamed(space, name, value, has_value, scale, ascii, e);
          !s.ok()) {
        return Bad(s.message());
      }
    }
  }
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
  d.default_label_column = r.DefaultLabelColumn();
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
