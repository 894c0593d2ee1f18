// A model's learning curve for charts: (examples, mistakes, updates, bound)
// points, bounded and downsampled. Points are taken every `stride` labeled
// examples; when `capacity` points are held, every other one is dropped and the
// stride doubles, so the curve always spans the whole stream with at most
// `capacity` points, evenly spaced in examples. Memory grows with the points
// held (40 bytes each, nothing reserved up front): at most 10 KiB a model at
// the default capacity. Thread-compatible.
//
//   History h;
//   if (h.Due(counters.examples)) h.Add(PointFrom(model));
#ifndef PERCEPTRON_SERVER_HISTORY_H_
#define PERCEPTRON_SERVER_HISTORY_H_

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

  bool has_bound() const { return !std::isnan(bound); }
  bool has_td_gamma() const { return !std::isnan(td_gamma); }
};

inline constexpr size_t kHistoryCapacity = 256;

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

  const std::vector<HistoryPoint>& points() const { return points_; }
  // Examples between points.
  uint64_t stride() const { return stride_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::vector<HistoryPoint> points_;
  uint64_t stride_ = 1;
  uint64_t next_ = 0;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HISTORY_H_
