#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace perceptron {

bool AdviseHugePages(void* data, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const uintptr_t last = (begin + bytes) & ~(kHugePageBytes - 1);
  if (data == nullptr || last <= first) return false;
  void* at = reinterpret_cast<void*>(first);
  const size_t length = last - first;
  // Without transparent huge pages (or with them "never") the advice is
  // refused, and the pages are left as they are.
  if (madvise(at, length, MADV_HUGEPAGE) != 0) return false;
  // Pages touched before (memory the allocator reuses) would stay small
  // until the kernel's background collapse: dropped, they come back whole.
  return madvise(at, length, MADV_DONTNEED) == 0;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace perceptron
