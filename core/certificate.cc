#include "core/certificate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/synchronization/mutex.h"
#include "core/kernel_learner.h"

namespace perceptron {
namespace {

// A deterministic generator for the order of each pass (xorshift64*).
uint64_t Next(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}

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

}  // namespace

namespace {

// Coordinates of a KeptRows' first block, and of its largest ones (but a row
// longer than that gets a block of its own length).
constexpr size_t kFirstBlock = 1024;
constexpr size_t kLargestBlock = size_t{1} << 18;  // 3 MiB

}  // namespace

KeptRows& KeptRows::operator=(const KeptRows& other) {
  if (this != &other) {
    Clear();
    Append(other);
  }
  return *this;
}

const uint32_t* KeptRows::Iota(size_t n) {
  // tables[k] holds 0 .. 2^k - 1 once made; a row has fewer than 2^32
  // coordinates.
  static std::atomic<const uint32_t*> tables[33];
  static absl::Mutex mu(absl::kConstInit);
  size_t k = 0;
  while ((size_t{1} << k) < n) ++k;
  const uint32_t* table = tables[k].load(std::memory_order_acquire);
  if (table != nullptr) return table;
  absl::MutexLock lock(&mu);
  table = tables[k].load(std::memory_order_acquire);
  if (table == nullptr) {
    uint32_t* made = new uint32_t[size_t{1} << k];  // kept for good
    std::iota(made, made + (size_t{1} << k), uint32_t{0});
    table = made;
    tables[k].store(table, std::memory_order_release);
  }
  return table;
}

KeptRows::Block& KeptRows::Room(size_t n, bool dense) {
  // Rows of either kind go on filling their own block, so that rows that
  // alternate between them do not start a block each.
  int64_t& open = dense ? open_dense_ : open_sparse_;
  if (open < 0 || blocks_[open].capacity - blocks_[open].size < n) {
    const size_t next =
        open < 0 ? kFirstBlock
                 : std::min(2 * blocks_[open].capacity, kLargestBlock);
    Block& b = blocks_.emplace_back();
    b.capacity = std::max(next, n);
    // Not initialised: every coordinate is written before it is read.
    if (!dense) b.index.reset(new uint32_t[b.capacity]);
    b.value.reset(new double[b.capacity]);
    open = static_cast<int64_t>(blocks_.size()) - 1;
  }
  return blocks_[open];
}

void KeptRows::Close(const Block& b, size_t begin, int label, double square) {
  rows_.push_back({static_cast<uint32_t>(&b - blocks_.data()),
                   static_cast<uint32_t>(begin),
                   static_cast<uint32_t>(b.size)});
  labels_.push_back(static_cast<int8_t>(label > 0 ? 1 : -1));
  square_.push_back(square);
}

void KeptRows::AddDense(absl::Span<const double> values, int label) {
  Block& b = Room(values.size(), /*dense=*/true);
  const size_t begin = b.size;
  double square = 0;
  for (double v : values) {
    b.value[b.size++] = v;
    square += v * v;
  }
  Close(b, begin, label, square);
}

void KeptRows::Add(const Prepared& x, int label) {
  const size_t most =
      (x.x.sparse ? x.x.indices.size() : x.dimension) + (x.has_bias ? 1 : 0);
  if (!x.x.sparse) {
    // A dense row keeps only its values, if none is zero (as a sparse row
    // keeps only its non-zeros).
    Block& b = Room(most, /*dense=*/true);
    const size_t begin = b.size;
    double* value = b.value.get() + begin;
    double square = 0;
    bool zero = false;
    for (uint32_t i = 0; i < x.dimension; ++i) {
      value[i] = x.scale * x.x.values[i];
      zero |= value[i] == 0;
      square += value[i] * value[i];
    }
    if (x.has_bias) {
      value[x.dimension] = x.scale * x.bias_value;
      zero |= value[x.dimension] == 0;
      square += value[x.dimension] * value[x.dimension];
    }
    if (!zero) {
      b.size = begin + most;
      Close(b, begin, label, square);
      return;
    }
    // Written past the block's size, so nothing is kept: as a sparse row.
  }
  Block& b = Room(most, /*dense=*/false);
  const size_t begin = b.size;
  uint32_t* index = b.index.get();
  double* value = b.value.get();
  size_t at = begin;
  double square = 0;
  auto keep = [&](uint32_t i, double v) {
    if (v == 0) return;
    index[at] = i;
    value[at] = v;
    ++at;
    square += v * v;
  };
  if (x.x.sparse) {
    for (size_t k = 0; k < x.x.indices.size(); ++k) {
      keep(x.x.indices[k], x.scale * x.x.values[k]);
    }
  } else {
    for (uint32_t i = 0; i < x.dimension; ++i) {
      keep(i, x.scale * x.x.values[i]);
    }
  }
  if (x.has_bias) keep(x.dimension, x.scale * x.bias_value);
  b.size = at;
  Close(b, begin, label, square);
}

void KeptRows::Add(absl::Span<const uint32_t> indices,
                   absl::Span<const double> values, int label) {
  bool dense = true;
  for (size_t k = 0; k < indices.size() && dense; ++k) {
    dense = indices[k] == k && values[k] != 0;
  }
  if (dense) {
    AddDense(values, label);
    return;
  }
  Block& b = Room(indices.size(), /*dense=*/false);
  const size_t begin = b.size;
  double square = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (values[k] == 0) continue;
    b.index[b.size] = indices[k];
    b.value[b.size] = values[k];
    ++b.size;
    square += values[k] * values[k];
  }
  Close(b, begin, label, square);
}

