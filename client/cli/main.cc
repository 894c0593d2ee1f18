// perceptron: the command-line client of perceptrond. main reads the flags
// and hands the command to its function (commands.h); kUsage lists them.
//
// Results go to standard output, progress and errors to standard error. Exit
// status: 0 on success, 1 on failure, 2 for a usage error.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ios>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"
#include "common/program.h"

namespace perceptron::client::cli {
namespace {

// absl's --help prints it after "perceptron: ".
constexpr char kUsage[] = R"(the command-line client of perceptrond

  perceptron create MODEL --dim=D [--algorithm=classic|margin|averaged|voted|kernel]
             [--gamma=G --comparator_file=FILE] [--eta --bias --normalize --kernel ...]
             (--hash_bits=B instead of --dim: features by name; --classes=a,b,c: k classes)
  perceptron list | get MODEL | delete MODEL... | reset MODEL | weights MODEL | health
             (list, health: --shards=HOST:PORT,... asks each shard behind a proxy)
  perceptron rebalance --server=NEXT_PROXY --shards=HOST:PORT,... [--live=PROXY]
             (after shards are added or removed: moves every model to the shard NEXT_PROXY
             routes it to; the old copies go once PROXY, switched, routes there too)
  perceptron train FILE --model=MODEL [--create] [--epochs=1] [--batch=64] [--positive=CLASS]
  perceptron fit FILE --model=MODEL [--create] [--max_epochs=100]
             (cyclic training to separation, in one Train request)
  perceptron predict FILE --model=MODEL [--issue]
  perceptron reveal --model=MODEL ID:LABEL ... | FILE   (e.g. 17:-1 18:+1, or a FILE of
             "ID LABEL" lines, as predict --issue prints them with the true labels)
  perceptron status MODEL [--format=json]
  perceptron certificate MODEL   (the bound with no comparator given, and the comparator u
             that attains it, as --comparator_file reads it)
  perceptron watch MODEL [--interval=200ms] [--count=N]
  perceptron plot MODEL --out=FILE.svg [--log_scale]
             (cumulative mistakes and the bound against examples, as an SVG)
  perceptron export MODEL FILE        (the whole model as a portable blob)
  perceptron import FILE [--as=NEW_ID]
  perceptron generate [--dim=20] [--count=10000] [--margin=0.05] [--noise=0] [--seed=1]
             [--out=FILE] [--separator_out=FILE]

Files are LIBSVM/SVMlight ("label index:value ..."), CSV (".csv"), Vowpal Wabbit's text (".vw")
or JSON lines (".jsonl"), any of them gzip-compressed (".csv.gz"); "-" reads standard input
(export: writes standard output). Labels are +1/1 and -1/0, or a multiclass model's class names
(--classes=a,b,c).
--server=host:port (or PERCEPTRON_SERVER; default 127.0.0.1:50051). With a secured server:
--tls_ca=CA.pem [--tls_cert=client.pem --tls_key=client.key] and --token_file=FILE (or
PERCEPTRON_TOKEN). perceptron help COMMAND (or perceptron COMMAND --help) shows one command and
its flags; --help lists every flag.)";

// One command's help: what it does and the flags it reads (besides the
// connection's: --server, --tls_*, --token_file, --timeout).
struct CommandHelp {
  const char* name;
  const char* text;
  std::vector<const char*> flags;
};

const std::vector<CommandHelp>& Helps() {
  static const auto* helps = new std::vector<CommandHelp>{
      {"create",
       "perceptron create MODEL --dim=D [flags]\n"
       "  Creates a model: a dimension (or --hash_bits, or "
       "--feature_names_file for features by\n"
       "  name), an algorithm, and optionally a comparator u "
       "(--comparator_file) with its margin\n"
       "  --gamma, or --classes for a multiclass model.",
       ModelConfigFlags()},
      {"list",
       "perceptron list [--shards=HOST:PORT,...]\n  Lists the models.",
       {"shards"}},
      {"get", "perceptron get MODEL\n  Prints a model's configuration.", {}},
      {"delete",
       "perceptron delete MODEL...\n  Deletes each model named, in turn.",
       {}},
      {"reset",
       "perceptron reset MODEL\n  Forgets what a model learned; keeps its "
       "configuration.",
       {}},
      {"weights",
       "perceptron weights MODEL [--top=N]\n"
       "  Prints the weights, or the N heaviest features (by name for a "
       "hashing model).",
       {"top"}},
      {"health",
       "perceptron health [--shards=HOST:PORT,...]\n  Asks whether the server "
       "serves; then its models, durability and memory, and whether its "
       "store cannot write (changes refused until it can).",
       {"shards"}},
      {"train",
       "perceptron train FILE --model=MODEL [flags]\n"
       "  Streams a file's labeled examples to a model (each predicted, then "
       "learned), checking\n"
       "  the file first; progress on standard error, a summary at the end.\n"
       "  With --create, any of create's flags (perceptron help create).",
       {"model", "create", "dim", "hash_bits", "interactions",
        "feature_names_file", "classes", "positive", "format", "epochs",
        "batch", "in_flight", "columnar", "progress", "skip_rejected",
        "retry_for", "index_base", "label_column"}},
      {"fit",
       "perceptron fit FILE --model=MODEL [--max_epochs=100]\n"
       "  Cyclic training to separation, in one Train request. With "
       "--create, any of create's\n"
       "  flags (perceptron help create).",
       {"model", "create", "dim", "hash_bits", "interactions",
        "feature_names_file", "classes", "positive", "format", "max_epochs",
        "index_base", "label_column"}},
      {"predict",
       "perceptron predict FILE --model=MODEL [--issue]\n"
       "  Prints a prediction per example (with --issue, an id to reveal its "
       "label by later).",
       {"model", "issue", "format", "positive", "batch", "columnar",
        "index_base", "label_column"}},
      {"reveal",
       "perceptron reveal --model=MODEL ID:LABEL ... | FILE\n"
       "  Gives the labels of predictions issued with ids; the model learns "
       "from them.",
       {"model", "batch", "columnar"}},
      {"status",
       "perceptron status MODEL [--format=json]\n"
       "  Counters, TD_gamma, the bound, the certificate and, for a multiclass "
       "model, the\n"
       "  confusion matrix; as JSON, the HTTP API's /api/v1/models/MODEL.",
       {"format"}},
      {"certificate",
       "perceptron certificate MODEL\n"
       "  The best bound with no comparator given, and the comparator u that "
       "attains it (--out=FILE writes u's numbers to a file).",
       {"out"}},
      {"watch",
       "perceptron watch MODEL\n  Prints the model's status as it changes.",
       {"interval", "count"}},
      {"plot",
       "perceptron plot MODEL --out=FILE.svg\n"
       "  Cumulative mistakes and the bound against examples, as an SVG.",
       {"out", "log_scale"}},
      {"export",
       "perceptron export MODEL FILE\n  The whole model as a portable blob.",
       {}},
      {"import",
       "perceptron import FILE [--as=NEW_ID]\n  A model from an exported blob.",
       {"as"}},
      {"generate",
       "perceptron generate [--dim=20] [--count=10000]\n"
       "  A synthetic stream separable with a margin (and noise), as LIBSVM "
       "lines.",
       {"dim", "count", "margin", "noise", "seed", "out", "separator_out"}},
      {"rebalance",
       "perceptron rebalance --server=NEXT_PROXY --shards=HOST:PORT,... "
       "[--live=PROXY]\n"
       "  After shards are added or removed: moves every model to the shard "
       "NEXT_PROXY routes\n"
       "  it to.",
       {"shards", "live", "switch_timeout"}},
  };
  return *helps;
}

// The help of the command called `name`; null if there is none.
const CommandHelp* FindHelp(absl::string_view name) {
  for (const CommandHelp& h : Helps()) {
    if (name == h.name) return &h;
  }
  return nullptr;
}

// The flags every command takes: the connection's, and how progress shows.
constexpr const char* kEveryCommandsFlags[] = {
    "server",  "tls_ca",          "tls_cert",   "tls_key",
    "timeout", "connect_timeout", "token_file", "progress"};

// This client's flags given on the command line (argv, before "--"): each
// flag's name and the name as written (--nobias is bias, written nobias).
std::vector<std::pair<std::string, std::string>> FlagsOnCommandLine(
    int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> given;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    absl::string_view name = arg.substr(arg[1] == '-' ? 2 : 1);
    name = name.substr(0, name.find('='));
    const absl::string_view written = name;
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    // --nobias is --bias=false.
    if (flag == nullptr && absl::ConsumePrefix(&name, "no")) {
      flag = absl::FindCommandLineFlag(name);
    }
    // absl's own (--help, --flagfile, ...) and a value that starts with '-'.
    if (flag == nullptr || !absl::EndsWith(flag->Filename(), "cli/flags.cc")) {
      continue;
    }
    given.emplace_back(name, written);
  }
  return given;
}

