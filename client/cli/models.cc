// create, list, get, delete, reset, weights, health.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"
#include "client/rebalance.h"
#include "core/quoted.h"

namespace perceptron::client::cli {

namespace {

// The coordinates of a weight vector above which it is wide: the
// certificate's comparator then comes as its non-zeros (perceptron.proto's
// CertificateResponse), and `weights` prints only its non-zeros.
constexpr size_t kWideCoordinates = size_t{1} << 16;

// `get`: the model's configuration, one field a line, as `status` prints.
void PrintModel(const v1::Model& m) {
  const v1::ModelConfig& c = m.config();
  std::printf("model          %s (%s, %s)\n", m.model_id().c_str(),
              AlgorithmText(c.algorithm()), ShapeText(c).c_str());
  if (c.classes_size() > 0) {
    std::printf("classes        %s\n", absl::StrJoin(c.classes(), ",").c_str());
  }
  if (c.hash_bits() > 0) {
    std::printf("features       by name, hashed into 2^%u coordinates\n",
                c.hash_bits());
  } else if (c.feature_names_size() > 0) {
    std::printf("features       by name, %d listed\n", c.feature_names_size());
  }
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
    std::printf("comparator     %d %s, |u| = %.6g (scaled to 1)\n",
                c.comparator_size(),
                c.comparator_indices_size() == 0 ? "values"
                : c.comparator_size() == 1       ? "non-zero"
                                                 : "non-zeros",
                std::sqrt(sq));
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

// The weight coordinates of a model configured as `c`: its dimension (2^b
// with hash_bits b, or the number of names listed), the bias's, for each of
// its classes.
uint64_t WeightCoordinates(const v1::ModelConfig& c) {
  uint64_t d = c.dimension();
  if (c.hash_bits() > 0) {
    d = uint64_t{1} << std::min(c.hash_bits(), 32u);
  } else if (c.feature_names_size() > 0) {
    d = static_cast<uint64_t>(c.feature_names_size());
  }
  if (!c.has_bias() || c.bias()) ++d;
  return d * static_cast<uint64_t>(std::max(1, c.classes_size()));
}

// A comparator file (create --comparator_file), read into `c`'s comparator:
// numbers split by whitespace or commas, as `weights` and `certificate --out`
// write them, or a wide model's non-zeros as "index:value" (their form for
// it), sent as they are (comparator_indices; the server spreads them over its
// weight coordinates). "#" to the end of its line is a comment (as `weights`
// writes a multiclass model's class names). Errors name the file and line.
absl::Status ReadComparator(const std::string& path, v1::ModelConfig& c) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  const uint64_t coordinates = WeightCoordinates(c);
  std::vector<double> out;
  // The non-zeros given as "index:value": (index, value, line).
  std::vector<std::tuple<uint64_t, double, size_t>> sparse;
  size_t line_number = 0, first_line = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_number;
    const absl::string_view text =
        absl::string_view(line).substr(0, line.find('#'));
    for (absl::string_view t : absl::StrSplit(
             text, absl::ByAnyChar(" \t\r\f\v,"), absl::SkipEmpty())) {
      auto at = [&] { return absl::StrCat(path, ":", line_number, ": "); };
      const size_t colon = t.find(':');
      const bool pair = colon != absl::string_view::npos;
      if (first_line == 0) first_line = line_number;
      if (pair ? !out.empty() : !sparse.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            at(), Quoted(t), pair ? " is index:value" : " is a number alone",
            ", after ", pair ? "numbers alone" : "index:value pairs",
            " (from line ", first_line,
            "): a comparator file is one form or the other"));
      }
      double v;
      if (!pair) {
        if (!absl::SimpleAtod(t, &v)) {
          return absl::InvalidArgumentError(
              absl::StrCat(at(), Quoted(t), " is not a number"));
        }
        out.push_back(v);
        continue;
      }
      uint64_t index;
      if (!absl::SimpleAtoi(t.substr(0, colon), &index) ||
          !absl::SimpleAtod(t.substr(colon + 1), &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(), Quoted(t),
                         " is not index:value (a coordinate from 0 and a "
                         "number)"));
      }
      if (index >= coordinates) {
        return absl::InvalidArgumentError(absl::StrCat(
            at(), "index ", index, " is past the model's ", coordinates,
            " weight coordinates (0 to ", coordinates - 1, ")"));
      }
      sparse.emplace_back(index, v, line_number);
    }
  }
  c.mutable_comparator()->Add(out.begin(), out.end());
  std::sort(sparse.begin(), sparse.end());
  for (size_t k = 0; k < sparse.size(); ++k) {
    const auto& [index, v, at] = sparse[k];
    if (k > 0 && std::get<0>(sparse[k - 1]) == index) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": index ", index, " is given twice (lines ",
                       std::min(std::get<2>(sparse[k - 1]), at), " and ",
                       std::max(std::get<2>(sparse[k - 1]), at), ")"));
    }
    c.add_comparator_indices(static_cast<uint32_t>(index));
    c.add_comparator(v);
  }
  return absl::OkStatus();
}

