// The learning rules of docs/design.md section 2, 3 behind one interface.
//
//   absl::StatusOr<std::unique_ptr<perceptron::Learner>> learner =
//       perceptron::MakeLearner(config);  // config already validated
//   // What the model would issue:
//   double score = (*learner)->Score(prepared);
//   // The rule, on the CURRENT state:
//   bool updated = (*learner)->Learn(prepared, +1);
//
// A Learner knows nothing of counters, bounds or pending predictions (see
// Model). It is not thread-safe: callers serialize access.
#ifndef PERCEPTRON_CORE_LEARNER_H_
#define PERCEPTRON_CORE_LEARNER_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/casts.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/byte_budget.h"
#include "core/config.h"
#include "core/journal.h"
#include "core/prefetch.h"
#include "core/prepare.h"

namespace perceptron {

// A past weight vector of the voted perceptron and the number of labeled
// examples it survived (examples that arrived while it was current and did not
// change it).
struct VotedVector {
  std::vector<double> weights;
  uint64_t survived = 0;
  friend bool operator==(const VotedVector&, const VotedVector&) = default;
};

// A stored mistake of the kernel perceptron: the prepared example x^ as sorted
// (index, value) pairs, the bias coordinate having index d, and its coefficient
// eta * y.
struct SupportVector {
  std::vector<uint32_t> indices;
  std::vector<double> values;
  double coefficient = 0;
  friend bool operator==(const SupportVector&, const SupportVector&) = default;
};

// A vector given by its non-zeros (entries whose bits are not all zero, so
// -0.0 is one): its size, and the indices (ascending) and values of those.
struct SparseDoubles {
  uint64_t size = 0;
  std::vector<uint32_t> indices;
  std::vector<double> values;
  friend bool operator==(const SparseDoubles&, const SparseDoubles&) = default;
};

// A non-zero as SparseDoubles counts it: its bits are not all zero (-0.0 is
// one, so that it comes back as itself).
inline bool SparseNonZero(double x) { return absl::bit_cast<uint64_t>(x) != 0; }
// How many of `v`'s entries are non-zero.
inline size_t SparseNonZeros(const std::vector<double>& v) {
  return std::count_if(v.begin(), v.end(), SparseNonZero);
}
// Whether a vector of `size` entries, `nonzero` of them non-zero, is smaller
// as SparseDoubles (12 bytes a non-zero, indices of 32 bits) than whole (8
// bytes an entry).
inline bool SparseIsSmaller(size_t size, size_t nonzero) {
  return size <= UINT32_MAX && 3 * nonzero < 2 * size;
}

// Everything a learner needs to continue bit-identically. Fields unused by an
// algorithm are empty.
struct LearnerState {
  // classic, margin, averaged, voted: the current weight vector (weight
  // dimension entries); or, for a large vector mostly of zeros (a hashing
  // model's), `sparse_weights` instead and `weights` empty (ExportDoubles:
  // no whole copy while the model is held).
  std::vector<double> weights;
  std::optional<SparseDoubles> sparse_weights;
  // margin: ||w||^2, kept incrementally.
  double weight_norm_sq = 0;
  // averaged: sum over updates of (example number) * (the update); and the
  // number of labeled examples learned from.
  std::vector<double> average_accumulator;
  std::optional<SparseDoubles> sparse_average_accumulator;  // as weights
  uint64_t average_steps = 0;
  // voted: past vectors, oldest first, and the survival count of the current
  // one.
  std::vector<VotedVector> voted;
  uint64_t current_survived = 0;
  // kernel: stored mistakes, oldest first.
  std::vector<SupportVector> support;
  // voted and kernel: how many vectors the cap or budget removed.
  uint64_t dropped = 0;
  friend bool operator==(const LearnerState&, const LearnerState&) = default;
};

// What a learner changed while journaling: new values of changed coordinates,
// appended vectors and how many were then removed from the front, and the
// scalars' new values.
struct LearnerDelta {
  VectorDelta weights;
  VectorDelta average_accumulator;
  double weight_norm_sq = 0;      // margin
  uint64_t average_steps = 0;     // averaged
  uint64_t current_survived = 0;  // voted
  uint64_t dropped = 0;           // voted, kernel
  std::vector<VotedVector> voted_added;
  uint64_t voted_removed = 0;
  std::vector<SupportVector> support_added;
  uint64_t support_removed = 0;
  friend bool operator==(const LearnerDelta&, const LearnerDelta&) = default;
};

// Algorithm-specific figures for status reports.
struct LearnerFigures {
  uint64_t support_vectors = 0;  // kernel: stored mistakes
  uint64_t voted_vectors =
      0;                 // voted: stored past vectors plus the current one
  uint64_t dropped = 0;  // voted/kernel: removed by the cap or budget
};

// Fetches ahead the entries of `v` at a sparse `x`'s indices (those in range).
inline void PrefetchAt(const std::vector<double>& v, const FeatureView& x) {
  for (const uint32_t i : x.indices) {
    if (i < v.size()) PrefetchLine(v.data() + i);
  }
}

class Learner {
 public:
  virtual ~Learner() = default;

