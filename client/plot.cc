#include "client/plot.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace perceptron::client {
namespace {

double NiceStep(double max, int ticks) {
  const double raw = max / ticks;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string Short(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return absl::StrFormat("%.*fG", a >= 1e10 ? 0 : 1, v / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.*fM", a >= 1e7 ? 0 : 1, v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%.*fk", a >= 1e5 ? 0 : 1, v / 1e3);
  return absl::StrFormat("%g", v);
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string HistorySvg(const v1::History& history, const PlotOptions& o) {
  const double left = 70, right = 20, top = 56, bottom = 50;
  const double w = o.width, h = o.height;
  const double iw = w - left - right, ih = h - top - bottom;
  double max_x = 1, max_y = 1;
  bool differs = false, has_bound = false, has_cert = false;
  for (const v1::HistoryPoint& p : history.points()) {
    max_x = std::max(max_x, static_cast<double>(p.examples()));
    max_y = std::max({max_y, static_cast<double>(p.mistakes()),
                      static_cast<double>(p.updates()),
                      p.has_bound() ? p.bound() : 0.0,
                      p.has_certificate_upper() ? p.certificate_upper() : 0.0});
    differs |= p.updates() != p.mistakes();
    has_bound |= p.has_bound();
    has_cert |= p.has_certificate_upper();
  }
  const double x_step = NiceStep(max_x, 5), y_step = NiceStep(max_y, 5);
  const double x_max = std::ceil(max_x / x_step) * x_step;
  const double y_max = std::ceil(max_y / y_step) * y_step;
  const int decades =
      std::max(1, static_cast<int>(std::ceil(std::log10(max_y))));
  auto sx = [&](double x) { return left + x / x_max * iw; };
  auto sy = [&](double y) {
    if (o.log_scale) {
      return top + ih - std::log10(std::max(1.0, y)) / decades * ih;
    }
    return top + ih - y / y_max * ih;
  };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
      o.width, o.height, o.width, o.height);
  // The title says what the chart holds.
  std::string against;
  if (has_bound) against = " against the bound on updates";
  if (has_cert) {
    absl::StrAppend(&against, has_bound ? " and" : " against",
                    " the certificate's U");
  }
  absl::StrAppend(&svg, "<text x=\"", left, "\" y=\"22\" font-size=\"16\" ",
                  "fill=\"#1d2430\">", Escape(history.model_id()),
                  ": cumulative mistakes", against, "</text>\n");
  // Legend.
  double lx = left;
  auto legend = [&](const char* color, const char* label, bool dashed) {
    absl::StrAppend(&svg, "<line x1=\"", lx, "\" y1=\"38\" x2=\"", lx + 18,
                    "\" y2=\"38\" stroke=\"", color, "\" stroke-width=\"3\"",
                    dashed ? " stroke-dasharray=\"4 3\"" : "", "/>",
                    "<text x=\"", lx + 24, "\" y=\"42\" fill=\"#5c6778\">",
                    label, "</text>\n");
    lx += 24 + 7.5 * std::string(label).size() + 20;
  };
  legend("#1f6fd1", "mistakes", false);
  if (differs) legend("#7a8699", "updates", true);
  if (has_bound) legend("#c8372d", "bound on updates", false);
  if (has_cert) {
    legend("#2d8a4e", "certificate U", false);
    legend("#2d8a4e", "L: no bound below it", true);
  }
  // Grid and axes.
  std::vector<double> y_ticks;
  if (o.log_scale) {
    for (int k = 0; k <= decades; ++k) y_ticks.push_back(std::pow(10, k));
  } else {
    for (double y = 0; y <= y_max + 1e-9; y += y_step) y_ticks.push_back(y);
  }
  for (double y : y_ticks) {
    absl::StrAppend(
        &svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                              "y2=\"%.1f\" stroke=\"#d8dde5\"/>"
                              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                              "fill=\"#5c6778\">%s</text>\n",
                              left, sy(y), w - right, sy(y), left - 8,
                              sy(y) + 4, Short(y)));
  }
  for (double x = 0; x <= x_max + 1e-9; x += x_step) {
    // The last label ends at the axis' end, so it is never clipped.
    const bool last = x > 0 && x + x_step > x_max + 1e-9;
    absl::StrAppend(
        &svg,
        absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                        "y2=\"%.1f\" stroke=\"#5c6778\"/>"
                        "<text x=\"%.1f\" y=\"%.1f\" "
                        "text-anchor=\"%s\" fill=\"#5c6778\">%s</text>\n",
                        sx(x), top + ih, sx(x), top + ih + 5, sx(x),
                        top + ih + 20, last ? "end" : "middle", Short(x)));
  }
  absl::StrAppend(
      &svg, absl::StrFormat(
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                "y2=\"%.1f\" stroke=\"#5c6778\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                "fill=\"#5c6778\">labeled examples seen</text>\n",
                left, top + ih, w - right, top + ih, left + iw / 2, h - 10));
  // Curves.
  auto polyline = [&](const char* cls, const char* color, const char* extra,
                      const std::function<std::optional<double>(
                          const v1::HistoryPoint&)>& value) {
    std::string points;
    int n = 0;
    double last = 0;
    for (const v1::HistoryPoint& p : history.points()) {
      const std::optional<double> v = value(p);
      if (!v) continue;
      absl::StrAppend(&points, n == 0 ? "" : " ",
                      absl::StrFormat("%.1f,%.1f", sx(p.examples()), sy(*v)));
      last = *v;
      ++n;
    }
    // data-last: the last value whole, for a reader of the file.
    absl::StrAppend(&svg, "<polyline class=\"", cls, "\" data-count=\"", n,
                    "\" data-last=\"", absl::StrFormat("%.17g", last),
                    "\" fill=\"none\" stroke=\"", color,
                    "\" stroke-width=\"2\"", extra, " points=\"", points,
                    "\"/>\n");
  };
  if (differs) {
    polyline("updates", "#7a8699", " stroke-dasharray=\"4 3\"",
             [](const v1::HistoryPoint& p) -> std::optional<double> {
               return static_cast<double>(p.updates());
             });
  }
  if (has_cert) {
    // The certificate as the stream grew (the last point: the certificate
    // when the history was read).
    polyline("certificate-lower", "#2d8a4e",
             " stroke-dasharray=\"2 3\" stroke-opacity=\"0.8\"",
             [](const v1::HistoryPoint& p) -> std::optional<double> {
               if (!p.has_certificate_lower()) return std::nullopt;
               return p.certificate_lower();
             });
    polyline("certificate", "#2d8a4e", "",
             [](const v1::HistoryPoint& p) -> std::optional<double> {
               if (!p.has_certificate_upper()) return std::nullopt;
               return p.certificate_upper();
             });
  }
  if (has_bound) {
    polyline("bound", "#c8372d", "",
             [](const v1::HistoryPoint& p) -> std::optional<double> {
               if (!p.has_bound()) return std::nullopt;
               return p.bound();
             });
  }
  polyline("mistakes", "#1f6fd1", "",
           [](const v1::HistoryPoint& p) -> std::optional<double> {
             return static_cast<double>(p.mistakes());
           });
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace perceptron::client
