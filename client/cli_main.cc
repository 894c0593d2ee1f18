// perceptron: the command-line client of perceptrond. Its commands (create,
// list, get, delete, reset, weights, health, train, fit, predict, reveal,
// status, watch, plot, export, import, generate) are listed in kUsage below,
// which `perceptron --help` prints.
//
// Results go to standard output, progress and errors to standard error. Exit
// status: 0 on success, 1 on failure, 2 for a usage error.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/data_reader.h"
#include "client/generator.h"
#include "client/plot.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of perceptrond");
ABSL_FLAG(std::string, tls_ca, "",
          "Use TLS: the CA that signed the server's certificate (PEM)");
ABSL_FLAG(std::string, tls_cert, "",
          "Mutual TLS: this client's certificate chain (PEM)");
ABSL_FLAG(std::string, tls_key, "",
          "Mutual TLS: this client's private key (PEM)");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(3),
          "How long to wait for a connection to the server before a call "
          "(a failed attempt is retried after about 1 s); 0: fail at the "
          "first failed attempt");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(60),
          "Deadline of each call; a model's export, import or weights move "
          "in one call, so a very large model on a slow link may need more");
ABSL_FLAG(std::string, token_file, "",
          "A file holding the bearer token (else the PERCEPTRON_TOKEN "
          "environment variable)");
ABSL_FLAG(std::string, model, "", "The model (train, predict, reveal)");
// create
ABSL_FLAG(uint32_t, dim, 0, "create: input dimension d");
ABSL_FLAG(std::string, algorithm, "classic",
          "create: classic, margin, averaged, voted or kernel");
ABSL_FLAG(double, eta, 1.0, "create: learning rate");
ABSL_FLAG(bool, bias, true, "create: append a constant coordinate");
ABSL_FLAG(double, bias_constant, 1.0, "create: the constant");
ABSL_FLAG(bool, normalize, true, "create: scale examples to unit norm");
ABSL_FLAG(double, gamma, 0, "create: margin gamma (0: none)");
ABSL_FLAG(
    std::string, comparator_file, "",
    "create: a file of d or d+1 numbers, the comparator u (needs --gamma)");
ABSL_FLAG(std::string, kernel, "linear",
          "create: linear, polynomial or rbf (kernel algorithm)");
ABSL_FLAG(uint32_t, degree, 2, "create: polynomial degree");
ABSL_FLAG(double, c0, 1.0, "create: polynomial offset");
ABSL_FLAG(double, sigma, 1.0, "create: rbf width");
ABSL_FLAG(uint64_t, budget, 10000, "create: kernel budget (stored mistakes)");
ABSL_FLAG(bool, skip_rejected, false,
          "train: go on past examples the server rejects, counting them "
          "(default: stop at the first rejected batch)");
ABSL_FLAG(uint64_t, max_voted, 1000,
          "create: voted perceptron's stored vectors");
// data
ABSL_FLAG(std::string, format, "auto", "train/predict: auto, libsvm or csv");
ABSL_FLAG(std::string, positive, "",
          "train: the raw label that is +1 (others -1); default maps +1/1 to "
          "+1, -1/0 to -1");
ABSL_FLAG(int, index_base, 1,
          "LIBSVM: the first feature index (1 for SVMlight files)");
ABSL_FLAG(int, label_column, -1,
          "CSV: the label's column from 0 (-1: the last)");
// train
ABSL_FLAG(bool, create, false,
          "train: create the model (classic, defaults) if missing");
ABSL_FLAG(uint32_t, epochs, 1, "train: passes over the file");
ABSL_FLAG(uint32_t, max_epochs, 100, "fit: passes at most");
ABSL_FLAG(uint32_t, batch, 64, "train/predict: examples per request");
ABSL_FLAG(uint32_t, in_flight, 64, "train: requests in flight at most");
ABSL_FLAG(std::string, progress, "auto",
          "train: show progress: auto (if a terminal), yes, no");
// predict
ABSL_FLAG(bool, issue, false,
          "predict: issue predictions with ids through Learn (for a later "
          "reveal) instead of "
          "scores only");
// watch
ABSL_FLAG(absl::Duration, interval, absl::Milliseconds(200),
          "watch: at most one update per");
ABSL_FLAG(uint64_t, count, 0,
          "watch: stop after this many updates (0: never); generate: examples");
// import
ABSL_FLAG(std::string, as, "",
          "import: the new model's id (default: the exported one's)");
// generate
ABSL_FLAG(double, margin, 0.05, "generate: margin of the separator");
ABSL_FLAG(double, noise, 0.0, "generate: fraction of labels flipped");
ABSL_FLAG(uint64_t, seed, 1, "generate: random seed");
ABSL_FLAG(std::string, out, "",
          "generate: output LIBSVM file (default: standard output); plot: the "
          "SVG file");
ABSL_FLAG(bool, log_scale, false, "plot: a logarithmic y axis");
ABSL_FLAG(std::string, separator_out, "",
          "generate: write the separator u (d+1 numbers) here");

namespace perceptron::client {
namespace {

constexpr char kUsage[] = R"(perceptron: the command-line client of perceptrond

