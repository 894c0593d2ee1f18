#include "core/multiclass_certificate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "core/candidate_sums.h"
#include "core/prefetch.h"

namespace perceptron {

void SolveClassSubproblem(double A, absl::Span<const double> b, int y,
                          double cap, absl::Span<double> out) {
  // a_r = min(cap_r, (beta - b_r) / A) for the beta at which they add up to
  // 0 (the conditions of optimality). With d_r = b_r + A cap_r, a_r is
  // capped exactly when beta >= d_r, and the sum is 0 when
  //   sum over d_r > beta of (d_r - beta) = A cap,
  // whose left side falls as beta grows: over d in descending order, beta
  // is the first (sum of the r largest d - A cap) / r not above the next d.
  const int k = static_cast<int>(b.size());
  double d[kMaxClasses];
  for (int r = 0; r < k; ++r) d[r] = b[r] + (r == y ? A * cap : 0.0);
  std::sort(d, d + k, std::greater<double>());
  double sum = d[0] - A * cap;
  int r = 1;
  while (r < k && sum / r < d[r]) sum += d[r++];
  const double beta = sum / r;
  for (int m = 0; m < k; ++m) {
    out[m] = std::min(m == y ? cap : 0.0, (beta - b[m]) / A);
  }
}

MulticlassCertificateSolver::MulticlassCertificateSolver(
    int classes, uint32_t weight_dimension)
    : k_(classes),
      wide_(IsWide(weight_dimension)),
      dim_(wide_ ? 0 : weight_dimension),
      positions_(weight_dimension),
      w_(classes, std::vector<double>(dim_, 0.0)) {}

void MulticlassCertificateSolver::Add(const Prepared& x, int label) {
  if (wide_) {
    KeptRows row;
    row.Add(x, label);
    Add(std::move(row));
    return;
  }
  rows_.Add(x, label);
  alpha_.resize(alpha_.size() + k_, 0.0);
}

void MulticlassCertificateSolver::Add(KeptRows rows,
                                      absl::Span<const uint32_t> repeats) {
  rows_.Append(wide_ ? positions_.ToPositions(rows) : std::move(rows));
  alpha_.resize(rows_.size() * static_cast<size_t>(k_), 0.0);
  if (wide_) {
    dim_ = positions_.size();
    for (std::vector<double>& w : w_) w.resize(dim_, 0.0);
  }
  // A row counted more has a larger cap: alpha stays feasible.
  for (uint32_t t : repeats) {
    if (t < rows_.size()) rows_.AddCount(t, 1);
  }
}

size_t MulticlassCertificateSolver::bytes() const {
  return rows_.bytes() + alpha_.capacity() * sizeof(double) +
         active_.capacity() * sizeof(uint32_t) + class_order_.capacity() +
         active_classes_.capacity() + positions_.bytes() +
         static_cast<size_t>(k_) * dim_ * sizeof(double);
}

void MulticlassCertificateSolver::Unshrink() {
  const size_t n = rows_.size();
  active_.resize(n);
  for (size_t t = 0; t < n; ++t) active_[t] = static_cast<uint32_t>(t);
  class_order_.resize(n * k_);
  for (size_t t = 0; t < n; ++t) {
    for (int r = 0; r < k_; ++r) {
      class_order_[t * k_ + r] = static_cast<uint8_t>(r);
    }
  }
  active_classes_.assign(n, static_cast<uint8_t>(k_));
}

double MulticlassCertificateSolver::Pass(double C, double* gap) {
  const size_t n = active_.size();
  for (size_t t = n; t > 1; --t) {
    std::swap(active_[t - 1], active_[random_.Next() % t]);
  }
  double worst = 0;
  *gap = 0;
  double g[kMaxClasses], b[kMaxClasses], a[kMaxClasses];
  size_t kept = 0;  // active_[0, kept) stay active
  // Rows are fetched ahead, as the binary solver's: their places, variables
  // and classes' order 2 kAhead rows ahead, their values kAhead ahead.
  constexpr size_t kAhead = 4;
  for (size_t s = 0; s < n; ++s) {
    if (s + 2 * kAhead < n) {
      const size_t ahead = active_[s + 2 * kAhead];
      rows_.PrefetchPlace(ahead);
      const double* alpha = alpha_.data() + ahead * k_;
      PrefetchLine(alpha);
      PrefetchLine(alpha + k_ - 1);
      PrefetchLine(class_order_.data() + ahead * k_);
      PrefetchLine(class_order_.data() + (ahead + 1) * k_ - 1);
      PrefetchLine(active_classes_.data() + ahead);
    }
    if (s + kAhead < n) rows_.PrefetchValues(active_[s + kAhead]);
    const uint32_t t = active_[s];
    const double A = rows_.square(t);
    const int y = rows_.label(t);
    const double cap = C * rows_.count(t);
    double* alpha = alpha_.data() + size_t{t} * k_;
    if (A == 0) {
      // x^ = 0: no quadratic term, gradients 1 (0 for y) whatever W. The
      // dual gains most with alpha_y at its cap, another class's at -cap
      // (W unchanged); then nothing moves: the example leaves active_ (so
      // only a pass over every example meets it). Its share of the gap is
      // C count xi_t (xi_t = 1) + sum_r alpha_r g_r.
      double share = cap;
      for (int r = 0; r < k_; ++r) share += r == y ? 0.0 : alpha[r];
      *gap += share;
      std::fill(alpha, alpha + k_, 0.0);
      alpha[y] = cap;
      alpha[(y + 1) % k_] = -cap;
      continue;
    }
    uint8_t* order = class_order_.data() + size_t{t} * k_;
    int m = active_classes_[t];
    // The gradient of -D in alpha_t over the active classes, and how far it
    // is from optimal: the largest gradient against the smallest among
    // variables below their bound.
    double top = -std::numeric_limits<double>::infinity();
    double low = std::numeric_limits<double>::infinity();
    double share = 0;  // sum_r alpha_r g_r
    int at = m;        // y's place among the active classes (m: not there)
    for (int j = 0; j < m; ++j) {
      const int r = order[j];
      g[j] = rows_.DotUnordered(t, w_[r]) + (r == y ? 0.0 : 1.0);
      top = std::max(top, g[j]);
      if (r == y) at = j;
      if (alpha[r] < (r == y ? cap : 0.0)) low = std::min(low, g[j]);
      share += alpha[r] * g[j];
    }
    if (m == k_) {
      // The example's share of the duality gap P(W) - D(alpha) at the W met:
      // C count xi_t + sum_r alpha_t,r g_r (xi_t = top - g_y, at least 0).
      *gap += cap * std::max(0.0, top - g[at]) + share;
    }
    // Classes at their bound whose gradient is below every free class's
    // stay there: they leave the active ones (swapped to the end).
    for (int j = 0; j < m;) {
      const int r = order[j];
      if (alpha[r] == (r == y ? cap : 0.0) && g[j] < low) {
        --m;
        std::swap(order[j], order[m]);
        std::swap(g[j], g[m]);
        if (at == m) {
          at = j;
        } else if (at == j) {
          at = m;
        }
      } else {
        ++j;
      }
    }
    active_classes_[t] = static_cast<uint8_t>(m);
    if (m <= 1) continue;  // nothing left to move: out of active_
    active_[kept++] = t;
    const double violation = top - low;
    worst = std::max(worst, violation);
    if (!(violation > 1e-12)) continue;
    for (int j = 0; j < m; ++j) b[j] = g[j] - A * alpha[order[j]];
    SolveClassSubproblem(A, absl::MakeConstSpan(b, m), at, cap,
                         absl::MakeSpan(a, m));
    for (int j = 0; j < m; ++j) {
      const int r = order[j];
      const double delta = a[j] - alpha[r];
      if (delta == 0) continue;
      rows_.AddTo(t, delta, &w_[r]);
      alpha[r] = a[j];
    }
  }
  active_.resize(kept);
  return worst;
}

MulticlassCertificate MulticlassCertificateSolver::Solve(
    double radius, const CertificateOptions& options) {
  MulticlassCertificate c;
  c.examples = rows_.examples();
  c.u.assign(static_cast<size_t>(k_) * dim_, 0.0);
  if (rows_.size() == 0) {
    c.converged = true;
    return c;
  }
  if (!(radius > 0)) {
    // Every kept x^ is 0: every comparator's margins are 0, its TD_gamma is
    // gamma for each example, so every bound is exactly twice the examples
    // (the binary solver's case). Any unit U attains it.
    const auto examples = static_cast<double>(rows_.examples());
    c.u[0] = 1;
    c.candidates = {c.u};
    c.sums = ClassHingeSums(rows_, c.candidates, k_);
    c.upper = c.lower = 2.0 * examples;
    c.gamma = 1;
    c.td = examples;
    c.converged = true;
    return c;
  }
  // R_K^2 = 2 R^2 (the Kesler vectors' radius), C = 1 / R_K^2.
  const double rk2 = 2 * radius * radius;
  const double C = 1 / rk2;
  if (cost_ != C) {
    // alpha scaled by C / cost_ stays feasible for C, and W with it.
    const double f = cost_ == 0 ? 0 : C / cost_;
    for (double& a : alpha_) a *= f;
    for (std::vector<double>& w : w_) {
      for (double& v : w) v *= f;
    }
    cost_ = C;
  }
  // Every example and class is visited in the first pass and after the
  // active ones are within `spread` of optimal (their largest violation):
  // such a pass sums the gap. The exact figures cost a dot product per
  // example and class: they are computed once the gap such a pass met (its
  // examples' shares, each at the W it met) is within the tolerance, and at
  // the last pass.
  Unshrink();
  bool unshrunk = true;
  double spread = kShrinkSpread;
  while (true) {
    // A pass right after Unshrink visits every example and class.
    const bool full = unshrunk;
    unshrunk = false;
    double gap = 0;
    const double worst = Pass(C, &gap);
    ++c.passes;
    if (!full && c.passes < options.max_passes) {
      if (options.stop && options.stop()) {
        c.stopped = true;
        return c;
      }
      if (worst <= spread) {
        Unshrink();
        unshrunk = true;
        spread /= 10;
      }
      continue;
    }
    double norm2 = 0;
    for (int r = 0; r < k_; ++r) {
      norm2 += DenseDot(w_[r].data(), w_[r].data(), dim_);
    }
    double gain = 0;
    for (size_t t = 0; t < rows_.size(); ++t) {
      gain += alpha_[t * k_ + rows_.label(t)];
    }
    const double dual = gain - norm2 / 2;
    if (gap > options.tolerance * (dual + gap) &&
        c.passes < options.max_passes) {
      if (options.stop && options.stop()) {
        c.stopped = true;
        return c;
      }
      continue;
    }
    // The figures: D(alpha) = sum_t alpha_t,y_t - ||W||^2 / 2 and
    // P(W) = ||W||^2 / 2 + C sum_t xi_t(W), the slack summed with the
    // candidates' hinge sums (W's is the slack).
    std::vector<double> flat(static_cast<size_t>(k_) * dim_);
    for (int r = 0; r < k_; ++r) {
      std::copy(w_[r].begin(), w_[r].end(),
                flat.begin() + static_cast<size_t>(r) * dim_);
    }
    c.candidates.clear();
    if (norm2 > 0) {
      for (double scale : {1.0, 0.5, 2.0, 4.0}) {
        std::vector<double> v(flat.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = scale * flat[i];
        if (std::all_of(v.begin(), v.end(),
                        [](double x) { return std::isfinite(x); })) {
          c.candidates.push_back(std::move(v));  // not one that overflows
        }
      }
    }
    c.sums = ClassHingeSums(rows_, c.candidates, k_);
    const double slack =
        c.sums.empty() ? static_cast<double>(rows_.examples()) : c.sums[0];
    c.dual = dual;
    c.primal = norm2 / 2 + C * slack;
    c.upper = 2 * rk2 * c.primal;
    c.lower = std::max(0.0, 2 * rk2 * c.dual);
    c.converged = c.upper - c.lower <= options.tolerance * c.upper;
    if (c.converged || c.passes >= options.max_passes) {
      const double norm = std::sqrt(norm2);
      if (norm > 0) {
        c.gamma = 1 / norm;
        for (size_t i = 0; i < flat.size(); ++i) c.u[i] = flat[i] / norm;
        c.td = c.gamma * slack;
      }
      return c;
    }
    if (options.stop && options.stop()) {
      c.stopped = true;
      return c;
    }
  }
}

}  // namespace perceptron
