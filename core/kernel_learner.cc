#include "core/kernel_learner.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace perceptron {
namespace {

// The query side of a kernel evaluation: raw coordinates of x (scaled later),
// with sparse inputs sorted once so each stored vector is merged in O(nnz_sv +
// nnz_x).
class Query {
 public:
  explicit Query(const Prepared& p) : p_(p) {
    if (p.x.sparse) {
      sorted_.reserve(p.x.values.size());
      for (size_t k = 0; k < p.x.values.size(); ++k) {
        sorted_.emplace_back(p.x.indices[k], p.x.values[k]);
      }
      std::sort(sorted_.begin(), sorted_.end());
    }
    double sq = 0;
    for (double v : p.x.values) sq += v * v;
    sq += p.bias_value * p.bias_value;
    norm_sq_ = p.scale * p.scale * sq;
  }

  // x^ . sv
  double Dot(const SupportVector& sv) const {
    double s = 0;
    const size_t n = sv.indices.size();
    if (!p_.x.sparse) {
      for (size_t k = 0; k < n; ++k) {
        const uint32_t i = sv.indices[k];
        s +=
            sv.values[k] * (i == p_.dimension ? p_.bias_value : p_.x.values[i]);
      }
    } else {
      size_t a = 0, b = 0;
      while (a < n && b < sorted_.size()) {
        if (sv.indices[a] < sorted_[b].first) {
          ++a;
        } else if (sorted_[b].first < sv.indices[a]) {
          ++b;
        } else {
          s += sv.values[a++] * sorted_[b++].second;
        }
      }
      if (p_.has_bias && n > 0 && sv.indices[n - 1] == p_.dimension) {
        s += sv.values[n - 1] * p_.bias_value;
      }
    }
    return p_.scale * s;
  }

  double norm_sq() const { return norm_sq_; }

 private:
  const Prepared& p_;
  std::vector<std::pair<uint32_t, double>> sorted_;
  double norm_sq_;
};

SupportVector ToSupportVector(const Prepared& p, double coefficient) {
  SupportVector sv;
  sv.coefficient = coefficient;
  std::vector<std::pair<uint32_t, double>> entries;
  entries.reserve(p.x.values.size() + 1);
  for (size_t k = 0; k < p.x.values.size(); ++k) {
    const uint32_t i = p.x.sparse ? p.x.indices[k] : static_cast<uint32_t>(k);
    if (p.x.values[k] != 0) entries.emplace_back(i, p.scale * p.x.values[k]);
  }
  if (p.x.sparse) std::sort(entries.begin(), entries.end());
  if (p.has_bias) entries.emplace_back(p.dimension, p.scale * p.bias_value);
  sv.indices.reserve(entries.size());
  sv.values.reserve(entries.size());
  for (const auto& [i, v] : entries) {
    sv.indices.push_back(i);
    sv.values.push_back(v);
  }
  return sv;
}

}  // namespace

double KernelValue(const KernelConfig& kernel, double dot, double a_norm_sq,
                   double b_norm_sq) {
  switch (kernel.type) {
    case KernelType::kLinear:
      return dot;
    case KernelType::kPolynomial: {
      const double base = dot + kernel.c0;
      double r = 1;
      for (int i = 0; i < kernel.degree; ++i) r *= base;
      return r;
    }
    case KernelType::kRbf: {
      const double dist_sq = std::max(0.0, a_norm_sq + b_norm_sq - 2 * dot);
      return std::exp(-dist_sq / (2 * kernel.sigma * kernel.sigma));
    }
  }
  return 0;
}

double FeatureRadius(const KernelConfig& kernel, double radius) {
  const double r2 = radius * radius;
  return std::sqrt(KernelValue(kernel, r2, r2, r2));
}

KernelLearner::KernelLearner(const ModelConfig& config)
    : kernel_(config.kernel),
      eta_(config.eta),
      weight_dimension_(config.weight_dimension()),
      store_(config.kernel_budget) {}

KernelLearner::Stored KernelLearner::MakeStored(SupportVector sv) {
  const double norm_sq =
      DenseDot(sv.values.data(), sv.values.data(), sv.values.size());
  return {std::move(sv), norm_sq};
}

double KernelLearner::Score(const Prepared& x) const {
  if (store_.size() == 0) return 0;
  const Query q(x);
  double f = 0;
  for (const Stored& s : store_) {
    f += s.sv.coefficient * Kernel(q.Dot(s.sv), s.norm_sq, q.norm_sq());
  }
  return f;
}

absl::StatusOr<bool> KernelLearner::LearnFromScore(const Prepared& x, int y,
                                                   double f) {
  if (!std::isfinite(f)) return NonFiniteScore(f);
  if (y * f > 0 || x.norm == 0) return false;
  Stored s = MakeStored(ToSupportVector(x, eta_ * y));
  held_.Add(Bytes(s));
  if (store_.size() == store_.cap()) held_.Remove(Bytes(*store_.begin()));
  store_.Push(std::move(s));
  return true;
}

