#include "core/kept_rows.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>

#include "absl/synchronization/mutex.h"

namespace perceptron {

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
    // Not initialised: every coordinate is written before it is read. The
    // largest blocks' values fill whole huge pages (a new page costs the
    // kernel a fault of its own, a large part of keeping a new row).
    if (!dense) b.index = NewHugeArray<uint32_t>(b.capacity);
    b.value = NewHugeArray<double>(b.capacity);
    open = static_cast<int64_t>(blocks_.size()) - 1;
  }
  return blocks_[open];
}

void KeptRows::Close(const Block& b, size_t begin, int label, double square) {
  rows_.push_back({static_cast<uint32_t>(&b - blocks_.data()),
                   static_cast<uint32_t>(begin),
                   static_cast<uint32_t>(b.size)});
  labels_.push_back(static_cast<int8_t>(label));
  square_.push_back(square);
  if (!counts_.empty()) counts_.push_back(1);
}

bool KeptRows::AddCount(size_t t, uint32_t more) {
  if (more == 0) return true;
  if (count(t) > UINT32_MAX - more) return false;
  if (counts_.empty()) counts_.assign(size(), 1);
  counts_[t] += more;
  extra_ += more;
  return true;
}

std::vector<std::pair<uint32_t, double>> KeptRows::AddCounts(
    absl::Span<const uint32_t> places) {
  // How many times each row is listed, then each row in order: linear in
  // the places and the rows (a cycle's places are many times the rows).
  std::vector<std::pair<uint32_t, double>> grew;
  if (places.empty()) return grew;
  std::vector<uint32_t> listed(size(), 0);
  for (uint32_t t : places) {
    if (t < size() && listed[t] < UINT32_MAX) ++listed[t];
  }
  for (uint32_t t = 0; t < listed.size(); ++t) {
    if (listed[t] == 0) continue;
    const uint32_t before = count(t);
    const uint32_t more = std::min(listed[t], UINT32_MAX - before);
    if (more == 0 || !AddCount(t, more)) continue;
    grew.emplace_back(t, static_cast<double>(count(t)) / before);
  }
  return grew;
}

void KeptRows::PopBack() {
  const Row r = rows_.back();
  blocks_[r.block].size = r.begin;
  rows_.pop_back();
  labels_.pop_back();
  square_.pop_back();
  if (!counts_.empty()) {
    extra_ -= counts_.back() - 1;
    counts_.pop_back();
  }
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
  Staged s;
  Stage(x, &s);
  Keep(s, label);
}

void KeptRows::Stage(const Prepared& x, Staged* staged) {
  const size_t most =
      (x.x.sparse ? x.x.indices.size() : x.dimension) + (x.has_bias ? 1 : 0);
  if (!x.x.sparse) {
    // A dense row keeps only its values, if none is zero (as a sparse row
    // keeps only its non-zeros).
    Block& b = Room(most, /*dense=*/true);
    double* value = b.value.get() + b.size;
    bool zero = ScaledCopy(x.x.values.data(), x.dimension, x.scale, value);
    if (x.has_bias) {
      value[x.dimension] = x.scale * x.bias_value;
      zero |= value[x.dimension] == 0;
    }
    if (!zero) {
      staged->block = static_cast<size_t>(&b - blocks_.data());
      staged->begin = b.size;
      staged->end = b.size + most;
      return;
    }
    // Written past the block's size, so nothing is kept: as a sparse row.
  }
  Block& b = Room(most, /*dense=*/false);
  uint32_t* index = b.index.get();
  double* value = b.value.get();
  size_t at = b.size;
  auto keep = [&](uint32_t i, double v) {
    if (v == 0) return;
    index[at] = i;
    value[at] = v;
    ++at;
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
  staged->block = static_cast<size_t>(&b - blocks_.data());
  staged->begin = b.size;
  staged->end = at;
}

void KeptRows::Keep(const Staged& s, int label) {
  Block& b = blocks_[s.block];
  // The square over the values as kept, in order (the bits Add always gave).
  double square = 0;
  for (size_t k = s.begin; k < s.end; ++k) square += b.value[k] * b.value[k];
  b.size = s.end;
  Close(b, s.begin, label, square);
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
    } else {
      Block& b = Room(index.size(), /*dense=*/false);
      const size_t begin = b.size;
      std::copy(index.begin(), index.end(), b.index.get() + begin);
      std::copy(value.begin(), value.end(), b.value.get() + begin);
      b.size += index.size();
      Close(b, begin, more.labels_[t], more.square_[t]);
    }
    AddCount(size() - 1, more.count(t) - 1);
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
  if (!counts_.empty() || !more.counts_.empty()) {
    counts_.resize(labels_.size(), 1);
    if (more.counts_.empty()) {
      counts_.resize(labels_.size() + more.size(), 1);
    } else {
      counts_.insert(counts_.end(), more.counts_.begin(), more.counts_.end());
    }
  }
  extra_ += more.extra_;
  labels_.insert(labels_.end(), more.labels_.begin(), more.labels_.end());
  square_.insert(square_.end(), more.square_.begin(), more.square_.end());
  more.Clear();
}

bool operator==(const KeptRows& a, const KeptRows& b) {
  if (a.labels_ != b.labels_ || a.square_ != b.square_ ||
      a.extra_ != b.extra_) {
    return false;
  }
  for (size_t t = 0; t < a.size(); ++t) {
    if (a.count(t) != b.count(t)) return false;
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
         labels_.capacity() + square_.capacity() * sizeof(double) +
         counts_.capacity() * sizeof(uint32_t);
}

}  // namespace perceptron
