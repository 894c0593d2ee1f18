// The commands that look at a model: status, watch, plot.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/cli/commands.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"
#include "client/plot.h"
#include "google/protobuf/util/json_util.h"

namespace perceptron::client::cli {

namespace {

// The certificate's line(s) of status: U and L, the comparator's gamma and
// TD, and its state.
// `s` without counters (GetCertificate) prints no updates/U, nor does a
// model whose updates U does not bound (`bounds_updates` false).
void PrintCertificate(const v1::ModelStats& s, bool bounds_updates = true) {
  const v1::Certificate& c = s.certificate();
  std::string state;
  switch (c.state()) {
    case v1::Certificate::OFF:
      std::printf("certificate    off (%s)\n", c.reason().c_str());
      return;
    case v1::Certificate::KEEPING:
      state = c.solved() == c.examples()
                  ? absl::StrCat("exact over all ", c.examples(), " examples")
                  : absl::StrCat("over ", c.examples(), " examples, solved ",
                                 c.solved(), ", refreshing");
      break;
    case v1::Certificate::FREEZING:
      state = absl::StrCat("freezing at example ", c.kept());
      break;
    case v1::Certificate::FROZEN:
      state = absl::StrCat("frozen at example ", c.frozen_at(),
                           ", carried over ", c.examples(), " examples");
      if (!c.reason().empty()) absl::StrAppend(&state, " (", c.reason(), ")");
      break;
    default:
      std::printf("certificate    n/a (the server computes none)\n");
      return;
  }
  if (!c.available()) {
    std::printf("certificate    pending (%s)\n",
                c.state() == v1::Certificate::KEEPING && c.examples() == 0
                    ? "no labeled example yet"
                    : state.c_str());
    return;
  }
  std::printf("certificate    U %.6g, L %.6g", c.upper(), c.lower());
  if (s.examples() > 0 && c.upper() > 0 && bounds_updates) {
    std::printf(" (updates/U %.4f)", s.updates() / c.upper());
  }
  std::printf("\n");
  std::printf("               gamma %.6g, TD_gamma %.6g; %s%s\n", c.gamma(),
              c.td_gamma(), state.c_str(),
              c.converged() ? ""
              : c.state() == v1::Certificate::FROZEN
                  ? ", its last solution had not converged"
                  : ", solver not yet converged");
  // L at 2 a covered example: the bound of u -> 0 (gamma without limit, every
  // example a unit of TD/gamma), which nothing beats: the examples have no
  // linear structure the theorem can use.
  if (c.examples() > 0 && c.lower() >= 2.0 * c.examples() * (1 - 1e-6)) {
    std::printf(
        "               no comparator does better than the trivial bound, "
        "2 a covered example\n");
  }
  if (c.margin_bound_available()) {
    std::printf(
        "               margin rule: updates <= 8/gamma^2 = %.6g (every "
        "example separated with margin %.6g)",
        c.margin_bound(), c.margin());
    if (s.examples() > 0 && c.margin_bound() > 0) {
      std::printf(" (updates/bound %.4f)", s.updates() / c.margin_bound());
    }
    std::printf("\n");
  }
}

// Whether the certificate's U bounds this model's updates: the classic rule
// and those that learn like it, and a kernel model whose budget dropped
// nothing; not the margin rule.
bool CertificateBoundsUpdates(const v1::ModelStatus& st) {
  if (st.algorithm() == v1::MARGIN) return false;
  return st.algorithm() != v1::KERNEL || st.dropped() == 0;
}

// A multiclass model's confusion matrix: a row per true class, a column per
// class issued, with each class's examples and the share it got right; past
// 16 classes, only those per-class figures.
void PrintConfusion(const v1::ModelStatus& st) {
  const int k = st.classes_size();
  if (k == 0 || st.confusion_size() != k * k) return;
  size_t name_width = 5;
  for (const std::string& c : st.classes()) {
    name_width = std::max(name_width, std::min<size_t>(c.size(), 24));
  }
  const int w = static_cast<int>(name_width);
  // A column as wide as the longest class name (7 to 12) and the largest count.
  size_t column = 7;
  for (const std::string& c : st.classes()) {
    column = std::max(column, std::min<size_t>(c.size(), 12));
  }
  for (const uint64_t n : st.confusion()) {
    column = std::max(column, absl::StrCat(n).size());
  }
  const int cw = static_cast<int>(column);
  const bool matrix = k <= 16;
  std::printf("confusion      %s\n",
              matrix ? "rows: the true class; columns: the class issued"
                     : "per true class (the matrix is in the JSON API)");
  std::printf("  %-*s", w, "");
  if (matrix) {
    for (int p = 0; p < k; ++p) {
      std::printf(" %*.*s", cw, cw, st.classes(p).c_str());
    }
  }
  std::printf(" %9s %8s\n", "examples", "right");
  for (int y = 0; y < k; ++y) {
    uint64_t row = 0;
    for (int p = 0; p < k; ++p) row += st.confusion(y * k + p);
    std::printf("  %-*.*s", w, w, st.classes(y).c_str());
    if (matrix) {
      for (int p = 0; p < k; ++p) {
        std::printf(" %*llu", cw,
                    static_cast<unsigned long long>(st.confusion(y * k + p)));
      }
    }
    const uint64_t right = st.confusion(y * k + y);
    if (row == 0) {
      std::printf(" %9s %8s\n", "0", "-");
    } else {
      std::printf(" %9llu %7.2f%%\n", static_cast<unsigned long long>(row),
                  100.0 * right / row);
    }
  }
}

void PrintStatus(const v1::ModelStatus& st) {
  const v1::ModelStats& s = st.stats();
  // A hashing model's (the one kind with a table of names) as `list` says it.
  const bool hashing = st.has_names() && absl::has_single_bit(st.dimension());
  std::printf("model          %s (%s, %s=%u)\n", st.model_id().c_str(),
              AlgorithmText(st.algorithm()), hashing ? "hash_bits" : "d",
              hashing ? absl::countr_zero(st.dimension()) : st.dimension());
  if (st.classes_size() > 0) {
    std::string shown;
    for (int r = 0; r < st.classes_size() && r < 20; ++r) {
      absl::StrAppend(&shown, r == 0 ? "" : ",", st.classes(r));
    }
    if (st.classes_size() > 20) absl::StrAppend(&shown, ",...");
    std::printf("classes        %d: %s\n", st.classes_size(), shown.c_str());
  }
  std::printf("examples       %llu\n",
              static_cast<unsigned long long>(s.examples()));
  if (s.examples() == 0) {
    std::printf("mistakes       0\n");
  } else {
    std::printf("mistakes       %llu (%.2f%%; %.2f%% of the last %u)\n",
                static_cast<unsigned long long>(s.mistakes()),
                100 * st.mistake_rate(), 100 * st.recent_mistake_rate(),
                static_cast<unsigned>(
                    std::min<uint64_t>(s.examples(), st.recent_window())));
  }
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
  PrintCertificate(s, CertificateBoundsUpdates(st));
  if (s.certificate().available()) {
    if (st.algorithm() == v1::MARGIN) {
      std::printf(
          "               (U bounds the classic rule's updates, not the "
          "margin rule's)\n");
    } else if (!CertificateBoundsUpdates(st)) {
      std::printf(
          "               (the budget dropped support vectors: the theorem "
          "no longer bounds this model's updates)\n");
    }
  }
  std::printf("predictions    %llu issued, %llu pending, %llu expired\n",
              static_cast<unsigned long long>(s.predictions()),
              static_cast<unsigned long long>(s.pending()),
              static_cast<unsigned long long>(s.expired()));
  if (st.algorithm() == v1::KERNEL) {
    // Its w lives in the kernel's feature space, a sum over support vectors.
    std::printf(
        "||w||          n/a (a kernel model's w is its support vectors)\n");
  } else {
    std::printf("||w||          %.6g\n", st.weight_norm());
  }
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
  if (st.has_names()) {
    const v1::NameTableInfo& n = st.names();
    std::printf(
        "names          %llu kept, %llu slots with more than one, %llu "
        "unnamed (%s of %s)\n",
        static_cast<unsigned long long>(n.names()),
        static_cast<unsigned long long>(n.collided_slots()),
        static_cast<unsigned long long>(n.unnamed_slots()),
        SizeText(n.bytes()).c_str(), SizeText(n.limit_bytes()).c_str());
  }
  PrintConfusion(st);
}

}  // namespace

int Status(const Args& args) {
  if (args.size() != 1) return Usage("status takes one MODEL");
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "auto" && format != "text" && format != "json") {
    return Usage(
        absl::StrCat("status --format=", format, " is not text or json"));
  }
  absl::StatusOr<v1::ModelStatus> st = Connect()->GetStatus(args[0]);
  if (!st.ok()) return Fail(st.status());
  if (format == "json") {
    // As the HTTP API's /api/v1/models/MODEL gives it.
    google::protobuf::util::JsonPrintOptions options;
    options.always_print_primitive_fields = true;
    options.preserve_proto_field_names = true;
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(*st, &json, options)
             .ok()) {
      return FailLocal(absl::InternalError("status: cannot write JSON"));
    }
    std::printf("%s\n", json.c_str());
    return 0;
  }
  PrintStatus(*st);
  return 0;
}

