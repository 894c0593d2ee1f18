// The certificate of docs/design.md section 2.7: the theorem's best bound over
// every comparator, computed from the labeled prepared examples themselves,
// with a certified gap.
//
// For examples x^_t with labels y_t and radius R (the running maximum of
// ||x^||), the best bound over all (u, gamma) with ||u|| <= 1 is
//   B* = min over v of R^2 ||v||^2 + 2 sum_t max(0, 1 - y_t v . x^_t)
//      = 2 R^2 P*(C = 1 / R^2),
// P* the optimum of the L2-regularised hinge-loss SVM without intercept. The
// solver runs dual coordinate descent (Hsieh et al., 2008, as liblinear's
// L1-loss SVC does) on
//   max over 0 <= alpha_t <= C of  sum_t alpha_t - 1/2 ||sum_t alpha_t y_t x^_t||^2,
// whose value at any feasible alpha is at most P*; its iterate v gives the
// concrete comparator u = v / ||v|| and margin gamma = 1 / ||v||, whose bound
// (R/gamma)^2 + 2 TD_gamma(u) / gamma is at least B*. So
//   lower <= B* <= upper,
// and `upper` is the theorem's bound for a comparator the caller can use.
//
//   perceptron::CertificateSolver solver(/*weight_dimension=*/d + 1);
//   solver.Add(prepared, label);          // keeps a copy of x^
//   perceptron::Certificate c = solver.Solve(radius, {});
//   // updates <= c.upper for the classic rule, c.lower <= B* <= c.upper
//
// Solve warm-starts from the previous solution, and shrinks as liblinear
// does: variables held at a bound are left out of passes until the rest are
// nearly optimal (docs/design.md section 2). Not thread-safe.
//
// A wide solver (weight dimension above kWideDimension, as hashed models
// have) works over the coordinates its rows use rather than over all of them:
// each coordinate is given a position as it first appears, rows are kept with
// their positions, and its iterates, u and the candidates built from them
// hold one entry a position (coordinates() says which coordinate each is;
// every other coordinate of u is 0, as v lies in the span of the rows). Its
// memory grows with the kept non-zeros, never with d.
#ifndef PERCEPTRON_CORE_CERTIFICATE_H_
#define PERCEPTRON_CORE_CERTIFICATE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/kept_rows.h"
#include "core/prepare.h"
#include "core/row_positions.h"
#include "core/xorshift.h"

namespace perceptron {

// The gap at which a solution counts as converged for the server
// (docs/design.md section 2.7: (U - L) / U <= 1e-3): its refresher solves to
// it, which takes several times fewer passes than the default 1e-4.
inline constexpr double kConvergedGap = 1e-3;

// Weight dimensions above which a certificate works over the coordinates its
// rows use (a wide solver, CandidateSupport) rather than over every
// coordinate: 2^16, where one dense vector takes 512 KiB.
inline constexpr uint32_t kWideDimension = uint32_t{1} << 16;
inline bool IsWide(uint32_t weight_dimension) {
  return weight_dimension > kWideDimension;
}

struct CertificateOptions {
  // Stop once (upper - lower) <= tolerance * upper. Default: 1e-4.
  double tolerance = 1e-4;
  // Passes over the kept examples at most, per Solve. Default: 1000.
  int max_passes = 1000;
  // If set, Solve asks it after each pass and, given true, ends there with
  // `stopped` set: its figures are then not a solution's, and are not to be
  // used (the server's refresher: the model froze or changed meanwhile, so
  // the solution would be thrown away). The solver can be solved again.
  std::function<bool()> stop;
};

struct Certificate {
  // The bound (R/gamma)^2 + 2 TD_gamma(u) / gamma of the comparator below,
  // over the examples given: an upper value of B*.
  double upper = 0;
  // A lower value of B*, from the dual: no comparator does better.
  double lower = 0;
  // The comparator attaining `upper`: a unit vector of the weight dimension
  // (a wide solver's: one entry a position, CertificateSolver::coordinates),
  // its margin, and TD_gamma(u) over the examples.
  std::vector<double> u;
  double gamma = 0;
  double td = 0;
  // The examples it covers, the passes this Solve took, and whether it
  // reached the tolerance.
  uint64_t examples = 0;
  int passes = 0;
  bool converged = false;
  // Ended by CertificateOptions::stop: nothing above is to be used.
  bool stopped = false;
};

// The hard margin: gamma* = max over ||u|| <= 1 of min_t y_t u . x^_t, when
// the examples are separable through the origin (the bias being a coordinate).
struct HardMargin {
  // Whether a separating comparator was found; the rest holds only then.
  bool separable = false;
  // lower <= gamma* <= upper: `lower` is the margin of `u` itself, `upper`
  // comes from the dual.
  double lower = 0;
  double upper = 0;
  std::vector<double> u;
  int passes = 0;
  bool converged = false;
};

// TD*_gamma = min over ||u|| <= 1 of sum_t max(0, gamma - y_t u . x^_t), for a
// given gamma: the least total distance of docs/design.md section 2.7.
struct LeastDistance {
  // lower <= TD*_gamma <= upper; `upper` is TD_gamma(u) of `u` itself.
  double lower = 0;
  double upper = 0;
  std::vector<double> u;
  int solves = 0;  // regularised problems solved on the way
  bool converged = false;
};

class CertificateSolver {
 public:
  explicit CertificateSolver(uint32_t weight_dimension);

