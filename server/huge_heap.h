// The allocator's heap on the kernel's transparent huge pages (docs/design.md
// section 7): each span tcmalloc takes from the system is a whole number of
// 2 MiB pages, aligned to one, and advised with MADV_HUGEPAGE, so that memory
// the server writes for the first time (a model's first stream keeping its
// certificate's rows) takes one page fault per 2 MiB instead of one per 4 KiB.
// Memory the server gives back (--memory_release_mb) is still given back: the
// kernel splits a huge page whose parts are released.
//
//   if (!perceptron::server::PutHeapOnHugePages()) { /* a plain heap */ }
#ifndef PERCEPTRON_SERVER_HUGE_HEAP_H_
#define PERCEPTRON_SERVER_HUGE_HEAP_H_

namespace perceptron::server {

// Call once, early in main. False where the program's allocator is not
// tcmalloc (the sanitizer builds) or does not take a system allocator; the
// heap is then as before.
bool PutHeapOnHugePages();

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HUGE_HEAP_H_