// The lines of `path`, each a feature name (trailing whitespace dropped,
// blank lines skipped).
absl::StatusOr<std::vector<std::string>> ReadNames(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    absl::StripTrailingAsciiWhitespace(&line);
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::ModelConfig> ConfigFromFlags(
    uint32_t dimension, const std::vector<std::string>& classes) {
  v1::ModelConfig c;
  c.set_dimension(dimension);
  const std::string a = absl::GetFlag(FLAGS_algorithm);
  v1::Algorithm algorithm = v1::ALGORITHM_UNSPECIFIED;
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
  const std::string comparator_file = absl::GetFlag(FLAGS_comparator_file);
  if (c.has_gamma() && comparator_file.empty() && algorithm != v1::MARGIN) {
    return absl::InvalidArgumentError(
        "--gamma without --comparator_file does nothing: gamma is the margin "
        "of a comparator u (with --comparator_file), or the margin rule's "
        "(--algorithm=margin); without either, the certificate finds the "
        "best comparator itself");
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
  c.set_hash_bits(absl::GetFlag(FLAGS_hash_bits));
  const absl::Duration idle = absl::GetFlag(FLAGS_idle_expiry);
  if (idle < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--idle_expiry=", absl::FormatDuration(idle),
                     " is negative (0 keeps the model)"));
  }
  c.set_idle_expiry_seconds(absl::ToDoubleSeconds(idle));
  for (const std::string& q : absl::GetFlag(FLAGS_interactions)) {
    c.add_interactions(q);
  }
  if (const std::string f = absl::GetFlag(FLAGS_feature_names_file);
      !f.empty()) {
    absl::StatusOr<std::vector<std::string>> names = ReadNames(f);
    if (!names.ok()) return names.status();
    c.mutable_feature_names()->Add(names->begin(), names->end());
  }
  for (const std::string& name : absl::GetFlag(FLAGS_classes)) {
    c.add_classes(name);
  }
  if (c.classes().empty())
    c.mutable_classes()->Add(classes.begin(), classes.end());
  if ((c.hash_bits() != 0 || c.feature_names_size() > 0) &&
      absl::GetFlag(FLAGS_dim) == 0) {
    c.set_dimension(0);
  }
  // Last: a comparator's indices are checked against the model's weight
  // coordinates, which the flags above and the classes set.
  if (!comparator_file.empty()) {
    if (absl::Status s = ReadComparator(comparator_file, c); !s.ok()) return s;
  }
  return c;
}

int Create(const Args& args) {
  if (args.size() != 1) return Usage("create takes one MODEL");
  if (absl::GetFlag(FLAGS_dim) == 0 && absl::GetFlag(FLAGS_hash_bits) == 0 &&
      absl::GetFlag(FLAGS_feature_names_file).empty()) {
    return Usage(
        "create needs --dim (or --hash_bits, or --feature_names_file)");
  }
  absl::StatusOr<v1::ModelConfig> config =
      ConfigFromFlags(absl::GetFlag(FLAGS_dim));
  if (!config.ok()) return FailLocal(config.status());
  absl::StatusOr<v1::Model> m = Connect()->CreateModel(args[0], *config);
  if (!m.ok()) return Fail(m.status());
  std::printf(
      "created %s (%s, %s%s%s)\n", m->model_id().c_str(),
      AlgorithmText(m->config().algorithm()), ShapeText(m->config()).c_str(),
      m->config().comparator_size() > 0 ? ", with comparator" : "",
      m->config().idle_expiry_seconds() > 0
          ? absl::StrCat(", deleted once idle for ",
                         absl::FormatDuration(
                             absl::Seconds(m->config().idle_expiry_seconds())))
                .c_str()
          : "");
  return 0;
}

