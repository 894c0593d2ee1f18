// When a Learn stream reads its next request while it applies the one before
// (docs/design.md section 7): perceptrond's rule, which the benchmark's echo
// follows so that both parse a request on the thread the rule picks.
//
//   const absl::Time start = absl::Now();
//   ...  // the request applied (or, in the echo, answered)
//   read_ahead = perceptron::ReadAhead(request, absl::Now() - start);
#ifndef PERCEPTRON_COMMON_READ_AHEAD_H_
#define PERCEPTRON_COMMON_READ_AHEAD_H_

#include "absl/time/time.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron {

// A request applied in at least this long has the next one read meanwhile.
inline constexpr absl::Duration kReadAheadAfter = absl::Microseconds(20);

// Whether a request's items carry features by name (its first item tells):
// a message and two strings a feature once parsed. Such a batch is not read
// ahead: parsed on another thread while the batch before is applied, into
// memory the applying thread touched last, its parse took four to six times
// the samples (W5's items by name, `perf record -a`: the strings' parsing and
// copies most), and the stream 9.2-9.3 us of server CPU an example against
// 5.7-6.1 parsed after the batch before (docs/benchmarks.md, W5).
inline bool ItemsByName(const v1::LearnRequest& r) {
  if (r.items_size() == 0) return false;
  const v1::LearnItem& item = r.items(0);
  const v1::Features* f = item.has_labeled()   ? &item.labeled().features()
                          : item.has_example() ? &item.example()
                                               : nullptr;
  return f != nullptr && f->has_named();
}

// Whether the request after `r`, which took `took` to apply, is read while
// the one after that is applied.
inline bool ReadAhead(const v1::LearnRequest& r, absl::Duration took) {
  return took >= kReadAheadAfter && !ItemsByName(r);
}

}  // namespace perceptron

#endif  // PERCEPTRON_COMMON_READ_AHEAD_H_
