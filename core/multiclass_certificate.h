// The certificate of a multiclass model (docs/design.md section 2.8): the
// theorem's best bound over every comparator U = (u_1..u_k), computed from the
// labeled prepared examples, with a certified gap.
//
// For examples x^_t with classes y_t and radius R,
//   B* = min over V of 2 R^2 ||V||_F^2
//                      + 2 sum_t max(0, 1 - (v_y - max_{r != y} v_r) . x^_t)
//      = 2 R_K^2 P*(C = 1 / R_K^2),   R_K^2 = 2 R^2,
// P* the optimum of the Crammer-Singer multiclass SVM primal
//   (1/2) ||V||_F^2 + C sum_t xi_t,  xi_t = max(0, max_{r != y_t}
//                                     (1 - (v_{y_t} - v_r) . x^_t))
// without an intercept (the bias is a coordinate). Its dual (Crammer & Singer,
// 2001; Keerthi et al., 2008, which liblinear's -s 4 solves): over alpha_t in
// R^k with sum_r alpha_t,r = 0, alpha_t,r <= 0 for r != y_t and
// alpha_t,y_t <= C,
//   maximise  D(alpha) = sum_t alpha_t,y_t - (1/2) ||W(alpha)||_F^2,
//   W(alpha)_r = sum_t alpha_t,r x^_t,
// whose value at any feasible alpha is at most P*. The solver takes one
// example at a time and solves its k variables exactly (a projection onto the
// constraints by a sort of k numbers), as liblinear does. Its iterate W gives
// the concrete comparator U = W / ||W||_F and margin gamma = 1 / ||W||_F,
// whose bound 2 (R/gamma)^2 + 2 TD_gamma(U) / gamma is 2 R_K^2 P(W) >= B*:
//   lower = 2 R_K^2 D(alpha) <= B* <= upper = 2 R_K^2 P(W).
//
//   perceptron::MulticlassCertificateSolver solver(/*classes=*/10, d + 1);
//   solver.Add(prepared, /*label=*/3);   // keeps a copy of x^
//   perceptron::MulticlassCertificate c = solver.Solve(radius, {});
//   // updates <= c.upper for the classic rule; c.lower <= B* <= c.upper
//
// A wide solver (weight dimension above kWideDimension) works over the
// coordinates its rows use, as CertificateSolver does: its W, u and
// candidates hold k blocks of one value a position (coordinates()), and its
// figures are those of the dense solver over the rows at their positions.
//
// Solve warm-starts from the previous solution. Not thread-safe.
#ifndef PERCEPTRON_CORE_MULTICLASS_CERTIFICATE_H_
#define PERCEPTRON_CORE_MULTICLASS_CERTIFICATE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/certificate.h"
#include "core/kept_rows.h"
#include "core/prepare.h"
#include "core/row_positions.h"
#include "core/xorshift.h"

namespace perceptron {

struct MulticlassCertificate {
  // The bound 2 (R/gamma)^2 + 2 TD_gamma(U) / gamma of the comparator below,
  // over the examples given: an upper value of B*.
  double upper = 0;
  // A lower value of B*, from the dual.
  double lower = 0;
  // The comparator attaining `upper`: k vectors of the weight dimension one
  // after another, of Frobenius norm 1 (all 0 when W is 0, gamma then 0);
  // its margin; TD_gamma(U) over the examples.
  std::vector<double> u;
  double gamma = 0;
  double td = 0;
  // The primal's value P(W) and the dual's D(alpha) at C = 1 / R_K^2: what
  // liblinear's -s 4 reports as its objective.
  double primal = 0;
  double dual = 0;
  // The candidates a tracker installs (CertificateTracker::Install): W and
  // 0.5 W, 2 W and 4 W (exact multiples, whose margins are taken from W's;
  // the best scale moves as examples arrive once the rows are frozen), and
  // their multiclass hinge sums over the kept examples (ClassHingeSums: W's is
  // the slack of `primal`). None when W is 0.
  std::vector<std::vector<double>> candidates;
  std::vector<double> sums;
  uint64_t examples = 0;
  int passes = 0;
  bool converged = false;
  bool stopped = false;  // as Certificate::stopped
};

// Solves one example's k dual variables exactly (the subproblem of the
// Crammer-Singer dual): minimises (A/2) ||a||^2 + sum_r b_r a_r over a with
// sum_r a_r = 0, a_r <= cap for r = y and a_r <= 0 otherwise, A > 0, cap >=
// 0. `b` and `out` have k entries.
void SolveClassSubproblem(double A, absl::Span<const double> b, int y,
                          double cap, absl::Span<double> out);

class MulticlassCertificateSolver {
 public:
  MulticlassCertificateSolver(int classes, uint32_t weight_dimension);

