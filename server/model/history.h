// A model's learning curve for charts: (examples, mistakes, updates, bound)
// points, bounded and downsampled. Points are taken every `stride` labeled
// examples; when `capacity` points are held, every other one is dropped and the
// stride doubles, so the curve always spans the whole stream with at most
// `capacity` points, evenly spaced in examples. Memory grows with the points
// held (56 bytes each, nothing reserved up front): at most 14 KiB a model at
// the default capacity. Thread-compatible.
//
//   History h;
//   if (h.Due(counters.examples)) h.Add(PointFrom(model));
#ifndef PERCEPTRON_SERVER_MODEL_HISTORY_H_
#define PERCEPTRON_SERVER_MODEL_HISTORY_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace perceptron::server {

struct HistoryPoint {
  uint64_t examples = 0;
  uint64_t mistakes = 0;
  uint64_t updates = 0;
  // The bound on updates and TD_gamma at that point; NaN when not available.
  double bound = std::numeric_limits<double>::quiet_NaN();
  double td_gamma = std::numeric_limits<double>::quiet_NaN();
  // The certificate's U and L at that point; NaN when not available.
  double certificate_upper = std::numeric_limits<double>::quiet_NaN();
  double certificate_lower = std::numeric_limits<double>::quiet_NaN();

  bool has_bound() const { return !std::isnan(bound); }
  bool has_td_gamma() const { return !std::isnan(td_gamma); }
  bool has_certificate() const { return !std::isnan(certificate_upper); }
};

inline constexpr size_t kHistoryCapacity = 256;

// The mistakes of the last `size` labeled examples, for the recent mistake
// rate: a ring of bits, filled from bit 0.
class RecentWindow {
 public:
  explicit RecentWindow(size_t size)
      : size_(size), bits_((size + 63) / 64, 0) {}
  void Add(bool mistake) {
    uint64_t& word = bits_[next_ / 64];
    const uint64_t bit = uint64_t{1} << (next_ % 64);
    mistakes_ += static_cast<int64_t>(mistake) - ((word & bit) != 0);
    word = mistake ? (word | bit) : (word & ~bit);
    next_ = next_ + 1 == size_ ? 0 : next_ + 1;
    if (count_ < size_) ++count_;
  }
  double rate() const {
    return count_ == 0 ? 0.0 : static_cast<double>(mistakes_) / count_;
  }
  size_t size() const { return size_; }
  void Clear() { *this = RecentWindow(size_); }

  // The state, to store and restore bit for bit.
  const std::vector<uint64_t>& bits() const { return bits_; }
  size_t next() const { return next_; }
  size_t count() const { return count_; }
  // A window of `size` from stored state, or false (and unchanged) if the
  // state is not one a window of that size can hold.
  bool Restore(const std::vector<uint64_t>& bits, size_t next, size_t count) {
    if (bits.size() != bits_.size() || count > size_ || next >= size_ ||
        (count < size_ && next != count)) {
      return false;
    }
    int64_t mistakes = 0;
    for (size_t w = 0; w < bits.size(); ++w) {
      // Bits past the filled part (or past size) are never set.
      const size_t filled = std::min(count, size_);
      const size_t lo = w * 64;
      const uint64_t allowed = filled >= lo + 64 ? ~uint64_t{0}
                               : filled <= lo
                                   ? 0
                                   : (uint64_t{1} << (filled - lo)) - 1;
      if ((bits[w] & ~allowed) != 0) return false;
      mistakes += std::popcount(bits[w]);
    }
    bits_ = bits;
    next_ = next;
    count_ = count;
    mistakes_ = mistakes;
    return true;
  }

 private:
  size_t size_;
  std::vector<uint64_t> bits_;
  size_t next_ = 0;
  size_t count_ = 0;
  int64_t mistakes_ = 0;
};

inline constexpr size_t kRecentWindow = 1000;

class History {
 public:
  // `capacity` >= 2.
  explicit History(size_t capacity = kHistoryCapacity)
      : capacity_(capacity < 2 ? 2 : capacity) {}

  // Whether a point is due once `examples` labeled examples have been seen.
  bool Due(uint64_t examples) const { return examples >= next_; }

  // Appends `p` (its examples at least the last point's) and thins the
  // points if they reached the capacity.
  void Add(const HistoryPoint& p) {
    points_.push_back(p);
    if (points_.size() == capacity_) {
      size_t kept = 0;
      for (size_t i = 0; i < points_.size(); i += 2)
        points_[kept++] = points_[i];
      points_.resize(kept);
      stride_ *= 2;
    }
    next_ = points_.back().examples + stride_;
  }

  void Clear() { *this = History(capacity_); }

  // From stored state, or false (and unchanged) if the state is not one this
  // history could have reached: fewer points than the capacity, examples
  // increasing, a power-of-two stride, `next` one stride past the last point.
  bool Restore(const std::vector<HistoryPoint>& points, uint64_t stride,
               uint64_t next) {
    if (points.size() >= capacity_ || stride == 0 ||
        (stride & (stride - 1)) != 0) {
      return false;
    }
    for (size_t i = 1; i < points.size(); ++i) {
      if (points[i].examples < points[i - 1].examples) return false;
    }
    if (points.empty() ? next != 0 || stride != 1
                       : next != points.back().examples + stride) {
      return false;
    }
    points_ = points;
    stride_ = stride;
    next_ = next;
    return true;
  }

  const std::vector<HistoryPoint>& points() const { return points_; }
  // Examples between points.
  uint64_t stride() const { return stride_; }
  // The examples count at which the next point is due.
  uint64_t next() const { return next_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::vector<HistoryPoint> points_;
  uint64_t stride_ = 1;
  uint64_t next_ = 0;
};

// What a batch changed in a model's window and history, in order: whether
// they were cleared first, the mistake of each labeled example, the points
// added. Replayed onto the state before it, it gives the state after it.
struct CurvesJournal {
  bool cleared = false;
  std::vector<bool> mistakes;
  std::vector<HistoryPoint> points;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MODEL_HISTORY_H_