  // The score the model issues for `x`. The predicted label is +1 if it is >=
  // 0, else -1.
  virtual double Score(const Prepared& x) const = 0;

  // Applies the learning rule for label `y` (+1 or -1) to the current state.
  // Returns true if the state changed (an update). INVALID_ARGUMENT, with the
  // state unchanged, if the score the rule decides on or a value the update
  // would write is not finite (NonFiniteScore, NonFiniteUpdate).
  virtual absl::StatusOr<bool> Learn(const Prepared& x, int y) = 0;

  // Score(x), then Learn(x, y); sets *updated to Learn's result. Equivalent to
  // the two calls, bit for bit; learners override it to share work. The same
  // errors as Learn, and NonFiniteScore if Score(x) is not finite; on error
  // the state is unchanged.
  virtual absl::StatusOr<double> ScoreAndLearn(const Prepared& x, int y,
                                               bool* updated) {
    const double score = Score(x);
    if (!std::isfinite(score)) return NonFiniteScore(score);
    absl::StatusOr<bool> learned = Learn(x, y);
    if (!learned.ok()) return learned.status();
    *updated = *learned;
    return score;
  }

  // For a learner whose ScoreAndLearn starts from w . x^ over its weights w
  // (the linear ones): w, so that the caller may compute w . x in the same
  // pass as ||x||^2 (Model::Learn) and call ScoreAndLearnFrom. Null otherwise.
  virtual const std::vector<double>* dot_weights() const { return nullptr; }
  // ScoreAndLearn, given w_dot = Dot(*dot_weights(), x) on the current state:
  // the same result and state bit for bit.
  virtual absl::StatusOr<double> ScoreAndLearnFrom(const Prepared& x, int y,
                                                   double w_dot,
                                                   bool* updated) {
    return ScoreAndLearn(x, y, updated);
  }

  // The primal weight vector w (weight dimension entries); empty for the kernel
  // learner.
  virtual absl::Span<const double> weights() const = 0;

  // Asks the processor to fetch the entries of the learner's arrays that a
  // sparse `x` (its indices as given) will touch; changes nothing. None by
  // default.
  virtual void Prefetch(const FeatureView& /*x*/) const {}

  virtual LearnerFigures figures() const { return {}; }

  // A learner whose memory grows as it learns (the kernel learner's stored
  // mistakes) counts its bytes in `budget` from now on (null: none), whether
  // or not they fit; StoreRoom then says whether it may grow: OK, or
  // RESOURCE_EXHAUSTED with the budget's reason once the budget is past its
  // limit. Learners of a fixed size have nothing to count.
  virtual void set_store_budget(std::shared_ptr<ByteBudget> /*budget*/) {}
  virtual absl::Status StoreRoom() const { return absl::OkStatus(); }
  // The bytes it counts (in a budget or not).
  virtual uint64_t store_bytes() const { return 0; }

  virtual LearnerState ExportState() const = 0;

  // Replaces the state. INVALID_ARGUMENT, with the state unchanged, if `state`
  // does not fit the configuration (wrong lengths, non-finite values, counts
  // over the cap).
  virtual absl::Status ImportState(LearnerState state) = 0;

  // Back to the initial state (w = 0, nothing stored).
  virtual void Reset() = 0;

  // While journaling, the learner records what it changes, for TakeDelta.
  virtual void SetJournaling(bool on) = 0;
  // The changes since journaling began or the last TakeDelta; starts over.
  virtual LearnerDelta TakeDelta() = 0;
  // Applies another learner's delta (of the same configuration).
  // INVALID_ARGUMENT, with nothing changed, if it does not fit.
  virtual absl::Status ApplyDelta(const LearnerDelta& delta) = 0;
};

// The learner for `config`, which must have passed ValidateConfig.
std::unique_ptr<Learner> MakeLearner(const ModelConfig& config);

// +1 if score >= 0, else -1 (ties predict +1, docs/design.md section 2, 2).
inline int PredictedLabel(double score) { return score >= 0 ? 1 : -1; }

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_LEARNER_H_
