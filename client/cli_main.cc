// perceptron: the command-line client of perceptrond.
//
//   perceptron create MODEL --dim=D [--algorithm=classic] [--gamma=G
//   --comparator_file=F] ... perceptron list | get MODEL | delete MODEL | reset
//   MODEL | weights MODEL | health perceptron train FILE --model=MODEL
//   [--create] [--epochs=N] [--batch=64] [--positive=CLASS] perceptron fit FILE
//   --model=MODEL [--create] [--max_epochs=100]   (cyclic training) perceptron
//   predict FILE --model=MODEL [--issue] perceptron reveal --model=MODEL
//   ID:LABEL [ID:LABEL ...] perceptron status MODEL | watch MODEL
//   [--interval=200ms] perceptron generate --dim=D --count=N --margin=M
//   --noise=P --out=FILE [--separator_out=F]
//
// Results go to standard output, progress and errors to standard error. Exit
// status: 0 on success, 1 on failure, 2 for a usage error.
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
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
  perceptron reveal --model=MODEL ID:LABEL [ID:LABEL ...]      (e.g. 17:-1 18:+1)
  perceptron status MODEL
  perceptron watch MODEL [--interval=200ms] [--count=N]
  perceptron plot MODEL --out=FILE.svg [--log_scale]
             (cumulative mistakes and the bound against examples, as an SVG)
  perceptron export MODEL FILE        (the whole model as a portable blob)
  perceptron import FILE [--as=NEW_ID]
  perceptron generate --dim=D --count=N [--margin=0.05] [--noise=0] [--seed=1]
             [--out=FILE] [--separator_out=FILE]

Files are LIBSVM/SVMlight ("label index:value ...") or CSV (".csv"; label in the last column).
--server=host:port (default 127.0.0.1:50051). With a secured server: --tls_ca=CA.pem
[--tls_cert=client.pem --tls_key=client.key] and --token_file=FILE (or PERCEPTRON_TOKEN).
--help lists every flag.)";

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "perceptron: %s: %s\n",
               absl::StatusCodeToString(s.code()).c_str(),
               std::string(s.message()).c_str());
  return 1;
}

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
    std::fprintf(stderr, "perceptron: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

std::unique_ptr<Client> Connect() {
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
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
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
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
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<v1::Model> m = Connect()->CreateModel(args[0], *config);
  if (!m.ok()) return Fail(m.status());
  std::printf("created %s (%s, d=%u%s)\n", m->model_id().c_str(),
              AlgorithmText(m->config().algorithm()), m->config().dimension(),
              m->config().comparator_size() > 0 ? ", with comparator" : "");
  return 0;
}

absl::StatusOr<Dataset> LoadData(const std::string& path, bool require_labels) {
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
  return ReadDataFile(path, o);
}

bool ShowProgress() {
  const std::string p = absl::GetFlag(FLAGS_progress);
  if (p == "yes") return true;
  if (p == "no") return false;
  return isatty(STDERR_FILENO);
}

// With --create, creates `model` from the flags (and the data's dimension
// unless --dim) if it does not exist.
absl::Status CreateIfAsked(Client& client, const std::string& model,
                           const Dataset& data) {
  if (!absl::GetFlag(FLAGS_create)) return absl::OkStatus();
  absl::StatusOr<v1::Model> existing = client.GetModel(model);
  if (existing.ok() ||
      existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }
  absl::StatusOr<v1::ModelConfig> config =
      ConfigFromFlags(absl::GetFlag(FLAGS_dim) != 0 ? absl::GetFlag(FLAGS_dim)
                                                    : data.dimension);
  if (!config.ok()) return config.status();
  return client.CreateModel(model, *config).status();
}

// OK if every example of `data` fits a model of input dimension `dimension`;
// else INVALID_ARGUMENT naming the file, line and index (as the file writes
// it), before anything is sent.
absl::Status FitsTheModel(const std::string& path, const Dataset& data,
                          uint32_t dimension) {
  for (size_t k = 0; k < data.examples.size(); ++k) {
    const Example& e = data.examples[k];
    const size_t line = k < data.lines.size() ? data.lines[k] : k + 1;
    if (e.sparse) {
      for (uint32_t i : e.indices) {
        if (i >= dimension) {
          return absl::InvalidArgumentError(absl::StrCat(
              path, ":", line, ": index ", i + data.index_base,
              " is past the model's dimension ", dimension, " (indices ",
              data.index_base, " to ", dimension - 1 + data.index_base, ")"));
        }
      }
    } else if (e.values.size() != dimension) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line, ": ", e.values.size(),
                       " features; the model's dimension is ", dimension));
    }
  }
  return absl::OkStatus();
}

