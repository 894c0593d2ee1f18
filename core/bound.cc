#include "core/bound.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace perceptron {

BoundTracker::BoundTracker(const ModelConfig& config) {
  if (config.comparator.empty()) return;
  gamma_ = *config.gamma;
  u_ = config.comparator;
  u_.resize(config.weight_dimension(), 0.0);
  const double norm = std::sqrt(DenseDot(u_.data(), u_.data(), u_.size()));
  for (double& v : u_) v /= norm;
}

BoundReport BoundTracker::Report(const ModelConfig& config,
                                 const LearnerFigures& figures) const {
  BoundReport r;
  r.radius = radius_;
  if (u_.empty()) return r;
  r.td_available = true;
  r.td_gamma = td_gamma_;
  const double g = gamma_;
  const double classic = (radius_ / g) * (radius_ / g) + 2 * td_gamma_ / g;
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
