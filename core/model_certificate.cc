// Model's certificate (docs/design.md sections 2.7 and 2.8): the tracker it
// keeps beside its learner, made, carried over and read here.
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/kernel_learner.h"
#include "core/model.h"

namespace perceptron {

void Model::EnableCertificate(uint64_t limit, uint64_t slack,
                              uint64_t limit_bytes,
                              std::shared_ptr<CertificateBudget> budget) {
  std::optional<CertificateState> carried;
  std::optional<KeptRows> rows;
  if (certificate_) {
    carried = certificate_->Save();
    rows = certificate_->TakeAllRows();
  }
  const bool kernel = config_.algorithm == Algorithm::kKernel;
  certificate_ =
      NewTracker(kernel ? std::min(limit, kKernelCertificateLimit) : limit,
                 slack, limit_bytes, std::move(budget));
  certificate_->SetJournaling(journaling_);
  // A multiclass model's vectors hold k class vectors each; a wide model's
  // are counted by the coordinates its rows use, as they are kept.
  const uint64_t classes = multi_ != nullptr ? multi_->classes() : 1;
  const uint64_t vector_bytes =
      kernel ? 0
             : classes *
                   CertificateTracker::VectorBytes(config_.weight_dimension());
  if (vector_bytes > limit_bytes) {
    // In bytes: rounded to MiB, 64.0001 would read "64 MiB, over 64 MiB".
    certificate_->TurnOff(
        absl::StrCat("its 8 dense vectors of ",
                     classes > 1 ? absl::StrCat(classes, " x ") : "",
                     config_.weight_dimension(),
                     " coordinates (the weight dimension) would take ",
                     vector_bytes,
                     " bytes, over the certificate's memory per "
                     "model of ",
                     limit_bytes, " bytes (",
                     absl::StrFormat("%.6g", limit_bytes / 1048576.0),
                     " MiB: perceptrond --certificate_model_mb; a smaller "
                     "hash_bits or dimension fits)"),
        /*permanent=*/true);
  } else if (carried && carried->observed == counters_.examples) {
    certificate_
        ->Restore(*carried, config_.weight_dimension(), rows ? &*rows : nullptr)
        .IgnoreError();
  } else if (counters_.examples > 0) {
    certificate_->TurnOff(absl::StrCat(
        "the ", counters_.examples,
        " labeled examples learned before the certificate started were not "
        "kept"));
  }
}

std::unique_ptr<CertificateTracker> Model::NewTracker(
    uint64_t limit, uint64_t slack, uint64_t limit_bytes,
    std::shared_ptr<CertificateBudget> budget) const {
  const bool kernel = config_.algorithm == Algorithm::kKernel;
  return std::make_unique<CertificateTracker>(
      limit, slack, limit_bytes, std::move(budget),
      kernel ? std::optional<KernelConfig>(config_.kernel) : std::nullopt,
      config_.weight_dimension(), multi_ != nullptr ? multi_->classes() : 0);
}

std::optional<CertificateReport> Model::CertificateNow(bool with_u) const {
  if (!certificate_) return std::nullopt;
  const double margin_gamma =
      config_.algorithm == Algorithm::kMargin ? config_.gamma.value_or(0) : 0;
  return certificate_->Report(CertificateRadius(), with_u, margin_gamma);
}

double Model::CertificateRadius() const {
  return config_.algorithm == Algorithm::kKernel
             ? FeatureRadius(config_.kernel, bound_.radius())
             : bound_.radius();
}

}  // namespace perceptron
