// A byte string of a ModelState's numbers (and a hashing model's names), so
// tests can compare states bit for bit (operator== on doubles would equate 0.0
// and -0.0).
#ifndef PERCEPTRON_TESTS_CORE_STATE_BITS_H_
#define PERCEPTRON_TESTS_CORE_STATE_BITS_H_

#include <cstring>
#include <optional>
#include <string>

#include "core/model.h"

namespace perceptron::testing {

class Bits {
 public:
  template <typename T>
  Bits& Add(const T& v) {
    static_assert(std::is_arithmetic_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
    return *this;
  }
  template <typename T>
  Bits& Add(const std::vector<T>& v) {
    Add(v.size());
    for (const T& x : v) Add(x);
    return *this;
  }
  Bits& Add(const std::optional<SparseDoubles>& v) {
    Add(v.has_value());
    if (v) Add(v->size).Add(v->indices).Add(v->values);
    return *this;
  }
  Bits& Add(const std::string& v) {
    Add(v.size());
    out_.append(v);
    return *this;
  }
  std::string str() const { return out_; }

 private:
  std::string out_;
};

inline std::string StateBits(const ModelState& s) {
  Bits b;
  b.Add(s.counters.examples).Add(s.counters.mistakes).Add(s.counters.updates);
  b.Add(s.counters.predictions).Add(s.counters.expired);
  b.Add(s.td_gamma).Add(s.radius).Add(s.next_prediction_id);
  const LearnerState& l = s.learner;
  b.Add(l.weights)
      .Add(l.sparse_weights)
      .Add(l.weight_norm_sq)
      .Add(l.average_accumulator)
      .Add(l.sparse_average_accumulator)
      .Add(l.average_steps);
  b.Add(l.voted.size());
  for (const VotedVector& v : l.voted) b.Add(v.weights).Add(v.survived);
  b.Add(l.current_survived).Add(l.support.size());
  for (const SupportVector& v : l.support)
    b.Add(v.indices).Add(v.values).Add(v.coefficient);
  b.Add(l.dropped).Add(s.pending.size());
  for (const PendingPrediction& p : s.pending) {
    b.Add(p.prediction_id).Add(p.features.values).Add(p.features.indices);
    b.Add(p.features.sparse).Add(p.score).Add(p.issued_at).Add(p.predicted);
  }
  b.Add(s.confusion).Add(s.names.unnamed_slots).Add(s.names.names.size());
  for (const NamedSlot& n : s.names.names) {
    b.Add(n.slot).Add(n.hash).Add(n.name);
  }
  b.Add(s.certificate.has_value());
  if (const auto& c = s.certificate) {
    b.Add(static_cast<int>(c->phase)).Add(c->reason.size());
    b.Add(c->permanent_off).Add(c->observed).Add(c->kept).Add(c->solved);
    b.Add(c->frozen_at).Add(c->lower).Add(c->converged);
    b.Add(c->with_candidates).Add(c->candidates.size()).Add(c->sums);
    for (const std::vector<double>& v : c->candidates) b.Add(v);
  }
  return b.str();
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_CORE_STATE_BITS_H_
