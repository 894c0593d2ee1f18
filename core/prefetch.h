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
// remove, and a loop of hints one it may delete. Until 2026-12-05 every call
// of KeptRows::PrefetchValues (the certificate solver's rows, asked for
// ahead) compiled to nothing, and so did Model::Prefetch's request for a
// wide certificate's candidates. The empty asm statement emits no
// instruction but counts as an effect, so the hint stays where it is
// written (scripts/check_prefetch.sh keeps bare ones out).
[[gnu::always_inline]] inline void PrefetchLine(const void* p) {
  __builtin_prefetch(p);
  asm volatile("" : : "r"(p));
}

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_PREFETCH_H_
