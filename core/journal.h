// What a model changed, as plain data, so that a store can log updates instead
// of examples (docs/design.md section 5) and replay them bit for bit.
//
//   model->SetJournaling(true);
//   ... Learn / Issue / Reveal ...
//   // The changes since the last TakeJournal:
//   perceptron::Journal j = model->TakeJournal();
//   other->ApplyJournal(j);  // `other` now equals `model`, bit for bit
//
// A vector's change is the new values of the coordinates that changed (a sparse
// example touches its non-zeros and the bias), or the whole vector when a dense
// example touched it: the size of a journal follows the updates, not the
// examples.
#ifndef PERCEPTRON_CORE_JOURNAL_H_
#define PERCEPTRON_CORE_JOURNAL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/prepare.h"

namespace perceptron {

// New values of changed coordinates of one vector, or (full) the whole vector.
struct VectorDelta {
  bool full = false;
  std::vector<uint32_t> indices;  // when !full
  std::vector<double> values;
  bool empty() const { return !full && indices.empty(); }
  friend bool operator==(const VectorDelta&, const VectorDelta&) = default;
};

// OK if `d` fits a vector of `size` entries with finite values; else
// INVALID_ARGUMENT naming `what`.
absl::Status CheckDelta(absl::string_view what, const VectorDelta& d,
                        size_t size);
// Applies a checked delta.
void ApplyDelta(const VectorDelta& d, std::vector<double>* v);

// Tracks which coordinates of one vector change while enabled. Not thread-safe.
class DirtyTracker {
 public:
  // Starts tracking a vector of `size` entries; Disable stops and frees the
  // flags.
  void Enable(size_t size);
  void Disable();
  bool enabled() const { return enabled_; }
  // The coordinates that `a * x` changes when added.
  void Mark(const Prepared& x) {
    if (!enabled_ || all_) return;
    if (!x.x.sparse) {
      all_ = true;
      return;
    }
    for (uint32_t i : x.x.indices) Add(i);
    if (x.has_bias) Add(x.dimension);
  }
  // The same for `a * x` added at `offset` (a multiclass model's class
  // vector, one of several laid one after another).
  void Mark(const Prepared& x, uint32_t offset) {
    if (!enabled_ || all_) return;
    if (!x.x.sparse) {
      all_ = true;
      return;
    }
    for (uint32_t i : x.x.indices) Add(offset + i);
    if (x.has_bias) Add(offset + x.dimension);
  }
  void MarkAll() { all_ = enabled_; }
  // The changed coordinates of `v` since the last Take; starts over.
  VectorDelta Take(const std::vector<double>& v);

 private:
  void Add(uint32_t i) {
    if (flags_.empty()) flags_.assign(size_, 0);  // sparse examples only
    if (flags_[i]) return;
    flags_[i] = 1;
    list_.push_back(i);
    if (list_.size() > size_ / 4) all_ = true;  // cheaper to send it whole
  }

  bool enabled_ = false;
  bool all_ = false;
  size_t size_ = 0;
  // One per coordinate, allocated at the first sparse example: dense ones
  // change every coordinate, so a dense model never needs them.
  std::vector<uint8_t> flags_;
  std::vector<uint32_t> list_;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_JOURNAL_H_
