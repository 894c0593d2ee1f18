// The configuration of a model, fixed when the model is created
// (docs/design.md section 2, 1-2.4).
//
//   perceptron::ModelConfig config;
//   config.dimension = 20;
//   config.algorithm = perceptron::Algorithm::kAveraged;
//   config.gamma = 0.1;
//   config.comparator = separator;  // d or d+1 values; scaled to unit length
//   absl::Status status = perceptron::ValidateConfig(config);
//
// Plain data; not synchronized.
#ifndef PERCEPTRON_CORE_CONFIG_H_
#define PERCEPTRON_CORE_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace perceptron {

// The largest input dimension d a model may have (the weight vector has d+1
// entries with bias).
inline constexpr uint32_t kMaxDimension = 1u << 24;

// The learning rule of a model (docs/design.md section 2, 3).
enum class Algorithm {
  kClassic,  // w <- w + eta*y*x^ when y*(w . x^) <= 0.
  kMargin,  // update when w = 0 or y*(w . x^)/||w|| <= gamma/2. Needs gamma and
            // normalize.
  kAveraged,  // learns as classic, predicts with the average of w over the
              // examples seen.
  kVoted,   // learns as classic, predicts by the survival-weighted vote of past
            // vectors.
  kKernel,  // dual form over stored mistakes, with a budget.
};

enum class KernelType {
  kLinear,      // k(a, b) = a . b
  kPolynomial,  // k(a, b) = (a . b + c0)^degree
  kRbf,         // k(a, b) = exp(-||a - b||^2 / (2 sigma^2))
};

struct KernelConfig {
  KernelType type = KernelType::kLinear;
  // Polynomial degree, 1..kMaxPolynomialDegree. Default: 2.
  int degree = 2;
  // Polynomial offset c0, in [0, kMaxKernelOffset]. Default: 1.
  double c0 = 1.0;
  // RBF width sigma, in [kMinScale, kMaxScale]. Default: 1.
  double sigma = 1.0;
  friend bool operator==(const KernelConfig&, const KernelConfig&) = default;
};

inline constexpr int kMaxPolynomialDegree = 16;
// The range of eta, the bias constant, gamma and sigma: beyond it arithmetic
// on them overflows or underflows a double for ordinary data (1/gamma^2 in the
// bound, 2 sigma^2 in the rbf kernel, eta times a weight). Within it a number
// that would still not be finite refuses only the example that causes it.
inline constexpr double kMinScale = 1e-100;
inline constexpr double kMaxScale = 1e100;
// (x . x' + c0)^16 stays below 1e100 for normalized examples.
inline constexpr double kMaxKernelOffset = 1e6;

// The most classes a multiclass model may have (docs/design.md section 2.8):
// its confusion matrix (k x k counts) travels with every journal.
inline constexpr uint32_t kMaxClasses = 64;
// The longest class name, in bytes.
inline constexpr size_t kMaxClassNameBytes = 256;
// The most weights a multiclass model may have: k weight vectors of the
// weight dimension (2^27 doubles, 1 GiB).
inline constexpr uint64_t kMaxMulticlassWeights = uint64_t{1} << 27;

struct ModelConfig {
  // Input dimension d, 1..kMaxDimension. Required.
  uint32_t dimension = 0;
  // Default: kClassic.
  Algorithm algorithm = Algorithm::kClassic;
  // Learning rate eta, in [kMinScale, kMaxScale]. Default: 1.
  double eta = 1.0;
  // Append a constant coordinate to every example. Default: on.
  bool bias = true;
  // The appended constant c, in [kMinScale, kMaxScale]. Default: 1.
  double bias_constant = 1.0;
  // Scale each (augmented) example to unit L2 norm. Default: on. Required by
  // kMargin.
  bool normalize = true;
  // Margin gamma, in [kMinScale, kMaxScale]. Required by kMargin and whenever
  // a comparator is given.
  // Default: none.
  std::optional<double> gamma;
  // Comparator u for TD_gamma and the bound: empty (none), or d values, or d+1
  // values when bias is on (the last for the bias coordinate; with d values the
  // bias entry is 0). Must be finite and not zero; the model scales it to unit
  // length. A multiclass model's has k such vectors one after another (k d or
  // k (d+1) values), scaled to Frobenius norm 1. Default: none.
  std::vector<double> comparator;
  // Used by kKernel only.
  KernelConfig kernel;
  // kKernel: the most mistakes kept; when over, the oldest is dropped. >= 1.
  // Default: 10000.
  uint64_t kernel_budget = 10000;
  // kVoted: the most past weight vectors kept; when over, the oldest is
  // dropped. >= 1. Default: 1000.
  uint64_t max_voted_vectors = 1000;
  // Named features (docs/design.md section 2.9): 0 (the model takes vectors
  // only), or b in 1..kMaxHashBits: names hash into dimension = 2^b
  // coordinates with Vowpal Wabbit's function. Default: 0.
  uint32_t hash_bits = 0;
  // With hash_bits: pairs of namespace letters to cross, as VW's -q ab.
  std::vector<std::string> interactions;
  // Named features without hashing: feature FeatureKey(f) ("name",
  // "namespace^name", "name=value") is coordinate i of this list, and a name
  // not in it is an error; dimension = its length. Not with hash_bits.
  // Default: none.
  std::vector<std::string> feature_names;
  // Multiclass (docs/design.md section 2.8): the names of the k classes,
  // 2..kMaxClasses of them, distinct and not empty, in index order. Labels
  // are then class indices 0..k-1 instead of -1/+1. Not with kMargin or
  // kKernel. Default: none (a binary model).
  std::vector<std::string> classes;
  // The server deletes the model once it has learned nothing for this long
  // (seconds; 0: never). Carried with the configuration; core/ does not use
  // it. Finite and >= 0. Default: 0.
  double idle_expiry_seconds = 0;

  bool multiclass() const { return !classes.empty(); }
  // k for a multiclass model, else 1: the number of weight vectors.
  uint32_t weight_vectors() const {
    return classes.empty() ? 1 : static_cast<uint32_t>(classes.size());
  }
  // The length of the weight vector: d, plus one with bias.
  uint32_t weight_dimension() const { return dimension + (bias ? 1 : 0); }
  // All the learner's weights: weight_vectors() vectors of the weight
  // dimension, one after another (class r's at r * weight_dimension()).
  uint64_t weight_count() const {
    return uint64_t{weight_vectors()} * weight_dimension();
  }
  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

// OK if `config` describes a valid model, else INVALID_ARGUMENT naming the bad
// field and value.
absl::Status ValidateConfig(const ModelConfig& config);

absl::string_view AlgorithmName(Algorithm algorithm);
absl::string_view KernelTypeName(KernelType type);

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_CONFIG_H_
