// The hinge sums of candidate comparators over kept rows: what makes each
// candidate's TD_gamma, and so its bound, exact.
//
//   std::vector<double> sums = perceptron::HingeSums(rows, vs);
//   // TD_gamma(v / ||v||) = sums[k] / ||v|| for v = vs[k]
#ifndef PERCEPTRON_CORE_CANDIDATE_SUMS_H_
#define PERCEPTRON_CORE_CANDIDATE_SUMS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "core/huge_pages.h"
#include "core/kept_rows.h"
#include "core/prefetch.h"
#include "core/prepare.h"

namespace perceptron {

// The scales of v = u / gamma a refresher installs as candidates
// (CandidatesFrom, KernelCandidatesFrom), each p v computed coordinate by
// coordinate as p * v[i]: the best scale moves as examples arrive.
inline constexpr double kCandidateScales[] = {1.0, 0.5, 0.7071067811865476,
                                              1.4142135623730951, 2.0};

// Which of candidates `vs` are a multiple p > 0 of an earlier one, coordinate
// by coordinate as rounded (vs[k][i] == p * vs[of][i] for every i), as
// CandidatesFrom's are of v: the score of such a candidate is defined as
// p (v . x), taken from the earlier one's instead of summed again. It is
// (p v) . x within the rounding of the sum (docs/design.md section 5); for a
// power of two p it is the same number unless a term lies below the normal
// range. Any other candidates are summed.
class ScaledCandidates {
 public:
  ScaledCandidates() = default;
  explicit ScaledCandidates(const std::vector<std::vector<double>>& vs);

  // The candidates whose scores are summed, in increasing order.
  const std::vector<uint32_t>& summed() const { return summed_; }
  // Fills scores[k] of every other candidate from the summed ones'.
  void Spread(double* scores) const {
    for (const Multiple& m : multiples_) scores[m.k] = m.p * scores[m.of];
  }

  struct Multiple {
    uint32_t k;   // this candidate
    uint32_t of;  // is p times this summed one (of < k)
    double p;
  };
  // The candidates that are multiples of a summed one, in increasing order of
  // k.
  const std::vector<Multiple>& multiples() const { return multiples_; }

 private:
  std::vector<uint32_t> summed_;
  std::vector<Multiple> multiples_;
};

// The coordinates a wide model's candidates hold (docs/design.md section 2.7):
// those its kept rows use, one a position; every other coordinate of a
// candidate is 0 (v lies in the span of the rows). A candidate is then a vector
// of one value a position.
class CandidateSupport {
 public:
  // `coordinates` must be distinct. With `vs` (the candidates over them, one
  // value a position) and the weight dimension, when the coordinates are
  // dense enough that it takes at most kDenseBytes a coordinate, the values
  // of the candidates whose scores are summed (ScaledCandidates, at most
  // kPacked of them) are also kept by coordinate, side by side, so that a
  // score reads them without a lookup.
  // With `classes` k > 0 (a multiclass model's candidates, k blocks of one
  // value a position), the values of each candidate whose scores are summed
  // are kept by position instead, the k of a position side by side, so that
  // a score reads a coordinate's k values from one or two cache lines.
  static std::shared_ptr<const CandidateSupport> Of(
      std::vector<uint32_t> coordinates,
      const std::vector<std::vector<double>>* vs = nullptr,
      uint64_t dimension = 0, int classes = 0);
  static constexpr size_t kPacked = 3;
  static constexpr uint64_t kDenseBytes = 48;

  const std::vector<uint32_t>& coordinates() const { return coordinates_; }
  size_t size() const { return coordinates_.size(); }
  // The ScaledCandidates of the candidates it was made with (Of's `vs`), or
  // null if made without: what their scores over it are summed for.
  const ScaledCandidates* scaled() const {
    return with_candidates_ ? &scaled_ : nullptr;
  }
  // The position of coordinate i, or -1.
  int64_t position(uint32_t i) const {
    MakeLookup();
    return PositionOf(i);
  }
  // Bytes it takes.
  size_t bytes() const {
    return coordinates_.capacity() * sizeof(uint32_t) +
           positions_.capacity() * (sizeof(uint64_t) + 1) +
           dense_.capacity() * sizeof(double) + ByPositionBytes() +
           filter_.capacity() * sizeof(uint64_t);
  }
  // scores[k] = vs[k] . x^ for each k of `which` (the candidates' values at
  // these positions), over x^'s non-zeros in order; the scale applied last,
  // as Dot applies it.
  void Scores(const std::vector<std::vector<double>>& vs,
              const std::vector<uint32_t>& which, const Prepared& x,
              double* scores) const;
  // The same over kept row t of `rows` (at their coordinates).
  void Scores(const std::vector<std::vector<double>>& vs,
              const std::vector<uint32_t>& which, const KeptRows& rows,
              size_t t, double* scores) const;
  // Multiclass candidate c's class scores: out[r] = v_r . x^ for r < k,
  // v_r being the r-th of vs[c]'s k blocks of size() values, over x^'s
  // non-zeros in order and the scale applied last, as Scores (from the
  // values kept by position when they are c's: the same sums).
  void ClassScores(const std::vector<std::vector<double>>& vs, uint32_t c,
                   int k, const Prepared& x, double* out) const;
  // The same over kept row t of `rows` (at their coordinates).
  void ClassScores(const std::vector<std::vector<double>>& vs, uint32_t c,
                   int k, const KeptRows& rows, size_t t, double* out) const;
  // Asks for what Scores over x's non-zeros reads first: the values kept by
  // coordinate (dense_), one line a coordinate, or else the slots of the
  // coordinates the filter lets through in the table of positions (their
  // values are asked for as Scores finds them). A hint: it changes nothing.
  void Prefetch(const FeatureView& x) const {
    if (dense_.empty()) {
      MakeLookup();
      for (const uint32_t i : x.indices) {
        if (Passes(i)) positions_.prefetch(i);
      }
      return;
    }
    const size_t m = dense_which_.size(), size = dense_.size() / m;
    for (const uint32_t i : x.indices) {
      if (i < size) PrefetchLine(dense_.data() + size_t{i} * m);
    }
  }
  // False if coordinate i is not in the support (a bit of the filter below);
  // true if it may be.
  bool MayHold(uint32_t i) const {
    MakeLookup();
    return Passes(i);
  }