int CertificateCommand(const Args& args) {
  if (args.size() != 1) return Usage("certificate takes one MODEL");
  absl::StatusOr<v1::CertificateResponse> c =
      Connect()->GetCertificate(args[0]);
  if (!c.ok()) return Fail(c.status());
  v1::ModelStats s;
  *s.mutable_certificate() = c->certificate();
  PrintCertificate(s);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (c->expansion_size() > 0) {
    // A kernel model's u = sum_s coefficient_s phi(x^_s): one term a line,
    // "coefficient index:value ...".
    std::string terms;
    for (const v1::KernelTerm& t : c->expansion()) {
      absl::StrAppend(&terms, absl::StrFormat("%.17g", t.coefficient()));
      for (int k = 0; k < t.indices_size(); ++k) {
        absl::StrAppend(
            &terms, absl::StrFormat(" %u:%.17g", t.indices(k), t.values(k)));
      }
      absl::StrAppend(&terms, "\n");
    }
    if (out.empty()) {
      std::printf(
          "comparator u   in the kernel's feature space, sum of %d terms "
          "coefficient * phi(x^) (--out writes them)\n",
          c->expansion_size());
      return 0;
    }
    std::ofstream file(out);
    file << terms;
    file.close();
    if (!file) {
      return FailLocal(absl::PermissionDeniedError(
          absl::StrCat("cannot write ", out, ": ", Errno())));
    }
    std::printf(
        "comparator u   written to %s (%d terms \"coefficient index:value "
        "...\", u = sum coefficient * phi(x^); gamma %.17g)\n",
        out.c_str(), c->expansion_size(), c->certificate().gamma());
    return 0;
  }
  if (c->comparator_size() == 0) return 0;
  // A wide model's u comes as its non-zeros with their coordinates: written
  // as "index:value", in coordinate order.
  std::vector<std::pair<uint32_t, double>> sparse;
  const bool wide = c->comparator_indices_size() == c->comparator_size();
  if (wide) {
    for (int k = 0; k < c->comparator_size(); ++k) {
      sparse.emplace_back(c->comparator_indices(k), c->comparator(k));
    }
    std::sort(sparse.begin(), sparse.end());
  }
  // Printed inline when short; else counted, --out writing them.
  constexpr int kInline = 64;
  if (out.empty() && c->comparator_size() > kInline) {
    std::printf("comparator u   %d %s (--out=FILE writes them, one a line)\n",
                c->comparator_size(),
                wide ? "non-zeros \"index:value\"" : "numbers");
    return 0;
  }
  if (out.empty()) {
    std::printf("comparator u  ");
    if (wide) {
      for (const auto& [i, v] : sparse) std::printf(" %u:%.17g", i, v);
    } else {
      for (double v : c->comparator()) std::printf(" %.17g", v);
    }
    std::printf("\n");
    return 0;
  }
  // One number a line, as --comparator_file reads them (a wide model's:
  // "index:value" a line).
  std::ofstream file(out);
  if (wide) {
    for (const auto& [i, v] : sparse)
      file << absl::StrFormat("%u:%.17g\n", i, v);
  } else {
    for (double v : c->comparator()) file << absl::StrFormat("%.17g\n", v);
  }
  file.close();
  if (!file) {
    return FailLocal(absl::PermissionDeniedError(
        absl::StrCat("cannot write ", out, ": ", Errno())));
  }
  std::printf("comparator u   written to %s (%d %s; gamma %.17g)\n",
              out.c_str(), c->comparator_size(),
              wide ? "non-zeros \"index:value\"" : "numbers",
              c->certificate().gamma());
  return 0;
}