  perceptron create MODEL --dim=D [--algorithm=classic|margin|averaged|voted|kernel]
             [--gamma=G --comparator_file=FILE] [--eta --bias --normalize --kernel ...]
  perceptron list | get MODEL | delete MODEL | reset MODEL | weights MODEL | health
  perceptron train FILE --model=MODEL [--create] [--epochs=1] [--batch=64] [--positive=CLASS]
  perceptron fit FILE --model=MODEL [--create] [--max_epochs=100]
             (cyclic training to separation, in one Train request)
  perceptron predict FILE --model=MODEL [--issue]
  perceptron reveal --model=MODEL ID:LABEL ... | FILE   (e.g. 17:-1 18:+1, or a FILE of
             "ID LABEL" lines, as predict --issue prints them with the true labels)
  perceptron status MODEL
  perceptron watch MODEL [--interval=200ms] [--count=N]
  perceptron plot MODEL --out=FILE.svg [--log_scale]
             (cumulative mistakes and the bound against examples, as an SVG)
  perceptron export MODEL FILE        (the whole model as a portable blob)
  perceptron import FILE [--as=NEW_ID]
  perceptron generate --dim=D --count=N [--margin=0.05] [--noise=0] [--seed=1]
             [--out=FILE] [--separator_out=FILE]

Files are LIBSVM/SVMlight ("label index:value ...") or CSV (".csv"; label in the last column);
"-" reads standard input (export: writes standard output). Labels are +1/1 and -1/0.
--server=host:port (default 127.0.0.1:50051). With a secured server: --tls_ca=CA.pem
[--tls_cert=client.pem --tls_key=client.key] and --token_file=FILE (or PERCEPTRON_TOKEN).
--help lists every flag.)";

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "perceptron: %s: %s\n",
               absl::StatusCodeToString(s.code()).c_str(),
               std::string(s.message()).c_str());
  return 1;
}

// A local failure (a file, the data): the message alone, no gRPC code.
int FailLocal(const absl::Status& s) {
  std::fprintf(stderr, "perceptron: %s\n", std::string(s.message()).c_str());
  return 1;
}

// The reason the last system call failed, as text.
std::string Errno() { return std::strerror(errno); }

// A usage error: one line, and where the whole usage is.
int Usage(const std::string& why) {
  std::fprintf(stderr,
               "perceptron: %s (perceptron --help shows the commands and "
               "flags)\n",
               why.c_str());
  return 2;
}

// The whole of a small file, or exits with a message.
std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "perceptron: cannot read %s: %s\n", path.c_str(),
                 std::strerror(errno));
    std::exit(1);
  }
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

std::unique_ptr<Client> Connect() {
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  if (!absl::GetFlag(FLAGS_tls_ca).empty()) {
    options.tls_root_certs = ReadSmallFile(absl::GetFlag(FLAGS_tls_ca));
  }
  if (!absl::GetFlag(FLAGS_tls_cert).empty()) {
    options.tls_cert_chain = ReadSmallFile(absl::GetFlag(FLAGS_tls_cert));
    options.tls_private_key = ReadSmallFile(absl::GetFlag(FLAGS_tls_key));
  }
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    options.token = std::string(absl::StripAsciiWhitespace(
        ReadSmallFile(absl::GetFlag(FLAGS_token_file))));
  } else if (const char* token = std::getenv("PERCEPTRON_TOKEN")) {
    options.token = token;
  }
  return Client::Connect(options);
}

const char* AlgorithmText(v1::Algorithm a) {
  switch (a) {
    case v1::MARGIN:
      return "margin";
    case v1::AVERAGED:
      return "averaged";
    case v1::VOTED:
      return "voted";
    case v1::KERNEL:
      return "kernel";
    default:
      return "classic";
  }
}

std::string BoundText(const v1::ModelStats& s) {
  if (!s.bound_available()) return "n/a";
  return absl::StrFormat("%.1f", s.bound());
}

// The shortest text that reads back as `v`.
std::string Shortest(double v) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), v).ptr;
  return std::string(text, end);
}

// `get`: the model's configuration, one field a line, as `status` prints.
void PrintModel(const v1::Model& m) {
  const v1::ModelConfig& c = m.config();
  std::printf("model          %s (%s, d=%u)\n", m.model_id().c_str(),
              AlgorithmText(c.algorithm()), c.dimension());
  std::printf("created        %s\n",
              absl::FormatTime("%Y-%m-%d %H:%M:%S %Z",
                               absl::FromUnixSeconds(m.created_at().seconds()),
                               absl::LocalTimeZone())
                  .c_str());
  std::printf("eta            %s\n",
              Shortest(c.has_eta() ? c.eta() : 1.0).c_str());
  const bool bias = c.has_bias() ? c.bias() : true;
  if (bias) {
    std::printf(
        "bias           on (constant %s)\n",
        Shortest(c.has_bias_constant() ? c.bias_constant() : 1.0).c_str());
  } else {
    std::printf("bias           off\n");
  }
  std::printf("normalize      %s\n",
              (c.has_normalize() ? c.normalize() : true) ? "on" : "off");
  if (c.has_gamma()) {
    std::printf("gamma          %s\n", Shortest(c.gamma()).c_str());
  } else {
    std::printf("gamma          none\n");
  }
  if (c.comparator_size() > 0) {
    double sq = 0;
    for (double u : c.comparator()) sq += u * u;
    std::printf("comparator     %d values, |u| = %.6g (scaled to 1)\n",
                c.comparator_size(), std::sqrt(sq));
  } else {
    std::printf("comparator     none (no TD_gamma or bound)\n");
  }
  if (c.algorithm() == v1::KERNEL) {
    const v1::Kernel& k = c.kernel();
    if (k.type() == v1::RBF) {
      std::printf("kernel         rbf, sigma %s\n",
                  Shortest(k.has_sigma() ? k.sigma() : 1.0).c_str());
    } else if (k.type() == v1::POLYNOMIAL) {
      std::printf("kernel         polynomial, degree %u, c0 %s\n",
                  k.degree() == 0 ? 2 : k.degree(),
                  Shortest(k.has_c0() ? k.c0() : 1.0).c_str());
    } else {
      std::printf("kernel         linear\n");
    }
    std::printf("kernel budget  %llu\n",
                static_cast<unsigned long long>(c.kernel_budget()));
  }
  if (c.algorithm() == v1::VOTED) {
    std::printf("voted vectors  at most %llu\n",
                static_cast<unsigned long long>(c.max_voted_vectors()));
  }
}

