// Bytes that several models may hold together: a server's memory for the
// certificates' kept rows, for pending predictions, or for feature names.
// Each holder takes what it adds and gives back what it drops; a holder that
// finds the budget taken is told so with `reason`. Thread-safe.
//
//   auto budget = std::make_shared<ByteBudget>(1 << 30, "... is taken");
//   if (!budget->Take(n)) return absl::ResourceExhaustedError(...);
//   ...
//   budget->Give(n);
//
// A holder whose bytes may move from one budget to another, or to none,
// keeps them in a HeldBytes, which keeps its count and the budget's in step:
//
//   HeldBytes held;
//   held.set_budget(budget);
//   if (!held.TryAdd(n)) ...;  // the budget is taken
//   held.Remove(n);            // and the destructor gives back the rest
#ifndef PERCEPTRON_CORE_BYTE_BUDGET_H_
#define PERCEPTRON_CORE_BYTE_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
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

// The bytes one holder holds, counted in the budget it shares with others
// (if any). Not thread-safe: its holder guards it; the budget is.
class HeldBytes {
 public:
  HeldBytes() = default;
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  ~HeldBytes() { set_budget(nullptr); }

  // Counts what is held in `budget` from now on, whether or not it fits,
  // and gives it back to the budget before. Null: none.
  void set_budget(std::shared_ptr<ByteBudget> budget) {
    if (budget_ != nullptr) budget_->Give(held_);
    budget_ = std::move(budget);
    if (budget_ != nullptr) budget_->Force(held_);
  }
  // Holds `n` more bytes if the budget has room for them (without a budget,
  // always).
  bool TryAdd(uint64_t n) {
    if (budget_ != nullptr && !budget_->Take(n)) return false;
    held_ += n;
    return true;
  }
  // Holds `n` more bytes whether or not they fit.
  void Add(uint64_t n) {
    if (budget_ != nullptr) budget_->Force(n);
    held_ += n;
  }
  // Holds `n` fewer bytes; `n` is at most held().
  void Remove(uint64_t n) {
    if (budget_ != nullptr) budget_->Give(n);
    held_ -= n;
  }
  void Clear() { Remove(held_); }

  uint64_t held() const { return held_; }
  // The budget, or null.
  const ByteBudget* budget() const { return budget_.get(); }

 private:
  uint64_t held_ = 0;
  std::shared_ptr<ByteBudget> budget_;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_BYTE_BUDGET_H_
