// CertificateTracker's state carried over a restart, an export or a
// replacing tracker (core/certificate_tracker.h, "State carried over a
// restart or an export"): Save, CheckState, Restore and AttachRows, and the
// rows given back with them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/certificate_tracker.h"

namespace perceptron {

CertificateState CertificateTracker::Save(bool with_candidates) const {
  CertificateState s;
  s.phase = phase_;
  s.reason = reason_;
  s.permanent_off = permanent_off_;
  s.observed = observed_;
  s.kept = kept_;
  s.kept_examples = kept_examples_;
  s.solved = solved_;
  s.frozen_at = frozen_at_;
  s.lower = lower_;
  s.converged = converged_;
  s.with_candidates = with_candidates;
  if (with_candidates) {
    s.candidates = candidates_;
    s.basis = basis_;
    if (support_ != nullptr) s.support = support_->coordinates();
  }
  s.sums = sums_;
  return s;
}

absl::Status CertificateTracker::CheckState(const CertificateState& s,
                                            uint32_t weight_dimension) const {
  const std::vector<std::vector<double>>& vs =
      s.with_candidates ? s.candidates : candidates_;
  const KeptRows& basis = s.with_candidates ? s.basis : basis_;
  const std::vector<uint32_t>* support = &s.support;
  if (!s.with_candidates) {
    static const std::vector<uint32_t> kNone;
    support = support_ != nullptr ? &support_->coordinates() : &kNone;
  }
  // A kernel model's candidates have one coefficient per basis row; a linear
  // model's, one per coordinate (or per coordinate of its support), and no
  // basis.
  // A multiclass model's, one per coordinate of each class.
  const size_t size = kernel_ ? basis.size()
                              : (!support->empty() ? support->size()
                                                   : size_t{weight_dimension}) *
                                    static_cast<size_t>(std::max(classes_, 1));
  if (!kernel_ && basis.size() > 0) {
    return absl::InvalidArgumentError(
        "certificate: a basis of rows is given for a linear model");
  }
  if (!support->empty()) {
    if (kernel_) {
      return absl::InvalidArgumentError(
          "certificate: a support of coordinates is given for a kernel model");
    }
    std::vector<uint32_t> sorted = *support;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.back() >= weight_dimension ||
        std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return absl::InvalidArgumentError(
          "certificate: the support's coordinates are out of range or "
          "repeated");
    }
  }
  for (size_t t = 0; t < basis.size(); ++t) {
    const absl::Span<const uint32_t> index = basis.indices(t);
    const absl::Span<const double> value = basis.values(t);
    for (size_t k = 0; k < index.size(); ++k) {
      if (index[k] >= weight_dimension || !std::isfinite(value[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat("certificate: basis row ", t, " entry ", k,
                         " is out of range or not finite"));
      }
    }
  }
  if (vs.size() != s.sums.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("certificate: ", s.sums.size(), " sums for ", vs.size(),
                     " candidates"));
  }
  for (size_t k = 0; k < vs.size(); ++k) {
    if (vs[k].size() != size) {
      return absl::InvalidArgumentError(
          absl::StrCat("certificate: candidate ", k, " has ", vs[k].size(),
                       " coordinates, not ", size));
    }
    for (double x : vs[k]) {
      if (!std::isfinite(x)) {
        return absl::InvalidArgumentError(
            absl::StrCat("certificate: candidate ", k, " is not finite"));
      }
    }
    if (!std::isfinite(s.sums[k]) || s.sums[k] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("certificate: sum ", k, " is not finite and >= 0"));
    }
  }
  const uint64_t kept_examples =
      s.kept_examples != 0 ? s.kept_examples : s.kept;
  if (!std::isfinite(s.lower) || s.kept > kept_examples ||
      kept_examples > s.observed || s.solved > kept_examples ||
      s.frozen_at > s.observed) {
    return absl::InvalidArgumentError(
        "certificate: lower, kept, solved or frozen_at is out of range");
  }
  return absl::OkStatus();
}

absl::Status CertificateTracker::Restore(const CertificateState& s,
                                         uint32_t weight_dimension,
                                         KeptRows* rows) {
  absl::Status checked = CheckState(s, weight_dimension);
  if (checked.ok()) {
    RestoreChecked(s, rows);
    return checked;
  }
  CertificateState off;
  off.phase = CertificatePhase::kOff;
  off.permanent_off = false;  // until the next Reset
  off.reason =
      absl::StrCat("its stored state could not be used (", checked.message(),
                   "); off until the model is reset");
  off.observed = s.observed;
  RestoreChecked(off, nullptr);
  return checked;
}