void PrintStatus(const v1::ModelStatus& st) {
  const v1::ModelStats& s = st.stats();
  std::printf("model          %s (%s, d=%u)\n", st.model_id().c_str(),
              AlgorithmText(st.algorithm()), st.dimension());
  std::printf("examples       %llu\n",
              static_cast<unsigned long long>(s.examples()));
  std::printf("mistakes       %llu (%.2f%%; %.2f%% of the last %u)\n",
              static_cast<unsigned long long>(s.mistakes()),
              100 * st.mistake_rate(), 100 * st.recent_mistake_rate(),
              static_cast<unsigned>(
                  std::min<uint64_t>(s.examples(), st.recent_window())));
  std::printf("updates        %llu\n",
              static_cast<unsigned long long>(s.updates()));
  if (s.td_available()) {
    std::printf("TD_gamma       %.6g (gamma %g)\n", s.td_gamma(), st.gamma());
  } else {
    std::printf("TD_gamma       n/a (no comparator)\n");
  }
  std::printf("radius R       %.6g\n", s.radius());
  if (s.bound_available()) {
    std::printf("bound          %.6g (updates/bound %.4f)\n", s.bound(),
                s.bound() > 0 ? s.updates() / s.bound() : 0.0);
  } else {
    std::printf("bound          n/a\n");
  }
  std::printf("predictions    %llu issued, %llu pending, %llu expired\n",
              static_cast<unsigned long long>(s.predictions()),
              static_cast<unsigned long long>(s.pending()),
              static_cast<unsigned long long>(s.expired()));
  std::printf("||w||          %.6g\n", st.weight_norm());
  if (st.algorithm() == v1::KERNEL) {
    std::printf("support        %llu stored, %llu dropped\n",
                static_cast<unsigned long long>(st.support_vectors()),
                static_cast<unsigned long long>(st.dropped()));
  }
  if (st.algorithm() == v1::VOTED) {
    std::printf("voted vectors  %llu stored, %llu dropped\n",
                static_cast<unsigned long long>(st.voted_vectors()),
                static_cast<unsigned long long>(st.dropped()));
  }
}

absl::StatusOr<std::vector<double>> ReadNumbers(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::vector<double> out;
  std::string token;
  while (in >> token) {
    for (absl::string_view t : absl::StrSplit(token, ',', absl::SkipEmpty())) {
      double v;
      if (!absl::SimpleAtod(t, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": \"", t, "\" is not a number"));
      }
      out.push_back(v);
    }
  }
  return out;
}

absl::StatusOr<v1::ModelConfig> ConfigFromFlags(uint32_t dimension) {
  v1::ModelConfig c;
  c.set_dimension(dimension);
  const std::string a = absl::GetFlag(FLAGS_algorithm);
  v1::Algorithm algorithm;
  if (!v1::Algorithm_Parse(absl::AsciiStrToUpper(a), &algorithm) ||
      algorithm == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--algorithm=", a,
                     " is not one of classic, "
                     "margin, averaged, voted, kernel"));
  }
  c.set_algorithm(algorithm);
  c.set_eta(absl::GetFlag(FLAGS_eta));
  c.set_bias(absl::GetFlag(FLAGS_bias));
  c.set_bias_constant(absl::GetFlag(FLAGS_bias_constant));
  c.set_normalize(absl::GetFlag(FLAGS_normalize));
  if (absl::GetFlag(FLAGS_gamma) != 0) c.set_gamma(absl::GetFlag(FLAGS_gamma));
  if (!absl::GetFlag(FLAGS_comparator_file).empty()) {
    absl::StatusOr<std::vector<double>> u =
        ReadNumbers(absl::GetFlag(FLAGS_comparator_file));
    if (!u.ok()) return u.status();
    c.mutable_comparator()->Add(u->begin(), u->end());
  }
  const std::string k = absl::GetFlag(FLAGS_kernel);
  v1::KernelType kernel;
  if (!v1::KernelType_Parse(absl::AsciiStrToUpper(k), &kernel) || kernel == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kernel=", k, " is not one of linear, polynomial, rbf"));
  }
  c.mutable_kernel()->set_type(kernel);
  c.mutable_kernel()->set_degree(absl::GetFlag(FLAGS_degree));
  c.mutable_kernel()->set_c0(absl::GetFlag(FLAGS_c0));
  c.mutable_kernel()->set_sigma(absl::GetFlag(FLAGS_sigma));
  c.set_kernel_budget(absl::GetFlag(FLAGS_budget));
  c.set_max_voted_vectors(absl::GetFlag(FLAGS_max_voted));
  return c;
}

