#include "core/candidate_sums.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/config.h"
#include "core/huge_pages.h"
#include "core/prefetch.h"

namespace perceptron {

namespace {

// p > 0 if `v` is p times `of` coordinate by coordinate as rounded, trying the
// ratio of their first non-zero coordinates and kCandidateScales; 0 if not.
double MultipleOf(const std::vector<double>& v, const std::vector<double>& of) {
  if (v.size() != of.size()) return 0;
  size_t i = 0;
  while (i < of.size() && of[i] == 0) ++i;
  if (i == of.size()) return 0;
  auto is = [&](double p) {
    if (!(p > 0) || !std::isfinite(p)) return false;
    for (size_t j = 0; j < v.size(); ++j) {
      if (v[j] != p * of[j]) return false;
    }
    return true;
  };
  const double ratio = v[i] / of[i];
  if (is(ratio)) return ratio;
  for (double p : kCandidateScales) {
    if (p != ratio && is(p)) return p;
  }
  return 0;
}

}  // namespace

void AddHinges(int sign, const std::vector<double>& scores, double n,
               std::vector<double>* sums) {
  for (size_t k = 0; k < scores.size(); ++k) {
    const double h = 1 - sign * scores[k];
    if (h > 0) (*sums)[k] += n * h;
  }
}

ScaledCandidates::ScaledCandidates(const std::vector<std::vector<double>>& vs) {
  for (uint32_t k = 0; k < vs.size(); ++k) {
    bool found = false;
    for (uint32_t of : summed_) {
      const double p = MultipleOf(vs[k], vs[of]);
      if (p > 0) {
        multiples_.push_back({k, of, p});
        found = true;
        break;
      }
    }
    if (!found) summed_.push_back(k);
  }
}

std::shared_ptr<const CandidateSupport> CandidateSupport::Of(
    std::vector<uint32_t> coordinates,
    const std::vector<std::vector<double>>* vs, uint64_t dimension,
    int classes) {
  auto s = std::make_shared<CandidateSupport>();
  s->dimension_ = dimension;
  if (vs != nullptr) {
    s->scaled_ = ScaledCandidates(*vs);
    s->with_candidates_ = true;
  }
  if (vs != nullptr && !vs->empty() && classes > 0) {
    const size_t n = coordinates.size();
    const size_t k = static_cast<size_t>(classes);
    s->by_position_.resize(vs->size());
    for (uint32_t c : s->scaled_.summed()) {
      const std::vector<double>& v = (*vs)[c];
      if (v.size() != n * k) continue;
      std::vector<double>& out = s->by_position_[c];
      out.resize(v.size());
      for (size_t r = 0; r < k; ++r) {
        for (size_t p = 0; p < n; ++p) out[p * k + r] = v[r * n + p];
      }
    }
  } else if (vs != nullptr && !vs->empty()) {
    const std::vector<uint32_t>& which = s->scaled_.summed();
    const uint64_t bytes = dimension * which.size() * sizeof(double);
    bool fits =
        which.size() <= kPacked && bytes <= kDenseBytes * coordinates.size();
    for (uint32_t i : coordinates) fits &= i < dimension;
    for (uint32_t k : which) fits &= (*vs)[k].size() == coordinates.size();
    if (fits) {
      const size_t m = which.size();
      s->dense_which_ = which;
      s->dense_ = HugeVector<double>(dimension * m);
      for (uint32_t p = 0; p < coordinates.size(); ++p) {
        for (size_t j = 0; j < m; ++j) {
          s->dense_[size_t{coordinates[p]} * m + j] = (*vs)[which[j]][p];
        }
      }
    }
  }
  s->coordinates_ = std::move(coordinates);
  // Scores of the candidates by coordinate read no lookup (Accumulate).
  if (s->dense_.empty()) s->MakeLookup();
  return s;
}

void CandidateSupport::MakeLookup() const {
  absl::call_once(lookup_made_, [this] {
    const uint64_t want = coordinates_.size() * kFilterBits;
    const uint64_t dimension = dimension_;
    const bool within =
        std::all_of(coordinates_.begin(), coordinates_.end(),
                    [dimension](uint32_t i) { return i < dimension; });
    if (dimension > 0 && dimension <= want && within) {
      filter_direct_ = true;
      filter_bits_ = dimension;
    } else {
      int bits = 6;
      while ((uint64_t{1} << bits) < want) ++bits;
      filter_bits_ = uint64_t{1} << bits;
      filter_shift_ = 64 - bits;
    }
    filter_.assign((filter_bits_ + 63) / 64, 0);
    for (uint32_t i : coordinates_) {
      const uint64_t h = FilterBit(i);
      if (h < filter_bits_) filter_[h >> 6] |= uint64_t{1} << (h & 63);
    }
    positions_.reserve(coordinates_.size());
    for (uint32_t p = 0; p < coordinates_.size(); ++p) {
      positions_.emplace(coordinates_[p], p);
    }
  });
}

void CandidateSupport::Scores(const std::vector<std::vector<double>>& vs,
                              const std::vector<uint32_t>& which,
                              const Prepared& x, double* scores) const {
  for (uint32_t k : which) scores[k] = 0;
  const double* v = x.x.values.data();
  const size_t n = x.x.values.size();
  if (x.x.sparse) {
    Accumulate(vs, which, x.x.indices.data(), v, n, scores);
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (v[i] == 0) continue;
      const uint32_t at = static_cast<uint32_t>(i);
      Accumulate(vs, which, &at, v + i, 1, scores);
    }
  }
  if (x.has_bias) Accumulate(vs, which, &x.dimension, &x.bias_value, 1, scores);
  for (uint32_t k : which) scores[k] *= x.scale;
}