  // Keeps a copy of x^ (its non-zeros and the bias coordinate) and its class
  // (0..k-1). O(nnz).
  void Add(const Prepared& x, int label);
  // Keeps `rows` (labels: classes 0..k-1; a row of count c stands for c equal
  // examples), and counts the rows at `repeats` (places among those kept)
  // once more each, as CertificateSolver::Add.
  void Add(KeptRows rows, absl::Span<const uint32_t> repeats = {});

  // The rows kept: a wide solver's at their positions, not coordinates.
  const KeptRows& rows() const { return rows_; }
  size_t size() const { return rows_.size(); }
  // Whether this solver is wide (IsWide: its vectors hold one value a
  // coordinate its rows use, as CertificateSolver's), and then the coordinate
  // at each position; empty if not wide.
  bool wide() const { return wide_; }
  const std::vector<uint32_t>& coordinates() const {
    return positions_.coordinates();
  }
  // The rows kept, at their coordinates (a copy).
  KeptRows OriginalRows() const {
    return wide_ ? positions_.ToCoordinates(rows_) : rows_;
  }
  int classes() const { return k_; }
  // Bytes the kept examples, their dual variables and their places in the
  // passes take.
  size_t bytes() const;

  // Solves for radius `radius` (>= every kept ||x^||), from the last
  // solution. With no example kept: upper = lower = 0.
  MulticlassCertificate Solve(double radius, const CertificateOptions& options);

 private:
  // One pass over the active examples (active_) in a fresh random order at
  // cost C, each over its active classes; returns the largest violation of
  // the optimality conditions met. In a pass over every example and class
  // (after Unshrink), `gap` is the sum of the examples' shares of the duality
  // gap, each at the W it met. Shrinking (as liblinear's Crammer-Singer solver
  // does; Keerthi et al. 2008): a class at its bound whose
  // gradient is below every free class's leaves the example's active
  // classes, and an example left with one leaves active_; Solve brings them
  // all back once the active ones are near optimal.
  double Pass(double C, double* gap);
  // Makes every example and class active.
  void Unshrink();

  // The largest violation among the active examples at which every one is
  // made active again, at first; a tenth of it each time after.
  static constexpr double kShrinkSpread = 0.1;

  int k_;
  bool wide_;
  // The length of each class's vectors: the weight dimension, or a wide
  // solver's positions.
  uint32_t dim_;
  RowPositions positions_;              // a wide solver's
  KeptRows rows_;                       // labels: classes
  std::vector<double> alpha_;           // k a row
  std::vector<std::vector<double>> w_;  // W(alpha): w_[r], dim_ each
  double cost_ = 0;                     // the C alpha_ is feasible for
  // The examples a pass visits; each example's classes, the first
  // active_classes_[t] of its k in class_order_ still moving.
  std::vector<uint32_t> active_;
  std::vector<uint8_t> class_order_;
  std::vector<uint8_t> active_classes_;
  XorShift random_{0x2545f4914f6cdd1dull};
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_MULTICLASS_CERTIFICATE_H_
