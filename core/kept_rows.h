// The labeled prepared examples a certificate keeps, as rows in blocks that
// never move.
//
//   perceptron::KeptRows rows;
//   rows.Add(prepared, label);               // one copy of x^'s non-zeros
//   double s = rows.DotUnordered(t, w);      // w . x^_t
//
// Not thread-safe.
#ifndef PERCEPTRON_CORE_KEPT_ROWS_H_
#define PERCEPTRON_CORE_KEPT_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "core/huge_pages.h"
#include "core/prefetch.h"
#include "core/prepare.h"

namespace perceptron {

// Labeled prepared examples as rows: x^_t's non-zeros (the bias coordinate
// included), its label and ||x^_t||^2. Owns its values. Rows live in blocks
// that never move once written (a full block is followed by a new one, twice
// its size up to 3 MiB, or the row's): keeping a row costs one copy of its
// non-zeros, however many rows there are, and Append(KeptRows&&) takes the
// other's blocks without copying them. A row whose non-zeros are coordinates
// 0, 1, ..., n-1 (a dense x^ with no zero, the bias last) keeps only its
// values, in a block of such rows: 8 bytes a coordinate, not 12. A row may
// stand for several equal examples: its count (1 unless AddCount raised it).
class KeptRows {
 public:
  KeptRows() = default;
  KeptRows(const KeptRows& other) { Append(other); }
  KeptRows& operator=(const KeptRows& other);
  KeptRows(KeptRows&&) = default;
  KeptRows& operator=(KeptRows&&) = default;

  // Keeps a copy of x^ and its label: -1 or +1, or a multiclass model's class
  // index 0..kMaxClasses-1. O(nnz). The same as Stage, then Keep.
  void Add(const Prepared& x, int label);
  // A copy of x^ written after the last row but not kept, so that it can be
  // looked at (values, indices) before it is: Keep keeps it; any other
  // change to these rows first discards it.
  struct Staged {
    size_t block = 0;
    size_t begin = 0;
    size_t end = 0;
  };
  // (Filled field by field: a struct returned whole is read back before its
  // parts are stored, which stalls the processor.)
  void Stage(const Prepared& x, Staged* staged);
  // Whether the staged row keeps only its values (as dense(t)).
  bool dense(const Staged& s) const {
    return blocks_[s.block].index == nullptr;
  }
  absl::Span<const double> values(const Staged& s) const {
    return {blocks_[s.block].value.get() + s.begin, s.end - s.begin};
  }
  // Empty for a dense staged row.
  absl::Span<const uint32_t> indices(const Staged& s) const {
    const Block& b = blocks_[s.block];
    if (b.index == nullptr) return {};
    return {b.index.get() + s.begin, s.end - s.begin};
  }
  // Its coordinates: 0..n-1 for a dense staged row (as indices(t)).
  absl::Span<const uint32_t> coordinates(const Staged& s) const {
    if (dense(s)) return {Iota(s.end - s.begin), s.end - s.begin};
    return indices(s);
  }
  // Keeps the row Stage wrote last, with `label`.
  void Keep(const Staged& s, int label);
  // Keeps a row given by its non-zeros (indices and values of x^).
  void Add(absl::Span<const uint32_t> indices, absl::Span<const double> values,
           int label);
  // Appends every row of `more` (copies).
  void Append(const KeptRows& more);
  // Appends every row of `more`, taking its blocks (small ones are copied,
  // so that many small appends do not leave many part-filled blocks).
  void Append(KeptRows&& more);
  void Clear() { *this = KeptRows(); }

  size_t size() const { return labels_.size(); }
  // The examples the rows stand for: the sum of their counts.
  uint64_t examples() const { return size() + extra_; }
  // How many equal examples row t stands for (>= 1).
  uint32_t count(size_t t) const { return counts_.empty() ? 1 : counts_[t]; }
  // Row t stands for `more` examples more; false (nothing changed) if its
  // count would pass 2^32 - 1.
  bool AddCount(size_t t, uint32_t more);
  // Each place below size() in `places` stands for one example more (a
  // place listed n times, n more; a count that would pass 2^32 - 1 stops
  // there). Returns the rows whose counts changed, in increasing order, each
  // with its new count over its old one.
  std::vector<std::pair<uint32_t, double>> AddCounts(
      absl::Span<const uint32_t> places);
  // Forgets the last row.
  void PopBack();
  // Bytes the rows take.
  size_t bytes() const;

