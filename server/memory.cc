#include "server/memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

#include "server/allocator_env.h"

// gperftools' C interface (gperftools/malloc_extension_c.h), weak: null
// unless tcmalloc is linked into the program.
extern "C" {
int MallocExtension_GetNumericProperty(const char* property, size_t* value)
    __attribute__((weak));
int MallocExtension_SetNumericProperty(const char* property, size_t value)
    __attribute__((weak));
void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));
}

namespace perceptron::server {
namespace {

void (*after_release)() = nullptr;

bool Tcmalloc() {
  return MallocExtension_GetNumericProperty != nullptr &&
         MallocExtension_ReleaseFreeMemory != nullptr;
}

uint64_t Property(const char* name) {
  size_t v = 0;
  return MallocExtension_GetNumericProperty(name, &v) ? v : 0;
}

uint64_t Resident() {
  // statm's second field: resident pages.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return read == 2 && page > 0 ? resident * static_cast<uint64_t>(page) : 0;
}

}  // namespace

uint64_t AllocatorFreeBytes() {
  return Tcmalloc() ? Property("tcmalloc.pageheap_free_bytes")
                    : mallinfo2().fordblks;
}

MemoryFigures ReadMemory() {
  MemoryFigures m;
  m.resident = Resident();
  if (Tcmalloc()) {
    m.allocator = "tcmalloc";
    m.allocated = Property("generic.current_allocated_bytes");
    m.allocator_free = Property("tcmalloc.pageheap_free_bytes");
    m.allocator_cached = Property("tcmalloc.thread_cache_free_bytes") +
                         Property("tcmalloc.transfer_cache_free_bytes") +
                         Property("tcmalloc.central_cache_free_bytes");
    m.thread_cache_limit = Property("tcmalloc.max_total_thread_cache_bytes");
    m.transfer_batch = TransferBatch();
  } else {
    m.allocator = "system";
    const struct mallinfo2 i = mallinfo2();
    m.allocated = i.uordblks + i.hblkhd;
    m.allocator_free = i.fordblks;
  }
  return m;
}

void ReleaseFreeMemory() {
  if (Tcmalloc()) {
    MallocExtension_ReleaseFreeMemory();
  } else {
    malloc_trim(0);
  }
  if (after_release != nullptr) after_release();
}

void SetAfterRelease(void (*after)()) { after_release = after; }

void LimitThreadCaches(uint64_t bytes) {
  if (!Tcmalloc() || MallocExtension_SetNumericProperty == nullptr) return;
  MallocExtension_SetNumericProperty("tcmalloc.max_total_thread_cache_bytes",
                                     bytes);
}

uint64_t MemoryAvailable() {
  uint64_t most = 0;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    most = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  }
  // A limit is a number of bytes ("max", or v1's huge number, for none).
  for (const char* path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    unsigned long long limit = 0;
    const bool read = std::fscanf(f, "%llu", &limit) == 1;
    std::fclose(f);
    if (read && limit > 0 && (most == 0 || limit < most)) most = limit;
  }
  return most;
}

}  // namespace perceptron::server
