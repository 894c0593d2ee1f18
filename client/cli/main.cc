// perceptron: the command-line client of perceptrond. main reads the flags
// and hands the command to its function (commands.h); kUsage lists them.
//
// Results go to standard output, progress and errors to standard error. Exit
// status: 0 on success, 1 on failure, 2 for a usage error.
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "common/program.h"

namespace perceptron::client::cli {
namespace {

constexpr char kUsage[] = R"(perceptron: the command-line client of perceptrond

  perceptron create MODEL --dim=D [--algorithm=classic|margin|averaged|voted|kernel]
             [--gamma=G --comparator_file=FILE] [--eta --bias --normalize --kernel ...]
  perceptron list | get MODEL | delete MODEL | reset MODEL | weights MODEL | health
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
  perceptron status MODEL
  perceptron certificate MODEL   (the bound with no comparator given, and the comparator u
             that attains it: as numbers for --comparator_file)
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
  perceptron::SetProgramUsage("perceptron", "cli/flags.cc",
                              perceptron::client::cli::kUsage);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() < 2) return perceptron::client::cli::Usage("no command");
  const perceptron::client::cli::Args args(rest.begin() + 2, rest.end());
  return perceptron::client::cli::Run(rest[1], args);
}