  int label(size_t t) const { return labels_[t]; }
  double square(size_t t) const { return square_[t]; }
  // w . x^_t, over the non-zeros in order.
  double Dot(size_t t, const std::vector<double>& w) const {
    return Dot(t, w.data());
  }
  double Dot(size_t t, const double* w) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    double s = 0;
    if (b.index == nullptr) {
      const double* v = b.value.get() + r.begin;
      for (size_t i = 0; i < r.end - r.begin; ++i) s += w[i] * v[i];
      return s;
    }
    for (size_t k = r.begin; k < r.end; ++k) s += w[b.index[k]] * b.value[k];
    return s;
  }
  // w . x^_t as DenseDot sums a dense row (eight partial sums, which hide the
  // latency of addition that Dot's one chain waits on, not the same bits); a
  // sparse row as Dot does. For the solver, whose iterates and figures depend
  // on no particular order of a sum.
  double DotUnordered(size_t t, const std::vector<double>& w) const {
    return DotUnordered(t, w.data());
  }
  // The same for w given by its first coordinate (a multiclass model's
  // class vector within its k).
  double DotUnordered(size_t t, const double* w) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index == nullptr) {
      return DenseDot(w, b.value.get() + r.begin, r.end - r.begin);
    }
    return Dot(t, w);
  }
  // w <- w + a x^_t.
  void AddTo(size_t t, double a, std::vector<double>* w) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index == nullptr) {
      const double* v = b.value.get() + r.begin;
      double* out = w->data();
      for (size_t i = 0; i < r.end - r.begin; ++i) out[i] += a * v[i];
      return;
    }
    for (size_t k = r.begin; k < r.end; ++k) (*w)[b.index[k]] += a * b.value[k];
  }
  // Whether row t keeps only its values (its non-zeros are 0, 1, ..., n-1).
  bool dense(size_t t) const {
    return blocks_[rows_[t].block].index == nullptr;
  }
  // Asks the processor to fetch, ahead of their use, row t's label, square
  // and place among the blocks; and, once its place has come, its non-zeros.
  // A pass visits the rows in random order, and past the caches every row
  // costs several misses: fetched ahead they overlap (nothing read changes).
  void PrefetchPlace(size_t t) const {
    PrefetchLine(&rows_[t]);
    PrefetchLine(&labels_[t]);
    PrefetchLine(&square_[t]);
  }
  void PrefetchValues(size_t t) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index != nullptr) {
      Prefetch(b.index.get() + r.begin, b.index.get() + r.end);
    }
    Prefetch(b.value.get() + r.begin, b.value.get() + r.end);
  }
  // Row t's non-zeros.
  absl::Span<const uint32_t> indices(size_t t) const {
    const Row& r = rows_[t];
    const Block& b = blocks_[r.block];
    if (b.index == nullptr) return {Iota(r.end - r.begin), r.end - r.begin};
    return {b.index.get() + r.begin, r.end - r.begin};
  }
  absl::Span<const double> values(size_t t) const {
    const Row& r = rows_[t];
    return {blocks_[r.block].value.get() + r.begin, r.end - r.begin};
  }
  // The same rows (labels, squares, non-zeros and counts), however they are
  // stored.
  friend bool operator==(const KeptRows& a, const KeptRows& b);

 private:
  struct Block {
    HugeArray<uint32_t> index;  // null: a block of dense rows
    HugeArray<double> value;
    size_t size = 0;
    size_t capacity = 0;
  };
  // Row t is coordinates [begin, end) of block `block`.
  struct Row {
    uint32_t block;
    uint32_t begin;
    uint32_t end;
  };
  // Every cache line of [begin, end).
  template <typename T>
  static void Prefetch(const T* begin, const T* end) {
    if (begin == end) return;
    const char* p = reinterpret_cast<const char*>(begin);
    const char* last = reinterpret_cast<const char*>(end) - 1;
    for (; p <= last; p += 64) PrefetchLine(p);
    PrefetchLine(last);
  }
  // The open block of dense rows (or of the others), with room for `n` more
  // coordinates (a new one if needed).
  Block& Room(size_t n, bool dense);
  // 0, 1, ..., n-1: the indices of a dense row of n coordinates (a table
  // shared by every KeptRows, grown by powers of two and never freed).
  static const uint32_t* Iota(size_t n);
  // Keeps a row whose non-zeros are `values` at 0, 1, ..., n-1 (all
  // non-zero).
  void AddDense(absl::Span<const double> values, int label);
  // Ends the row written at the end of `b` (from `begin`), with its label
  // and square.
  void Close(const Block& b, size_t begin, int label, double square);

  std::vector<Block> blocks_;
  int64_t open_dense_ = -1;   // the block dense rows go on filling, if any
  int64_t open_sparse_ = -1;  // and the one the others do
  std::vector<Row> rows_;
  std::vector<int8_t> labels_;
  std::vector<double> square_;
  std::vector<uint32_t> counts_;  // empty while every count is 1
  uint64_t extra_ = 0;            // sum of (count - 1)
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_KEPT_ROWS_H_
