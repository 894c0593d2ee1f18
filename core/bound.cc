#include "core/bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace perceptron {

BoundTracker::BoundTracker(const ModelConfig& config) {
  if (config.comparator.empty()) return;
  gamma_ = *config.gamma;
  classes_ =
      config.multiclass() ? static_cast<int>(config.weight_vectors()) : 0;
  u_ = config.comparator;
  const uint32_t dim = config.weight_dimension();
  if (classes_ > 0 && u_.size() != config.weight_count()) {
    // k vectors of d values: each gets a 0 for its bias coordinate.
    std::vector<double> u(config.weight_count(), 0.0);
    for (int r = 0; r < classes_; ++r) {
      std::copy_n(
          config.comparator.begin() + static_cast<size_t>(r) * config.dimension,
          config.dimension, u.begin() + static_cast<size_t>(r) * dim);
    }
    u_ = std::move(u);
  }
  u_.resize(config.weight_count(), 0.0);
  const double norm = std::sqrt(DenseDot(u_.data(), u_.data(), u_.size()));
  for (double& v : u_) v /= norm;
}

double BoundTracker::MulticlassMargin(const Prepared& x, int y) const {
  const size_t dim = u_.size() / classes_;
  double uy = 0, best = -std::numeric_limits<double>::infinity();
  for (int r = 0; r < classes_; ++r) {
    const double s = Dot(absl::MakeConstSpan(u_.data() + dim * r, dim), x);
    if (r == y) {
      uy = s;
    } else if (s > best) {
      best = s;
    }
  }
  return uy - best;
}

BoundReport BoundTracker::Report(const ModelConfig& config,
                                 const LearnerFigures& figures) const {
  BoundReport r;
  r.radius = radius_;
  if (u_.empty()) return r;
  r.td_available = true;
  r.td_gamma = td_gamma_;
  const double g = gamma_;
  // A multiclass model's is the binary theorem's for the Kesler vectors, of
  // radius sqrt(2) R (docs/design.md section 2.8).
  const double kesler = classes_ > 0 ? 2 : 1;
  const double classic =
      kesler * (radius_ / g) * (radius_ / g) + 2 * td_gamma_ / g;
  switch (config.algorithm) {
    case Algorithm::kClassic:
    case Algorithm::kAveraged:
    case Algorithm::kVoted:
      r.bound_available = true;
      r.bound = classic;
      break;
    case Algorithm::kMargin:
      r.bound_available = td_gamma_ == 0;
      r.bound = r.bound_available ? 8 / (g * g) : 0;
      break;
    case Algorithm::kKernel:
      r.bound_available =
          config.kernel.type == KernelType::kLinear && figures.dropped == 0;
      r.bound = r.bound_available ? classic : 0;
      break;
  }
  if (!std::isfinite(r.bound)) {  // too large for a double: not reported
    r.bound_available = false;
    r.bound = 0;
  }
  return r;
}

absl::Status BoundTracker::CheckObserve(const Prepared& x, double hinge) const {
  if (CanObserve(x, hinge)) return absl::OkStatus();
  if (!std::isfinite(x.norm)) {
    return absl::InvalidArgumentError(
        "features: the example's norm overflows a double");
  }
  return absl::InvalidArgumentError(
      "features: TD_gamma would overflow a double with this example");
}

absl::Status BoundTracker::Restore(double td_gamma, double radius) {
  if (!std::isfinite(td_gamma) || td_gamma < 0 || !std::isfinite(radius) ||
      radius < 0) {
    return absl::InvalidArgumentError(absl::StrCat("state: td_gamma ", td_gamma,
                                                   " or radius ", radius,
                                                   " is not finite and >= 0"));
  }
  td_gamma_ = td_gamma;
  radius_ = radius;
  return absl::OkStatus();
}

}  // namespace perceptron