void CandidateSupport::AccumulateDense(const std::vector<uint32_t>& which,
                                       const uint32_t* indices,
                                       const double* values, size_t n,
                                       double* scores) const {
  // The sums are kept in registers (through memory, each term would wait for
  // the last one's store), the terms added in the same order.
  const size_t m = which.size();
  const size_t size = dense_.size() / m;
  const double* dense = dense_.data();
  constexpr size_t kBatch = 16;
  if (m == 1) {
    double sum = scores[which[0]];
    for (size_t b = 0; b < n; b += kBatch) {
      const size_t e = std::min(n, b + kBatch);
      for (size_t j = b; j < e; ++j) {
        if (indices[j] < size) PrefetchLine(dense + indices[j]);
      }
      for (size_t j = b; j < e; ++j) {
        if (indices[j] < size) sum += dense[indices[j]] * values[j];
      }
    }
    scores[which[0]] = sum;
    return;
  }
  double sums[kPacked];
  for (size_t k = 0; k < m; ++k) sums[k] = scores[which[k]];
  for (size_t b = 0; b < n; b += kBatch) {
    const size_t e = std::min(n, b + kBatch);
    for (size_t j = b; j < e; ++j) {
      if (indices[j] < size) PrefetchLine(dense + indices[j] * m);
    }
    for (size_t j = b; j < e; ++j) {
      if (indices[j] >= size) continue;
      const double* at = dense + size_t{indices[j]} * m;
      for (size_t k = 0; k < m; ++k) sums[k] += at[k] * values[j];
    }
  }
  for (size_t k = 0; k < m; ++k) scores[which[k]] = sums[k];
}

void CandidateSupport::Accumulate(const std::vector<std::vector<double>>& vs,
                                  const std::vector<uint32_t>& which,
                                  const uint32_t* indices, const double* values,
                                  size_t n, double* scores) const {
  if (!dense_which_.empty() && which == dense_which_) {
    return AccumulateDense(which, indices, values, n, scores);
  }
  ForEachHeld(
      indices, values, n,
      [&](int64_t p) {
        for (uint32_t k : which) PrefetchLine(vs[k].data() + p);
      },
      [&](int64_t p, double value) {
        for (uint32_t k : which) scores[k] += vs[k][p] * value;
      });
}

void CandidateSupport::Scores(const std::vector<std::vector<double>>& vs,
                              const std::vector<uint32_t>& which,
                              const KeptRows& rows, size_t t,
                              double* scores) const {
  for (uint32_t k : which) scores[k] = 0;
  const absl::Span<const uint32_t> idx = rows.indices(t);
  Accumulate(vs, which, idx.data(), rows.values(t).data(), idx.size(), scores);
}

void CandidateSupport::AccumulateClasses(const double* v, size_t per_position,
                                         size_t per_class, int k,
                                         const uint32_t* indices,
                                         const double* values, size_t n,
                                         double* out) const {
  ForEachHeld(
      indices, values, n,
      [&](int64_t p) {
        const double* column = v + size_t(p) * per_position;
        if (per_class == 1) {
          // The k values side by side: their first and last lines.
          PrefetchLine(column);
          PrefetchLine(column + k - 1);
        } else {
          for (int r = 0; r < k; ++r) {
            PrefetchLine(column + r * per_class);
          }
        }
      },
      [&](int64_t p, double value) {
        const double* column = v + size_t(p) * per_position;
        for (int r = 0; r < k; ++r) out[r] += column[r * per_class] * value;
      });
}

void CandidateSupport::ClassScores(const std::vector<std::vector<double>>& vs,
                                   uint32_t c, int k, const Prepared& x,
                                   double* out) const {
  std::fill(out, out + k, 0.0);
  const ClassLayout l = LayoutOf(vs, c, k);
  const double* values = x.x.values.data();
  const size_t n = x.x.values.size();
  if (x.x.sparse) {
    AccumulateClasses(l.v, l.per_position, l.per_class, k, x.x.indices.data(),
                      values, n, out);
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (values[i] == 0) continue;
      const uint32_t at = static_cast<uint32_t>(i);
      AccumulateClasses(l.v, l.per_position, l.per_class, k, &at, values + i, 1,
                        out);
    }
  }
  if (x.has_bias) {
    AccumulateClasses(l.v, l.per_position, l.per_class, k, &x.dimension,
                      &x.bias_value, 1, out);
  }
  for (int r = 0; r < k; ++r) out[r] *= x.scale;
}

