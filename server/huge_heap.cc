#include "server/huge_heap.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "core/huge_pages.h"

#ifdef PERCEPTRON_TCMALLOC
#include <gperftools/malloc_extension.h>
#endif

namespace perceptron::server {

#ifdef PERCEPTRON_TCMALLOC
namespace {

// The ranges advised huge since the last release, in a fixed array: Alloc
// runs inside the allocator and must not allocate. Ranges the heap takes
// next to the last one extend it (sbrk's heap grows that way).
class AdvisedRanges {
 public:
  // False when there is no room to remember the range: it is then not
  // advised.
  bool Add(uintptr_t begin, uintptr_t end) {
    std::lock_guard<std::mutex> lock(mu_);
    if (n_ > 0 && ranges_[n_ - 1].end == begin) {
      ranges_[n_ - 1].end = end;
      return true;
    }
    if (n_ == kMax) return false;
    ranges_[n_++] = {begin, end};
    return true;
  }

  void AdviseAllNotHuge() {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n_; ++i) {
      madvise(reinterpret_cast<void*>(ranges_[i].begin),
              ranges_[i].end - ranges_[i].begin, MADV_NOHUGEPAGE);
    }
    n_ = 0;
  }

 private:
  static constexpr size_t kMax = 1024;
  struct Range {
    uintptr_t begin, end;
  };
  std::mutex mu_;
  Range ranges_[kMax];
  size_t n_ = 0;
};

AdvisedRanges& Advised() {
  static AdvisedRanges* const ranges = new AdvisedRanges();
  return *ranges;
}

// tcmalloc's system allocator (sbrk, else mmap) asked for whole huge pages:
// tcmalloc takes the size it is given (actual_size), so rounding the request
// up wastes nothing it does not use.
class HugePageSysAllocator : public SysAllocator {
 public:
  explicit HugePageSysAllocator(SysAllocator* next) : next_(next) {}

  void* Alloc(size_t size, size_t* actual_size, size_t alignment) override {
    size_t got = 0;
    const size_t rounded =
        (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = rounded >= size
                  ? next_->Alloc(
                        rounded, &got,
                        alignment > kHugePageBytes ? alignment : kHugePageBytes)
                  : nullptr;
    if (p == nullptr) return next_->Alloc(size, actual_size, alignment);
    // The whole huge pages inside [p, p + got): all of it, when the
    // alignment was honoured.
    const uintptr_t begin =
        (reinterpret_cast<uintptr_t>(p) + kHugePageBytes - 1) &
        ~(kHugePageBytes - 1);
    const uintptr_t end =
        (reinterpret_cast<uintptr_t>(p) + got) & ~(kHugePageBytes - 1);
    if (end > begin && Advised().Add(begin, end)) {
      madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    if (actual_size != nullptr) *actual_size = got;
    return p;
  }

 private:
  SysAllocator* const next_;
};

}  // namespace

bool PutHeapOnHugePages() {
  MallocExtension* const extension = MallocExtension::instance();
  SysAllocator* const next = extension->GetSystemAllocator();
  if (next == nullptr) return false;
  Advised();  // made before the allocator can need it
  // Lives as long as the process: tcmalloc's heap is never handed back.
  static HugePageSysAllocator* const huge = new HugePageSysAllocator(next);
  extension->SetSystemAllocator(huge);
  return true;
}

void StopHugePagesSoFar() { Advised().AdviseAllNotHuge(); }
#else
bool PutHeapOnHugePages() { return false; }
void StopHugePagesSoFar() {}
#endif

}  // namespace perceptron::server