int Create(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("create takes one MODEL");
  if (absl::GetFlag(FLAGS_dim) == 0) return Usage("create needs --dim");
  absl::StatusOr<v1::ModelConfig> config =
      ConfigFromFlags(absl::GetFlag(FLAGS_dim));
  if (!config.ok()) return FailLocal(config.status());
  absl::StatusOr<v1::Model> m = Connect()->CreateModel(args[0], *config);
  if (!m.ok()) return Fail(m.status());
  std::printf("created %s (%s, d=%u%s)\n", m->model_id().c_str(),
              AlgorithmText(m->config().algorithm()), m->config().dimension(),
              m->config().comparator_size() > 0 ? ", with comparator" : "");
  return 0;
}

absl::StatusOr<ReadOptions> ReadOptionsFromFlags(bool require_labels) {
  ReadOptions o;
  const std::string f = absl::GetFlag(FLAGS_format);
  if (f == "libsvm") {
    o.format = Format::kLibsvm;
  } else if (f == "csv") {
    o.format = Format::kCsv;
  } else if (f != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", f, " is not auto, libsvm or csv"));
  }
  o.positive_label = absl::GetFlag(FLAGS_positive);
  o.index_base = absl::GetFlag(FLAGS_index_base);
  o.label_column = absl::GetFlag(FLAGS_label_column);
  o.require_labels = require_labels;
  return o;
}

absl::StatusOr<std::unique_ptr<DataReader>> OpenData(const std::string& path,
                                                     bool require_labels) {
  absl::StatusOr<ReadOptions> o = ReadOptionsFromFlags(require_labels);
  if (!o.ok()) return o.status();
  return DataReader::Open(path, *o);
}

absl::StatusOr<Dataset> LoadData(const std::string& path, bool require_labels) {
  absl::StatusOr<ReadOptions> o = ReadOptionsFromFlags(require_labels);
  if (!o.ok()) return o.status();
  return ReadDataFile(path, *o);
}

bool ShowProgress() {
  const std::string p = absl::GetFlag(FLAGS_progress);
  if (p == "yes") return true;
  if (p == "no") return false;
  return isatty(STDERR_FILENO);
}

// One progress line on standard error, redrawn at most ten times a second.
class ProgressLine {
 public:
  explicit ProgressLine(bool on) : on_(on) {}
  ~ProgressLine() { End(); }

  // `done` of `total` (0: not known), then `text`; `force` draws now.
  void Draw(uint64_t done, uint64_t total, const std::string& text,
            bool force = false) {
    if (!on_) return;
    const absl::Time now = absl::Now();
    if (!force && now - last_ < absl::Milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const int width = 30;
    if (total > 0) {
      const int filled =
          static_cast<int>(width * std::min(done, total) / total);
      std::fprintf(stderr, "\r[%s%s] %3.0f%% %s ",
                   std::string(filled, '=').c_str(),
                   std::string(width - filled, ' ').c_str(),
                   100.0 * std::min(done, total) / total, text.c_str());
    } else {
      std::fprintf(stderr, "\r%s ", text.c_str());
    }
  }
  void End() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  const bool on_;
  bool drawn_ = false;
  absl::Time last_ = absl::InfinitePast();
};

// OK if `e` fits a model of input dimension `dimension`; else
// INVALID_ARGUMENT naming the file, line and index (as the file writes it).
absl::Status FitsTheModel(const std::string& name, size_t line, int index_base,
                          const Example& e, uint32_t dimension) {
  if (e.sparse) {
    for (uint32_t i : e.indices) {
      if (i >= dimension) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ":", line, ": index ", i + index_base,
            " is past the model's dimension ", dimension, " (indices ",
            index_base, " to ", dimension - 1 + index_base, ")"));
      }
    }
  } else if (e.values.size() != dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ":", line, ": ", e.values.size(),
                     " features; the model's dimension is ", dimension));
  }
  return absl::OkStatus();
}