absl::Status KernelLearner::StoreRoom() const {
  const ByteBudget* budget = held_.budget();
  if (budget == nullptr || budget->used() <= budget->limit())
    return absl::OkStatus();
  const auto mib = [](uint64_t b) {
    return absl::StrFormat("%.2f MiB", static_cast<double>(b) / (1 << 20));
  };
  return absl::ResourceExhaustedError(absl::StrCat(
      "a kernel model stores its mistakes, and ", budget->reason(), ": ",
      mib(budget->used()), " of ", mib(budget->limit()),
      "; nothing was applied (a reset or a model deleted gives room back)"));
}

void KernelLearner::Recount() {
  uint64_t bytes = 0;
  for (const Stored& s : store_) bytes += Bytes(s);
  held_.Clear();
  held_.Add(bytes);
}

absl::StatusOr<bool> KernelLearner::Learn(const Prepared& x, int y) {
  return LearnFromScore(x, y, Score(x));
}

absl::StatusOr<double> KernelLearner::ScoreAndLearn(const Prepared& x, int y,
                                                    bool* updated) {
  const double f = Score(x);
  PERCEPTRON_ASSIGN_OR_RETURN(*updated, LearnFromScore(x, y, f));
  return f;
}

LearnerFigures KernelLearner::figures() const {
  LearnerFigures f;
  f.support_vectors = store_.size();
  f.dropped = store_.dropped();
  return f;
}

LearnerState KernelLearner::ExportState() const {
  LearnerState state;
  state.support.reserve(store_.size());
  for (const Stored& s : store_) state.support.push_back(s.sv);
  state.dropped = store_.dropped();
  return state;
}

absl::Status KernelLearner::CheckSupport(
    const std::vector<SupportVector>& support) const {
  for (size_t j = 0; j < support.size(); ++j) {
    const SupportVector& sv = support[j];
    if (sv.indices.size() != sv.values.size() ||
        !std::isfinite(sv.coefficient)) {
      return absl::InvalidArgumentError(
          absl::StrCat("state: support vector ", j, " is malformed"));
    }
    for (size_t k = 0; k < sv.indices.size(); ++k) {
      if (sv.indices[k] >= weight_dimension_ ||
          (k > 0 && sv.indices[k] <= sv.indices[k - 1]) ||
          !std::isfinite(sv.values[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat("state: support vector ", j, " entry ", k, " (index ",
                         sv.indices[k], ", value ", sv.values[k],
                         ") is out of range, unsorted or not finite"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status KernelLearner::ImportState(LearnerState state) {
  if (state.support.size() > store_.cap()) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: ", state.support.size(),
                     " support vectors exceed the budget ", store_.cap()));
  }
  if (absl::Status s = CheckSupport(state.support); !s.ok()) return s;
  std::vector<Stored> stored;
  stored.reserve(state.support.size());
  for (SupportVector& sv : state.support)
    stored.push_back(MakeStored(std::move(sv)));
  store_.Assign(std::move(stored), state.dropped);
  Recount();
  return absl::OkStatus();
}

void KernelLearner::Reset() {
  store_.Clear();
  held_.Clear();
}

void KernelLearner::SetJournaling(bool on) { store_.SetJournaling(on); }

LearnerDelta KernelLearner::TakeDelta() {
  LearnerDelta d;
  d.dropped = store_.dropped();
  for (Stored& s : store_.TakeAdded())
    d.support_added.push_back(std::move(s.sv));
  d.support_removed = store_.TakeRemoved();
  return d;
}

absl::Status KernelLearner::ApplyDelta(const LearnerDelta& d) {
  if (absl::Status s = CheckSupport(d.support_added); !s.ok()) return s;
  if (!store_.Fits(d.support_added.size(), d.support_removed)) {
    return absl::InvalidArgumentError("journal: support vectors do not add up");
  }
  std::vector<Stored> added;
  added.reserve(d.support_added.size());
  // What the delta removes is the front of the store followed by `added`.
  uint64_t removed = 0;
  for (const SupportVector& sv : d.support_added) {
    added.push_back(MakeStored(sv));
    held_.Add(Bytes(added.back()));
  }
  for (const Stored& s : store_) {
    if (removed == d.support_removed) break;
    held_.Remove(Bytes(s));
    ++removed;
  }
  for (size_t i = 0; removed < d.support_removed; ++i, ++removed)
    held_.Remove(Bytes(added[i]));
  store_.Apply(std::move(added), d.support_removed, d.dropped);
  return absl::OkStatus();
}

}  // namespace perceptron
