#include "core/kernel_certificate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/candidate_sums.h"
#include "core/kernel_learner.h"
#include "core/log_c_search.h"

namespace perceptron {

void KernelRows::Fill(const KeptRows& basis, double square,
                      std::vector<double>* out) {
  out->resize(basis.size());
  for (size_t s = 0; s < basis.size(); ++s) {
    (*out)[s] =
        KernelValue(kernel_, basis.Dot(s, scratch_), basis.square(s), square);
  }
}

void KernelRows::Against(const KeptRows& basis, const KeptRows& rows, size_t t,
                         std::vector<double>* out) {
  const absl::Span<const uint32_t> index = rows.indices(t);
  const absl::Span<const double> value = rows.values(t);
  for (size_t k = 0; k < index.size(); ++k) scratch_[index[k]] = value[k];
  Fill(basis, rows.square(t), out);
  for (uint32_t i : index) scratch_[i] = 0;
}

void KernelRows::Against(const KeptRows& basis, const Prepared& x,
                         std::vector<double>* out) {
  // The same values and square as KeptRows::Add keeps.
  double square = 0;
  auto put = [&](uint32_t i, double v) {
    scratch_[i] = v;
    square += v * v;
  };
  if (x.x.sparse) {
    for (size_t k = 0; k < x.x.indices.size(); ++k) {
      put(x.x.indices[k], x.scale * x.x.values[k]);
    }
  } else {
    for (uint32_t i = 0; i < x.dimension; ++i) put(i, x.scale * x.x.values[i]);
  }
  if (x.has_bias) put(x.dimension, x.scale * x.bias_value);
  Fill(basis, square, out);
  if (x.x.sparse) {
    for (uint32_t i : x.x.indices) scratch_[i] = 0;
  } else {
    std::fill(scratch_.begin(), scratch_.begin() + x.dimension, 0.0);
  }
  if (x.has_bias) scratch_[x.dimension] = 0;
}

KernelCandidates KernelCandidatesFrom(const KernelCertificate& c,
                                      const KeptRows& rows) {
  KernelCandidates k;
  if (!(c.gamma > 0) || c.coefficients.size() != rows.size()) return k;
  std::vector<double> base;
  for (size_t t = 0; t < rows.size(); ++t) {
    if (c.coefficients[t] == 0) continue;
    k.basis.Add(rows.indices(t), rows.values(t), rows.label(t));
    base.push_back(c.coefficients[t]);
  }
  for (double scale : kCandidateScales) {
    std::vector<double> v(base.size());
    for (size_t s = 0; s < v.size(); ++s) v[s] = scale * base[s];
    if (std::all_of(v.begin(), v.end(),
                    [](double x) { return std::isfinite(x); })) {
      k.vs.push_back(std::move(v));
    }
  }
  return k;
}

namespace {

// Adds n times each candidate's hinge term on row t of `rows` to *sums.
void AddKernelHinges(const KeptRows& rows, size_t t, double n,
                     const KeptRows& basis, KernelRows* kernel,
                     const std::vector<std::vector<double>>& vs,
                     const ScaledCandidates& scaled,
                     std::vector<double>* scores, std::vector<double>* k,
                     std::vector<double>* sums) {
  kernel->Against(basis, rows, t, k);
  for (uint32_t j : scaled.summed()) {
    double f = 0;
    for (size_t s = 0; s < k->size(); ++s) f += vs[j][s] * (*k)[s];
    (*scores)[j] = f;
  }
  scaled.Spread(scores->data());
  AddHinges(rows.label(t), *scores, n, sums);
}

}  // namespace

std::vector<double> KernelHingeSums(
    const KeptRows& rows, const KeptRows& basis, KernelRows* kernel,
    const std::vector<std::vector<double>>& vs) {
  std::vector<double> sums(vs.size(), 0.0);
  if (vs.empty()) return sums;
  const ScaledCandidates scaled(vs);
  std::vector<double> scores(vs.size()), k;
  for (size_t t = 0; t < rows.size(); ++t) {
    AddKernelHinges(rows, t, rows.count(t), basis, kernel, vs, scaled, &scores,
                    &k, &sums);
  }
  return sums;
}

std::vector<double> KernelHingeSumsAt(
    const KeptRows& rows, absl::Span<const uint32_t> places,
    const KeptRows& basis, KernelRows* kernel,
    const std::vector<std::vector<double>>& vs) {
  std::vector<double> sums(vs.size(), 0.0);
  if (vs.empty()) return sums;
  const ScaledCandidates scaled(vs);
  std::vector<double> scores(vs.size()), k;
  ForEachPlaceOnce(places, rows.size(), [&](uint32_t t, double n) {
    AddKernelHinges(rows, t, n, basis, kernel, vs, scaled, &scores, &k, &sums);
  });
  return sums;
}

std::vector<double> KernelSquares(const KeptRows& basis, KernelRows* kernel,
                                  const std::vector<std::vector<double>>& vs) {
  std::vector<double> squares(vs.size(), 0.0);
  std::vector<double> k;
  for (size_t r = 0; r < basis.size(); ++r) {
    kernel->Against(basis, basis, r, &k);
    for (size_t j = 0; j < vs.size(); ++j) {
      double f = 0;
      for (size_t s = 0; s < k.size(); ++s) f += vs[j][s] * k[s];
      squares[j] += vs[j][r] * f;
    }
  }
  return squares;
}

void KernelCertificateSolver::Add(KeptRows rows,
                                  absl::Span<const uint32_t> repeats) {
  const size_t from = rows_.size();
  rows_.Append(std::move(rows));
  alpha_.resize(rows_.size(), 0.0);
  q_.resize(rows_.size(), 0.0);
  diagonal_.resize(rows_.size());
  for (size_t t = from; t < rows_.size(); ++t) {
    diagonal_[t] = KernelValue(kernel_.kernel(), rows_.square(t),
                               rows_.square(t), rows_.square(t));
  }
  Recompute(from, alpha_, &q_);
  // A row counted s times as often has its alpha scaled by s, as
  // CertificateSolver::Add scales it (feasible in its grown box, and near
  // the solution a stream cycling through the rows asks for).
  for (const auto& [t, grown] : rows_.AddCounts(repeats)) {
    if (alpha_[t] != 0) Move(t, alpha_[t] * grown, &alpha_, &q_);
  }
  if (!td_alpha_.empty()) {
    td_alpha_.resize(rows_.size(), 0.0);
    td_q_.resize(rows_.size(), 0.0);
    Recompute(from, td_alpha_, &td_q_);
  }
}

size_t KernelCertificateSolver::bytes() const {
  return rows_.bytes() +
         (alpha_.capacity() + q_.capacity() + td_alpha_.capacity() +
          td_q_.capacity() + diagonal_.capacity() + row_.capacity()) *
             sizeof(double);
}

void KernelCertificateSolver::Recompute(size_t from,
                                        const std::vector<double>& alpha,
                                        std::vector<double>* q) {
  KeptRows support;
  std::vector<double> c;
  for (size_t s = 0; s < rows_.size(); ++s) {
    if (alpha[s] == 0) continue;
    support.Add(rows_.indices(s), rows_.values(s), rows_.label(s));
    c.push_back(alpha[s] * rows_.label(s));
  }
  for (size_t t = from; t < rows_.size(); ++t) {
    double f = 0;
    if (!c.empty()) {
      kernel_.Against(support, rows_, t, &row_);
      for (size_t s = 0; s < c.size(); ++s) f += c[s] * row_[s];
    }
    (*q)[t] = f;
  }
}

void KernelCertificateSolver::Move(size_t t, double next,
                                   std::vector<double>* alpha,
                                   std::vector<double>* q) {
  kernel_.Against(rows_, rows_, t, &row_);
  const double a = (next - (*alpha)[t]) * rows_.label(t);
  for (size_t s = 0; s < rows_.size(); ++s) (*q)[s] += a * row_[s];
  (*alpha)[t] = next;
}

void KernelCertificateSolver::Pass(double cap, std::vector<double>* alpha,
                                   std::vector<double>* q) {
  const size_t n = rows_.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t k = n; k > 1; --k) {
    std::swap(order[k - 1], order[random_.Next() % k]);
  }
  for (size_t t : order) {
    const double a = (*alpha)[t];
    // A row of count c stands for c equal examples: its box is [0, c C].
    const double row_cap = cap * rows_.count(t);
    double next;
    if (diagonal_[t] == 0) {
      next = row_cap;  // no quadratic term: the dual gains most at the cap
    } else {
      const double g = rows_.label(t) * (*q)[t] - 1;
      const double pg = a == 0         ? std::min(g, 0.0)
                        : a == row_cap ? std::max(g, 0.0)
                                       : g;
      if (pg == 0) continue;
      next = std::clamp(a - g / diagonal_[t], 0.0, row_cap);
    }
    if (next != a) Move(t, next, alpha, q);
  }
}

