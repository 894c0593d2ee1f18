// Large arrays read at random (a wide model's weights, its certificate's
// values by coordinate) on the kernel's transparent huge pages, where the
// system gives them on request (Debian's default: "madvise"): with 4 KiB
// pages each random read of an array of several MiB also misses the TLB.
//
//   std::vector<double> w = perceptron::HugeVector<double>(1 << 20);
//   w = perceptron::OnHugePages(std::move(restored));  // the same values
//
// Only the whole 2 MiB pages inside an array are asked for, and only for
// arrays of at least kHugeArrayBytes; elsewhere, and where the system has no
// transparent huge pages, these are plain vectors. The values are the same
// either way.
#ifndef PERCEPTRON_CORE_HUGE_PAGES_H_
#define PERCEPTRON_CORE_HUGE_PAGES_H_

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace perceptron {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kHugeArrayBytes = size_t{4} << 20;

// Asks for huge pages over the whole 2 MiB pages in [data, data + bytes):
// memory not yet touched gets them as it is first written; memory touched
// before is collapsed into huge pages now or, where the kernel cannot, its
// pages are dropped so that the next touch of each faults a huge page. Its
// contents may then be lost (read as zeros): call it only on memory about
// to be written. True if the kernel took the advice.
bool AdviseHugePages(void* data, size_t bytes);

// n copies of `value`, on huge pages where the system gives them.
template <typename T>
std::vector<T> HugeVector(size_t n, const T& value = T()) {
  std::vector<T> v;
  v.reserve(n);
  if (n * sizeof(T) >= kHugeArrayBytes)
    AdviseHugePages(v.data(), n * sizeof(T));
  v.assign(n, value);
  return v;
}

// `v`'s values, moved to huge pages where the system gives them (a copy when
// v is large enough; else v itself).
template <typename T>
std::vector<T> OnHugePages(std::vector<T> v) {
  const size_t bytes = v.size() * sizeof(T);
  if (bytes < kHugeArrayBytes) return v;
  std::vector<T> h;
  h.reserve(v.size());
  if (!AdviseHugePages(h.data(), bytes)) return v;
  h.assign(v.begin(), v.end());
  return h;
}

// An allocator that puts blocks holding a whole huge page (at least
// kHugePageBytes) on memory aligned to one and asks for huge pages there
// (for containers whose storage is allocated and then written, as absl's
// hash tables are); smaller blocks come from the heap as std::allocator's.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: as std's
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    void* p = ::operator new (bytes, std::align_val_t{kHugePageBytes});
    AdviseHugePages(p, bytes);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().deallocate(p, n);
    ::operator delete (p, std::align_val_t{kHugePageBytes});
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

// An array of n values of a trivial type T, not initialised, allocated by
// HugePageAllocator (on huge pages when it holds a whole one).
//
//   perceptron::HugeArray<double> a = perceptron::NewHugeArray<double>(n);
template <typename T>
struct HugeArrayDeleter {
  size_t n = 0;
  void operator()(T* p) const { HugePageAllocator<T>().deallocate(p, n); }
};
template <typename T>
using HugeArray = std::unique_ptr<T[], HugeArrayDeleter<T>>;
template <typename T>
HugeArray<T> NewHugeArray(size_t n) {
  static_assert(std::is_trivial_v<T>);
  return HugeArray<T>(HugePageAllocator<T>().allocate(n),
                      HugeArrayDeleter<T>{n});
}

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_HUGE_PAGES_H_
