// A model's learning curve (GetHistory) drawn as a standalone SVG: cumulative
// mistakes, updates (when they differ) and the bound on updates against
// labeled examples seen, and the certificate's U and L as the stream grew, as
// on the server's live page.
//
//   absl::StatusOr<v1::History> h = client->GetHistory("spam");
//   std::string svg = HistorySvg(*h, {.log_scale = true});
#ifndef PERCEPTRON_CLIENT_PLOT_H_
#define PERCEPTRON_CLIENT_PLOT_H_

#include <string>

#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::client {

struct PlotOptions {
  int width = 800;
  int height = 450;
  // A logarithmic y axis (1 to the next power of ten), for a bound far above
  // the mistakes.
  bool log_scale = false;
};

std::string HistorySvg(const v1::History& history, const PlotOptions& options);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_PLOT_H_