// Vowpal Wabbit's way of writing --interactions: `-q ab`, `-qab` or
// `--quadratic ab` (each with `=` too), repeated for more pairs. Takes them
// out of argv (before "--"), leaving the rest in order, and returns their
// values, or a usage error for a -q without a value. No flag of this client
// starts with q.
absl::StatusOr<std::vector<std::string>> TakeQuadratic(
    std::vector<char*>& argv) {
  std::vector<std::string> pairs;
  std::vector<char*> rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") {
      rest.insert(rest.end(), argv.begin() + i, argv.end());
      break;
    }
    const bool q = absl::ConsumePrefix(&arg, "-q");
    if (i == 0 || !(q || absl::ConsumePrefix(&arg, "--quadratic")) ||
        (!q && !arg.empty() && arg[0] != '=')) {
      rest.push_back(argv[i]);
      continue;
    }
    absl::ConsumePrefix(&arg, "=");
    if (!arg.empty()) {
      pairs.emplace_back(arg);
    } else if (i + 1 < argv.size()) {
      pairs.emplace_back(argv[++i]);
    } else {
      return absl::InvalidArgumentError(
          "-q takes a pair of namespaces (-q ab, as Vowpal Wabbit writes it)");
    }
  }
  argv = std::move(rest);
  return pairs;
}

