// TD*_gamma's search, shared by the linear and the kernel certificate
// solvers: the C of the regularised SVM whose solution has ||v_C|| = rho.
//
//   perceptron::LogCSearch search;
//   do { solve at C = exp(search.log_c()); ... }
//   while (search.Next(gamma, alphas, norm, rho, tolerance, &d));
//
// Not thread-safe.
#ifndef PERCEPTRON_CORE_LOG_C_SEARCH_H_
#define PERCEPTRON_CORE_LOG_C_SEARCH_H_

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/certificate.h"

namespace perceptron {

// TD*_gamma's search for the C whose regularised SVM solution has
// ||v_C|| = rho, on log C: from log C = 0 in steps of 2 until the norm is
// bracketed, then by bisection.
class LogCSearch {
 public:
  double log_c() const { return log_c_; }
  // After the solve at the current C, with its dual variables' sum `alphas`
  // and ||v_C|| = `norm`: raises d's lower value by the dual point alpha / C
  // (in [0, 1]^n), and moves on; false once the gap is within `tolerance`
  // (d converged) or the search ends (past e^100 or e^-100, or bracketed
  // within 1e-13).
  bool Next(double gamma, double alphas, double norm, double rho,
            double tolerance, LeastDistance* d) {
    d->lower = std::max(d->lower, (gamma * alphas - norm) / std::exp(log_c_));
    if (d->upper - d->lower <= tolerance * d->upper + 1e-12) {
      d->converged = true;
      return false;
    }
    (norm > rho ? high_ : low_) = log_c_;
    if (std::isinf(high_)) {
      log_c_ += 2;  // the ball does not bind yet: a larger C
      return log_c_ <= 100;
    }
    if (std::isinf(low_)) {
      log_c_ -= 2;
      return log_c_ >= -100;
    }
    log_c_ = (low_ + high_) / 2;
    return high_ - low_ >= 1e-13;
  }

 private:
  double low_ = -std::numeric_limits<double>::infinity();
  double high_ = std::numeric_limits<double>::infinity();
  double log_c_ = 0;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_LOG_C_SEARCH_H_
