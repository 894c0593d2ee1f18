// The hinge sums of candidate comparators over kept rows: what makes each
// candidate's TD_gamma, and so its bound, exact.
//
//   std::vector<double> sums = perceptron::HingeSums(rows, vs);
//   // TD_gamma(v / ||v||) = sums[k] / ||v|| for v = vs[k]
#ifndef PERCEPTRON_CORE_CANDIDATE_SUMS_H_
#define PERCEPTRON_CORE_CANDIDATE_SUMS_H_

#include <cstdint>
#include <vector>

#include "core/kept_rows.h"

namespace perceptron {

// Which of candidates `vs` are a power of two times an earlier one, as
// CandidatesFrom's 0.5 v and 2 v are of v (and 0.71 v of 1.41 v): the score of
// such a candidate, p (v . x), is taken from the earlier one's instead of
// summed again. (p v) . x and p (v . x) are the same number unless a term of
// the sum lies below the normal range (2.2e-308 in magnitude), where they may
// differ in the last place. Checked coordinate by coordinate: any other
// candidates are summed.
class ScaledCandidates {
 public:
  ScaledCandidates() = default;
  explicit ScaledCandidates(const std::vector<std::vector<double>>& vs);

  // The candidates whose scores are summed, in increasing order.
  const std::vector<uint32_t>& summed() const { return summed_; }
  // Fills scores[k] of every other candidate from the summed ones'.
  void Spread(double* scores) const {
    for (const Multiple& m : multiples_) scores[m.k] = m.p * scores[m.of];
  }

 private:
  struct Multiple {
    uint32_t k;   // this candidate
    uint32_t of;  // is p times this summed one (of < k)
    double p;
  };
  std::vector<uint32_t> summed_;
  std::vector<Multiple> multiples_;
};

// sum_t max(0, 1 - y_t v . x^_t) over `rows`, for each v of `vs`: the hinge
// sums that make TD_gamma(u) = gamma * sum for u = v / ||v||, gamma = 1/||v||.
// Each v . x^_t is KeptRows::DotUnordered's; scores of scaled candidates are
// shared as ScaledCandidates says.
std::vector<double> HingeSums(const KeptRows& rows,
                              const std::vector<std::vector<double>>& vs);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CANDIDATE_SUMS_H_