int List(const Args& args) {
  if (!args.empty()) return Usage("list takes no arguments");
  const std::vector<std::string> shards = absl::GetFlag(FLAGS_shards);
  if (!shards.empty()) {
    // Each shard's models, merged by id, with the shard that holds each.
    absl::StatusOr<std::vector<PlacedModel>> placed =
        ListModelsAcross(shards, Options());
    if (!placed.ok()) return Fail(placed.status());
    int rc = 0;
    for (size_t i = 0; i < placed->size(); ++i) {
      const PlacedModel& p = (*placed)[i];
      std::printf("%s\t%s\t%s\t%s\n", p.model.model_id().c_str(),
                  AlgorithmText(p.model.config().algorithm()),
                  ShapeText(p.model.config()).c_str(), p.target.c_str());
      if (i > 0 && (*placed)[i - 1].model.model_id() == p.model.model_id()) {
        std::fprintf(stderr,
                     "perceptron: model %s is on two shards: %s and %s\n",
                     p.model.model_id().c_str(),
                     (*placed)[i - 1].target.c_str(), p.target.c_str());
        rc = 1;
      }
    }
    return rc;
  }
  absl::StatusOr<std::vector<v1::Model>> models = Connect()->ListModels();
  if (!models.ok()) return Fail(models.status());
  for (const v1::Model& m : *models) {
    std::printf("%s\t%s\t%s\n", m.model_id().c_str(),
                AlgorithmText(m.config().algorithm()),
                ShapeText(m.config()).c_str());
  }
  return 0;
}

int Health(const Args& args) {
  if (!args.empty()) return Usage("health takes no arguments");
  const std::vector<std::string> shards = absl::GetFlag(FLAGS_shards);
  if (!shards.empty()) {
    int rc = 0;
    for (const std::string& target : shards) {
      ClientOptions options = Options();
      options.target = target;
      absl::Status s = Client::Connect(options)->CheckHealth(absl::Seconds(5));
      std::printf("%s\t%s\n", target.c_str(),
                  s.ok() ? "SERVING" : std::string(s.ToString()).c_str());
      if (!s.ok()) rc = 1;
    }
    return rc;
  }
  std::unique_ptr<Client> client = Connect();
  absl::Status s = client->CheckHealth(absl::Seconds(5));
  if (!s.ok()) return Fail(s);
  std::printf("SERVING\n");
  // The server's own status, where it gives one (a server of an earlier
  // version does not).
  absl::StatusOr<v1::ServerStatus> status = client->GetServerStatus();
  if (!status.ok()) return 0;
  std::printf("%llu models, durability %s; resident memory %.1f MiB (%s)\n",
              static_cast<unsigned long long>(status->models()),
              status->durability().c_str(),
              static_cast<double>(status->resident_memory_bytes()) / (1 << 20),
              status->allocator().c_str());
  // What the server's memory bounds leave (a server of an earlier version
  // says neither).
  if (status->max_pending_prediction_bytes() > 0) {
    std::printf(
        "models %s of %s (--max_models_mb), pending predictions %s of %s "
        "(--max_pending_mb), feature names %s of %s (--name_tables_mb)\n",
        SizeText(status->models_weight_bytes()).c_str(),
        status->max_models_weight_bytes() == 0
            ? "no bound"
            : SizeText(status->max_models_weight_bytes()).c_str(),
        SizeText(status->pending_prediction_bytes()).c_str(),
        SizeText(status->max_pending_prediction_bytes()).c_str(),
        SizeText(status->name_bytes()).c_str(),
        SizeText(status->max_name_bytes()).c_str());
  }
  // Still 0: the server serves (reads go on), and a restart would not give
  // the disk room (probes that restart a failing server use this command).
  if (!status->store_writing()) {
    std::printf("%s\n", status->store_error().c_str());
  }
  return 0;
}

int RebalanceCommand(const Args& args) {
  if (!args.empty()) return Usage("rebalance takes no arguments");
  RebalanceOptions options;
  options.shards = absl::GetFlag(FLAGS_shards);
  if (options.shards.empty()) return Usage("rebalance needs --shards");
  options.next = absl::GetFlag(FLAGS_server);
  options.live = absl::GetFlag(FLAGS_live);
  options.switch_timeout = absl::GetFlag(FLAGS_switch_timeout);
  options.client = Options();
  options.on_progress = [](absl::string_view line) {
    std::fprintf(stderr, "perceptron: %.*s\n", static_cast<int>(line.size()),
                 line.data());
  };
  absl::StatusOr<RebalanceReport> r = Rebalance(options);
  if (!r.ok()) return Fail(r.status());
  size_t bytes = 0;
  for (const ModelMove& m : r->moved) bytes += m.bytes;
  std::printf(
      "rebalanced %zu models: %zu moved (%zu bytes), %zu left as they were; "
      "copies made in %.3f s, %.3f s in all\n",
      r->models, r->moved.size(), bytes, r->left.size(),
      absl::ToDoubleSeconds(r->copying), absl::ToDoubleSeconds(r->total));
  for (const std::string& why : r->left) {
    std::printf("left: %s\n", why.c_str());
  }
  return r->left.empty() ? 0 : 1;
}

int Get(const Args& args) {
  if (args.size() != 1) return Usage("get takes one MODEL");
  absl::StatusOr<v1::Model> m = Connect()->GetModel(args[0]);
  if (!m.ok()) return Fail(m.status());
  PrintModel(*m);
  return 0;
}

