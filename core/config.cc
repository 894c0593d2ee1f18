#include "core/config.h"

#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/feature_hash.h"
#include "core/quoted.h"
#include "core/status_macros.h"

namespace perceptron {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("config: ", field, " ", why));
}

bool InScale(double v) { return v >= kMinScale && v <= kMaxScale; }

std::string ScaleRange() {
  return absl::StrCat(" is out of range [", kMinScale, ", ", kMaxScale, "]");
}

absl::Status ValidateComparator(const ModelConfig& config) {
  const std::vector<double>& u = config.comparator;
  if (u.empty()) return absl::OkStatus();
  const uint64_t k = config.weight_vectors();
  if (u.size() != k * config.dimension && u.size() != config.weight_count()) {
    return Invalid(
        "comparator",
        absl::StrCat("has ", u.size(), " values; expected ",
                     k * config.dimension,
                     config.bias ? absl::StrCat(" or ", config.weight_count())
                                 : std::string(),
                     k > 1 ? absl::StrCat(" (", k, " classes)") : ""));
  }
  double norm_sq = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    if (!std::isfinite(u[i])) {
      return Invalid("comparator",
                     absl::StrCat("value ", i, " is ", u[i], ", not finite"));
    }
    norm_sq += u[i] * u[i];
  }
  if (norm_sq == 0)
    return Invalid("comparator", "is zero and cannot be scaled to unit length");
  if (!std::isfinite(norm_sq)) return Invalid("comparator", "norm overflows");
  if (!config.gamma.has_value())
    return Invalid("gamma", "is required with a comparator");
  return absl::OkStatus();
}

absl::Status ValidateKernel(const ModelConfig& config) {
  const KernelConfig& k = config.kernel;
  switch (k.type) {
    case KernelType::kLinear:
      return absl::OkStatus();
    case KernelType::kPolynomial:
      if (k.degree < 1 || k.degree > kMaxPolynomialDegree) {
        return Invalid("kernel.degree",
                       absl::StrCat(k.degree, " is out of range 1..",
                                    kMaxPolynomialDegree));
      }
      if (!(k.c0 >= 0 && k.c0 <= kMaxKernelOffset)) {
        return Invalid("kernel.c0", absl::StrCat(k.c0, " is out of range [0, ",
                                                 kMaxKernelOffset, "]"));
      }
      return absl::OkStatus();
    case KernelType::kRbf:
      if (!InScale(k.sigma)) {
        return Invalid("kernel.sigma", absl::StrCat(k.sigma, ScaleRange()));
      }
      return absl::OkStatus();
  }
  return Invalid("kernel.type", "is unknown");
}