// The model's dimension checked against the data (FitsTheModel).
absl::Status CheckDimension(Client& client, const std::string& model,
                            const std::string& path, const Dataset& data) {
  absl::StatusOr<v1::Model> m = client.GetModel(model);
  if (!m.ok()) return m.status();
  return FitsTheModel(path, data, m->config().dimension());
}

int Fit(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("fit takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("fit needs --model");
  absl::StatusOr<Dataset> data = LoadData(args[0], /*require_labels=*/true);
  if (!data.ok()) return Fail(data.status());
  std::unique_ptr<Client> client = Connect();
  if (absl::Status s = CreateIfAsked(*client, model, *data); !s.ok())
    return Fail(s);
  if (absl::Status s = CheckDimension(*client, model, args[0], *data);
      !s.ok()) {
    return Fail(s);
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

int Train(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("train takes one FILE");
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("train needs --model");
  absl::StatusOr<Dataset> data = LoadData(args[0], /*require_labels=*/true);
  if (!data.ok()) return Fail(data.status());
  std::unique_ptr<Client> client = Connect();
  if (absl::Status s = CreateIfAsked(*client, model, *data); !s.ok())
    return Fail(s);
  if (absl::Status s = CheckDimension(*client, model, args[0], *data);
      !s.ok()) {
    return Fail(s);
  }
  const bool skip = absl::GetFlag(FLAGS_skip_rejected);
  // The first example the server rejected: its place in the stream and why.
  std::atomic<bool> rejected{false};
  uint64_t rejected_at = 0;
  std::string rejected_why;
  const uint64_t total = data->examples.size() *
                         static_cast<uint64_t>(absl::GetFlag(FLAGS_epochs));
  const bool progress = ShowProgress();
  std::atomic<uint64_t> done{0};
  absl::Time last_draw = absl::InfinitePast();
  const absl::Time start = absl::Now();
  SessionOptions so;
  so.batch_size = absl::GetFlag(FLAGS_batch);
  so.max_in_flight = absl::GetFlag(FLAGS_in_flight);
  so.on_response = [&](const v1::LearnResponse& r) {
    const uint64_t first = done.load();
    for (int i = 0; i < r.results_size() && !rejected; ++i) {
      if (!r.results(i).has_error()) continue;
      rejected_at = first + i;
      rejected_why = r.results(i).error().message();
      rejected = true;  // published after what it guards
    }
    const uint64_t n = done += r.results_size();
    const absl::Time now = absl::Now();
    if (!progress || (now - last_draw < absl::Milliseconds(100) && n < total))
      return;
    last_draw = now;
    const int width = 30;
    const int filled = total == 0 ? width : static_cast<int>(width * n / total);
    const double rate = n / std::max(1e-9, absl::ToDoubleSeconds(now - start));
    std::fprintf(stderr,
                 "\r[%s%s] %3.0f%% %llu/%llu  mistakes %llu  updates %llu  "
                 "bound %s  %.0f ex/s ",
                 std::string(filled, '=').c_str(),
                 std::string(width - filled, ' ').c_str(),
                 total == 0 ? 100.0 : 100.0 * n / total,
                 static_cast<unsigned long long>(n),
                 static_cast<unsigned long long>(total),
                 static_cast<unsigned long long>(r.stats().mistakes()),
                 static_cast<unsigned long long>(r.stats().updates()),
                 BoundText(r.stats()).c_str(), rate);
  };
  std::unique_ptr<LearnSession> session = client->OpenLearnSession(model, so);
  absl::Status added;
  for (uint32_t epoch = 0; epoch < absl::GetFlag(FLAGS_epochs) && added.ok();
       ++epoch) {
    for (const Example& e : data->examples) {
      if (!skip && rejected) break;  // stop at the first rejected batch
      added = session->AddLabeled(e);
      if (!added.ok()) break;
    }
  }
  absl::StatusOr<SessionSummary> summary = session->Finish();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (progress) std::fprintf(stderr, "\n");
  if (!summary.ok()) return Fail(summary.status());
  const v1::ModelStats& s = summary->stats;
  std::printf(
      "trained %s on %s: %llu examples in %.3f s (%.0f examples/s), %llu "
      "requests\n",
      model.c_str(), args[0].c_str(),
      static_cast<unsigned long long>(summary->items), seconds,
      summary->items / std::max(seconds, 1e-9),
      static_cast<unsigned long long>(summary->requests));
  std::printf(
      "model now: %llu examples, %llu mistakes, %llu updates, bound %s\n",
      static_cast<unsigned long long>(s.examples()),
      static_cast<unsigned long long>(s.mistakes()),
      static_cast<unsigned long long>(s.updates()), BoundText(s).c_str());
  if (summary->item_errors > 0) {
    // "item K: why" names the place in its batch; the file's line is better.
    absl::string_view why = rejected_why;
    if (absl::ConsumePrefix(&why, "item ")) {
      why.remove_prefix(std::min(why.size(), why.find(": ") + 2));
    }
    const size_t k = rejected_at % data->examples.size();
    std::fprintf(stderr,
                 "perceptron: %s:%zu: rejected: %s\nperceptron: %llu "
                 "example(s) rejected%s\n",
                 args[0].c_str(),
                 k < data->lines.size() ? data->lines[k] : k + 1,
                 std::string(why).c_str(),
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
  absl::StatusOr<Dataset> data = LoadData(args[0], /*require_labels=*/false);
  if (!data.ok()) return Fail(data.status());
  std::unique_ptr<Client> client = Connect();
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
    for (const Example& e : data->examples) {
      if (!session->AddExample(e).ok()) break;
    }
    absl::StatusOr<SessionSummary> summary = session->Finish();
    if (!summary.ok()) return Fail(summary.status());
    return summary->item_errors > 0 ? 1 : 0;
  }
  const size_t batch = std::max<uint32_t>(1, absl::GetFlag(FLAGS_batch));
  for (size_t i = 0; i < data->examples.size(); i += batch) {
    std::vector<Example> chunk(
        data->examples.begin() + i,
        data->examples.begin() + std::min(data->examples.size(), i + batch));
    absl::StatusOr<v1::PredictResponse> r = client->Predict(model, chunk);
    if (!r.ok()) return Fail(r.status());
    for (const v1::Prediction& p : r->predictions())
      std::printf("%+d %.17g\n", p.label(), p.score());
  }
  return 0;
}

int Reveal(const std::vector<std::string>& args) {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return Usage("reveal needs --model");
  if (args.empty()) return Usage("reveal takes ID:LABEL pairs");
  std::vector<std::pair<uint64_t, int>> labels;
  for (const std::string& a : args) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(a, absl::MaxSplits(':', 1));
    uint64_t id;
    int label;
    if (!absl::SimpleAtoi(kv.first, &id) ||
        !absl::SimpleAtoi(kv.second, &label)) {
      return Usage(absl::StrCat("\"", a, "\" is not ID:LABEL"));
    }
    labels.emplace_back(id, label);
  }
  absl::StatusOr<v1::RevealResponse> r = Connect()->Reveal(model, labels);
  if (!r.ok()) return Fail(r.status());
  int rc = 0;
  for (const v1::ItemResult& item : r->results()) {
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
  if (!s.ok()) return Fail(s.status());
  const std::string out_path = absl::GetFlag(FLAGS_out);
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path);
    if (!file)
      return Fail(
          absl::PermissionDeniedError(absl::StrCat("cannot write ", out_path)));
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
      return Fail(absl::PermissionDeniedError("cannot write the separator"));
  }
  if (!out_path.empty()) {
    std::fprintf(stderr,
                 "wrote %llu examples (d=%u, margin %g, noise %g) to %s\n",
                 static_cast<unsigned long long>(o.count), o.dimension,
                 o.margin, o.noise, out_path.c_str());
  }
  return 0;
}

int Export(const std::vector<std::string>& args) {
  if (args.size() != 2) return Usage("export takes MODEL FILE");
  absl::StatusOr<std::string> blob = Connect()->ExportModel(args[0]);
  if (!blob.ok()) return Fail(blob.status());
  std::ofstream out(args[1], std::ios::binary);
  out.write(blob->data(), static_cast<std::streamsize>(blob->size()));
  out.close();
  if (!out)
    return Fail(
        absl::PermissionDeniedError(absl::StrCat("cannot write ", args[1])));
  std::printf("exported %s to %s (%zu bytes)\n", args[0].c_str(),
              args[1].c_str(), blob->size());
  return 0;
}

int Import(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("import takes one FILE");
  std::ifstream in(args[0], std::ios::binary);
  if (!in)
    return Fail(absl::NotFoundError(absl::StrCat("cannot open ", args[0])));
  const std::string blob((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  absl::StatusOr<v1::Model> m =
      Connect()->ImportModel(blob, absl::GetFlag(FLAGS_as));
  if (!m.ok()) return Fail(m.status());
  std::printf("imported %s (%s, d=%u) from %s\n", m->model_id().c_str(),
              AlgorithmText(m->config().algorithm()), m->config().dimension(),
              args[0].c_str());
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
    return Fail(
        absl::PermissionDeniedError(absl::StrCat("cannot write ", out_path)));
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