void CandidateSupport::ClassScores(const std::vector<std::vector<double>>& vs,
                                   uint32_t c, int k, const KeptRows& rows,
                                   size_t t, double* out) const {
  std::fill(out, out + k, 0.0);
  const ClassLayout l = LayoutOf(vs, c, k);
  const absl::Span<const uint32_t> idx = rows.indices(t);
  AccumulateClasses(l.v, l.per_position, l.per_class, k, idx.data(),
                    rows.values(t).data(), idx.size(), out);
}

std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs,
                              const CandidateSupport& support) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled =
      support.scaled() != nullptr ? *support.scaled() : ScaledCandidates(vs);
  std::vector<double> scores(vs.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    support.Scores(vs, scaled.summed(), rows, t, scores.data());
    scaled.Spread(scores.data());
    AddHinges(rows.label(t), scores, rows.count(t), &sums);
  }
  return sums;
}

std::vector<double> HingeSumsAt(const KeptRows& rows,
                                absl::Span<const uint32_t> places,
                                const std::vector<std::vector<double>>& vs) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled(vs);
  std::vector<double> scores(vs.size());
  ForEachPlaceOnce(places, rows.size(), [&](uint32_t t, double n) {
    for (uint32_t k : scaled.summed()) scores[k] = rows.DotUnordered(t, vs[k]);
    scaled.Spread(scores.data());
    AddHinges(rows.label(t), scores, n, &sums);
  });
  return sums;
}

std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs) {
  return HingeSums(rows, vs, ScaledCandidates(vs));
}

std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs,
                              const ScaledCandidates& scaled) {
  std::vector<double> sums(vs.size(), 0.0);
  std::vector<double> scores(vs.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    for (uint32_t k : scaled.summed()) scores[k] = rows.DotUnordered(t, vs[k]);
    scaled.Spread(scores.data());
    AddHinges(rows.label(t), scores, rows.count(t), &sums);
  }
  return sums;
}

double ClassMargin(const KeptRows& rows, size_t t, const std::vector<double>& v,
                   int classes) {
  const size_t dimension = v.size() / static_cast<size_t>(classes);
  const int y = rows.label(t);
  double own = 0;
  double other = -std::numeric_limits<double>::infinity();
  for (int r = 0; r < classes; ++r) {
    const double s =
        rows.DotUnordered(t, v.data() + static_cast<size_t>(r) * dimension);
    if (r == y) {
      own = s;
    } else {
      other = std::max(other, s);
    }
  }
  return own - other;
}

std::vector<double> ClassHingeSums(const KeptRows& rows,
                                   const std::vector<std::vector<double>>& vs,
                                   int classes) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled(vs);
  std::vector<double> margins(vs.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    for (uint32_t k : scaled.summed()) {
      margins[k] = ClassMargin(rows, t, vs[k], classes);
    }
    scaled.Spread(margins.data());
    AddHinges(1, margins, rows.count(t), &sums);
  }
  return sums;
}

std::vector<double> ClassHingeSums(const KeptRows& rows,
                                   const std::vector<std::vector<double>>& vs,
                                   int classes,
                                   const CandidateSupport& support) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled =
      support.scaled() != nullptr ? *support.scaled() : ScaledCandidates(vs);
  std::vector<double> margins(vs.size());
  double s[kMaxClasses];
  for (size_t t = 0; t < rows.size(); ++t) {
    const int y = rows.label(t);
    for (uint32_t k : scaled.summed()) {
      support.ClassScores(vs, k, classes, rows, t, s);
      margins[k] = MarginOf(s, classes, y);
    }
    scaled.Spread(margins.data());
    AddHinges(1, margins, rows.count(t), &sums);
  }
  return sums;
}

std::vector<double> ClassHingeSumsAt(const KeptRows& rows,
                                     absl::Span<const uint32_t> places,
                                     const std::vector<std::vector<double>>& vs,
                                     int classes) {
  std::vector<double> sums(vs.size(), 0.0);
  const ScaledCandidates scaled(vs);
  std::vector<double> margins(vs.size());
  ForEachPlaceOnce(places, rows.size(), [&](uint32_t t, double n) {
    for (uint32_t k : scaled.summed()) {
      margins[k] = ClassMargin(rows, t, vs[k], classes);
    }
    scaled.Spread(margins.data());
    AddHinges(1, margins, n, &sums);
  });
  return sums;
}

}  // namespace perceptron