int Delete(const Args& args) {
  if (args.empty()) return Usage("delete takes one MODEL or more");
  // Each in turn, as rm does: one not there is said and the others go (exit
  // 1); any other failure stops there (those before it are deleted, and said
  // so).
  std::unique_ptr<Client> client = Connect();
  int rc = 0;
  for (const std::string& model : args) {
    absl::Status s = client->DeleteModel(model);
    if (s.code() == absl::StatusCode::kNotFound) {
      rc = Fail(s);
      continue;
    }
    if (!s.ok()) return Fail(s);
    std::printf("deleted %s\n", model.c_str());
  }
  return rc;
}

int Reset(const Args& args) {
  if (args.size() != 1) return Usage("reset takes one MODEL");
  absl::StatusOr<v1::Model> m = Connect()->ResetModel(args[0]);
  if (!m.ok()) return Fail(m.status());
  std::printf("reset %s\n", args[0].c_str());
  return 0;
}

int Weights(const Args& args) {
  if (args.size() != 1) return Usage("weights takes one MODEL");
  std::unique_ptr<Client> client = Connect();
  const uint32_t top = absl::GetFlag(FLAGS_top);
  absl::StatusOr<v1::Weights> w = client->GetWeights(args[0], top);
  if (!w.ok()) return Fail(w.status());
  if (w->values_size() == 0 && w->top_size() == 0) {
    // A kernel model's w lies in the kernel's feature space: said, not an
    // empty list.
    absl::StatusOr<v1::Model> m = client->GetModel(args[0]);
    if (m.ok() && m->config().algorithm() == v1::KERNEL) {
      return FailLocal(absl::FailedPreconditionError(absl::StrCat(
          args[0],
          " is a kernel model: its w is a sum over its support vectors in the "
          "kernel's feature space, with no weight by coordinate (`perceptron "
          "certificate ",
          args[0], "` gives its comparator as such a sum)")));
    }
  }
  if (top == 0) {
    // A multiclass model's k vectors, each after a "# class NAME" line.
    std::vector<std::string> classes;
    if (absl::StatusOr<v1::Model> m = client->GetModel(args[0]); m.ok()) {
      classes.assign(m->config().classes().begin(),
                     m->config().classes().end());
    }
    const size_t block =
        classes.empty() ? 0 : w->values_size() / classes.size();
    // A wide model's vectors (more than 2^16 coordinates each, as a hashing
    // model's are): only the non-zeros, as "index:value" with the index
    // counted across the k vectors, the form `certificate --out` writes its
    // comparator in. --comparator_file reads both forms.
    const bool wide =
        (block > 0 ? block : static_cast<size_t>(w->values_size())) >
        kWideCoordinates;
    if (wide) {
      const auto nonzero = std::count_if(w->values().begin(), w->values().end(),
                                         [](double v) { return v != 0; });
      std::printf("# %lld of %d weights are non-zero: \"index:value\" a line\n",
                  static_cast<long long>(nonzero), w->values_size());
    }
    for (int i = 0; i < w->values_size(); ++i) {
      if (block > 0 && i % block == 0) {
        std::printf("# class %s\n", classes[i / block].c_str());
      }
      if (!wide) {
        std::printf("%.17g\n", w->values(i));
      } else if (w->values(i) != 0) {
        std::printf("%d:%.17g\n", i, w->values(i));
      }
    }
    return 0;
  }
  // The heaviest non-zero coordinates, by |weight| (ties: the lower index
  // first), with their names: a listed model's name, the names a hashing
  // model kept on the slot (" | " between names that collided), "-" when
  // none was kept.
  for (const v1::WeightedFeature& f : w->top()) {
    std::string name = "-";
    if (f.bias()) {
      name = "(bias)";
    } else if (f.names_size() > 0) {
      name = absl::StrJoin(f.names(), " | ");
    }
    // A multiclass model's: the class whose weight this is, last.
    std::printf(
        "%u %.17g %s%s%s\n", f.index(), f.weight(), name.c_str(),
        f.class_name().empty() ? "" : " class=", f.class_name().c_str());
  }
  if (w->top_size() == 0) {
    std::printf("# no weight is non-zero yet\n");
  }
  if (w->has_names()) {
    const v1::NameTableInfo& n = w->names();
    std::printf(
        "# names kept: %llu (%llu slots with more than one, %llu slots "
        "unnamed); %s of %s, and %s of slot tags\n",
        static_cast<unsigned long long>(n.names()),
        static_cast<unsigned long long>(n.collided_slots()),
        static_cast<unsigned long long>(n.unnamed_slots()),
        SizeText(n.bytes()).c_str(), SizeText(n.limit_bytes()).c_str(),
        SizeText(n.tag_bytes()).c_str());
  }
  return 0;
}

}  // namespace perceptron::client::cli