KernelCertificate KernelCertificateSolver::Solve(
    double radius, const CertificateOptions& options) {
  KernelCertificate c;
  const size_t n = rows_.size();
  c.examples = n;
  c.coefficients.assign(n, 0.0);
  if (n == 0) {
    c.converged = true;
    return c;
  }
  if (!(radius > 0)) {
    // Every k(x^, x^) is 0, so every phi(x^) is 0: every bound is twice
    // the examples (a row of count c being c of them).
    const auto examples = static_cast<double>(rows_.examples());
    c.upper = c.lower = 2.0 * examples;
    c.gamma = 1;
    c.td = examples;
    c.converged = true;
    return c;
  }
  const double r2 = radius * radius;
  const double cap = 1 / r2;
  // R may have grown since the last solve: bring alpha into its box.
  for (size_t t = 0; t < n; ++t) {
    const double row_cap = cap * rows_.count(t);
    if (alpha_[t] > row_cap) Move(t, row_cap, &alpha_, &q_);
  }
  auto figures = [&] {
    double vv = 0, alphas = 0, hinge = 0;
    for (size_t t = 0; t < n; ++t) {
      const double margin = rows_.label(t) * q_[t];
      vv += alpha_[t] * margin;
      alphas += alpha_[t];
      hinge += rows_.count(t) * std::max(0.0, 1 - margin);
    }
    c.lower = 2 * r2 * (alphas - vv / 2);
    if (vv > 0) {
      c.gamma = 1 / std::sqrt(vv);
      c.td = c.gamma * hinge;
      c.upper = r2 * vv + 2 * hinge;
    } else {
      c.gamma = c.td = 0;
      c.upper = std::numeric_limits<double>::infinity();
    }
    c.converged = c.upper - c.lower <= options.tolerance * c.upper;
  };
  const int passes = std::max(1, options.max_passes);
  for (c.passes = 1; c.passes <= passes; ++c.passes) {
    Pass(cap, &alpha_, &q_);
    if (options.stop && options.stop()) {
      c.stopped = true;
      c.converged = false;
      return c;
    }
    figures();
    if (c.converged) break;
  }
  c.passes = std::min(c.passes, passes);
  // The figures of the iterate itself, from q summed afresh (so no drift of
  // the running q reaches a reported figure).
  Recompute(0, alpha_, &q_);
  figures();
  for (size_t t = 0; t < n; ++t) c.coefficients[t] = alpha_[t] * rows_.label(t);
  return c;
}

