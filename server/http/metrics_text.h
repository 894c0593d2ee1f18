// The Prometheus text exposition format (version 0.0.4) for prometheus-cpp's
// metric families, with every number printed in the shortest form that reads
// back to the same double. (The library's own TextSerializer prints 16
// significant digits, and some doubles need 17: its /metrics would then differ
// from GetStatus in the last bit.)
//
//   std::vector<prometheus::MetricFamily> families = registry.Collect();
//   std::string body = perceptron::server::ExpositionText(families);
#ifndef PERCEPTRON_SERVER_HTTP_METRICS_TEXT_H_
#define PERCEPTRON_SERVER_HTTP_METRICS_TEXT_H_

#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace perceptron::server {

// The families as exposition text: HELP and TYPE lines, then one line per
// sample (histograms as _bucket{le=...}, _sum and _count; summaries as
// {quantile=...}, _sum and _count). Label values and help texts are escaped as
// the format says. Infinities print as +Inf and -Inf.
std::string ExpositionText(
    const std::vector<prometheus::MetricFamily>& families);

// `v` in the shortest decimal form that reads back bit for bit ("NaN", "+Inf",
// "-Inf" aside).
std::string RoundTripNumber(double v);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HTTP_METRICS_TEXT_H_
