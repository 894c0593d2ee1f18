#include "core/certificate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/huge_pages.h"
#include "core/log_c_search.h"
#include "core/prefetch.h"

namespace perceptron {

CertificateSolver::CertificateSolver(uint32_t weight_dimension)
    : wide_(IsWide(weight_dimension)),
      dimension_(wide_ ? 0 : weight_dimension),
      positions_(weight_dimension),
      w_(dimension_, 0.0) {}

void CertificateSolver::Add(const Prepared& x, int label) {
  if (wide_) {
    KeptRows row;
    row.Add(x, label);
    Add(std::move(row));
    return;
  }
  rows_.Add(x, label);
  alpha_.push_back(0);
}

void CertificateSolver::Add(KeptRows rows, absl::Span<const uint32_t> repeats) {
  rows_.Append(wide_ ? positions_.ToPositions(rows) : std::move(rows));
  alpha_.resize(rows_.size(), 0.0);
  // A row counted s times as often has s times its cap: its alpha scaled by
  // s stays feasible, and starts the next solve near the solution a stream
  // cycling through the rows (every count grown alike) asks for. Left as
  // they were, the alphas of W1's 32,768 rows counted 6 and 31 times took
  // 74 and 381 passes to the refresher's gap; scaled, 19 and 81.
  for (const auto& [t, s] : rows_.AddCounts(repeats)) {
    if (alpha_[t] == 0) continue;
    const double grown = alpha_[t] * s;
    AddRow(t, (grown - alpha_[t]) * rows_.label(t), &w_);
    alpha_[t] = grown;
  }
  if (wide_) {
    dimension_ = positions_.size();
    w_.resize(dimension_, 0.0);
    if (!hard_w_.empty()) hard_w_.resize(dimension_, 0.0);
  }
}

KeptRows CertificateSolver::OriginalRows() const {
  return wide_ ? positions_.ToCoordinates(rows_) : rows_;
}

size_t CertificateSolver::bytes() const {
  return rows_.bytes() +
         (alpha_.capacity() + hard_alpha_.capacity() + td_alpha_.capacity() +
          w_.capacity() + hard_w_.capacity()) *
             sizeof(double) +
         positions_.bytes();
}

std::vector<double> CertificateSolver::Primal(
    const std::vector<double>& alpha) const {
  std::vector<double> w = HugeVector<double>(dimension_);
  for (size_t t = 0; t < rows_.size(); ++t) {
    if (alpha[t] != 0) AddRow(t, alpha[t] * rows_.label(t), &w);
  }
  return w;
}

void CertificateSolver::Pass(double cap, std::vector<double>* alpha,
                             std::vector<double>* w) {
  std::vector<uint32_t> every(rows_.size());
  std::iota(every.begin(), every.end(), uint32_t{0});
  Pass(cap, alpha, w, Shrink{}, &every);
}

CertificateSolver::Gradients CertificateSolver::Pass(
    double cap, std::vector<double>* alpha, std::vector<double>* w,
    const Shrink& shrink, std::vector<uint32_t>* active) {
  const size_t n = active->size();
  // The order of the pass: runs of kRun consecutive active rows in random
  // order, each run's rows in random order. A run's rows lie together in
  // memory, so past the caches a row costs a fraction of the misses it costs
  // in a fully random order, for a few more passes. Each active row is still
  // visited once a pass, all that the convergence of dual coordinate descent
  // asks (Hsieh et al. 2008, thm. 1).
  constexpr size_t kRun = 32;
  const size_t runs = (n + kRun - 1) / kRun;
  std::vector<size_t> run_order(runs);
  std::iota(run_order.begin(), run_order.end(), size_t{0});
  for (size_t k = runs; k > 1; --k) {
    std::swap(run_order[k - 1], run_order[random_.Next() % k]);
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  for (size_t r : run_order) {
    const size_t begin = r * kRun, end = std::min(n, begin + kRun);
    const size_t at = order.size();
    for (size_t i = begin; i < end; ++i) order.push_back((*active)[i]);
    for (size_t k = end - begin; k > 1; --k) {
      std::swap(order[at + k - 1], order[at + random_.Next() % k]);
    }
  }
  // Rows left out of the next passes (shrunk), marked as they are met.
  std::vector<bool> shrunk;
  const bool shrinking =
      shrink.above < std::numeric_limits<double>::infinity() ||
      shrink.below > -std::numeric_limits<double>::infinity();
  if (shrinking) shrunk.assign(rows_.size(), false);
  Gradients gradients;
  // Rows are fetched ahead: their places 2 kAhead rows ahead, their non-zeros
  // kAhead ahead (a row of d = 20 is a few cache lines).
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < n; ++i) {
    if (i + 2 * kAhead < n) {
      rows_.PrefetchPlace(order[i + 2 * kAhead]);
      PrefetchLine(alpha->data() + order[i + 2 * kAhead]);
    }
    if (i + kAhead < n) rows_.PrefetchValues(order[i + kAhead]);
    const size_t t = order[i];
    const double y = rows_.label(t);
    const double a = (*alpha)[t];
    // A row standing for c equal examples is their c variables at one value
    // (the optimum has them equal): one variable in [0, c C].
    const double row_cap = cap * rows_.count(t);
    double next;
    if (rows_.square(t) == 0) {
      next = row_cap;  // no quadratic term: the dual gains most at the cap
      gradients.gap += row_cap - a;
    } else {
      const double g = y * DotRow(t, *w) - 1;
      // The row's share of the duality gap P(w) - D(alpha), where
      // P - D = sum_t alpha_t g_t + cap max(0, -g_t), each share >= 0 (and 0
      // for a row shrunk, at the bound its gradient points past).
      gradients.gap += a * g + row_cap * std::max(0.0, -g);
      double pg = g;
      if (a == 0) {
        if (g > shrink.above) {
          shrunk[t] = true;
          continue;
        }
        pg = std::min(g, 0.0);
      } else if (a == row_cap) {
        if (g < shrink.below) {
          shrunk[t] = true;
          continue;
        }
        pg = std::max(g, 0.0);
      }
      gradients.max = std::max(gradients.max, pg);
      gradients.min = std::min(gradients.min, pg);
      if (pg == 0) continue;
      next = std::clamp(a - g / rows_.square(t), 0.0, row_cap);
    }
    if (next == a) continue;
    AddRow(t, (next - a) * y, w);
    (*alpha)[t] = next;
  }
  if (shrinking) {
    // The rows kept, still in ascending order.
    std::erase_if(*active, [&](uint32_t t) { return shrunk[t]; });
  }
  return gradients;
}

HardMargin CertificateSolver::SolveHardMargin(
    const CertificateOptions& options) {
  HardMargin h;
  const size_t n = rows_.size();
  hard_alpha_.resize(n, 0.0);
  if (hard_w_.empty()) hard_w_.assign(dimension_, 0.0);
  if (n == 0) return h;
  // x^ = 0 has margin 0 under every comparator.
  for (size_t t = 0; t < n; ++t) {
    if (rows_.square(t) == 0) return h;
  }
  const double cap = std::numeric_limits<double>::infinity();
  const int passes = std::max(1, options.max_passes);
  for (h.passes = 1; h.passes <= passes; ++h.passes) {
    Pass(cap, &hard_alpha_, &hard_w_);
    hard_w_ = Primal(hard_alpha_);
    double vv = 0;
    for (double v : hard_w_) vv += v * v;
    const double norm = std::sqrt(vv);
    if (!(norm > 0) || !std::isfinite(norm)) continue;
    std::vector<double> u(dimension_);
    for (uint32_t i = 0; i < dimension_; ++i) u[i] = hard_w_[i] / norm;
    double margin = std::numeric_limits<double>::infinity();
    for (size_t t = 0; t < n; ++t) {
      margin = std::min(margin, rows_.label(t) * DotRow(t, u));
    }
    if (!(margin > 0)) continue;
    // The dual value D <= ||v*||^2 / 2 = 1 / (2 gamma*^2) bounds gamma*.
    const double dual =
        std::accumulate(hard_alpha_.begin(), hard_alpha_.end(), 0.0) - vv / 2;
    h.separable = true;
    h.lower = margin;
    h.upper = dual > 0 ? 1 / std::sqrt(2 * dual)
                       : std::numeric_limits<double>::infinity();
    h.u = std::move(u);
    if (h.upper - h.lower <= options.tolerance * h.upper) {
      h.converged = true;
      break;
    }
  }
  h.passes = std::min(h.passes, passes);
  return h;
}

Certificate CertificateSolver::Solve(double radius,
                                     const CertificateOptions& options) {
  Certificate c;
  const size_t n = rows_.size();
  c.examples = n;
  c.u = HugeVector<double>(dimension_);
  if (dimension_ > 0) c.u[0] = 1;
  if (n == 0) {
    c.converged = true;
    return c;
  }
  if (!(radius > 0)) {
    // Every kept x^ is 0: every comparator has TD_gamma = m gamma over the
    // m examples (a row of count c being c of them), so every bound is
    // exactly 2m.
    const auto examples = static_cast<double>(rows_.examples());
    c.upper = c.lower = 2.0 * examples;
    c.gamma = 1;
    c.td = examples;
    c.converged = true;
    return c;
  }
  const double r2 = radius * radius;
  const double cap = 1 / r2;  // C
  // R may have grown since the last solve: bring alpha into [0, C].
  for (size_t t = 0; t < n; ++t) {
    const double row_cap = cap * rows_.count(t);
    if (alpha_[t] > row_cap) {
      AddRow(t, (row_cap - alpha_[t]) * rows_.label(t), &w_);
      alpha_[t] = row_cap;
    }
  }
  // The figures of the iterate alpha, from v = w_.
  auto figures = [&] {
    double vv = 0;
    for (double v : w_) vv += v * v;
    const double alphas = std::accumulate(alpha_.begin(), alpha_.end(), 0.0);
    c.lower = 2 * r2 * (alphas - vv / 2);
    const double norm = std::sqrt(vv);
    if (norm > 0) {
      for (uint32_t i = 0; i < dimension_; ++i) c.u[i] = w_[i] / norm;
      c.gamma = 1 / norm;
    } else {
      // v = 0: any unit u with a margin large beside R gives a bound just
      // above 2n, the limit.
      std::fill(c.u.begin(), c.u.end(), 0.0);
      if (dimension_ > 0) c.u[0] = 1;
      c.gamma = radius * 1e6;
    }
    double td = 0;
    for (size_t t = 0; t < n; ++t) {
      td += rows_.count(t) *
            std::max(0.0, c.gamma - rows_.label(t) * DotRow(t, c.u));
    }
    c.td = td;
    c.upper = r2 / (c.gamma * c.gamma) + 2 * td / c.gamma;
    c.converged = c.upper - c.lower <= options.tolerance * c.upper;
  };
  // Shrinking (Hsieh et al. 2008, section 3.2, as LIBLINEAR does it): a
  // variable at a bound whose gradient points past that bound further than
  // the last pass's extreme projected gradients is left out of the next
  // passes, which then cost only the rows that still move. Once the rows
  // left are within `spread` of optimal (their projected gradients), every
  // row comes back for a pass over all of them, after which the figures
  // (a dot product a row) are checked; if they have not converged, the
  // spread asked for is narrowed.
  std::vector<uint32_t> active(n);
  std::iota(active.begin(), active.end(), uint32_t{0});
  Shrink shrink;
  double spread = kShrinkSpread;
  const int passes = std::max(1, options.max_passes);
  for (c.passes = 1; c.passes <= passes; ++c.passes) {
    const bool every_row = active.size() == n;
    const Gradients g = Pass(cap, &alpha_, &w_, shrink, &active);
    if (options.stop && options.stop()) {
      c.stopped = true;
      c.converged = false;
      return c;
    }
    const double within = g.max - g.min;
    // The figures cost a dot product a row, as many as a pass over every
    // row: they are checked after such a pass, and after a pass whose
    // share of the gap (a little above the gap at its end) says they may
    // have converged (P >= D, so gap / D >= gap / P).
    double vv = 0;
    for (double v : w_) vv += v * v;
    const double dual =
        std::accumulate(alpha_.begin(), alpha_.end(), 0.0) - vv / 2;
    const bool near = g.gap <= kNearGap * options.tolerance * dual;
    if (every_row || near) {
      // Checked with the running w_; once it looks converged, v is summed
      // afresh and checked again, so that no drift of w_ reaches a figure.
      figures();
      if (c.converged) {
        w_ = Primal(alpha_);
        figures();
        if (c.converged) break;
      }
    }
    if (every_row) {
      if (within <= spread) spread = within / 10;
    } else if (within <= spread) {
      active.resize(n);
      std::iota(active.begin(), active.end(), uint32_t{0});
      shrink = Shrink{};
      continue;
    }
    shrink.above = g.max > 0 ? g.max : std::numeric_limits<double>::infinity();
    shrink.below = g.min < 0 ? g.min : -std::numeric_limits<double>::infinity();
  }
  if (!c.converged) {
    w_ = Primal(alpha_);
    figures();
  }
  c.passes = std::min(c.passes, passes);
  return c;
}

LeastDistance CertificateSolver::SolveLeastDistance(
    double gamma, const CertificateOptions& options) {
  LeastDistance d;
  const size_t n = rows_.size();
  d.u.assign(dimension_, 0.0);
  if (dimension_ > 0) d.u[0] = 1;
  if (n == 0 || !(gamma > 0)) {
    d.converged = n == 0;
    return d;
  }
  // min over ||v|| <= rho (rho = 1/gamma, u = gamma v) of the hinge sum is
  // the regularised SVM's solution v_C for the C where ||v_C|| = rho (or the
  // hinge minimum, if the ball never binds). Bisect on log C; each SVM solved
  // tightly, warm-started. Every v_C scaled into the ball is a comparator (an
  // upper value); every alpha_C / C lies in [0, 1]^n, where the dual
  // gamma sum beta - ||sum beta y x^|| gives a lower value.
  const double rho = 1 / gamma;
  td_alpha_.resize(n, 0.0);
  std::vector<double> w;
  d.upper = std::numeric_limits<double>::infinity();
  auto distance = [&](const std::vector<double>& u) {
    double td = 0;
    for (size_t t = 0; t < n; ++t) {
      td +=
          rows_.count(t) * std::max(0.0, gamma - rows_.label(t) * DotRow(t, u));
    }
    return td;
  };
  LogCSearch search;
  const int passes = std::max(1, options.max_passes);
  for (d.solves = 1; d.solves <= 200; ++d.solves) {
    const double cap = std::exp(search.log_c());
    for (size_t t = 0; t < n; ++t) {
      td_alpha_[t] = std::min(td_alpha_[t], cap * rows_.count(t));
    }
    w = Primal(td_alpha_);
    for (int pass = 1; pass <= passes; ++pass) {
      Pass(cap, &td_alpha_, &w);
      if (pass % 5 != 0) continue;
      w = Primal(td_alpha_);
      double vv = 0;
      for (double v : w) vv += v * v;
      double hinge = 0;
      for (size_t t = 0; t < n; ++t) {
        hinge +=
            rows_.count(t) * std::max(0.0, 1 - rows_.label(t) * DotRow(t, w));
      }
      const double primal = vv / 2 + cap * hinge;
      const double dual =
          std::accumulate(td_alpha_.begin(), td_alpha_.end(), 0.0) - vv / 2;
      if (primal - dual <= 1e-9 * primal) break;
    }
    w = Primal(td_alpha_);
    double vv = 0;
    for (double v : w) vv += v * v;
    const double norm = std::sqrt(vv);
    if (norm > 0) {
      std::vector<double> u(dimension_);
      const double scale = gamma * std::min(1.0, rho / norm);
      for (uint32_t i = 0; i < dimension_; ++i) u[i] = w[i] * scale;
      const double td = distance(u);
      if (td < d.upper) {
        d.upper = td;
        d.u = std::move(u);
      }
    } else if (d.upper == std::numeric_limits<double>::infinity()) {
      d.upper = distance(d.u);
    }
    const double alphas =
        std::accumulate(td_alpha_.begin(), td_alpha_.end(), 0.0);
    if (!search.Next(gamma, alphas, norm, rho, options.tolerance, &d)) break;
  }
  d.solves = std::min(d.solves, 200);
  return d;
}

}  // namespace perceptron