absl::Status ValidateClasses(const ModelConfig& config) {
  const std::vector<std::string>& c = config.classes;
  if (c.empty()) return absl::OkStatus();
  if (c.size() < 2 || c.size() > kMaxClasses) {
    return Invalid(
        "classes",
        absl::StrCat("has ", c.size(), c.size() == 1 ? " name" : " names",
                     "; a multiclass model has 2..", kMaxClasses));
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].empty()) {
      return Invalid("classes", absl::StrCat("name ", i, " is empty"));
    }
    if (c[i].size() > kMaxClassNameBytes) {
      return Invalid("classes",
                     absl::StrCat("name ", i, " has ", c[i].size(),
                                  " bytes; at most ", kMaxClassNameBytes));
    }
    if (!seen.insert(c[i]).second) {
      return Invalid("classes",
                     absl::StrCat("name ", Quoted(c[i]), " is repeated"));
    }
  }
  if (config.algorithm == Algorithm::kMargin ||
      config.algorithm == Algorithm::kKernel) {
    return Invalid(
        "classes",
        absl::StrCat("do not go with the ", AlgorithmName(config.algorithm),
                     " rule: a multiclass model is classic, "
                     "averaged or voted"));
  }
  if (config.weight_count() > kMaxMulticlassWeights) {
    return Invalid(
        "classes",
        absl::StrCat(c.size(), " weight vectors of ", config.weight_dimension(),
                     " are ", config.weight_count(), " weights; at most ",
                     kMaxMulticlassWeights));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateConfig(const ModelConfig& config) {
  if (absl::Status s = ValidateHashing(config.hash_bits, config.interactions);
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config: ", s.message()));
  }
  if (!config.feature_names.empty()) {
    if (config.hash_bits != 0) {
      return Invalid("feature_names",
                     "and hash_bits do not go together: names are listed or "
                     "hashed");
    }
    if (absl::Status s = ValidateNames(config.feature_names); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("config: ", s.message()));
    }
    if (config.dimension != config.feature_names.size()) {
      return Invalid("dimension",
                     absl::StrCat(config.dimension, " is not the ",
                                  config.feature_names.size(),
                                  " feature names (leave it 0 to have it "
                                  "filled in)"));
    }
  }
  if (config.hash_bits != 0 &&
      config.dimension != (uint32_t{1} << config.hash_bits)) {
    return Invalid("dimension",
                   absl::StrCat(config.dimension, " is not 2^hash_bits = ",
                                uint32_t{1} << config.hash_bits,
                                " (leave it 0 to have it filled in)"));
  }
  if (config.dimension == 0) {
    return Invalid("dimension",
                   absl::StrCat("0 is out of range 1..", kMaxDimension,
                                ": give the input's dimension d, or hash_bits "
                                "(or feature_names) to take features by name"));
  }
  if (config.dimension > kMaxDimension) {
    return Invalid(
        "dimension",
        absl::StrCat(config.dimension, " is out of range 1..", kMaxDimension));
  }
  if (!InScale(config.eta)) {
    return Invalid("eta", absl::StrCat(config.eta, ScaleRange()));
  }
  if (!std::isfinite(config.idle_expiry_seconds) ||
      config.idle_expiry_seconds < 0) {
    return Invalid("idle_expiry_seconds",
                   absl::StrCat(config.idle_expiry_seconds,
                                " is not a finite number >= 0"));
  }
  if (config.bias && !InScale(config.bias_constant)) {
    return Invalid("bias_constant",
                   absl::StrCat(config.bias_constant, ScaleRange()));
  }
  if (config.gamma.has_value() && !InScale(*config.gamma)) {
    return Invalid("gamma", absl::StrCat(*config.gamma, ScaleRange()));
  }
  switch (config.algorithm) {
    case Algorithm::kClassic:
    case Algorithm::kAveraged:
      break;
    case Algorithm::kMargin:
      if (!config.gamma.has_value())
        return Invalid("gamma", "is required by the margin rule");
      if (!config.normalize)
        return Invalid("normalize", "must be on for the margin rule");
      break;
    case Algorithm::kVoted:
      if (config.max_voted_vectors == 0)
        return Invalid("max_voted_vectors", "must be >= 1");
      break;
    case Algorithm::kKernel:
      if (config.kernel_budget == 0)
        return Invalid("kernel_budget", "must be >= 1");
      if (absl::Status s = ValidateKernel(config); !s.ok()) return s;
      break;
    default:
      return Invalid(
          "algorithm",
          absl::StrCat(static_cast<int>(config.algorithm), " is unknown"));
  }
  PERCEPTRON_RETURN_IF_ERROR(ValidateClasses(config));
  return ValidateComparator(config);
}

absl::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kClassic:
      return "classic";
    case Algorithm::kMargin:
      return "margin";
    case Algorithm::kAveraged:
      return "averaged";
    case Algorithm::kVoted:
      return "voted";
    case Algorithm::kKernel:
      return "kernel";
  }
  return "unknown";
}

absl::string_view KernelTypeName(KernelType type) {
  switch (type) {
    case KernelType::kLinear:
      return "linear";
    case KernelType::kPolynomial:
      return "polynomial";
    case KernelType::kRbf:
      return "rbf";
  }
  return "unknown";
}

}  // namespace perceptron
