// The commands that stream data: train, fit, predict, reveal (generate is
// in generate.cc).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/checks.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"
#include "client/cli/labels.h"
#include "client/data_reader.h"
#include "core/quoted.h"

namespace perceptron::client::cli {

namespace {

// OK unless --positive is given for a multiclass model (of `classes`): one
// class against the rest is a binary model's, and a multiclass model's
// labels are its classes' names.
absl::Status PositiveFits(const std::vector<std::string>& classes) {
  const std::string positive = absl::GetFlag(FLAGS_positive);
  if (positive.empty() || classes.empty()) return absl::OkStatus();
  const size_t shown = std::min<size_t>(classes.size(), 10);
  return absl::InvalidArgumentError(absl::StrCat(
      "--positive=", Quoted(positive),
      " makes labels -1/+1 for a binary model; this model's labels are the "
      "names of its ",
      classes.size(), " classes (",
      absl::StrJoin(classes.begin(), classes.begin() + shown, ", "),
      shown < classes.size() ? ", ...)" : ")"));
}

// `hashed`: the model takes features by name, so a CSV file is read by its
// header's names.
absl::StatusOr<ReadOptions> ReadOptionsFromFlags(
    bool require_labels, bool hashed,
    const std::vector<std::string>& classes = {}) {
  ReadOptions o;
  o.named = hashed;
  o.classes = classes;
  const std::string f = absl::GetFlag(FLAGS_format);
  if (f == "libsvm") {
    o.format = Format::kLibsvm;
  } else if (f == "csv") {
    o.format = Format::kCsv;
  } else if (f == "vw") {
    o.format = Format::kVw;
  } else if (f == "jsonl") {
    o.format = Format::kJsonl;
  } else if (f != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", f, " is not auto, libsvm, csv, vw or jsonl"));
  }
  o.positive_label = absl::GetFlag(FLAGS_positive);
  if (absl::Status s = PositiveFits(classes); !s.ok()) return s;
  o.index_base = absl::GetFlag(FLAGS_index_base);
  const std::string label = absl::GetFlag(FLAGS_label_column);
  if (!label.empty() && !absl::SimpleAtoi(label, &o.label_column)) {
    o.label_name = label;
  }
  o.require_labels = require_labels;
  return o;
}

// train and fit --create: the classes the file's labels named, and the CSV
// column they came from when it was the last for want of another (a header's
// first column is as often the label).
void SayClasses(const std::string& model,
                const std::vector<std::string>& classes,
                const std::string& label_column) {
  std::printf("classes of %s: %s%s\n", model.c_str(),
              absl::StrJoin(classes, ",").c_str(),
              label_column.empty()
                  ? ""
                  : absl::StrCat(" (the labels of ", label_column,
                                 ", the last; --label_column=NAME for another)")
                        .c_str());
}

// `classes`: a multiclass model's, which labels name; `raw_labels`: labels
// kept as written (ReadOptions::raw_labels), to collect a file's classes.
absl::StatusOr<std::unique_ptr<DataReader>> OpenData(
    const std::string& path, bool require_labels, bool hashed,
    const std::vector<std::string>& classes = {}, bool raw_labels = false) {
  absl::StatusOr<ReadOptions> o =
      ReadOptionsFromFlags(require_labels, hashed, classes);
  if (!o.ok()) return o.status();
  o->raw_labels = raw_labels;
  return DataReader::Open(path, *o);
}

absl::StatusOr<Dataset> LoadData(const std::string& path, bool require_labels,
                                 bool hashed,
                                 const std::vector<std::string>& classes = {},
                                 bool raw_labels = false) {
  absl::StatusOr<ReadOptions> o =
      ReadOptionsFromFlags(require_labels, hashed, classes);
  if (!o.ok()) return o.status();
  o->raw_labels = raw_labels;
  return ReadDataFile(path, *o);
}

// train and fit --create of a file whose features are names (Vowpal Wabbit's
// text, JSON lines, or a CSV file with a header and, in its first
// kCsvProbeRows examples, a feature cell that is neither a number nor
// empty), given neither --dim, --hash_bits nor --feature_names_file: the
// model hashes them into 2^18 coordinates, as Vowpal Wabbit does by default
// (binary or multiclass: a wide model's certificate works over the
// coordinates its rows use). HashNamesByDefault sets the flag then, and says
// so.
constexpr uint32_t kDefaultHashBits = 18;
constexpr uint64_t kCsvProbeRows = 1000;

// The first cell of a CSV file (not "-": read once) that makes it a file of
// names (DataReader::categorical_cell), or empty.
std::string CategoricalCell(const std::string& path, ReadOptions o) {
  if (path == "-") return "";
  o.raw_labels = true;  // any label: only the features matter here
  absl::StatusOr<std::unique_ptr<DataReader>> reader =
      DataReader::Open(path, o);
  if (!reader.ok()) return "";  // said when the file is opened again
  Example e;
  while ((*reader)->examples() < kCsvProbeRows) {
    absl::StatusOr<bool> more = (*reader)->Next(&e);
    if (!more.ok()) return (*reader)->categorical_cell();
    if (!*more) break;
  }
  return "";
}

void HashNamesByDefault(const std::string& path) {
  if (ByNameFromFlags() || absl::GetFlag(FLAGS_dim) != 0) return;
  absl::StatusOr<ReadOptions> o = ReadOptionsFromFlags(true, false);
  if (!o.ok()) return;  // said when the file is opened
  const Format f = ResolveFormat(path, o->format);
  std::string why;
  if (f == Format::kCsv) {
    why = CategoricalCell(path, *o);
    if (why.empty()) return;
    why = absl::StrCat(" (", why,
                       " is not a number): read by the header's "
                       "names, a cell that is not a number as a categorical "
                       "feature, and");
  } else if (f != Format::kVw && f != Format::kJsonl) {
    return;
  }
  absl::SetFlag(&FLAGS_hash_bits, kDefaultHashBits);
  std::printf(
      "the features of %s are names%s hashed into 2^%u coordinates as Vowpal "
      "Wabbit hashes them (--hash_bits=B to choose)\n",
      path == "-" ? "standard input" : path.c_str(),
      why.empty() ? ":" : why.c_str(), kDefaultHashBits);
}

// Sets --batch to the examples a request to `model` (BatchForTheServer: as
// given, or else `fallback` within the server's limit) and returns 0, or the
// exit code of a usage error saying why a given one is over the limit.
int SetBatch(Client& client, const std::string& model,
             uint32_t fallback = kDefaultBatch) {
  const absl::StatusOr<uint32_t> batch =
      BatchForTheServer(client, model, fallback);
  if (!batch.ok()) return Usage(std::string(batch.status().message()));
  absl::SetFlag(&FLAGS_batch, *batch);
  return 0;
}

}  // namespace

int Fit(const Args& args) {
  if (args.size() != 1) return Usage("fit takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("fit needs --model");
  std::unique_ptr<Client> client = Connect();
  absl::StatusOr<v1::Model> m = client->GetModel(model);
  const bool create = !m.ok() &&
                      m.status().code() == absl::StatusCode::kNotFound &&
                      absl::GetFlag(FLAGS_create);
  if (!m.ok() && !create) return Fail(WithCreateHint(m.status(), "fit"));
  if (m.ok()) SayCreateFlagsUnused(*m);
  if (create) HashNamesByDefault(args[0]);
  const bool hashed = create ? ByNameFromFlags() : ByName(m->config());
  std::vector<std::string> classes =
      create ? absl::GetFlag(FLAGS_classes) : ClassesOf(m->config());
  // fit --create without --classes (or --positive): the file's labels say
  // whether the model is multiclass, and its classes, as for train.
  const bool collect =
      create && classes.empty() && absl::GetFlag(FLAGS_positive).empty();
  // One Train request carries the whole set, so it is read whole.
  absl::StatusOr<Dataset> data =
      LoadData(args[0], /*require_labels=*/true, hashed, classes, collect);
  if (!data.ok()) return FailLocal(data.status());
  if (collect) {
    LabelsSeen seen;
    for (size_t i = 0; i < data->examples.size(); ++i) {
      absl::Status s =
          seen.See(data->examples[i].raw_label, args[0], data->lines[i]);
      if (!s.ok()) return FailLocal(s);
    }
    absl::StatusOr<std::vector<std::string>> found = seen.Classes(args[0]);
    if (!found.ok()) return FailLocal(found.status());
    classes = *std::move(found);
    // Each label as a class index, or -1/+1 when the file has no other (each
    // names one: the classes came from them).
    for (Example& e : data->examples) {
      int label = 0;
      LabelOf(e.raw_label, classes, &label);
      e.label = label;
    }
  }
  // One Train request: within the server's limits on items and bytes a
  // request (as its status says them), or nothing is created or sent.
  const v1::TrainRequest request =
      TrainRequestOf(model, data->examples, absl::GetFlag(FLAGS_max_epochs));
  if (absl::Status s = FitsOneRequest(*client, args[0], request); !s.ok()) {
    return FailLocal(s);
  }
  if (create) {
    absl::StatusOr<v1::ModelConfig> config =
        ConfigFromFlags(absl::GetFlag(FLAGS_dim) != 0 ? absl::GetFlag(FLAGS_dim)
                                                      : data->dimension,
                        classes);
    if (!config.ok()) return FailLocal(config.status());
    m = client->CreateModel(model, *config);
    if (m.ok() && collect && !classes.empty()) {
      SayClasses(model, classes, data->default_label_column);
    }
  }
  if (!m.ok()) return Fail(m.status());
  for (size_t k = 0; k < data->examples.size(); ++k) {
    absl::Status s = FitsTheModel(args[0], data->lines[k], data->index_base,
                                  data->examples[k], ShapeOf(m->config()));
    if (!s.ok()) return FailLocal(s);
  }
  absl::StatusOr<v1::TrainResponse> r = client->Train(request);
  if (!r.ok()) return Fail(r.status());
  std::printf("fit %s on %s: %u pass%s, %s, %llu updates (%llu mistakes)\n",
              model.c_str(), args[0].c_str(), r->epochs(),
              r->epochs() == 1 ? "" : "es",
              r->converged() ? "separated" : "not separated",
              static_cast<unsigned long long>(r->updates()),
              static_cast<unsigned long long>(r->mistakes()));
  return 0;
}

// train: streams the file (or standard input) in batches, holding only what
// is in flight. A file is read twice: first to check every line and its fit
// to the model before anything is sent (and to count, for the progress bar),
// then to send; standard input is checked as it is sent.
int Train(const Args& args) {
  if (args.size() != 1) return Usage("train takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("train needs --model");
  const uint32_t epochs = absl::GetFlag(FLAGS_epochs);
  if (epochs == 0) return Usage("--epochs must be at least 1");
  const absl::Time start = absl::Now();
  std::unique_ptr<Client> client = Connect();
  if (int rc = SetBatch(*client, model); rc != 0) return rc;
  absl::StatusOr<v1::Model> m = client->GetModel(model);
  const bool create = !m.ok() &&
                      m.status().code() == absl::StatusCode::kNotFound &&
                      absl::GetFlag(FLAGS_create);
  if (!m.ok() && !create) return Fail(WithCreateHint(m.status(), "train"));
  if (m.ok()) SayCreateFlagsUnused(*m);
  if (create) HashNamesByDefault(args[0]);
  const bool hashed = create ? ByNameFromFlags() : ByName(m->config());
  std::vector<std::string> classes =
      create ? absl::GetFlag(FLAGS_classes) : ClassesOf(m->config());
  // train --create of a file without --classes (or --positive): the file's
  // labels say whether the model is multiclass, and its classes.
  const bool collect = create && classes.empty() &&
                       absl::GetFlag(FLAGS_positive).empty() && args[0] != "-";
  absl::StatusOr<std::unique_ptr<DataReader>> opened =
      OpenData(args[0], /*require_labels=*/true, hashed, classes, collect);
  if (!opened.ok()) return FailLocal(opened.status());
  DataReader& reader = **opened;
  const bool file = reader.seekable();
  if (epochs > 1 && !file) {
    return Usage(
        "--epochs above 1 needs a file that can be read again, not "
        "a pipe");
  }
  const bool skip = absl::GetFlag(FLAGS_skip_rejected);
  const absl::Duration retry_for = absl::GetFlag(FLAGS_retry_for);
  const bool retry = retry_for > absl::ZeroDuration();
  if (retry && skip) {
    return Usage(
        "--retry_for and --skip_rejected do not go together: the stream "
        "resumes after the examples the model holds, which rejected ones "
        "are not");
  }
  uint32_t dimension =
      create ? absl::GetFlag(FLAGS_dim) : m->config().dimension();
  ProgressLine progress(ShowProgress());
  uint64_t per_pass = 0;  // examples in the file; 0 for standard input
  Example e;
  LabelsSeen labels_seen;    // collect
  std::string label_column;  // DataReader::DefaultLabelColumn
  Shape checked = create ? ShapeFromFlags(dimension) : ShapeOf(m->config());
  checked.dimension = dimension;
  if (file) {
    while (true) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) return FailLocal(more.status());
      if (!*more) break;
      absl::Status s =
          collect ? labels_seen.See(e.raw_label, reader.name(), reader.line())
                  : absl::OkStatus();
      if (s.ok()) {
        s = FitsTheModel(reader.name(), reader.line(), reader.index_base(), e,
                         checked);
      }
      if (!s.ok()) return FailLocal(s);
      progress.Draw(reader.bytes_read(), reader.size(), [&] {
        return absl::StrCat("checking ", args[0], ": ", reader.examples(),
                            reader.examples() == 1 ? " example" : " examples");
      });
    }
    per_pass = reader.examples();
    if (dimension == 0) dimension = reader.dimension();
    if (collect) {
      absl::StatusOr<std::vector<std::string>> found =
          labels_seen.Classes(args[0]);
      if (!found.ok()) return FailLocal(found.status());
      classes = *std::move(found);
      reader.set_classes(classes);  // none: -1/+1 as before
    }
    label_column = reader.DefaultLabelColumn();
    if (absl::Status s = reader.Rewind(); !s.ok()) return FailLocal(s);
  } else if (create && dimension == 0 && !hashed) {
    return Usage(
        "train --create from standard input needs --dim (its vectors are not "
        "read twice), or --format=vw or --format=jsonl for features by name "
        "(hashed into 2^18 coordinates, or --hash_bits=B)");
  }
  if (create) {
    absl::StatusOr<v1::ModelConfig> config =
        ConfigFromFlags(dimension, classes);
    if (!config.ok()) return FailLocal(config.status());
    m = client->CreateModel(model, *config);
    if (!m.ok()) return Fail(m.status());
    dimension = m->config().dimension();
    if (collect && !classes.empty()) {
      SayClasses(model, classes, label_column);
    }
  }
  const uint64_t total = per_pass * epochs;
  // The file's line of each example sent and not yet answered, to name the
  // line of one the server rejects.
  absl::Mutex mu;
  std::deque<size_t> lines_in_flight;  // guarded by mu
  std::atomic<bool> rejected{false};
  size_t rejected_line = 0;
  std::string rejected_why;
  std::atomic<uint64_t> answered{0};
  int resumed = 0;
  SessionOptions so;
  so.batch_size = absl::GetFlag(FLAGS_batch);
  so.max_in_flight = absl::GetFlag(FLAGS_in_flight);
  so.columnar = absl::GetFlag(FLAGS_columnar);
  so.on_response = [&](const v1::LearnResponse& r) {
    {
      absl::MutexLock lock(&mu);
      for (int i = 0; i < r.results_size(); ++i) {
        const size_t line = lines_in_flight.front();
        lines_in_flight.pop_front();
        if (!r.results(i).has_error() || rejected) continue;
        rejected_line = line;
        rejected_why = r.results(i).error().message();
        rejected = true;  // published after what it guards
      }
    }
    const uint64_t n = answered += r.results_size();
    const double rate =
        n / std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - start));
    progress.Draw(
        n, total,
        [&] {
          return absl::StrFormat(
              "%llu%s  mistakes %llu  updates %llu  bound %s  %.0f ex/s",
              static_cast<unsigned long long>(n),
              total > 0 ? absl::StrCat("/", total) : "",
              static_cast<unsigned long long>(r.stats().mistakes()),
              static_cast<unsigned long long>(r.stats().updates()),
              BoundText(r.stats()), rate);
        },
        n == total);
  };
  if (retry) {
    // The session resumes a broken stream by itself (SessionOptions::
    // retry_for): once the model answers again, on a connection of its own,
    // the examples it holds say where to go on, and each request carries the
    // count the model must hold before it, so that none is lost or learned
    // twice.
    so.retry_for = retry_for;
    if (create) so.if_examples = 0;  // a new model holds none
    so.on_break = [&](const absl::Status& broke, uint64_t acknowledged) {
      progress.End();
      std::fprintf(stderr,
                   "perceptron: the stream broke after %llu examples were "
                   "acknowledged (%s: %s); waiting up to %s for %s\n",
                   static_cast<unsigned long long>(acknowledged),
                   absl::StatusCodeToString(broke.code()).c_str(),
                   std::string(broke.message()).c_str(),
                   absl::FormatDuration(retry_for).c_str(), model.c_str());
    };
    so.on_resume = [&](const Resumption& r) {
      {
        absl::MutexLock lock(&mu);
        // Learned without an answer: their lines are done with.
        for (uint64_t i = r.answered; i < r.held && !lines_in_flight.empty();
             ++i) {
          lines_in_flight.pop_front();
        }
      }
      answered = r.held;
      ++resumed;
      std::fprintf(stderr,
                   "perceptron: %s holds %llu: resuming at example %llu%s\n",
                   model.c_str(), static_cast<unsigned long long>(r.held),
                   static_cast<unsigned long long>(r.held),
                   total > 0 ? absl::StrCat(" of ", total).c_str() : "");
    };
  }
  progress.Draw(
      0, total, [&] { return absl::StrCat("sending ", args[0]); }, true);
  absl::Status local;  // a line of standard input that cannot be sent
  absl::Status added;
  const Shape shape = ShapeOf(m->config());
  std::unique_ptr<LearnSession> session = client->OpenLearnSession(model, so);
  for (uint32_t epoch = 0; epoch < epochs && added.ok() && local.ok();
       ++epoch) {
    if (epoch > 0) local = reader.Rewind();
    while (local.ok() && (skip || !rejected)) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) local = more.status();
      if (!local.ok() || !*more) break;
      local = FitsTheModel(reader.name(), reader.line(), reader.index_base(), e,
                           shape);
      if (!local.ok()) break;
      {
        absl::MutexLock lock(&mu);
        lines_in_flight.push_back(reader.line());
      }
      added = session->AddLabeled(e);
      if (!added.ok()) break;
    }
  }
  absl::StatusOr<SessionSummary> summary = session->Finish();
  session.reset();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  progress.End();
  // The rejected example's line, where the server's refusal names its place
  // in a batch.
  auto rejected_at = [&] {
    absl::string_view why = rejected_why;
    if (absl::ConsumePrefix(&why, "item ")) {
      why.remove_prefix(std::min(why.size(), why.find(": ") + 2));
    }
    return absl::StrFormat("%s:%zu: rejected: %s", reader.name(), rejected_line,
                           why);
  };
  if (!summary.ok() && rejected) {
    // With --retry_for the session ends at the first example refused.
    std::fprintf(stderr,
                 "perceptron: %s\nperceptron: sending stopped there "
                 "(--retry_for stops at the first rejected example; the "
                 "batches after its own were not applied)\n",
                 rejected_at().c_str());
    return 1;
  }
  if (!summary.ok()) {
    const int rc = Fail(summary.status());
    // The server answered with a refusal: what the model holds now (the
    // requests before the refused one were learned). Not when it could not
    // be reached, where asking would wait again.
    const absl::StatusCode code = summary.status().code();
    if (code == absl::StatusCode::kUnavailable ||
        code == absl::StatusCode::kDeadlineExceeded) {
      return rc;
    }
    if (absl::StatusOr<v1::ModelStatus> now = client->GetStatus(model);
        now.ok()) {
      std::fprintf(stderr,
                   "perceptron: %s now: %llu examples, %llu mistakes, %llu "
                   "updates (the requests before the refused one were "
                   "learned)\n",
                   model.c_str(),
                   static_cast<unsigned long long>(now->stats().examples()),
                   static_cast<unsigned long long>(now->stats().mistakes()),
                   static_cast<unsigned long long>(now->stats().updates()));
    }
    return rc;
  }
  // Examples learned: those answered, and those a broken stream had the model
  // learn without an answer.
  const uint64_t learned = summary->items + summary->unanswered;
  const v1::ModelStats s =
      AwaitCertificate(*client, model, summary->stats, absl::Seconds(2));
  // A run that stopped short says so below, not "trained".
  const bool stopped = !local.ok() || summary->item_errors > 0;
  if (!stopped) {
    std::printf(
        "trained %s on %s: %llu examples in %.3f s (%.0f examples/s, "
        "reading included), %llu request%s (%llu as columns)\n",
        model.c_str(), reader.name().c_str(),
        static_cast<unsigned long long>(learned), seconds,
        learned / std::max(seconds, 1e-9),
        static_cast<unsigned long long>(summary->requests),
        summary->requests == 1 ? "" : "s",
        static_cast<unsigned long long>(summary->columnar_requests));
  }
  if (resumed > 0) {
    std::printf(
        "resumed %d time(s) after a broken stream; %llu examples were "
        "learned without an answer\n",
        resumed, static_cast<unsigned long long>(summary->unanswered));
  }
  std::printf(
      "model now: %llu examples, %llu mistakes, %llu updates, bound %s\n",
      static_cast<unsigned long long>(s.examples()),
      static_cast<unsigned long long>(s.mistakes()),
      static_cast<unsigned long long>(s.updates()), BoundSaid(s).c_str());
  if (!local.ok()) {
    std::fprintf(stderr,
                 "perceptron: %s\nperceptron: sending stopped there; the "
                 "%llu examples before it were applied\n",
                 std::string(local.message()).c_str(),
                 static_cast<unsigned long long>(learned));
    return 1;
  }
  if (summary->item_errors > 0) {
    std::fprintf(stderr,
                 "perceptron: %s\nperceptron: %llu example(s) rejected%s\n",
                 rejected_at().c_str(),
                 static_cast<unsigned long long>(summary->item_errors),
                 skip ? " and skipped (--skip_rejected)"
                      : "; sending stopped there, batches already in "
                        "flight were applied (--skip_rejected to go on)");
    return 1;
  }
  return 0;
}

