#include "bench/service/targets.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/service/measure.h"

namespace perceptron::bench {

void PrintTargets(const RunFigures& f) {
  auto MedianOf = [&](const std::string& key) {
    auto it = f.rates.find(key);
    return it == f.rates.end() ? 0 : Median(it->second);
  };
  auto Has = [&](const std::string& key) { return f.rates.contains(key); };
  auto P50 = [&](const std::string& path) { return f.p50.at(path); };
  std::printf(
      "\n## Targets (this run)\n\n| target | measured | |\n|---|---|---|\n");
  int met = 0, failed = 0, unmeasured_count = 0;
  auto target = [&](const std::string& what, const std::string& measured,
                    bool pass) {
    std::printf("| %s | %s | %s |\n", what.c_str(), measured.c_str(),
                pass ? "pass" : "FAIL");
    ++(pass ? met : failed);
  };
  auto unmeasured = [&](const std::string& what) {
    std::printf("| %s | not measured | |\n", what.c_str());
    ++unmeasured_count;
  };
  auto ratio = [&](const std::string& what, bool measured, double v,
                   double at_least) {
    if (!measured) return unmeasured(what);
    target(what, absl::StrFormat("%.2f", v), v >= at_least);
  };
  auto over = [&](const std::string& a, const std::string& b) {
    return MedianOf(a) / MedianOf(b);
  };
  auto both = [&](const std::string& a, const std::string& b) {
    return Has(a) && Has(b);
  };
  ratio("per-item W1 none / echo >= 0.9", both("W1 none", "W1 echo"),
        over("W1 none", "W1 echo"), 0.9);
  ratio("per-item W1 sync / echo >= 0.8", both("W1 sync", "W1 echo"),
        over("W1 sync", "W1 echo"), 0.8);
  if (f.p50.contains("none") && f.p50.contains("echo")) {
    const double v = Median(P50("none")) / Median(P50("echo"));
    target("W4 p50 none / echo <= 1.05", absl::StrFormat("%.2f", v), v <= 1.05);
  } else {
    unmeasured("W4 p50 none / echo <= 1.05");
  }
  ratio("per-item W3 sync / echo >= 0.7", both("W3 sync", "W3 echo"),
        over("W3 sync", "W3 echo"), 0.7);
  std::string w4_note;
  if (f.p50.contains("sync") && f.p50.contains("echo")) {
    // Sync's p50 against the echo's plus 1.5 bare fdatasyncs: its excess,
    // in fdatasyncs.
    const double v =
        (Median(P50("sync")) - Median(P50("echo"))) / Median(P50(kBareSync));
    target("W4 p50 sync <= echo + 1.5 fdatasync",
           absl::StrFormat("echo + %.2f", v), v <= 1.5);
    if (f.p50.contains(kDurableEcho)) {
      // Not a target: the same excess over an echo that fdatasyncs each
      // request (the disk asked at W4's pace), printed below the table.
      w4_note = absl::StrFormat(
          "W4 p50: echo %.0f us, sync %.0f, bare fdatasync %.0f; an echo "
          "that fdatasyncs each request %.0f: sync is that plus %.2f bare "
          "fdatasyncs.\n",
          Median(P50("echo")), Median(P50("sync")), Median(P50(kBareSync)),
          Median(P50(kDurableEcho)),
          (Median(P50("sync")) - Median(P50(kDurableEcho))) /
              Median(P50(kBareSync)));
    }
  } else {
    unmeasured("W4 p50 sync <= echo + 1.5 fdatasync");
  }
  ratio("columnar / per-item, W1 >= 3", both("W1 columnar", "W1 none"),
        over("W1 columnar", "W1 none"), 3);
  // docs/design.md section 7: columnar >= 0.8x an echo of the same columnar
  // bytes, on every workload.
  for (const char* w : {"W1", "W2", "W3"}) {
    const std::string a = absl::StrCat(w, " columnar"),
                      b = absl::StrCat(w, " echo columnar");
    ratio(absl::StrCat("columnar / echo of the columns, ", w, " >= 0.8"),
          both(a, b), over(a, b), 0.8);
  }
  ratio("columnar / per-item, W3 >= 2", both("W3 columnar", "W3 none"),
        over("W3 columnar", "W3 none"), 2);
  ratio("columnar / core in-process, W2 >= 0.3", both("W2 columnar", "W2 core"),
        over("W2 columnar", "W2 core"), 0.3);
  ratio("Python package: numpy columns / per-item messages >= 10",
        !f.py_items.empty(), Median(f.py_columns) / Median(f.py_items), 10);
  for (const std::string w : {"W1", "W2"}) {
    const bool measured = f.sk_epoch.contains(w) && f.core_same.contains(w);
    ratio(absl::StrCat("core / scikit-learn epoch, ", w, " >= 5"), measured,
          measured ? f.core_same.at(w) / f.sk_epoch.at(w) : 0, 5);
  }
  for (const auto& [on, off, label] :
       {std::tuple<std::string, std::string, std::string>{"none", "nocert", ""},
        {"sync", "sync nocert", "durability sync, "}}) {
    for (const char* w : {"W1", "W2", "W3"}) {
      const std::string a = absl::StrCat(w, " ", on),
                        b = absl::StrCat(w, " ", off);
      ratio(absl::StrCat("certificate on / off, ", label, w, " >= 0.8"),
            both(a, b), over(a, b), 0.8);
    }
  }
  const std::string cold =
      "certificate refresh of 10^5 kept examples (d=20, cold) under 1 s of "
      "one core";
  const std::string linear =
      "certificate refresh per example per pass, 10^5 / 3x10^5 >= 0.67 "
      "(linear past the caches)";
  if (f.refresh.size() == 3) {
    target(cold,
           absl::StrFormat("%.3f s, %d passes", f.refresh[1].cold_cpu_s,
                           f.refresh[1].cold_passes),
           f.refresh[1].cold_cpu_s < 1.0);
    // The cost per example per pass steps up once the rows leave the
    // caches (10^4 -> 10^5, shown beside); the target compares two sizes
    // past them.
    const double past =
        f.refresh[1].ns_per_example_pass / f.refresh[2].ns_per_example_pass;
    target(linear,
           absl::StrFormat("%.2f (10^4 / 10^5: %.2f)", past,
                           f.refresh[0].ns_per_example_pass /
                               f.refresh[1].ns_per_example_pass),
           past >= 1 / 1.5);
  } else {
    unmeasured(cold);
    unmeasured(linear);
  }
  const std::string models = "10,000 models of d=1000 under 150 MB";
  const std::string sync =
      "durability sync streaming for 60 s: under 64 MB above idle";
  const std::string nocert =
      "the same with the certificate off (its kept examples are bounded by "
      "--certificate_model_mb on their own)";
  if (!f.memory) {
    unmeasured(models);
    unmeasured(sync);
    unmeasured(nocert);
  } else {
    if (f.quick) {
      target(models, "not measured (--quick)", false);
    } else {
      target(models, absl::StrFormat("%.1f MB", f.memory->models_mb),
             f.memory->models_mb < 150);
    }
    target(sync,
           absl::StrFormat("%.1f MB%s", f.memory->sync_growth_mb,
                           f.quick ? " (10 s)" : ""),
           f.memory->sync_growth_mb < 64);
    target(nocert,
           absl::StrFormat("%.1f MB%s", f.memory->sync_growth_nocert_mb,
                           f.quick ? " (10 s)" : ""),
           f.memory->sync_growth_nocert_mb < 64);
  }
  // Issue 48's W5, issue 49's W6: the ratios their parts printed.
  auto named = [](const std::vector<std::pair<std::string, double>>& of,
                  const std::string& name) -> std::optional<double> {
    for (const auto& [n, v] : of) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  for (const auto& [what, of, name, at_least] :
       {std::tuple<std::string,
                   const std::vector<std::pair<std::string, double>>*,
                   std::string, double>{"W5 per item by name / echo >= 0.8",
                                        &f.w5, "by name / echo", 0.8},
        {"W5 columns by name / echo of the columns >= 0.8", &f.w5,
         "by name, columns / echo", 0.8},
        {"certificate on / off, W5 >= 0.8", &f.w5, "certificate on / off", 0.8},
        {"W6 per item / echo >= 0.8", &f.w6, "per item / echo", 0.8},
        {"W6 columns / echo of the columns >= 0.8", &f.w6, "columns / echo",
         0.8},
        {"W6 core multiclass epoch / scikit-learn epoch >= 5", &f.w6,
         "core epoch / scikit-learn epoch", 5},
        {"certificate on / off, W6 >= 0.8", &f.w6,
         "certificate on / off (per item)", 0.8}}) {
    const std::optional<double> v = named(*of, name);
    ratio(what, v.has_value(), v.value_or(0), at_least);
  }
  const std::string hashing = "W5 names hashed under 100 ns a feature";
  if (f.hash_ns > 0) {
    target(hashing, absl::StrFormat("%.1f ns", f.hash_ns), f.hash_ns < 100);
  } else {
    unmeasured(hashing);
  }
  // Issue 51's recovery and memory after bursts.
  const std::string recovery = absl::StrCat(
      "restart after kill -9 of a model with ", f.quick ? "10^6" : "10^7",
      " examples (durability sync) under 5 s, nothing acknowledged lost");
  if (!f.recovery) {
    unmeasured(recovery);
  } else if (!f.recovery->ok) {
    target(recovery, f.recovery->error, false);
  } else {
    const Recovery& r = *f.recovery;
    target(recovery,
           absl::StrFormat("%.2f s; %d acknowledged, %d after", r.ready_s,
                           r.acknowledged, r.restored),
           r.ready_s < 5 && r.restored == r.acknowledged);
  }
  const std::string burst =
      "RSS after a burst within 64 MB of the baseline (30 s after)";
  const std::string again = "a second and third burst add at most 4 MB";
  if (!f.bursts) {
    unmeasured(burst);
    unmeasured(again);
  } else if (!f.bursts->ok) {
    target(burst, f.bursts->error, false);
    target(again, f.bursts->error, false);
  } else {
    const Bursts& b = *f.bursts;
    double over = 0;
    std::string each;
    for (double mb : b.after_mb) {
      over = std::max(over, mb - b.baseline_mb);
      absl::StrAppend(&each, each.empty() ? "" : ", ",
                      absl::StrFormat("%+.1f", mb - b.baseline_mb));
    }
    target(burst,
           absl::StrFormat("%s MB over %.1f (%.0f s after)", each,
                           b.baseline_mb, b.seconds),
           over < 64);
    if (b.after_mb.size() < 2) {
      unmeasured(again);
    } else {
      const double added =
          *std::max_element(b.after_mb.begin() + 1, b.after_mb.end()) -
          b.after_mb[0];
      target(again, absl::StrFormat("%+.1f MB", added), added <= 4);
    }
  }
  std::printf("\n%d of %d targets met (%d not measured).\n", met, met + failed,
              unmeasured_count);
  std::printf("\n%s", w4_note.c_str());
}

}  // namespace perceptron::bench
