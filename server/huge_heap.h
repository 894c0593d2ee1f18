// The allocator's heap on the kernel's transparent huge pages (docs/design.md
// section 7): each span tcmalloc takes from the system is a whole number of
// 2 MiB pages, aligned to one, and advised with MADV_HUGEPAGE, so that memory
// the server writes for the first time (a model's first stream keeping its
// certificate's rows) takes one page fault per 2 MiB instead of one per 4 KiB.
//
// Memory the server gives back (--memory_release_mb) leaves holes in those
// pages, and the kernel's khugepaged fills a huge page's holes with zeros to
// collapse it again (its default max_ptes_none, 511 of 512, collapses a page
// with a single 4 KiB still in use): what was given back would be resident
// again. So after each release the heap taken so far is advised
// MADV_NOHUGEPAGE (its huge pages stay as they are, none is made there any
// more) and only what the heap takes after it is advised huge.
//
//   if (perceptron::server::PutHeapOnHugePages()) {
//     perceptron::server::SetAfterRelease(  // server/memory.h
//         &perceptron::server::StopHugePagesSoFar);
//   }
#ifndef PERCEPTRON_SERVER_HUGE_HEAP_H_
#define PERCEPTRON_SERVER_HUGE_HEAP_H_

namespace perceptron::server {

// Call once, early in main, before the server starts. False where the
// program's allocator is not tcmalloc (the sanitizer builds) or does not take
// a system allocator; the heap is then as before. A program that gives
// memory back calls StopHugePagesSoFar after each release.
bool PutHeapOnHugePages();

// Advises the heap taken so far MADV_NOHUGEPAGE. Thread-safe.
void StopHugePagesSoFar();

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HUGE_HEAP_H_
