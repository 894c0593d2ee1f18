// Bytes that several models may hold together: a server's memory for the
// certificates' kept rows, or for pending predictions. Each holder takes
// what it adds and gives back what it drops; a holder that finds the budget
// taken is told so with `reason`. Thread-safe.
//
//   auto budget = std::make_shared<ByteBudget>(1 << 30, "... is taken");
//   if (!budget->Take(n)) return absl::ResourceExhaustedError(...);
//   ...
//   budget->Give(n);
#ifndef PERCEPTRON_CORE_BYTE_BUDGET_H_
#define PERCEPTRON_CORE_BYTE_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

namespace perceptron {

class ByteBudget {
 public:
  ByteBudget(uint64_t limit, std::string reason)
      : limit_(limit), reason_(std::move(reason)) {}
  // Takes `n` bytes if they fit in what is left.
  bool Take(uint64_t n) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (n > limit_ || used > limit_ - n) return false;
    } while (!used_.compare_exchange_weak(used, used + n,
                                          std::memory_order_relaxed));
    return true;
  }
  // Takes `n` bytes whether or not they fit (what a holder already holds
  // when it joins: a model recovered with its pending predictions).
  void Force(uint64_t n) { used_.fetch_add(n, std::memory_order_relaxed); }
  void Give(uint64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }
  const std::string& reason() const { return reason_; }

 private:
  const uint64_t limit_;
  const std::string reason_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_BYTE_BUDGET_H_