void KeptRows::Append(const KeptRows& more) {
  for (size_t t = 0; t < more.size(); ++t) {
    const absl::Span<const uint32_t> index = more.indices(t);
    const absl::Span<const double> value = more.values(t);
    if (more.dense(t)) {
      AddDense(value, more.labels_[t]);  // its square summed as it was
      continue;
    }
    Block& b = Room(index.size(), /*dense=*/false);
    const size_t begin = b.size;
    std::copy(index.begin(), index.end(), b.index.get() + begin);
    std::copy(value.begin(), value.end(), b.value.get() + begin);
    b.size += index.size();
    Close(b, begin, more.labels_[t], more.square_[t]);
  }
}

void KeptRows::Append(KeptRows&& more) {
  size_t coordinates = 0;
  for (const Block& b : more.blocks_) coordinates += b.size;
  if (coordinates < kLargestBlock / 4 || blocks_.empty()) {
    if (blocks_.empty()) {
      *this = std::move(more);
    } else {
      Append(static_cast<const KeptRows&>(more));
    }
    more.Clear();
    return;
  }
  const uint32_t offset = static_cast<uint32_t>(blocks_.size());
  for (Block& b : more.blocks_) blocks_.push_back(std::move(b));
  for (const Row& r : more.rows_) {
    rows_.push_back({r.block + offset, r.begin, r.end});
  }
  labels_.insert(labels_.end(), more.labels_.begin(), more.labels_.end());
  square_.insert(square_.end(), more.square_.begin(), more.square_.end());
  more.Clear();
}

bool operator==(const KeptRows& a, const KeptRows& b) {
  if (a.labels_ != b.labels_ || a.square_ != b.square_) return false;
  for (size_t t = 0; t < a.size(); ++t) {
    const absl::Span<const uint32_t> ai = a.indices(t), bi = b.indices(t);
    const absl::Span<const double> av = a.values(t), bv = b.values(t);
    if (!std::equal(ai.begin(), ai.end(), bi.begin(), bi.end()) ||
        !std::equal(av.begin(), av.end(), bv.begin(), bv.end())) {
      return false;
    }
  }
  return true;
}

size_t KeptRows::bytes() const {
  size_t values = 0, indices = 0;
  for (const Block& b : blocks_) {
    values += b.capacity;
    if (b.index != nullptr) indices += b.capacity;
  }
  return values * sizeof(double) + indices * sizeof(uint32_t) +
         blocks_.capacity() * sizeof(Block) + rows_.capacity() * sizeof(Row) +
         labels_.capacity() + square_.capacity() * sizeof(double);
}

namespace {

// p if `v` is p times `of` coordinate by coordinate, for a power of two p > 0;
// 0 if not.
double PowerOfTwoMultiple(const std::vector<double>& v,
                          const std::vector<double>& of) {
  if (v.size() != of.size()) return 0;
  size_t i = 0;
  while (i < of.size() && of[i] == 0) ++i;
  if (i == of.size()) return 0;
  const double p = v[i] / of[i];
  int exponent = 0;
  if (!(p > 0) || !std::isfinite(p) || std::frexp(p, &exponent) != 0.5) {
    return 0;
  }
  for (size_t j = 0; j < v.size(); ++j) {
    if (v[j] != p * of[j]) return 0;
  }
  return p;
}

}  // namespace

ScaledCandidates::ScaledCandidates(const std::vector<std::vector<double>>& vs) {
  for (uint32_t k = 0; k < vs.size(); ++k) {
    bool found = false;
    for (uint32_t of : summed_) {
      const double p = PowerOfTwoMultiple(vs[k], vs[of]);
      if (p > 0) {
        multiples_.push_back({k, of, p});
        found = true;
        break;
      }
    }
    if (!found) summed_.push_back(k);
  }
}