  // Keeps a copy of x^ (its non-zeros, and the bias coordinate) and its label
  // (-1 or +1). O(nnz).
  void Add(const Prepared& x, int label);
  // Keeps every row of `rows` (with their counts: a row standing for c equal
  // examples is solved as c of them, its variable in [0, c C]), then counts
  // the rows at `repeats` (places among all kept) once more each.
  void Add(KeptRows rows, absl::Span<const uint32_t> repeats = {});

  size_t size() const { return rows_.size(); }
  // The rows kept: a wide solver's at their positions, not coordinates.
  const KeptRows& rows() const { return rows_; }
  // Whether this solver is wide, and then the coordinate at each position
  // (in the order they first appeared); empty if not wide.
  bool wide() const { return wide_; }
  const std::vector<uint32_t>& coordinates() const {
    return positions_.coordinates();
  }
  // The rows kept, at their coordinates (a copy).
  KeptRows OriginalRows() const;
  // Bytes the kept examples and their dual variables take.
  size_t bytes() const;

  // Solves for radius `radius` (>= every kept ||x^||; the model's R), from
  // the last solution. With no example kept: upper = lower = 0, gamma = 0.
  Certificate Solve(double radius, const CertificateOptions& options);

  // The hard-margin SVM (min ||v||^2 / 2 with y_t v . x^_t >= 1) by the same
  // dual coordinate descent with no upper bound on alpha, from the last
  // solution. Not separable: `separable` false after max_passes (not a proof
  // that no separator exists).
  HardMargin SolveHardMargin(const CertificateOptions& options);

  // TD*_gamma for `gamma` > 0: bisection on the C of the regularised SVM
  // whose solution has ||v_C|| = 1/gamma (the constraint ||u|| <= 1 with
  // u = gamma v). Every v_C scaled into the ball is a comparator (an upper
  // value); every alpha_C / C in [0, 1]^n gives the dual value
  // gamma sum beta - ||sum beta y x^|| (a lower value).
  LeastDistance SolveLeastDistance(double gamma,
                                   const CertificateOptions& options);

 private:
  double DotRow(size_t t, const std::vector<double>& w) const {
    return rows_.DotUnordered(t, w);
  }
  void AddRow(size_t t, double a, std::vector<double>* w) const {
    rows_.AddTo(t, a, w);
  }
  // w = sum_t alpha_t y_t x^_t, summed afresh in example order.
  std::vector<double> Primal(const std::vector<double>& alpha) const;
  // One pass of dual coordinate descent over `alpha` (each in [0, cap]) in a
  // fresh random order, keeping w = sum alpha_t y_t x^_t.
  void Pass(double cap, std::vector<double>* alpha, std::vector<double>* w);
  // Which rows a pass leaves out: those at 0 whose gradient is above
  // `above`, and those at the cap whose gradient is below `below`.
  struct Shrink {
    double above = std::numeric_limits<double>::infinity();
    double below = -std::numeric_limits<double>::infinity();
  };
  // The extreme projected gradients of the rows a pass kept, and the sum
  // of each visited row's share of the duality gap as the pass met it.
  struct Gradients {
    double max = -std::numeric_limits<double>::infinity();
    double min = std::numeric_limits<double>::infinity();
    double gap = 0;
  };
  // The same over the rows `active` (ascending), from which it removes those
  // `shrink` leaves out.
  Gradients Pass(double cap, std::vector<double>* alpha, std::vector<double>* w,
                 const Shrink& shrink, std::vector<uint32_t>* active);
  // The spread of the projected gradients of the rows left at which every
  // row comes back (LIBLINEAR's default stopping tolerance).
  static constexpr double kShrinkSpread = 0.1;
  // The figures are checked after a pass whose share of the gap is within
  // this many times the tolerance of the dual value.
  static constexpr double kNearGap = 1;

  bool wide_;
  // The length of the solver's vectors: the weight dimension, or a wide
  // solver's positions.
  uint32_t dimension_;
  RowPositions positions_;  // a wide solver's
  KeptRows rows_;
  std::vector<double> alpha_;
  std::vector<double> w_;           // sum alpha_t y_t x^_t, kept up to date
  std::vector<double> hard_alpha_;  // the hard-margin dual's
  std::vector<double> td_alpha_;    // SolveLeastDistance's
  std::vector<double> hard_w_;
  XorShift random_;  // the order of each pass
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CERTIFICATE_H_
