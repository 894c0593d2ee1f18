// The server's memory as the process and its allocator see it, and giving
// freed memory back to the system (docs/operations.md "Memory"). The
// allocator is found at run time: tcmalloc (gperftools, the release build's)
// through its C interface when it is linked in, else glibc's malloc.
// Thread-safe.
//
//   MemoryFigures m = ReadMemory();
//   if (m.allocator_free > (16u << 20)) ReleaseFreeMemory();
#ifndef PERCEPTRON_SERVER_MEMORY_H_
#define PERCEPTRON_SERVER_MEMORY_H_

#include <cstdint>
#include <string>

namespace perceptron::server {

struct MemoryFigures {
  // The process's resident set (VmRSS), bytes; 0 if unknown.
  uint64_t resident = 0;
  // Bytes the program holds from the allocator, and bytes the allocator holds
  // free that it could give back (its page heap's, or glibc's top and free
  // chunks); 0 when the allocator does not say.
  uint64_t allocated = 0;
  uint64_t allocator_free = 0;
  // Bytes freed that the allocator keeps cached for reuse rather than in its
  // page heap: tcmalloc's per-thread, transfer and central free lists. They
  // cannot be given back while cached; the thread caches' share is bounded
  // by LimitThreadCaches. 0 for the system allocator.
  uint64_t allocator_cached = 0;
  // The bound on the thread caches' share (LimitThreadCaches), as tcmalloc
  // reports it; 0 for the system allocator.
  uint64_t thread_cache_limit = 0;
  // The batch of small objects tcmalloc moves between its caches at a time
  // (server/allocator_env.h); 0 for the system allocator.
  uint32_t transfer_batch = 0;
  // "tcmalloc", or "system" (glibc's malloc, or a sanitizer's).
  std::string allocator;
};

MemoryFigures ReadMemory();

// MemoryFigures::allocator_free alone (no read of /proc): for a check made
// every second.
uint64_t AllocatorFreeBytes();

// Gives the allocator's free memory back to the system, then runs the
// function set by SetAfterRelease, if any.
void ReleaseFreeMemory();

// `after` runs after each ReleaseFreeMemory (on its thread): the heap on
// huge pages (server/huge_heap.h) stops the kernel from filling the holes
// just released back into huge pages. Call once, before the server starts.
void SetAfterRelease(void (*after)());

// The memory this process may use: the machine's physical memory, or the
// limit of its cgroup (a container's memory limit, cgroup v2's memory.max or
// v1's memory.limit_in_bytes) when that is lower; 0 if neither can be read.
uint64_t MemoryAvailable();

// Bounds the freed memory tcmalloc's per-thread caches may hold together
// (its own default is 32 MiB). A thread keeps what its cache holds until it
// next frees, so the threads that served a burst and then sleep would keep
// up to that much. No effect with the system allocator.
void LimitThreadCaches(uint64_t bytes);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MEMORY_H_
