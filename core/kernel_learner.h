// The kernel perceptron in dual form (docs/design.md section 2.3). Use
// MakeLearner. Not thread-safe.
#ifndef PERCEPTRON_CORE_KERNEL_LEARNER_H_
#define PERCEPTRON_CORE_KERNEL_LEARNER_H_

#include "core/capped_deque.h"
#include "core/learner.h"

namespace perceptron {

// k(a, b) for `kernel`, from a . b and the squared norms ||a||^2, ||b||^2.
double KernelValue(const KernelConfig& kernel, double dot, double a_norm_sq,
                   double b_norm_sq);
// The radius of the kernel's feature space over examples of norm at most
// `radius`: sqrt(max k(x, x)), attained by an example of norm `radius` (k(x, x)
// grows with ||x|| for the linear and polynomial kernels, c0 >= 0; it is 1 for
// the rbf kernel).
double FeatureRadius(const KernelConfig& kernel, double radius);

// f(x) = sum_j eta y_j k(x^_j, x^) over the stored mistakes x^_j. On y*f(x) <=
// 0 (f on the current store) the example is stored; past `kernel_budget` the
// oldest is dropped and counted. Scoring costs O(stored * nnz).
class KernelLearner : public Learner {
 public:
  explicit KernelLearner(const ModelConfig& config);

  double Score(const Prepared& x) const override;
  absl::StatusOr<bool> Learn(const Prepared& x, int y) override;
  absl::StatusOr<double> ScoreAndLearn(const Prepared& x, int y,
                                       bool* updated) override;
  absl::Span<const double> weights() const override { return {}; }
  LearnerFigures figures() const override;
  // Counts each stored mistake as sizeof(Stored) and 12 bytes a non-zero (its
  // index and value).
  void set_store_budget(std::shared_ptr<ByteBudget> budget) override {
    held_.set_budget(std::move(budget));
  }
  absl::Status StoreRoom() const override;
  uint64_t store_bytes() const override { return held_.held(); }
  LearnerState ExportState() const override;
  absl::Status ImportState(LearnerState state) override;
  void Reset() override;
  void SetJournaling(bool on) override;
  LearnerDelta TakeDelta() override;
  absl::Status ApplyDelta(const LearnerDelta& delta) override;

 private:
  struct Stored {
    SupportVector sv;
    double norm_sq;  // ||x^_j||^2, from the stored values
  };

  double Kernel(double dot, double a_norm_sq, double b_norm_sq) const {
    return KernelValue(kernel_, dot, a_norm_sq, b_norm_sq);
  }
  absl::StatusOr<bool> LearnFromScore(const Prepared& x, int y, double f);
  static Stored MakeStored(SupportVector sv);
  static uint64_t Bytes(const Stored& s) {
    return sizeof(Stored) + 12 * uint64_t{s.sv.indices.size()};
  }
  // Counts the store's bytes again from scratch (a state replaced).
  void Recount();

  KernelConfig kernel_;
  double eta_;
  uint32_t weight_dimension_;
  CappedDeque<Stored> store_;  // the stored mistakes, at most kernel_budget
  HeldBytes held_;             // their bytes (Bytes), in the store budget
  // Checks stored vectors (ImportState, ApplyDelta).
  absl::Status CheckSupport(const std::vector<SupportVector>& support) const;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_KERNEL_LEARNER_H_