LeastDistance KernelCertificateSolver::SolveLeastDistance(
    double gamma, const CertificateOptions& options) {
  LeastDistance d;
  const size_t n = rows_.size();
  d.u.assign(n, 0.0);
  if (n == 0 || !(gamma > 0)) {
    d.converged = n == 0;
    return d;
  }
  // As CertificateSolver::SolveLeastDistance, in the feature space: the
  // regularised SVM's v_C = sum_t alpha_t y_t phi(x^_t), with ||v_C||^2 =
  // sum_t alpha_t y_t q_t, bisected on log C for ||v_C|| = rho.
  const double rho = 1 / gamma;
  if (td_alpha_.size() != n) {
    td_alpha_.assign(n, 0.0);
    td_q_.assign(n, 0.0);
  }
  auto norm_of = [&] {
    double vv = 0;
    for (size_t t = 0; t < n; ++t) {
      vv += td_alpha_[t] * rows_.label(t) * td_q_[t];
    }
    return std::max(vv, 0.0);
  };
  // TD_gamma(u) for u = scale * v_C.
  auto distance = [&](double scale) {
    double td = 0;
    for (size_t t = 0; t < n; ++t) {
      td += rows_.count(t) *
            std::max(0.0, gamma - rows_.label(t) * scale * td_q_[t]);
    }
    return td;
  };
  d.upper = gamma * static_cast<double>(rows_.examples());  // u = 0
  LogCSearch search;
  const int passes = std::max(1, options.max_passes);
  for (d.solves = 1; d.solves <= 200; ++d.solves) {
    const double cap = std::exp(search.log_c());
    for (size_t t = 0; t < n; ++t) {
      const double row_cap = cap * rows_.count(t);
      if (td_alpha_[t] > row_cap) Move(t, row_cap, &td_alpha_, &td_q_);
    }
    for (int pass = 1; pass <= passes; ++pass) {
      Pass(cap, &td_alpha_, &td_q_);
      if (pass % 5 != 0) continue;
      const double vv = norm_of();
      double hinge = 0, alphas = 0;
      for (size_t t = 0; t < n; ++t) {
        hinge += rows_.count(t) * std::max(0.0, 1 - rows_.label(t) * td_q_[t]);
        alphas += td_alpha_[t];
      }
      if (vv / 2 + cap * hinge - (alphas - vv / 2) <=
          1e-9 * (vv / 2 + cap * hinge)) {
        break;
      }
    }
    Recompute(0, td_alpha_, &td_q_);  // afresh: no drift in a figure
    const double norm = std::sqrt(norm_of());
    if (norm > 0) {
      const double scale = gamma * std::min(1.0, rho / norm);
      const double td = distance(scale);
      if (td < d.upper) {
        d.upper = td;
        for (size_t t = 0; t < n; ++t) {
          d.u[t] = scale * td_alpha_[t] * rows_.label(t);
        }
      }
    }
    const double alphas =
        std::accumulate(td_alpha_.begin(), td_alpha_.end(), 0.0);
    if (!search.Next(gamma, alphas, norm, rho, options.tolerance, &d)) break;
  }
  d.solves = std::min(d.solves, 200);
  return d;
}

}  // namespace perceptron
