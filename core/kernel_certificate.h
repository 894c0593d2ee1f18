// The certificate of a kernel model (docs/design.md section 2.7): the same
// problem as CertificateSolver's in the kernel's feature space, with the
// comparator an expansion over the kept rows.
//
//   perceptron::KernelCertificateSolver solver(d + 1, config.kernel);
//   solver.Add(std::move(rows));
//   perceptron::KernelCertificate c = solver.Solve(FeatureRadius(...), {});
//
// Not thread-safe.
#ifndef PERCEPTRON_CORE_KERNEL_CERTIFICATE_H_
#define PERCEPTRON_CORE_KERNEL_CERTIFICATE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/certificate.h"
#include "core/config.h"
#include "core/kept_rows.h"
#include "core/prepare.h"
#include "core/xorshift.h"

namespace perceptron {

// Kernel values of examples against kept rows: k(b_s, x^) for every row b_s of
// a basis, computed with x^ spread over a dense scratch vector. Not
// thread-safe.
class KernelRows {
 public:
  KernelRows(uint32_t weight_dimension, const KernelConfig& kernel)
      : kernel_(kernel), scratch_(weight_dimension, 0.0) {}
  // k(basis_s, rows_t) for every s, into *out (resized).
  void Against(const KeptRows& basis, const KeptRows& rows, size_t t,
               std::vector<double>* out);
  // k(basis_s, x^) for every s, into *out (resized).
  void Against(const KeptRows& basis, const Prepared& x,
               std::vector<double>* out);
  const KernelConfig& kernel() const { return kernel_; }

 private:
  void Fill(const KeptRows& basis, double square, std::vector<double>* out);
  KernelConfig kernel_;
  std::vector<double> scratch_;  // all 0 between calls
};

// For a kernel model the comparator lives in the kernel's feature space:
// v = sum_s c_s phi(b_s) over the rows b_s of a basis (the kept examples with a
// non-zero dual variable), given by its coefficients c.
struct KernelCertificate {
  // As Certificate's, with R the feature space's radius (FeatureRadius).
  double upper = 0;
  double lower = 0;
  double gamma = 0;
  double td = 0;
  // v = u / gamma = sum_t coefficients_t phi(x^_t) over the kept rows.
  std::vector<double> coefficients;
  uint64_t examples = 0;
  int passes = 0;
  bool converged = false;
  bool stopped = false;  // as Certificate's
};

// Kernel candidates: a basis of rows and coefficient vectors over it.
struct KernelCandidates {
  KeptRows basis;
  std::vector<std::vector<double>> vs;
};

// The candidates a refresher installs for a kernel solution `c` over `rows`:
// its v and the same multiples of it as CandidatesFrom, over the rows with a
// non-zero coefficient.
KernelCandidates KernelCandidatesFrom(const KernelCertificate& c,
                                      const KeptRows& rows);

// sum_t c_t max(0, 1 - y_t v . phi(x^_t)) over `rows` (c_t row t's count)
// for each v = sum_s v_s phi(basis_s) of `vs` (scaled candidates shared as in
// HingeSums).
std::vector<double> KernelHingeSums(const KeptRows& rows, const KeptRows& basis,
                                    KernelRows* kernel,
                                    const std::vector<std::vector<double>>& vs);
// The same over the rows at `places` of `rows`, each as often as it is listed
// (HingeSumsAt's, in the feature space).
std::vector<double> KernelHingeSumsAt(
    const KeptRows& rows, absl::Span<const uint32_t> places,
    const KeptRows& basis, KernelRows* kernel,
    const std::vector<std::vector<double>>& vs);
// ||v||^2 = sum_{s,r} v_s v_r k(basis_s, basis_r) for each v of `vs`.
std::vector<double> KernelSquares(const KeptRows& basis, KernelRows* kernel,
                                  const std::vector<std::vector<double>>& vs);

// The certificate of a kernel model: the same dual coordinate descent over
// the kernel matrix (Q_ts = y_t y_s k(x^_t, x^_s), computed a row at a time
// when a dual variable changes; y_t (Q alpha)_t kept for every row), with
// R^2 = max k(x^, x^). A pass costs O(n * nnz) per changed variable, so
// O(n^2 nnz) at worst: the kept examples of a kernel model are few
// (kKernelCertificateLimit). Warm-starts like CertificateSolver. Not
// thread-safe.
class KernelCertificateSolver {
 public:
  KernelCertificateSolver(uint32_t weight_dimension, const KernelConfig& kernel)
      : kernel_(weight_dimension, kernel) {}

  // Adds rows after those it has, then counts the rows at `repeats` (places
  // among all kept) once more each, as CertificateSolver::Add does: a row of
  // count c is solved as c equal examples, its variable in [0, c C].
  void Add(KeptRows rows, absl::Span<const uint32_t> repeats = {});
  size_t size() const { return rows_.size(); }
  const KeptRows& rows() const { return rows_; }
  KernelRows* kernel() { return &kernel_; }
  size_t bytes() const;

  // Solves for the feature space's radius `radius` (>= sqrt(k(x^, x^)) for
  // every kept row), from the last solution.
  KernelCertificate Solve(double radius, const CertificateOptions& options);

  // TD*_gamma in the feature space, as CertificateSolver's: `u` holds the
  // comparator's coefficients over the kept rows, u = sum_t u_t phi(x^_t).
  LeastDistance SolveLeastDistance(double gamma,
                                   const CertificateOptions& options);

 private:
  // alpha_t = next, keeping q (of the same dual variables).
  void Move(size_t t, double next, std::vector<double>* alpha,
            std::vector<double>* q);
  // q_t = sum_s alpha_s y_s k(x^_s, x^_t) (so y_t q_t = (Q alpha)_t), summed
  // afresh over the rows with alpha_s != 0, for rows [from, n).
  void Recompute(size_t from, const std::vector<double>& alpha,
                 std::vector<double>* q);
  // One pass of dual coordinate descent over every row, alpha_t in
  // [0, cap c_t] (c_t row t's count).
  void Pass(double cap, std::vector<double>* alpha, std::vector<double>* q);

  KernelRows kernel_;
  KeptRows rows_;
  std::vector<double> alpha_;
  std::vector<double> q_;
  std::vector<double> td_alpha_;  // SolveLeastDistance's
  std::vector<double> td_q_;
  std::vector<double> diagonal_;  // k(x^_t, x^_t)
  std::vector<double> row_;       // scratch: one row of the kernel matrix
  XorShift random_;               // the order of each pass
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_KERNEL_CERTIFICATE_H_