int Predict(const Args& args) {
  if (args.size() != 1) return Usage("predict takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("predict needs --model");
  std::unique_ptr<Client> client = Connect();
  // Plain predict waits for each answer: larger requests, fewer round trips.
  const uint32_t fallback =
      absl::GetFlag(FLAGS_issue) ? kDefaultBatch : kDefaultPredictBatch;
  if (int rc = SetBatch(*client, model, fallback); rc != 0) return rc;
  absl::StatusOr<v1::Model> m = client->GetModel(model);
  if (!m.ok()) return Fail(m.status());
  // A multiclass model's labels in the file are not read (any is taken).
  const std::vector<std::string> classes = ClassesOf(m->config());
  if (absl::Status s = PositiveFits(classes); !s.ok()) return FailLocal(s);
  absl::StatusOr<std::unique_ptr<DataReader>> opened =
      OpenData(args[0], /*require_labels=*/false, ByName(m->config()), {},
               /*raw_labels=*/!classes.empty());
  if (!opened.ok()) return FailLocal(opened.status());
  DataReader& reader = **opened;
  // A CSV row of exactly the model's dimension has no label column.
  if (!ByName(m->config())) reader.set_unlabeled_width(m->config().dimension());
  Example e;
  absl::Status local;
  // A file is checked whole before anything is sent or printed (standard
  // input each example as it is read): an example the model cannot take is
  // named by its line.
  const Shape shape = ShapeOf(m->config());
  if (reader.seekable()) {
    while (true) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) return FailLocal(more.status());
      if (!*more) break;
      absl::Status s = FitsTheModel(reader.name(), reader.line(),
                                    reader.index_base(), e, shape);
      if (!s.ok()) return FailLocal(s);
    }
    if (absl::Status s = reader.Rewind(); !s.ok()) return FailLocal(s);
  }
  // A label as printed: +1/-1, or a multiclass model's class name.
  auto label_text = [&classes](int label) {
    if (classes.empty()) return absl::StrFormat("%+d", label);
    return label >= 0 && static_cast<size_t>(label) < classes.size()
               ? classes[label]
               : absl::StrCat(label);
  };
  if (absl::GetFlag(FLAGS_issue)) {
    SessionOptions so;
    so.batch_size = absl::GetFlag(FLAGS_batch);
    so.columnar = absl::GetFlag(FLAGS_columnar);
    so.on_response = [&label_text](const v1::LearnResponse& r) {
      for (const v1::ItemResult& item : r.results()) {
        if (item.has_prediction()) {
          std::printf("%llu %s %.17g\n",
                      static_cast<unsigned long long>(
                          item.prediction().prediction_id()),
                      label_text(item.prediction().label()).c_str(),
                      item.prediction().score());
        } else {
          std::fprintf(stderr, "perceptron: %s\n",
                       item.error().message().c_str());
        }
      }
    };
    std::unique_ptr<LearnSession> session = client->OpenLearnSession(model, so);
    while (true) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) local = more.status();
      if (!local.ok() || !*more) break;
      local = FitsTheModel(reader.name(), reader.line(), reader.index_base(), e,
                           shape);
      if (!local.ok() || !session->AddExample(e).ok()) break;
    }
    absl::StatusOr<SessionSummary> summary = session->Finish();
    if (!summary.ok()) return Fail(summary.status());
    if (!local.ok()) return FailLocal(local);
    return summary->item_errors > 0 ? 1 : 0;
  }
  const size_t batch = std::max<uint32_t>(1, absl::GetFlag(FLAGS_batch));
  std::vector<Example> chunk;
  std::vector<size_t> lines;  // of chunk's examples
  bool end = false;
  while (!end) {
    chunk.clear();
    lines.clear();
    // --batch examples a request, fewer where their features pass kBatchBytes.
    size_t bytes = 0;
    while (chunk.size() < batch && bytes < kBatchBytes) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) return FailLocal(more.status());
      if (!*more) {
        end = true;
        break;
      }
      absl::Status s = FitsTheModel(reader.name(), reader.line(),
                                    reader.index_base(), e, shape);
      if (!s.ok()) return FailLocal(s);
      bytes += RequestBytes(e);
      chunk.push_back(std::move(e));
      lines.push_back(reader.line());
    }
    if (chunk.empty()) break;
    absl::StatusOr<v1::PredictResponse> r = client->Predict(model, chunk);
    if (!r.ok()) {
      // The server's "item K: why" names the file's line instead.
      return Fail(
          absl::Status(r.status().code(),
                       AtLine(reader.name(), r.status().message(), lines)));
    }
    for (const v1::Prediction& p : r->predictions())
      std::printf("%s %.17g\n", label_text(p.label()).c_str(), p.score());
  }
  return 0;
}