int Fit(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("fit takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("fit needs --model");
  // One Train request carries the whole set, so it is read whole.
  absl::StatusOr<Dataset> data = LoadData(args[0], /*require_labels=*/true);
  if (!data.ok()) return FailLocal(data.status());
  std::unique_ptr<Client> client = Connect();
  absl::StatusOr<v1::Model> m = client->GetModel(model);
  if (!m.ok() && m.status().code() == absl::StatusCode::kNotFound &&
      absl::GetFlag(FLAGS_create)) {
    absl::StatusOr<v1::ModelConfig> config =
        ConfigFromFlags(absl::GetFlag(FLAGS_dim) != 0 ? absl::GetFlag(FLAGS_dim)
                                                      : data->dimension);
    if (!config.ok()) return FailLocal(config.status());
    m = client->CreateModel(model, *config);
  }
  if (!m.ok()) return Fail(m.status());
  for (size_t k = 0; k < data->examples.size(); ++k) {
    absl::Status s = FitsTheModel(args[0], data->lines[k], data->index_base,
                                  data->examples[k], m->config().dimension());
    if (!s.ok()) return FailLocal(s);
  }
  absl::StatusOr<v1::TrainResponse> r =
      client->Train(model, data->examples, absl::GetFlag(FLAGS_max_epochs));
  if (!r.ok()) return Fail(r.status());
  std::printf("fit %s on %s: %u passes, %s, %llu updates (%llu mistakes)\n",
              model.c_str(), args[0].c_str(), r->epochs(),
              r->converged() ? "separated" : "not separated",
              static_cast<unsigned long long>(r->updates()),
              static_cast<unsigned long long>(r->mistakes()));
  return 0;
}

// train: streams the file (or standard input) in batches, holding only what
// is in flight. A file is read twice: first to check every line and its fit
// to the model before anything is sent (and to count, for the progress bar),
// then to send; standard input is checked as it is sent.
int Train(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("train takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("train needs --model");
  const uint32_t epochs = absl::GetFlag(FLAGS_epochs);
  if (epochs == 0) return Usage("--epochs must be at least 1");
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<DataReader>> opened =
      OpenData(args[0], /*require_labels=*/true);
  if (!opened.ok()) return FailLocal(opened.status());
  DataReader& reader = **opened;
  const bool file = reader.seekable();
  if (epochs > 1 && !file) {
    return Usage(
        "--epochs above 1 needs a file that can be read again, not "
        "a pipe");
  }
  std::unique_ptr<Client> client = Connect();
  absl::StatusOr<v1::Model> m = client->GetModel(model);
  const bool create = !m.ok() &&
                      m.status().code() == absl::StatusCode::kNotFound &&
                      absl::GetFlag(FLAGS_create);
  if (!m.ok() && !create) return Fail(m.status());
  uint32_t dimension =
      create ? absl::GetFlag(FLAGS_dim) : m->config().dimension();
  ProgressLine progress(ShowProgress());
  uint64_t per_pass = 0;  // examples in the file; 0 for standard input
  Example e;
  if (file) {
    while (true) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) return FailLocal(more.status());
      if (!*more) break;
      if (dimension != 0) {
        absl::Status s = FitsTheModel(reader.name(), reader.line(),
                                      reader.index_base(), e, dimension);
        if (!s.ok()) return FailLocal(s);
      }
      progress.Draw(reader.bytes_read(), reader.size(),
                    absl::StrCat("checking ", args[0], ": ", reader.examples(),
                                 " examples"));
    }
    per_pass = reader.examples();
    if (dimension == 0) dimension = reader.dimension();
    if (absl::Status s = reader.Rewind(); !s.ok()) return FailLocal(s);
  } else if (create && dimension == 0) {
    return Usage("train --create from standard input needs --dim");
  }
  if (create) {
    absl::StatusOr<v1::ModelConfig> config = ConfigFromFlags(dimension);
    if (!config.ok()) return FailLocal(config.status());
    m = client->CreateModel(model, *config);
    if (!m.ok()) return Fail(m.status());
  }
  const bool skip = absl::GetFlag(FLAGS_skip_rejected);
  const uint64_t total = per_pass * epochs;
  // The file's line of each example sent and not yet answered, to name the
  // line of one the server rejects.
  absl::Mutex mu;
  std::deque<size_t> lines_in_flight;  // guarded by mu
  std::atomic<bool> rejected{false};
  size_t rejected_line = 0;
  std::string rejected_why;
  std::atomic<uint64_t> answered{0};
  SessionOptions so;
  so.batch_size = absl::GetFlag(FLAGS_batch);
  so.max_in_flight = absl::GetFlag(FLAGS_in_flight);
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
        absl::StrFormat("%llu%s  mistakes %llu  updates %llu  bound %s  "
                        "%.0f ex/s",
                        static_cast<unsigned long long>(n),
                        total > 0 ? absl::StrCat("/", total) : "",
                        static_cast<unsigned long long>(r.stats().mistakes()),
                        static_cast<unsigned long long>(r.stats().updates()),
                        BoundText(r.stats()), rate),
        n == total);
  };
  progress.Draw(0, total, absl::StrCat("sending ", args[0]), true);
  std::unique_ptr<LearnSession> session = client->OpenLearnSession(model, so);
  absl::Status local;  // a line of standard input that cannot be sent
  absl::Status added;
  for (uint32_t epoch = 0; epoch < epochs && added.ok() && local.ok();
       ++epoch) {
    if (epoch > 0) local = reader.Rewind();
    while (local.ok() && (skip || !rejected)) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) local = more.status();
      if (!local.ok() || !*more) break;
      local = FitsTheModel(reader.name(), reader.line(), reader.index_base(), e,
                           dimension);
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
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  progress.End();
  if (!summary.ok()) return Fail(summary.status());
  const v1::ModelStats& s = summary->stats;
  std::printf(
      "trained %s on %s: %llu examples in %.3f s (%.0f examples/s, reading "
      "included), %llu requests\n",
      model.c_str(), reader.name().c_str(),
      static_cast<unsigned long long>(summary->items), seconds,
      summary->items / std::max(seconds, 1e-9),
      static_cast<unsigned long long>(summary->requests));
  std::printf(
      "model now: %llu examples, %llu mistakes, %llu updates, bound %s\n",
      static_cast<unsigned long long>(s.examples()),
      static_cast<unsigned long long>(s.mistakes()),
      static_cast<unsigned long long>(s.updates()), BoundText(s).c_str());
  if (!local.ok()) {
    std::fprintf(stderr,
                 "perceptron: %s\nperceptron: sending stopped there; the "
                 "%llu examples before it were applied\n",
                 std::string(local.message()).c_str(),
                 static_cast<unsigned long long>(summary->items));
    return 1;
  }
  if (summary->item_errors > 0) {
    // "item K: why" names the place in its batch; the file's line is better.
    absl::string_view why = rejected_why;
    if (absl::ConsumePrefix(&why, "item ")) {
      why.remove_prefix(std::min(why.size(), why.find(": ") + 2));
    }
    std::fprintf(stderr,
                 "perceptron: %s:%zu: rejected: %s\nperceptron: %llu "
                 "example(s) rejected%s\n",
                 reader.name().c_str(), rejected_line, std::string(why).c_str(),
                 static_cast<unsigned long long>(summary->item_errors),
                 skip ? " and skipped (--skip_rejected)"
                      : "; sending stopped there, batches already in "
                        "flight were applied (--skip_rejected to go on)");
    return 1;
  }
  return 0;
}

