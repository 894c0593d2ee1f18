// A hint to the processor: the cache line at an address will be read soon.
//
//   perceptron::PrefetchLine(&rows[next]);
//
// Nothing read or written changes, and no address faults (a hint past the
// end of an array is fine).
#ifndef PERCEPTRON_CORE_PREFETCH_H_
#define PERCEPTRON_CORE_PREFETCH_H_

namespace perceptron {

// GCC 12 treats __builtin_prefetch as an instruction without effect: a
// function that otherwise only reads memory becomes one whose calls it may
// remove, and a loop of hints one it may delete. It did both here: every
// call of KeptRows::PrefetchValues in the certificate's solver and of
// CandidateSupport::Prefetch compiled to nothing. The empty asm statement
// emits no instruction but counts as an effect, so the hint stays where it
// is written.
[[gnu::always_inline]] inline void PrefetchLine(const void* p) {
  __builtin_prefetch(p);
  asm volatile("" : : "r"(p));
}

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_PREFETCH_H_