 private:
  // The filter and the table of positions below are made when first needed:
  // a support whose values are kept by coordinate (dense_) reads neither to
  // score the candidates it was made with, and a wide model's refresher makes
  // one a solution (a table of every coordinate of the kept rows).
  void MakeLookup() const;
  int64_t PositionOf(uint32_t i) const {
    const auto it = positions_.find(i);
    return it == positions_.end() ? -1 : int64_t{it->second};
  }
  bool Passes(uint32_t i) const {
    const uint64_t h = FilterBit(i);
    return h < filter_bits_ && ((filter_[h >> 6] >> (h & 63)) & 1);
  }
  // Bytes by_position_ takes.
  size_t ByPositionBytes() const {
    size_t b = 0;
    for (const std::vector<double>& v : by_position_) {
      b += v.capacity() * sizeof(double);
    }
    return b;
  }
  // For each of the n non-zeros given whose coordinate is in the support, in
  // order: add(position, value). Past the caches each lookup and each value
  // at a position is a miss: a batch's positions are looked up ahead (only
  // the coordinates the filter lets through) and prefetch(position) called
  // for each, so that they overlap, then add is called in order.
  template <typename Prefetch, typename Add>
  void ForEachHeld(const uint32_t* indices, const double* values, size_t n,
                   Prefetch prefetch, Add add) const {
    MakeLookup();
    constexpr size_t kBatch = 16;
    int64_t at[kBatch];
    size_t from[kBatch];
    for (size_t b = 0; b < n;) {
      size_t m = 0;
      for (; b < n && m < kBatch; ++b) {
        if (Passes(indices[b])) from[m++] = b;
      }
      for (size_t j = 0; j < m; ++j) positions_.prefetch(indices[from[j]]);
      for (size_t j = 0; j < m; ++j) {
        at[j] = PositionOf(indices[from[j]]);
        if (at[j] >= 0) prefetch(at[j]);
      }
      for (size_t j = 0; j < m; ++j) {
        if (at[j] >= 0) add(at[j], values[from[j]]);
      }
    }
  }
  // scores[k] += vs[k] . (the n non-zeros given), in order.
  void Accumulate(const std::vector<std::vector<double>>& vs,
                  const std::vector<uint32_t>& which, const uint32_t* indices,
                  const double* values, size_t n, double* scores) const;
  // out[r] += v_r . (the n non-zeros given), in order, v_r's value at
  // position p being values[p * per_position + r * per_class].
  void AccumulateClasses(const double* v, size_t per_position, size_t per_class,
                         int k, const uint32_t* indices, const double* values,
                         size_t n, double* out) const;
  // Where candidate c of k classes (of `vs`) keeps its values, and their
  // strides, for AccumulateClasses.
  struct ClassLayout {
    const double* v;
    size_t per_position;
    size_t per_class;
  };
  ClassLayout LayoutOf(const std::vector<std::vector<double>>& vs, uint32_t c,
                       int k) const {
    if (c < by_position_.size() && !by_position_[c].empty()) {
      return {by_position_[c].data(), static_cast<size_t>(k), 1};
    }
    return {vs[c].data(), 1, coordinates_.size()};
  }
  // The same from the values kept by coordinate, when they are those of
  // `which` (the same products, summed in the same order; a coordinate out of
  // the support adds a zero).
  void AccumulateDense(const std::vector<uint32_t>& which,
                       const uint32_t* indices, const double* values, size_t n,
                       double* scores) const;

