// The stored vectors of the voted and kernel learners: a sequence that keeps at
// most `cap` elements, dropping the oldest and counting the drops, and that,
// while journaling, records what was appended and how many were then removed
// from the front (journal.h).
//
//   CappedDeque<VotedVector> past(/*cap=*/1000);
//   past.Push(v);  // past the cap, the oldest goes and dropped() grows
//   std::vector<VotedVector> added = past.TakeAdded();
//   uint64_t removed = past.TakeRemoved();
//   replica.Apply(added, removed, past.dropped());  // the same elements now
//
// Not thread-safe.
#ifndef PERCEPTRON_CORE_CAPPED_DEQUE_H_
#define PERCEPTRON_CORE_CAPPED_DEQUE_H_

#include <cstdint>
#include <deque>
#include <iterator>
#include <utility>
#include <vector>

namespace perceptron {

template <typename T>
class CappedDeque {
 public:
  explicit CappedDeque(uint64_t cap) : cap_(cap) {}

  // Appends `item`; past the cap the oldest element is dropped and counted.
  void Push(T item) {
    items_.push_back(std::move(item));
    if (journaling_) added_.push_back(items_.back());
    if (items_.size() > cap_) {
      items_.pop_front();
      ++dropped_;
      removed_ += journaling_;
    }
  }

  // Removes every element and zeroes the drop count (a reset; journaled).
  void Clear() {
    if (journaling_) removed_ += items_.size();
    items_.clear();
    dropped_ = 0;
  }

  // Replaces the contents and the drop count (a restored state; not journaled).
  // The caller has checked that `items` fits the cap.
  void Assign(std::vector<T> items, uint64_t dropped) {
    items_.assign(std::make_move_iterator(items.begin()),
                  std::make_move_iterator(items.end()));
    dropped_ = dropped;
  }

  void SetJournaling(bool on) {
    journaling_ = on;
    added_.clear();
    removed_ = 0;
  }
  // What was appended since the last Take, in order; and how many were removed
  // from the front after those were appended.
  std::vector<T> TakeAdded() { return std::exchange(added_, {}); }
  uint64_t TakeRemoved() { return std::exchange(removed_, 0); }

  // Whether appending `added` elements, then removing `removed` from the front,
  // is possible and fits the cap.
  bool Fits(size_t added, uint64_t removed) const {
    const uint64_t total = items_.size() + added;
    return removed <= total && total - removed <= cap_;
  }
  // Applies another sequence's journal; the caller has checked Fits.
  void Apply(std::vector<T> added, uint64_t removed, uint64_t dropped) {
    for (T& item : added) items_.push_back(std::move(item));
    for (uint64_t i = 0; i < removed; ++i) items_.pop_front();
    dropped_ = dropped;
  }

  size_t size() const { return items_.size(); }
  uint64_t cap() const { return cap_; }
  uint64_t dropped() const { return dropped_; }
  typename std::deque<T>::const_iterator begin() const {
    return items_.begin();
  }
  typename std::deque<T>::const_iterator end() const { return items_.end(); }

 private:
  const uint64_t cap_;
  std::deque<T> items_;
  uint64_t dropped_ = 0;
  bool journaling_ = false;
  std::vector<T> added_;
  uint64_t removed_ = 0;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CAPPED_DEQUE_H_