bool CertificateTracker::RowsFit(const KeptRows& rows) const {
  if (rows.examples() != observed_) return false;
  for (size_t t = 0; t < rows.size(); ++t) {
    const int label = rows.label(t);
    if (classes_ > 0 ? label < 0 || label >= classes_
                     : label != 1 && label != -1) {
      return false;
    }
    for (uint32_t i : rows.indices(t)) {
      if (i >= weight_dimension_) return false;
    }
    for (double v : rows.values(t)) {
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

std::optional<KeptRows> CertificateTracker::RowsNow(
    const KeptRows* taken) const {
  if ((phase_ != CertificatePhase::kKeeping &&
       phase_ != CertificatePhase::kFreezing) ||
      (taken == nullptr ? taken_ != 0 : taken->size() != taken_)) {
    return std::nullopt;
  }
  KeptRows rows;
  if (taken != nullptr) rows.Append(*taken);
  for (uint32_t t : repeats_) rows.AddCount(t, 1);
  rows.Append(restored_);
  rows.Append(queue_);
  rows.Append(tail_);
  return rows;
}

bool CertificateTracker::AttachRows(KeptRows rows) {
  if (!unattached_ || rows.examples() != unattached_->observed) return false;
  const CertificateState s = std::move(*unattached_);
  RestoreChecked(s, &rows);
  return unattached_ == nullptr;  // as it was again if they do not fit
}

void CertificateTracker::RestoreChecked(const CertificateState& s,
                                        KeptRows* rows) {
  Release();
  ClearQueueAndTail();
  DropRows();
  unattached_.reset();
  permanent_off_ = s.permanent_off;
  phase_ = s.phase;
  reason_ = s.reason;
  observed_ = s.observed;
  kept_ = s.kept;
  taken_ = s.kept;
  kept_examples_ = s.kept_examples != 0 ? s.kept_examples : s.kept;
  taken_examples_ = s.solved;
  kept_bytes_ = 0;
  solved_ = s.solved;
  frozen_at_ = s.frozen_at;
  unconverged_at_limit_ = 0;
  lower_ = s.lower;
  converged_ = s.converged;
  if (s.with_candidates) {
    candidates_ = s.candidates;
    support_ = s.support.empty()
                   ? nullptr
                   : CandidateSupport::Of(s.support, &candidates_,
                                          weight_dimension_, classes_);
    Scale();
    basis_ = s.basis;
    squares_ = Squares(candidates_, basis_);
  }
  sums_ = s.sums;
  candidates_changed_ = true;
  ++generation_;  // a refresher's solver is stale
  if (phase_ == CertificatePhase::kKeeping ||
      phase_ == CertificatePhase::kFreezing) {
    if (rows != nullptr && RowsFit(*rows)) {
      RestoreRows(std::move(*rows));
      return;
    }
    unattached_ = std::make_unique<CertificateState>(s);
    unattached_->with_candidates = true;
    unattached_->candidates = candidates_;
    unattached_->basis = basis_;
    unattached_->support.clear();
    if (support_ != nullptr) unattached_->support = support_->coordinates();
    if (candidates_.empty()) {
      phase_ = CertificatePhase::kOff;
      reason_ = absl::StrCat(
          "the ", observed_,
          " labeled examples kept for it were not carried over (an import, "
          "or a store without them)");
    } else {
      phase_ = CertificatePhase::kFrozen;
      frozen_at_ = observed_;
      reason_ =
          "the examples kept for it were not carried over (an import, or a "
          "store without them)";
    }
  }
}

void CertificateTracker::RestoreRows(KeptRows&& rows) {
  rows_cleared_ = false;
  taken_ = 0;
  taken_examples_ = 0;
  kept_examples_ = 0;
  kept_bytes_ = 0;
  for (size_t t = 0; t < rows.size(); ++t) {
    // Zeros were not kept: a row may count less than when it was observed.
    // A wide model's rows before the limit count their new coordinates, as
    // when they were kept.
    uint64_t fresh = 0;
    const uint64_t row = RowBytes(rows.indices(t).size());
    const uint64_t bytes =
        t < kept_ ? KeptBytes(rows.indices(t), row, &fresh) : row;
    if (!Reserve(bytes)) {
      StopKeeping(budget_->reason());
      return;
    }
    if (fresh > 0) {
      for (uint32_t i : rows.indices(t)) in_use_.Add(i);
    }
    (t < kept_ ? kept_bytes_ : tail_bytes_) += bytes;
  }
  if (rows.size() == kept_) {
    restored_ = std::move(rows);
  } else {
    for (size_t t = 0; t < rows.size(); ++t) {
      KeptRows& to = t < kept_ ? restored_ : tail_;
      to.Add(rows.indices(t), rows.values(t), rows.label(t));
      to.AddCount(to.size() - 1, rows.count(t) - 1);
    }
  }
  kept_examples_ = restored_.examples();
  if (phase_ == CertificatePhase::kKeeping ||
      phase_ == CertificatePhase::kFreezing) {
    for (size_t t = 0; t < restored_.size(); ++t) {
      const RowKey key = KeyOf(restored_, t);
      const bool added =
          seen_.try_emplace(key, static_cast<uint32_t>(t)).second;
      Placed(t, added ? key : kNoKey);
    }
  }
  if (phase_ == CertificatePhase::kFreezing) {
    for (size_t t = 0; t < tail_.size(); ++t) {
      // A later row with an equal key takes it over, as in Observe.
      const RowKey key = KeyOf(tail_, t);
      const auto place = static_cast<uint32_t>(kept_ + t);
      const auto [it, added] = seen_.try_emplace(key, place);
      if (!added) {
        if (it->second < keys_.size()) keys_[it->second] = kNoKey;
        it->second = place;
      }
      Placed(place, key);
    }
  }
  // The limits may be lower than those the rows were kept under.
  if (phase_ == CertificatePhase::kKeeping &&
      (kept_ >= limit_ || kept_bytes_ >= limit_bytes_)) {
    ReachLimit();
  }
  if (phase_ == CertificatePhase::kFreezing &&
      (tail_.size() > slack_ || tail_bytes_ > limit_bytes_)) {
    FreezeFull();
  }
}

}  // namespace perceptron