  std::vector<uint32_t> coordinates_;
  // A filter of the coordinates: for each, one bit at a hash of it, of at
  // least kFilterBits a coordinate (so that about one coordinate out of the
  // support in sixteen finds its bit set); or, when the weight dimension
  // takes no more bits, bit i for coordinate i. Most of a sparse row's
  // coordinates are out of a wide model's support, and are skipped without a
  // lookup.
  static constexpr size_t kFilterBits = 16;
  // The bit of the filter that stands for coordinate i.
  uint64_t FilterBit(uint32_t i) const {
    return filter_direct_
               ? i
               : (uint64_t{i} * 0x9E3779B97F4A7C15u) >> filter_shift_;
  }
  // Made once (MakeLookup), by whichever thread needs them first.
  mutable absl::once_flag lookup_made_;
  uint64_t dimension_ = 0;
  mutable std::vector<uint64_t> filter_;
  mutable uint64_t filter_bits_ = 0;
  mutable int filter_shift_ = 64;
  mutable bool filter_direct_ = false;
  // On huge pages when large (core/huge_pages.h), as dense_ is: read at
  // random.
  mutable absl::flat_hash_map<
      uint32_t, uint32_t, absl::Hash<uint32_t>, std::equal_to<uint32_t>,
      HugePageAllocator<std::pair<const uint32_t, uint32_t>>>
      positions_;
  bool with_candidates_ = false;
  ScaledCandidates scaled_;
  // Dense: the summed candidates' values of coordinate i at
  // dense_[i * dense_which_.size() + j], and which candidates they are.
  std::vector<double> dense_;
  std::vector<uint32_t> dense_which_;
  // A multiclass model's: candidate c's value of class r at position p at
  // by_position_[c][p * k + r], for the candidates whose scores are summed
  // (empty for the others).
  std::vector<std::vector<double>> by_position_;
};

// sum_t max(0, 1 - y_t v . x^_t) over `rows`, for each v of `vs`: the hinge
// sums that make TD_gamma(u) = gamma * sum for u = v / ||v||, gamma = 1/||v||.
// Each v . x^_t is KeptRows::DotUnordered's; scores of scaled candidates are
// shared as ScaledCandidates says.
std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs);
// The same with `scaled`, vs's ScaledCandidates, made before.
std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs,
                              const ScaledCandidates& scaled);
// Adds n times each candidate's hinge term 1 - sign * scores[k], where
// positive, to sums[k].
void AddHinges(int sign, const std::vector<double>& scores, double n,
               std::vector<double>* sums);

// Calls f(t, n) once for each place t below `size` in `places`, in increasing
// order, with n the number of times it is listed (a cycled data set lists
// every row again and again).
template <typename F>
void ForEachPlaceOnce(absl::Span<const uint32_t> places, size_t size, F f) {
  std::vector<uint32_t> sorted(places.begin(), places.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    const uint32_t t = sorted[i];
    size_t n = 1;
    while (i + n < sorted.size() && sorted[i + n] == t) ++n;
    i += n;
    if (t < size) f(t, static_cast<double>(n));
  }
}

// The hinge sums over the rows of `rows` at `places` (a place listed twice
// counts twice), each row once whatever its count.
std::vector<double> HingeSumsAt(const KeptRows& rows,
                                absl::Span<const uint32_t> places,
                                const std::vector<std::vector<double>>& vs);
// The same for candidates over `support`, of rows at their coordinates (`vs`
// being those it was made with, if any).
std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs,
                              const CandidateSupport& support);

// The margin of class y over the others given the k class scores:
// scores[y] - max_{r != y} scores[r].
inline double MarginOf(const double* scores, int classes, int y) {
  double other = -std::numeric_limits<double>::infinity();
  for (int r = 0; r < classes; ++r) {
    if (r != y) other = std::max(other, scores[r]);
  }
  return scores[y] - other;
}

// A multiclass model's candidate V = (v_1..v_k) is one vector of k times the
// weight dimension, the class vectors one after another (as the model keeps
// its weights), and a kept row's label is its class y. Its margin on row t is
// (v_y - max_{r != y} v_r) . x^_t, and its hinge max(0, 1 - margin): each
// v_r . x^_t is KeptRows::DotUnordered's.
double ClassMargin(const KeptRows& rows, size_t t, const std::vector<double>& v,
                   int classes);
// sum_t max(0, 1 - margin_t) over `rows` (each row times its count), for
// each V of `vs`: TD_gamma(U) = gamma * sum for U = V / ||V||_F,
// gamma = 1 / ||V||_F (docs/design.md section 2.8). Margins of scaled
// candidates are shared as ScaledCandidates says.
std::vector<double> ClassHingeSums(const KeptRows& rows,
                                   const std::vector<std::vector<double>>& vs,
                                   int classes);
// The same for candidates over `support` (k blocks of one value a
// position), of rows at their coordinates.
std::vector<double> ClassHingeSums(const KeptRows& rows,
                                   const std::vector<std::vector<double>>& vs,
                                   int classes,
                                   const CandidateSupport& support);
// The same over the rows at `places`, as HingeSumsAt.
std::vector<double> ClassHingeSumsAt(const KeptRows& rows,
                                     absl::Span<const uint32_t> places,
                                     const std::vector<std::vector<double>>& vs,
                                     int classes);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CANDIDATE_SUMS_H_
