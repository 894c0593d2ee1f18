#include "core/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

// Linux's value (since 6.1); older C libraries' headers do not name it, and
// an older kernel refuses it (EINVAL), as it refuses memory with no pages.
#if defined(__linux__) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25
#endif

namespace perceptron {
namespace {

// Whether any 4 KiB page of [at, at + length) (page-aligned) is resident.
bool AnyResident(void* at, size_t length) {
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return true;
  std::vector<unsigned char> resident(length / static_cast<size_t>(page));
  if (mincore(at, length, resident.data()) != 0) return true;
  return std::any_of(resident.begin(), resident.end(),
                     [](unsigned char r) { return (r & 1) != 0; });
}

}  // namespace

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
  // Memory never touched takes huge pages as it is first written.
  if (!AnyResident(at, length)) return true;
    // Memory the allocator reuses would stay on the pages it has until the
    // kernel's background collapse. Collapsed now (at no cost where it already
    // is on huge pages, as a large array freed and allocated again is), or
    // else dropped, so that the next touch of each 2 MiB faults a huge page.
#if defined(MADV_COLLAPSE)
  if (madvise(at, length, MADV_COLLAPSE) == 0) return true;
#endif
  return madvise(at, length, MADV_DONTNEED) == 0;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace perceptron