// reveal: labels as ID:LABEL arguments, or lines "ID LABEL" (more columns,
// as predict --issue prints, are ignored) from files or standard input ("-").
int Reveal(const Args& args) {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("reveal needs --model");
  if (args.empty()) {
    return Usage(
        "reveal takes ID:LABEL pairs, or a FILE (\"-\": standard "
        "input) of \"ID LABEL\" lines");
  }
  std::unique_ptr<Client> client = Connect();
  if (int rc = SetBatch(*client, model); rc != 0) return rc;
  // A multiclass model's labels are its class names.
  absl::StatusOr<v1::Model> m = client->GetModel(model);
  if (!m.ok()) return Fail(m.status());
  const std::vector<std::string> classes = ClassesOf(m->config());
  auto parse_label = [&classes](absl::string_view text, int* label) {
    return LabelOf(text, classes, label);
  };
  const std::string label_rule =
      classes.empty() ? std::string("a label is +1/1 or -1/0")
                      : absl::StrCat("a label is one of the model's classes: ",
                                     absl::StrJoin(classes, ", "));
  std::atomic<int> rc{0};
  SessionOptions so;
  so.batch_size = absl::GetFlag(FLAGS_batch);
  so.columnar = absl::GetFlag(FLAGS_columnar);
  // A line per prediction revealed: what was issued, whether it was a
  // mistake (judged on the issued prediction), and whether the model changed
  // (judged on its weights now: a right prediction issued earlier may be
  // learned from if the weights have moved since). Errors on standard error.
  // Where each label sent and not yet answered came from ("FILE:LINE", or
  // the argument), to name it in an error.
  absl::Mutex mu;
  std::deque<std::string> places;  // guarded by mu
  so.on_response = [&](const v1::LearnResponse& r) {
    for (const v1::ItemResult& item : r.results()) {
      std::string place;
      {
        absl::MutexLock lock(&mu);
        if (!places.empty()) {
          place = std::move(places.front());
          places.pop_front();
        }
      }
      if (item.has_error()) {
        std::fprintf(stderr, "perceptron: %s: %s\n", place.c_str(),
                     std::string(WithoutItem(item.error().message())).c_str());
        rc = 1;
        continue;
      }
      const v1::Outcome& o = item.outcome();
      const std::string issued =
          classes.empty() ? (o.label() > 0 ? "+1" : "-1")
          : o.label() >= 0 && static_cast<size_t>(o.label()) < classes.size()
              ? classes[static_cast<size_t>(o.label())]
              : absl::StrCat(o.label());
      std::printf("%llu: issued %s, %s; %s\n",
                  static_cast<unsigned long long>(o.prediction_id()),
                  issued.c_str(), o.mistake() ? "a mistake" : "right",
                  o.updated() ? (o.mistake() ? "the model learned from it"
                                             : "the model learned from it "
                                               "(its weights now erred on it)")
                              : "the model is unchanged");
    }
  };
  // Every argument is checked before anything is sent; a file's lines as
  // they are read.
  for (const std::string& a : args) {
    if (!absl::StrContains(a, ':') && a != "-" &&
        access(a.c_str(), R_OK) != 0) {
      return FailLocal(absl::NotFoundError(absl::StrCat(
          "cannot read ", a, " (", std::strerror(errno),
          "); reveal takes ID:LABEL pairs or files of \"ID LABEL\" lines")));
    }
    std::pair<std::string, std::string> kv =
        absl::StrSplit(a, absl::MaxSplits(':', 1));
    uint64_t id;
    int label;
    if (absl::StrContains(a, ':') &&
        (!absl::SimpleAtoi(kv.first, &id) || !parse_label(kv.second, &label))) {
      return Usage(
          absl::StrCat("\"", a, "\" is not ID:LABEL (", label_rule, ")"));
    }
  }
  std::unique_ptr<LearnSession> session = client->OpenLearnSession(model, so);
  absl::Status local;
  for (const std::string& a : args) {
    if (absl::StrContains(a, ':')) {
      std::pair<std::string, std::string> kv =
          absl::StrSplit(a, absl::MaxSplits(':', 1));
      uint64_t id = 0;
      int label = 0;
      (void)absl::SimpleAtoi(kv.first, &id);
      (void)parse_label(kv.second, &label);
      {
        absl::MutexLock lock(&mu);
        places.push_back(absl::StrCat("argument ", a));
      }
      if (!session->AddReveal(id, label).ok()) break;
      continue;
    }
    std::ifstream file;
    if (a != "-") file.open(a);
    std::istream& in = a == "-" ? std::cin : file;
    const std::string name = a == "-" ? "standard input" : a;
    std::string line;
    size_t n = 0;
    while (local.ok() && std::getline(in, line)) {
      ++n;
      absl::string_view text = line;
      if (size_t hash = text.find('#'); hash != absl::string_view::npos)
        text = text.substr(0, hash);
      std::vector<absl::string_view> cells =
          absl::StrSplit(text, absl::ByAnyChar(" \t,"), absl::SkipEmpty());
      if (cells.empty()) continue;
      uint64_t id;
      int label;
      if (cells.size() < 2 || !absl::SimpleAtoi(cells[0], &id) ||
          !parse_label(cells[1], &label)) {
        local = absl::InvalidArgumentError(
            absl::StrCat(name, ":", n, ": \"", absl::StripAsciiWhitespace(line),
                         "\" is not \"ID LABEL\" (", label_rule, ")"));
        break;
      }
      {
        absl::MutexLock lock(&mu);
        places.push_back(absl::StrCat(name, ":", n));
      }
      if (!session->AddReveal(id, label).ok()) break;
    }
    if (!local.ok()) break;
  }
  absl::StatusOr<SessionSummary> summary = session->Finish();
  if (!summary.ok()) return Fail(summary.status());
  if (!local.ok()) {
    FailLocal(local);
    std::fprintf(stderr,
                 "perceptron: sending stopped there; the %llu labels before "
                 "it were sent (their results are above)\n",
                 static_cast<unsigned long long>(summary->items));
    return 1;
  }
  return rc;
}

}  // namespace perceptron::client::cli