int Watch(const Args& args) {
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
        auto bar = [](const char* label, double part, double whole) {
          const int width = 40;
          const int filled =
              std::clamp(static_cast<int>(width * part / whole), 0, width);
          std::printf("%-15s[%s%s]\n", label, std::string(filled, '#').c_str(),
                      std::string(width - filled, '.').c_str());
        };
        if (s.bound_available() && s.bound() > 0) {
          bar("updates/bound", s.updates(), s.bound());
        }
        const v1::Certificate& cert = s.certificate();
        if (cert.available() && cert.upper() > 0 &&
            CertificateBoundsUpdates(st)) {
          bar("updates/U", s.updates(), cert.upper());
        }
        std::printf("\n");
        std::fflush(stdout);
        return limit == 0 || ++seen < limit;
      });
  if (!s.ok()) return Fail(s);
  return 0;
}

int Plot(const Args& args) {
  if (args.size() != 1) return Usage("plot takes one MODEL");
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (out_path.empty()) return Usage("plot needs --out=FILE.svg");
  std::unique_ptr<Client> c = Connect();
  absl::StatusOr<v1::History> history = c->GetHistory(args[0]);
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
  std::printf(
      "plotted %s to %s: %d points, %llu examples, %llu mistakes%s%s\n",
      args[0].c_str(), out_path.c_str(), history->points_size(),
      static_cast<unsigned long long>(last ? last->examples() : 0),
      static_cast<unsigned long long>(last ? last->mistakes() : 0),
      last && last->has_bound()
          ? absl::StrFormat(", bound %.6g", last->bound()).c_str()
          : "",
      last && last->has_certificate_upper()
          ? absl::StrFormat(", certificate U %.6g", last->certificate_upper())
                .c_str()
          : "");
  return 0;
}

}  // namespace perceptron::client::cli