// The first flag of `given` that `command` does not read, as written; ""
// when there is none or the command is unknown (Run says so). A flag a
// command ignores is a mistake the user should hear of (generate --gamma is
// not its --margin).
std::string UnreadFlag(
    const std::string& command,
    const std::vector<std::pair<std::string, std::string>>& given) {
  const CommandHelp* help = FindHelp(command);
  if (help == nullptr) return "";
  std::vector<std::string> reads(std::begin(kEveryCommandsFlags),
                                 std::end(kEveryCommandsFlags));
  reads.insert(reads.end(), help->flags.begin(), help->flags.end());
  // train and fit --create make the model from create's flags.
  if (command == "train" || command == "fit") {
    for (const char* f : ModelConfigFlags()) reads.push_back(f);
  }
  for (const auto& [name, written] : given) {
    if (std::find(reads.begin(), reads.end(), name) == reads.end()) {
      return written;
    }
  }
  return "";
}

// Prints COMMAND's help to standard output; 0, or a usage error for an
// unknown one.
int PrintHelp(const std::string& name) {
  if (const CommandHelp* h = FindHelp(name); h != nullptr) {
    std::printf("%s\n", h->text);
    if (!h->flags.empty()) std::printf("\nFlags:\n");
    for (const char* flag : h->flags) {
      const absl::CommandLineFlag* f = absl::FindCommandLineFlag(flag);
      if (f == nullptr) continue;
      std::printf(
          "  --%s (%s); default: %s\n", flag, f->Help().c_str(),
          f->DefaultValue().empty() ? "\"\"" : f->DefaultValue().c_str());
    }
    std::printf(
        "\nThe connection: --server (or PERCEPTRON_SERVER), --tls_ca, "
        "--tls_cert, --tls_key, --token_file, --timeout.\n");
    return 0;
  }
  return Usage(absl::StrCat("no command \"", name, "\" to help with"));
}

struct Command {
  const char* name;
  int (*run)(const Args& args);
};

constexpr Command kCommands[] = {
    {"create", Create},
    {"list", List},
    {"get", Get},
    {"delete", Delete},
    {"reset", Reset},
    {"weights", Weights},
    {"health", Health},
    {"train", Train},
    {"fit", Fit},
    {"predict", Predict},
    {"reveal", Reveal},
    {"generate", Generate},
    {"status", Status},
    {"watch", Watch},
    {"plot", Plot},
    {"export", Export},
    {"import", Import},
    {"certificate", CertificateCommand},
    {"rebalance", RebalanceCommand},
};