int Predict(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("predict takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("predict needs --model");
  absl::StatusOr<std::unique_ptr<DataReader>> opened =
      OpenData(args[0], /*require_labels=*/false);
  if (!opened.ok()) return FailLocal(opened.status());
  DataReader& reader = **opened;
  std::unique_ptr<Client> client = Connect();
  Example e;
  absl::Status local;
  if (absl::GetFlag(FLAGS_issue)) {
    SessionOptions so;
    so.batch_size = absl::GetFlag(FLAGS_batch);
    so.on_response = [](const v1::LearnResponse& r) {
      for (const v1::ItemResult& item : r.results()) {
        if (item.has_prediction()) {
          std::printf("%llu %+d %.17g\n",
                      static_cast<unsigned long long>(
                          item.prediction().prediction_id()),
                      item.prediction().label(), item.prediction().score());
        } else {
          std::printf("error %s\n", item.error().message().c_str());
        }
      }
    };
    std::unique_ptr<LearnSession> session = client->OpenLearnSession(model, so);
    while (true) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) local = more.status();
      if (!local.ok() || !*more) break;
      if (!session->AddExample(e).ok()) break;
    }
    absl::StatusOr<SessionSummary> summary = session->Finish();
    if (!summary.ok()) return Fail(summary.status());
    if (!local.ok()) return FailLocal(local);
    return summary->item_errors > 0 ? 1 : 0;
  }
  const size_t batch = std::max<uint32_t>(1, absl::GetFlag(FLAGS_batch));
  std::vector<Example> chunk;
  bool end = false;
  while (!end) {
    chunk.clear();
    while (chunk.size() < batch) {
      absl::StatusOr<bool> more = reader.Next(&e);
      if (!more.ok()) return FailLocal(more.status());
      if (!*more) {
        end = true;
        break;
      }
      chunk.push_back(std::move(e));
    }
    if (chunk.empty()) break;
    absl::StatusOr<v1::PredictResponse> r = client->Predict(model, chunk);
    if (!r.ok()) return Fail(r.status());
    for (const v1::Prediction& p : r->predictions())
      std::printf("%+d %.17g\n", p.label(), p.score());
  }
  return 0;
}

// A label as data files write it: +1/1 or -1/0.
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

