#include "server/huge_heap.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

#ifdef PERCEPTRON_TCMALLOC
#include <gperftools/malloc_extension.h>
#endif

namespace perceptron::server {

#ifdef PERCEPTRON_TCMALLOC
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// tcmalloc's system allocator (sbrk, else mmap) asked for whole huge pages:
// tcmalloc takes the size it is given (actual_size), so rounding the request
// up wastes nothing it does not use.
class HugePageSysAllocator : public SysAllocator {
 public:
  explicit HugePageSysAllocator(SysAllocator* next) : next_(next) {}

  void* Alloc(size_t size, size_t* actual_size, size_t alignment) override {
    size_t got = 0;
    const size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
    void* p = rounded >= size
                  ? next_->Alloc(rounded, &got,
                                 alignment > kHugePage ? alignment : kHugePage)
                  : nullptr;
    if (p == nullptr) return next_->Alloc(size, actual_size, alignment);
    // The whole huge pages inside [p, p + got): all of it, when the
    // alignment was honoured.
    const uintptr_t begin =
        (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
    const uintptr_t end =
        (reinterpret_cast<uintptr_t>(p) + got) & ~(kHugePage - 1);
    if (end > begin) {
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
  // Lives as long as the process: tcmalloc's heap is never handed back.
  static HugePageSysAllocator* const huge = new HugePageSysAllocator(next);
  extension->SetSystemAllocator(huge);
  return true;
}
#else
bool PutHeapOnHugePages() { return false; }
#endif

}  // namespace perceptron::server