int Run(const std::string& name, const Args& args) {
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(args);
  }
  return Usage(absl::StrCat("unknown command \"", name, "\""));
}

}  // namespace
}  // namespace perceptron::client::cli

int main(int argc, char** argv) {
  namespace cli = perceptron::client::cli;
  // std::cin and std::cout buffered on their own: kept in step with C's
  // stdio (the default), std::cin reads a character a call, ten times slower
  // for train of standard input. Nothing reads stdin through C's stdio, and
  // generate flushes std::cout before it prints its summary with printf.
  std::ios::sync_with_stdio(false);
  perceptron::SetProgramUsage("perceptron", "cli/flags.cc", cli::kUsage);
  // perceptron COMMAND --help: that command's help, not every flag's.
  if (argc >= 3 && argv[1][0] != '-') {
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-help") return cli::PrintHelp(argv[1]);
    }
  }
  // From here on argv is without Vowpal Wabbit's -q (still null-terminated).
  std::vector<char*> given_argv(argv, argv + argc);
  absl::StatusOr<std::vector<std::string>> quadratic =
      cli::TakeQuadratic(given_argv);
  if (!quadratic.ok()) {
    return cli::Usage(std::string(quadratic.status().message()));
  }
  argc = static_cast<int>(given_argv.size());
  given_argv.push_back(nullptr);
  argv = given_argv.data();
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (!quadratic->empty()) {
    std::vector<std::string> pairs = absl::GetFlag(FLAGS_interactions);
    pairs.insert(pairs.end(), quadratic->begin(), quadratic->end());
    absl::SetFlag(&FLAGS_interactions, pairs);
  }
  // The server's address: --server if given, else PERCEPTRON_SERVER if set.
  bool server_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    server_given |= a == "--server" || a == "-server" ||
                    a.rfind("--server=", 0) == 0 || a.rfind("-server=", 0) == 0;
  }
  if (const char* env = std::getenv("PERCEPTRON_SERVER");
      !server_given && env != nullptr && *env != '\0') {
    absl::SetFlag(&FLAGS_server, std::string(env));
  }
  if (rest.size() < 2) return cli::Usage("no command");
  if (std::string(rest[1]) == "help") {
    if (rest.size() == 2) {
      std::printf("perceptron: %s\n", cli::kUsage);
      return 0;
    }
    if (rest.size() > 3) return cli::Usage("help takes one COMMAND");
    return cli::PrintHelp(rest[2]);
  }
  if (cli::FindHelp(rest[1]) != nullptr) cli::SetUsageCommand(rest[1]);
  // Counts of which none would do nothing (they were taken as 1).
  for (const auto& [value, flag] :
       {std::pair{absl::GetFlag(FLAGS_batch), "--batch"},
        std::pair{absl::GetFlag(FLAGS_in_flight), "--in_flight"},
        std::pair{absl::GetFlag(FLAGS_max_epochs), "--max_epochs"}}) {
    if (value == 0)
      return cli::Usage(absl::StrCat(flag, " must be at least 1"));
  }
  if (absl::GetFlag(FLAGS_interval) < absl::ZeroDuration()) {
    return cli::Usage("--interval must not be negative");
  }
  auto given = cli::FlagsOnCommandLine(argc, argv);
  if (!quadratic->empty()) given.emplace_back("interactions", "-q");
  for (const auto& [name, written] : given) cli::SetFlagGiven(name);
  if (const std::string unread = cli::UnreadFlag(rest[1], given);
      !unread.empty()) {
    // As written: --name, or -q.
    const std::string shown =
        absl::StartsWith(unread, "-") ? unread : "--" + unread;
    std::fprintf(stderr,
                 "perceptron: %s does not read %s (perceptron help %s "
                 "lists the flags it reads)\n",
                 rest[1], shown.c_str(), rest[1]);
    return 2;
  }
  const cli::Args args(rest.begin() + 2, rest.end());
  const int rc = cli::Run(rest[1], args);
  // What a command printed (predictions, weights) must have reached its
  // destination: a full disk or a closed pipe behind standard output is an
  // error, not a run that looked whole.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "perceptron: cannot write standard output: %s\n",
                 std::strerror(errno));
    return rc == 0 ? 1 : rc;
  }
  return rc;
}