// reveal: labels as ID:LABEL arguments, or lines "ID LABEL" (more columns,
// as predict --issue prints, are ignored) from files or standard input ("-").
int Reveal(const std::vector<std::string>& args) {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("reveal needs --model");
  if (args.empty()) {
    return Usage(
        "reveal takes ID:LABEL pairs, or a FILE (\"-\": standard "
        "input) of \"ID LABEL\" lines");
  }
  std::unique_ptr<Client> client = Connect();
  std::atomic<int> rc{0};
  SessionOptions so;
  so.batch_size = absl::GetFlag(FLAGS_batch);
  so.on_response = [&rc](const v1::LearnResponse& r) {
    for (const v1::ItemResult& item : r.results()) {
      if (item.has_error()) {
        std::printf("error %s\n", item.error().message().c_str());
        rc = 1;
      } else {
        std::printf(
            "%llu mistake=%s updated=%s\n",
            static_cast<unsigned long long>(item.outcome().prediction_id()),
            item.outcome().mistake() ? "yes" : "no",
            item.outcome().updated() ? "yes" : "no");
      }
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
        (!absl::SimpleAtoi(kv.first, &id) || !ParseLabel(kv.second, &label))) {
      return Usage(absl::StrCat("\"", a,
                                "\" is not ID:LABEL (a label is +1/1 or "
                                "-1/0)"));
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
      (void)ParseLabel(kv.second, &label);
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
          !ParseLabel(cells[1], &label)) {
        local = absl::InvalidArgumentError(
            absl::StrCat(name, ":", n, ": \"", absl::StripAsciiWhitespace(line),
                         "\" is not \"ID LABEL\" (a label is +1/1 or -1/0)"));
        break;
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

int Status(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("status takes one MODEL");
  absl::StatusOr<v1::ModelStatus> st = Connect()->GetStatus(args[0]);
  if (!st.ok()) return Fail(st.status());
  PrintStatus(*st);
  return 0;
}

int Watch(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("watch takes one MODEL");
  const bool tty = isatty(STDOUT_FILENO);
  const uint64_t limit = absl::GetFlag(FLAGS_count);
  uint64_t seen = 0;
  absl::Status s = Connect()->Watch(
      args[0], absl::GetFlag(FLAGS_interval), [&](const v1::ModelStatus& st) {
        if (tty) std::printf("\033[H\033[2J");  // a live view: redraw in place
        std::printf(
            "perceptron watch %s  (%s; Ctrl-C to stop)\n\n", args[0].c_str(),
            absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone())
                .c_str());
        PrintStatus(st);
        const v1::ModelStats& s = st.stats();
        if (s.bound_available() && s.bound() > 0) {
          const int width = 40;
          const int filled = std::min(
              width, static_cast<int>(width * s.updates() / s.bound()));
          std::printf("updates/bound  [%s%s]\n",
                      std::string(filled, '#').c_str(),
                      std::string(width - filled, '.').c_str());
        }
        std::printf("\n");
        std::fflush(stdout);
        return limit == 0 || ++seen < limit;
      });
  if (!s.ok()) return Fail(s);
  return 0;
}

int Generate(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage("generate takes no arguments");
  GeneratorOptions o;
  o.dimension = absl::GetFlag(FLAGS_dim) == 0 ? 20 : absl::GetFlag(FLAGS_dim);
  o.count =
      absl::GetFlag(FLAGS_count) == 0 ? 10000 : absl::GetFlag(FLAGS_count);
  o.margin = absl::GetFlag(FLAGS_margin);
  o.noise = absl::GetFlag(FLAGS_noise);
  o.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<Synthetic> s = Generate(o);
  if (!s.ok()) return FailLocal(s.status());
  const std::string out_path = absl::GetFlag(FLAGS_out);
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path);
    if (!file)
      return FailLocal(absl::PermissionDeniedError(
          absl::StrCat("cannot write ", out_path, ": ", Errno())));
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  for (const Example& e : s->examples) {
    out << (*e.label > 0 ? "+1" : "-1");
    for (size_t i = 0; i < e.values.size(); ++i) {
      out << ' ' << i + 1 << ':' << absl::StrFormat("%.17g", e.values[i]);
    }
    out << '\n';
  }
  if (!absl::GetFlag(FLAGS_separator_out).empty()) {
    std::ofstream sep(absl::GetFlag(FLAGS_separator_out));
    for (double v : s->separator) sep << absl::StrFormat("%.17g\n", v);
    if (!sep)
      return FailLocal(absl::PermissionDeniedError(absl::StrCat(
          "cannot write ", absl::GetFlag(FLAGS_separator_out), ": ", Errno())));
  }
  if (!out_path.empty()) {
    std::fprintf(stderr,
                 "wrote %llu examples (d=%u, margin %g, noise %g) to %s\n",
                 static_cast<unsigned long long>(o.count), o.dimension,
                 o.margin, o.noise, out_path.c_str());
  }
  return 0;
}

// export: the blob goes to FILE.partial, renamed to FILE once whole (so a
// failed export leaves no file and an existing FILE untouched); "-" writes
// standard output.
int Export(const std::vector<std::string>& args) {
  if (args.size() != 2) return Usage("export takes MODEL FILE");
  const std::string& path = args[1];
  const std::string partial = path + ".partial";
  std::FILE* out = path == "-" ? stdout : std::fopen(partial.c_str(), "wb");
  if (out == nullptr) {
    return FailLocal(absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", Errno())));
  }
  absl::StatusOr<std::string> blob = Connect()->ExportModel(args[0]);
  if (!blob.ok()) {
    if (out != stdout) {
      std::fclose(out);
      std::remove(partial.c_str());
    }
    return Fail(blob.status());
  }
  bool written =
      std::fwrite(blob->data(), 1, blob->size(), out) == blob->size() &&
      std::fflush(out) == 0;
  if (out != stdout) {
    written = std::fclose(out) == 0 && written &&
              std::rename(partial.c_str(), path.c_str()) == 0;
    if (!written) {
      const std::string why = Errno();
      std::remove(partial.c_str());
      return FailLocal(
          absl::DataLossError(absl::StrCat("cannot write ", path, ": ", why)));
    }
    std::printf("exported %s to %s (%zu bytes)\n", args[0].c_str(),
                path.c_str(), blob->size());
  } else if (!written) {
    return FailLocal(absl::DataLossError(
        absl::StrCat("cannot write standard output: ", Errno())));
  }
  return 0;
}

// import: FILE, or "-" for standard input.
int Import(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("import takes one FILE");
  std::ifstream file;
  if (args[0] != "-") {
    file.open(args[0], std::ios::binary);
    if (!file) {
      return FailLocal(absl::NotFoundError(
          absl::StrCat("cannot read ", args[0], ": ", Errno())));
    }
  }
  std::istream& in = args[0] == "-" ? std::cin : file;
  const std::string blob((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  if (in.bad()) {
    return FailLocal(absl::DataLossError(
        absl::StrCat("cannot read ", args[0], ": ", Errno())));
  }
  absl::StatusOr<v1::Model> m =
      Connect()->ImportModel(blob, absl::GetFlag(FLAGS_as));
  if (!m.ok()) return Fail(m.status());
  std::printf("imported %s (%s, d=%u) from %s\n", m->model_id().c_str(),
              AlgorithmText(m->config().algorithm()), m->config().dimension(),
              args[0] == "-" ? "standard input" : args[0].c_str());
  return 0;
}

int Plot(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("plot takes one MODEL");
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (out_path.empty()) return Usage("plot needs --out=FILE.svg");
  absl::StatusOr<v1::History> history = Connect()->GetHistory(args[0]);
  if (!history.ok()) return Fail(history.status());
  PlotOptions options;
  options.log_scale = absl::GetFlag(FLAGS_log_scale);
  const std::string svg = HistorySvg(*history, options);
  std::ofstream out(out_path, std::ios::binary);
  out << svg;
  out.close();
  if (!out) {
    return FailLocal(absl::PermissionDeniedError(
        absl::StrCat("cannot write ", out_path, ": ", Errno())));
  }
  const v1::HistoryPoint* last =
      history->points().empty() ? nullptr : &*history->points().rbegin();
  std::printf("plotted %s to %s: %d points, %llu examples, %llu mistakes%s\n",
              args[0].c_str(), out_path.c_str(), history->points_size(),
              static_cast<unsigned long long>(last ? last->examples() : 0),
              static_cast<unsigned long long>(last ? last->mistakes() : 0),
              last && last->has_bound()
                  ? absl::StrFormat(", bound %.6g", last->bound()).c_str()
                  : "");
  return 0;
}

int Run(const std::string& command, const std::vector<std::string>& args) {
  if (command == "plot") return Plot(args);
  if (command == "export") return Export(args);
  if (command == "import") return Import(args);
  if (command == "create") return Create(args);
  if (command == "train") return Train(args);
  if (command == "fit") return Fit(args);
  if (command == "predict") return Predict(args);
  if (command == "reveal") return Reveal(args);
  if (command == "status") return Status(args);
  if (command == "watch") return Watch(args);
  if (command == "generate") return Generate(args);
  if (command == "list") {
    absl::StatusOr<std::vector<v1::Model>> models = Connect()->ListModels();
    if (!models.ok()) return Fail(models.status());
    for (const v1::Model& m : *models) {
      std::printf("%s\t%s\td=%u\n", m.model_id().c_str(),
                  AlgorithmText(m.config().algorithm()),
                  m.config().dimension());
    }
    return 0;
  }
  if (command == "health") {
    absl::Status s = Connect()->CheckHealth(absl::Seconds(5));
    if (!s.ok()) return Fail(s);
    std::printf("SERVING\n");
    return 0;
  }
  static constexpr absl::string_view kOneModel[] = {"get", "delete", "reset",
                                                    "weights"};
  if (std::find(std::begin(kOneModel), std::end(kOneModel), command) ==
      std::end(kOneModel)) {
    return Usage(absl::StrCat("unknown command \"", command, "\""));
  }
  if (args.size() != 1) return Usage(absl::StrCat(command, " takes one MODEL"));
  std::unique_ptr<Client> client = Connect();
  if (command == "get") {
    absl::StatusOr<v1::Model> m = client->GetModel(args[0]);
    if (!m.ok()) return Fail(m.status());
    PrintModel(*m);
    return 0;
  }
  if (command == "delete") {
    absl::Status s = client->DeleteModel(args[0]);
    if (!s.ok()) return Fail(s);
    std::printf("deleted %s\n", args[0].c_str());
    return 0;
  }
  if (command == "reset") {
    absl::StatusOr<v1::Model> m = client->ResetModel(args[0]);
    if (!m.ok()) return Fail(m.status());
    std::printf("reset %s\n", args[0].c_str());
    return 0;
  }
  if (command == "weights") {
    absl::StatusOr<v1::Weights> w = client->GetWeights(args[0]);
    if (!w.ok()) return Fail(w.status());
    for (double v : w->values()) std::printf("%.17g\n", v);
    return 0;
  }
  return Usage(absl::StrCat("unknown command \"", command, "\""));
}

}  // namespace
}  // namespace perceptron::client

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(perceptron::client::kUsage);
  // --help lists this file's flags (Abseil's default looks for a file named
  // after the program); --version names the release and the wire contract.
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "client/cli_main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  usage.normalize_filename = [](absl::string_view file) {
    const size_t slash = file.rfind('/', file.rfind('/') - 1);
    return std::string(
        slash == absl::string_view::npos ? file : file.substr(slash + 1));
  };
  usage.version_string = [] {
    return std::string("perceptron " PERCEPTRON_VERSION " (wire contract ") +
           perceptron::v1::PerceptronService::service_full_name() + ")\n";
  };
  absl::SetFlagsUsageConfig(usage);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() < 2) return perceptron::client::Usage("no command");
  std::vector<std::string> args(rest.begin() + 2, rest.end());
  return perceptron::client::Run(rest[1], args);
}
