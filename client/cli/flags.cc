// The CLI's flags, all in one file: --help lists this file's flags.
#include "client/cli/flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/time/time.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of perceptrond");
ABSL_FLAG(std::vector<std::string>, shards, {},
          "list, health, rebalance: the shards behind a proxy, "
          "host:port,host:port,... (each asked directly; list merges their "
          "models)");
ABSL_FLAG(std::string, live, "",
          "rebalance: the proxy clients use, switched to the new shards once "
          "the copies are made (default: --server, the proxy that routes by "
          "the new shards)");
ABSL_FLAG(absl::Duration, switch_timeout, absl::Minutes(10),
          "rebalance: how long to wait for --live to route the moved models "
          "to their new shards before putting them back");
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
ABSL_FLAG(uint32_t, dim, 0,
          "create: input dimension d; generate: 20 if not given");
ABSL_FLAG(std::string, algorithm, "classic",
          "create: classic, margin, averaged, voted or kernel");
ABSL_FLAG(double, eta, 1.0, "create: learning rate");
ABSL_FLAG(bool, bias, true, "create: append a constant coordinate");
ABSL_FLAG(double, bias_constant, 1.0, "create: the constant");
ABSL_FLAG(bool, normalize, true, "create: scale examples to unit norm");
ABSL_FLAG(double, gamma, 0, "create: margin gamma (0: none)");
ABSL_FLAG(
    std::string, comparator_file, "",
    "create: a file of d or d+1 numbers, the comparator u (needs --gamma); "
    "for k classes, k such vectors one after another; or its non-zeros as "
    "\"index:value\" (as weights and certificate --out write a wide "
    "model's), the rest 0");
ABSL_FLAG(std::string, kernel, "linear",
          "create: linear, polynomial or rbf (kernel algorithm)");
ABSL_FLAG(uint32_t, degree, 2, "create: polynomial degree");
ABSL_FLAG(double, c0, 1.0, "create: polynomial offset");
ABSL_FLAG(double, sigma, 1.0, "create: rbf width");
ABSL_FLAG(uint64_t, budget, 10000, "create: kernel budget (stored mistakes)");
ABSL_FLAG(bool, skip_rejected, false,
          "train: go on past examples the server rejects, counting them "
          "(default: stop at the first rejected batch)");
ABSL_FLAG(absl::Duration, retry_for, absl::ZeroDuration(),
          "train: when the stream breaks (the server or a proxy's shard gone), "
          "wait up to this long for the model to answer again, then resume "
          "after the examples it holds, none lost or applied twice (0: no "
          "retry)");
ABSL_FLAG(uint32_t, hash_bits, 0,
          "create: take features by name, hashed into 2^b coordinates as "
          "Vowpal Wabbit hashes them (1..24; --dim is then 2^b)");
ABSL_FLAG(std::vector<std::string>, interactions, {},
          "create: with --hash_bits, namespace pairs to cross, as Vowpal "
          "Wabbit's -q (e.g. ab,ac); -q ab, repeated, adds to them");
ABSL_FLAG(
    std::vector<std::string>, classes, {},
    "create: a multiclass model of these classes, in index order (e.g. "
    "setosa,versicolor,virginica; 2 to 64). train or fit --create without it "
    "takes them from the file's labels when they are not -1/+1 (numbers "
    "in increasing order, else names in byte order)");
ABSL_FLAG(std::string, feature_names_file, "",
          "create: a file of feature names, one a line (\"name\", "
          "\"namespace^name\", \"name=value\"): named features without "
          "hashing, each name its coordinate");
ABSL_FLAG(uint32_t, top, 0,
          "weights: the N heaviest non-zero coordinates by |weight| as INDEX "
          "WEIGHT NAME (a listed model's names, or the names a hashing model "
          "kept on the slot; 0: every weight, one a line)");
ABSL_FLAG(uint64_t, max_voted, 1000,
          "create: voted perceptron's stored vectors");
// data
ABSL_FLAG(std::string, format, "auto",
          "train/fit/predict: auto (from the extension: .csv, .vw, .jsonl, "
          "else libsvm), libsvm, csv, vw or jsonl; status: text (auto) or "
          "json");
ABSL_FLAG(std::string, positive, "",
          "train: the raw label that is +1 (others -1) for a binary model; "
          "default maps +1/1 to +1, -1/0 to -1");
ABSL_FLAG(int, index_base, 1,
          "LIBSVM: the first feature index (1 for SVMlight files)");
ABSL_FLAG(std::string, label_column, "",
          "CSV: the label's column, from 0 or by its name in the header "
          "(default: the column the header names \"label\", else the last)");
// train
ABSL_FLAG(absl::Duration, idle_expiry, absl::ZeroDuration(),
          "create: delete the model once it has learned nothing for this "
          "long, e.g. 1h (0: never)");
ABSL_FLAG(bool, create, false,
          "train/fit: create the model if missing, configured by create's "
          "flags (perceptron help create; classic by default); the "
          "names of a VW or JSON lines file, or of a CSV file with a header "
          "and cells that are not numbers, are hashed into 2^18 coordinates "
          "unless --hash_bits, --dim or --feature_names_file says otherwise");
ABSL_FLAG(uint32_t, epochs, 1, "train: passes over the file");
ABSL_FLAG(uint32_t, max_epochs, 100, "fit: passes at most");
ABSL_FLAG(uint32_t, batch, perceptron::client::cli::kDefaultBatch,
          "train/predict/reveal: examples per request (fewer where their "
          "features pass 4 MiB: wide rows go a few a request); if not given, "
          "64, or 1024 for predict without --issue, at most the server's "
          "max_batch_items");
ABSL_FLAG(uint32_t, in_flight, 64, "train: requests in flight at most");
ABSL_FLAG(bool, columnar, true,
          "train, predict --issue, reveal: send batches as packed columns "
          "where they fit (--nocolumnar: as items; the answers are the same)");
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
          "watch: stop after this many updates (0: never); generate: "
          "examples, 10000 if not given");
// import
ABSL_FLAG(std::string, as, "",
          "import: the new model's id (default: the exported one's)");
// generate
ABSL_FLAG(double, margin, 0.05, "generate: margin of the separator");
ABSL_FLAG(double, noise, 0.0, "generate: fraction of labels flipped");
ABSL_FLAG(uint64_t, seed, 1, "generate: random seed");
ABSL_FLAG(std::string, out, "",
          "generate: output LIBSVM file (default: standard output); plot: the "
          "SVG file; certificate: a file for the comparator u, one number a "
          "line (for --comparator_file)");
ABSL_FLAG(bool, log_scale, false, "plot: a logarithmic y axis");
ABSL_FLAG(std::string, separator_out, "",
          "generate: write the separator u (d+1 numbers) here");

namespace perceptron::client::cli {

const std::vector<const char*>& ModelConfigFlags() {
  static const auto* flags = new std::vector<const char*>{"dim",
                                                          "algorithm",
                                                          "eta",
                                                          "bias",
                                                          "bias_constant",
                                                          "normalize",
                                                          "gamma",
                                                          "comparator_file",
                                                          "kernel",
                                                          "degree",
                                                          "c0",
                                                          "sigma",
                                                          "budget",
                                                          "max_voted",
                                                          "hash_bits",
                                                          "interactions",
                                                          "feature_names_file",
                                                          "classes",
                                                          "idle_expiry"};
  return *flags;
}

}  // namespace perceptron::client::cli