std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled(vs);
  std::vector<double> scores(vs.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    for (uint32_t k : scaled.summed()) scores[k] = rows.DotUnordered(t, vs[k]);
    scaled.Spread(scores.data());
    for (size_t k = 0; k < vs.size(); ++k) {
      const double h = 1 - rows.label(t) * scores[k];
      if (h > 0) sums[k] += h;
    }
  }
  return sums;
}

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
  for (double scale : {1.0, 0.5, 0.7071067811865476, 1.4142135623730951, 2.0}) {
    std::vector<double> v(base.size());
    for (size_t s = 0; s < v.size(); ++s) v[s] = base[s] * scale;
    if (std::all_of(v.begin(), v.end(),
                    [](double x) { return std::isfinite(x); })) {
      k.vs.push_back(std::move(v));
    }
  }
  return k;
}

std::vector<double> KernelHingeSums(
    const KeptRows& rows, const KeptRows& basis, KernelRows* kernel,
    const std::vector<std::vector<double>>& vs) {
  std::vector<double> sums(vs.size(), 0.0);
  if (vs.empty()) return sums;
  const ScaledCandidates scaled(vs);
  std::vector<double> scores(vs.size());
  std::vector<double> k;
  for (size_t t = 0; t < rows.size(); ++t) {
    kernel->Against(basis, rows, t, &k);
    for (uint32_t j : scaled.summed()) {
      double f = 0;
      for (size_t s = 0; s < k.size(); ++s) f += vs[j][s] * k[s];
      scores[j] = f;
    }
    scaled.Spread(scores.data());
    for (size_t j = 0; j < vs.size(); ++j) {
      const double h = 1 - rows.label(t) * scores[j];
      if (h > 0) sums[j] += h;
    }
  }
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

void KernelCertificateSolver::Add(KeptRows rows) {
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
    std::swap(order[k - 1], order[Next(&seed_) % k]);
  }
  for (size_t t : order) {
    const double a = (*alpha)[t];
    double next;
    if (diagonal_[t] == 0) {
      next = cap;  // no quadratic term: the dual gains most at the cap
    } else {
      const double g = rows_.label(t) * (*q)[t] - 1;
      const double pg = a == 0     ? std::min(g, 0.0)
                        : a == cap ? std::max(g, 0.0)
                                   : g;
      if (pg == 0) continue;
      next = std::clamp(a - g / diagonal_[t], 0.0, cap);
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
    // Every k(x^, x^) is 0, so every phi(x^) is 0: every bound is 2n.
    c.upper = c.lower = 2.0 * static_cast<double>(n);
    c.gamma = 1;
    c.td = static_cast<double>(n);
    c.converged = true;
    return c;
  }
  const double r2 = radius * radius;
  const double cap = 1 / r2;
  for (size_t t = 0; t < n; ++t) {
    if (alpha_[t] > cap) Move(t, cap, &alpha_, &q_);
  }
  auto figures = [&] {
    double vv = 0, alphas = 0, hinge = 0;
    for (size_t t = 0; t < n; ++t) {
      const double margin = rows_.label(t) * q_[t];
      vv += alpha_[t] * margin;
      alphas += alpha_[t];
      hinge += std::max(0.0, 1 - margin);
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
      td += std::max(0.0, gamma - rows_.label(t) * scale * td_q_[t]);
    }
    return td;
  };
  d.upper = gamma * static_cast<double>(n);  // u = 0
  LogCSearch search;
  const int passes = std::max(1, options.max_passes);
  for (d.solves = 1; d.solves <= 200; ++d.solves) {
    const double cap = std::exp(search.log_c());
    for (size_t t = 0; t < n; ++t) {
      if (td_alpha_[t] > cap) Move(t, cap, &td_alpha_, &td_q_);
    }
    for (int pass = 1; pass <= passes; ++pass) {
      Pass(cap, &td_alpha_, &td_q_);
      if (pass % 5 != 0) continue;
      const double vv = norm_of();
      double hinge = 0, alphas = 0;
      for (size_t t = 0; t < n; ++t) {
        hinge += std::max(0.0, 1 - rows_.label(t) * td_q_[t]);
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

CertificateSolver::CertificateSolver(uint32_t weight_dimension)
    : dimension_(weight_dimension), w_(weight_dimension, 0.0) {}

void CertificateSolver::Add(const Prepared& x, int label) {
  rows_.Add(x, label);
  alpha_.push_back(0);
}

void CertificateSolver::Add(KeptRows rows) {
  rows_.Append(std::move(rows));
  alpha_.resize(rows_.size(), 0.0);
}

size_t CertificateSolver::bytes() const {
  return rows_.bytes() +
         (alpha_.capacity() + hard_alpha_.capacity() + td_alpha_.capacity()) *
             sizeof(double);
}

std::vector<double> CertificateSolver::Primal(
    const std::vector<double>& alpha) const {
  std::vector<double> w(dimension_, 0.0);
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
  // in a fully random order (10^5 kept rows of d = 20: 1.5x faster a pass,
  // for a few more passes). Each active row is still visited once a pass,
  // all that the convergence of dual coordinate descent asks (Hsieh et al.
  // 2008, thm. 1).
  constexpr size_t kRun = 32;
  const size_t runs = (n + kRun - 1) / kRun;
  std::vector<size_t> run_order(runs);
  std::iota(run_order.begin(), run_order.end(), size_t{0});
  for (size_t k = runs; k > 1; --k) {
    std::swap(run_order[k - 1], run_order[Next(&seed_) % k]);
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  for (size_t r : run_order) {
    const size_t begin = r * kRun, end = std::min(n, begin + kRun);
    const size_t at = order.size();
    for (size_t i = begin; i < end; ++i) order.push_back((*active)[i]);
    for (size_t k = end - begin; k > 1; --k) {
      std::swap(order[at + k - 1], order[at + Next(&seed_) % k]);
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
      __builtin_prefetch(alpha->data() + order[i + 2 * kAhead]);
    }
    if (i + kAhead < n) rows_.PrefetchValues(order[i + kAhead]);
    const size_t t = order[i];
    const double y = rows_.label(t);
    const double a = (*alpha)[t];
    double next;
    if (rows_.square(t) == 0) {
      next = cap;  // no quadratic term: the dual gains most at the cap
      gradients.gap += cap - a;
    } else {
      const double g = y * DotRow(t, *w) - 1;
      // The row's share of the duality gap P(w) - D(alpha), where
      // P - D = sum_t alpha_t g_t + cap max(0, -g_t), each share >= 0 (and 0
      // for a row shrunk, at the bound its gradient points past).
      gradients.gap += a * g + cap * std::max(0.0, -g);
      double pg = g;
      if (a == 0) {
        if (g > shrink.above) {
          shrunk[t] = true;
          continue;
        }
        pg = std::min(g, 0.0);
      } else if (a == cap) {
        if (g < shrink.below) {
          shrunk[t] = true;
          continue;
        }
        pg = std::max(g, 0.0);
      }
      gradients.max = std::max(gradients.max, pg);
      gradients.min = std::min(gradients.min, pg);
      if (pg == 0) continue;
      next = std::clamp(a - g / rows_.square(t), 0.0, cap);
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
  c.u.assign(dimension_, 0.0);
  if (dimension_ > 0) c.u[0] = 1;
  if (n == 0) {
    c.converged = true;
    return c;
  }
  if (!(radius > 0)) {
    // Every kept x^ is 0: every comparator has TD_gamma = n gamma, so every
    // bound is exactly 2n.
    c.upper = c.lower = 2.0 * static_cast<double>(n);
    c.gamma = 1;
    c.td = static_cast<double>(n);
    c.converged = true;
    return c;
  }
  const double r2 = radius * radius;
  const double cap = 1 / r2;  // C
  // R may have grown since the last solve: bring alpha into [0, C].
  for (size_t t = 0; t < n; ++t) {
    if (alpha_[t] > cap) {
      AddRow(t, (cap - alpha_[t]) * rows_.label(t), &w_);
      alpha_[t] = cap;
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
      td += std::max(0.0, c.gamma - rows_.label(t) * DotRow(t, c.u));
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
      td += std::max(0.0, gamma - rows_.label(t) * DotRow(t, u));
    }
    return td;
  };
  LogCSearch search;
  const int passes = std::max(1, options.max_passes);
  for (d.solves = 1; d.solves <= 200; ++d.solves) {
    const double cap = std::exp(search.log_c());
    for (double& a : td_alpha_) a = std::min(a, cap);
    w = Primal(td_alpha_);
    for (int pass = 1; pass <= passes; ++pass) {
      Pass(cap, &td_alpha_, &w);
      if (pass % 5 != 0) continue;
      w = Primal(td_alpha_);
      double vv = 0;
      for (double v : w) vv += v * v;
      double hinge = 0;
      for (size_t t = 0; t < n; ++t) {
        hinge += std::max(0.0, 1 - rows_.label(t) * DotRow(t, w));
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
