// The comparator, TD_gamma, the radius R and the mistake bound (docs/design.md
// section 2, 4).
//
//   perceptron::BoundTracker tracker(config);
//   tracker.Observe(prepared, label);  // once per labeled example, O(nnz)
//   perceptron::BoundReport r = tracker.Report(config.algorithm, figures);
//   if (r.bound_available) { ... r.bound ... }
//
// Not thread-safe.
#ifndef PERCEPTRON_CORE_BOUND_H_
#define PERCEPTRON_CORE_BOUND_H_

#include <cmath>
#include <optional>
#include <vector>

#include "core/config.h"
#include "core/learner.h"
#include "core/prepare.h"

namespace perceptron {

struct BoundReport {
  // TD_gamma = sum_t max(0, gamma - y_t (u . x^_t)); only with a comparator.
  bool td_available = false;
  double td_gamma = 0;
  // R = max_t ||x^_t|| over labeled examples (exactly 1 when normalized; 0
  // before any).
  double radius = 0;
  // The algorithm's bound on its updates, when the theory gives one for this
  // model:
  //   classic, averaged, voted, and a linear kernel that dropped nothing:
  //       (R/gamma)^2 + 2 TD_gamma/gamma; multiclass: 2 (R/gamma)^2 +
  //       2 TD_gamma/gamma (docs/design.md section 2.8);
  //   margin: 8/gamma^2, only while TD_gamma == 0 (the stream so far is
  //   separable by u with
  //       margin gamma);
  //   polynomial and rbf kernels: none (the comparator lives in the input
  //   space, not the
  //       kernel's).
  // Without a comparator it is never available (and never reported as 0); nor
  // when it overflows a double (R/gamma beyond about 1e154).
  bool bound_available = false;
  double bound = 0;
};

class BoundTracker {
 public:
  // `config` must have passed ValidateConfig. The comparator is scaled to unit
  // length and, when it has d entries and the model a bias, extended with a 0
  // for the bias coordinate.
  explicit BoundTracker(const ModelConfig& config);

  // Accounts one labeled example.
  void Observe(const Prepared& x, int y) { Observe(x, Hinge(x, y)); }

  // The same in two steps, so that a caller can refuse the example before
  // anything changes: the example's hinge term max(0, gamma - y u.x^) (0
  // without a comparator); whether accounting it keeps R and TD_gamma finite
  // (INVALID_ARGUMENT if not); and the accounting itself.
  // A multiclass model's: max(0, gamma - (u_y . x^ - max over r != y of
  // u_r . x^)), y a class index.
  double Hinge(const Prepared& x, int y) const {
    if (u_.empty()) return 0;
    const double hinge =
        gamma_ - (classes_ > 0 ? MulticlassMargin(x, y) : y * Dot(u_, x));
    return hinge > 0 ? hinge : 0;
  }
  absl::Status CheckObserve(const Prepared& x, double hinge) const;
  // Whether CheckObserve(x, hinge) is OK (its condition), inline.
  bool CanObserve(const Prepared& x, double hinge) const {
    return std::isfinite(x.norm) && std::isfinite(hinge) &&
           std::isfinite(td_gamma_ + hinge);
  }
  void Observe(const Prepared& x, double hinge) {
    if (x.norm > radius_) radius_ = x.norm;
    if (hinge > 0) td_gamma_ += hinge;
  }

  BoundReport Report(const ModelConfig& config,
                     const LearnerFigures& figures) const;

  // The unit comparator (weight dimension entries; a multiclass model's k of
  // them, of Frobenius norm 1), empty without one.
  const std::vector<double>& comparator() const { return u_; }
  double td_gamma() const { return td_gamma_; }
  double radius() const { return radius_; }

  // Restores saved accumulators. INVALID_ARGUMENT if not finite and >= 0.
  absl::Status Restore(double td_gamma, double radius);
  void Reset() { td_gamma_ = radius_ = 0; }

 private:
  // u_y . x^ - max over r != y of u_r . x^.
  double MulticlassMargin(const Prepared& x, int y) const;

  std::vector<double> u_;
  int classes_ = 0;  // k for a multiclass model, else 0
  double gamma_ = 0;
  double td_gamma_ = 0;
  double radius_ = 0;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_BOUND_H_
