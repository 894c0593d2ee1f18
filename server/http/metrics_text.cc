#include "server/http/metrics_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace perceptron::server {
namespace {

namespace prom = ::prometheus;

// Escapes `\`, newline and (in label values) `"`, as the text format requires.
std::string Escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

const char* TypeName(prom::MetricType type) {
  switch (type) {
    case prom::MetricType::Counter:
      return "counter";
    case prom::MetricType::Gauge:
      return "gauge";
    case prom::MetricType::Summary:
      return "summary";
    case prom::MetricType::Histogram:
      return "histogram";
    default:
      return "untyped";
  }
}

// One sample line: name{labels[,extra_name="extra_value"]} value [timestamp].
void Sample(std::string* out, const std::string& name,
            const prom::ClientMetric& metric, const std::string& suffix,
            const std::string& value, const char* extra_name = nullptr,
            const std::string& extra_value = "") {
  absl::StrAppend(out, name, suffix);
  if (!metric.label.empty() || extra_name != nullptr) {
    *out += '{';
    const char* sep = "";
    for (const prom::ClientMetric::Label& l : metric.label) {
      absl::StrAppend(out, sep, l.name, "=\"", Escape(l.value, true), "\"");
      sep = ",";
    }
    if (extra_name != nullptr) {
      absl::StrAppend(out, sep, extra_name, "=\"", extra_value, "\"");
    }
    *out += '}';
  }
  absl::StrAppend(out, " ", value);
  if (metric.timestamp_ms != 0) absl::StrAppend(out, " ", metric.timestamp_ms);
  *out += '\n';
}

}  // namespace

std::string RoundTripNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string ExpositionText(const std::vector<prom::MetricFamily>& families) {
  std::string out;
  for (const prom::MetricFamily& f : families) {
    if (f.metric.empty()) continue;
    absl::StrAppend(&out, "# HELP ", f.name, " ", Escape(f.help, false), "\n",
                    "# TYPE ", f.name, " ", TypeName(f.type), "\n");
    for (const prom::ClientMetric& m : f.metric) {
      switch (f.type) {
        case prom::MetricType::Counter:
          Sample(&out, f.name, m, "", RoundTripNumber(m.counter.value));
          break;
        case prom::MetricType::Gauge:
          Sample(&out, f.name, m, "", RoundTripNumber(m.gauge.value));
          break;
        case prom::MetricType::Summary:
          for (const prom::ClientMetric::Quantile& q : m.summary.quantile) {
            Sample(&out, f.name, m, "", RoundTripNumber(q.value), "quantile",
                   RoundTripNumber(q.quantile));
          }
          Sample(&out, f.name, m, "_sum",
                 RoundTripNumber(m.summary.sample_sum));
          Sample(&out, f.name, m, "_count",
                 absl::StrCat(m.summary.sample_count));
          break;
        case prom::MetricType::Histogram: {
          bool has_inf = false;
          for (const prom::ClientMetric::Bucket& b : m.histogram.bucket) {
            has_inf |= std::isinf(b.upper_bound);
            Sample(&out, f.name, m, "_bucket", absl::StrCat(b.cumulative_count),
                   "le", RoundTripNumber(b.upper_bound));
          }
          if (!has_inf) {
            Sample(&out, f.name, m, "_bucket",
                   absl::StrCat(m.histogram.sample_count), "le", "+Inf");
          }
          Sample(&out, f.name, m, "_sum",
                 RoundTripNumber(m.histogram.sample_sum));
          Sample(&out, f.name, m, "_count",
                 absl::StrCat(m.histogram.sample_count));
          break;
        }
        default:
          Sample(&out, f.name, m, "", RoundTripNumber(m.untyped.value));
      }
    }
  }
  return out;
}

}  // namespace perceptron::server
