// A small deterministic generator (xorshift64*) for the order of the
// certificate solvers' passes: the same seed gives the same order on every
// machine, so a solve is reproducible bit for bit.
//
//   perceptron::XorShift random;
//   std::swap(order[k - 1], order[random.Next() % k]);
//
// Not thread-safe.
#ifndef PERCEPTRON_CORE_XORSHIFT_H_
#define PERCEPTRON_CORE_XORSHIFT_H_

#include <cstdint>

namespace perceptron {

class XorShift {
 public:
  XorShift() = default;
  explicit XorShift(uint64_t seed) : state_(seed) {}
  // The next number; the state must not be 0 (it would stay 0).
  uint64_t Next() {
    uint64_t x = state_;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    state_ = x;
    return x * 0x2545f4914f6cdd1dull;
  }

 private:
  uint64_t state_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_XORSHIFT_H_
