// Model configurations of every algorithm, and a driver that mixes labeled
// examples, issued predictions and out-of-order reveals: for tests that compare
// two ways of reaching a state.
#ifndef PERCEPTRON_TESTS_CORE_DRIVERS_H_
#define PERCEPTRON_TESTS_CORE_DRIVERS_H_

#include <random>
#include <string>
#include <vector>

#include "core/model.h"
#include "gtest/gtest.h"

namespace perceptron::testing {

struct Variant {
  std::string name;
  ModelConfig config;
};

inline std::vector<Variant> Variants(uint32_t d) {
  std::vector<Variant> v;
  auto add = [&](std::string name, auto edit) {
    ModelConfig c;
    c.dimension = d;
    c.gamma = 0.05;
    c.comparator.assign(d, 1.0);
    edit(c);
    v.push_back({std::move(name), c});
  };
  add("classic", [](ModelConfig&) {});
  add("classic-raw", [](ModelConfig& c) {
    c.normalize = false;
    c.eta = 0.3;
  });
  add("margin", [](ModelConfig& c) { c.algorithm = Algorithm::kMargin; });
  add("averaged", [](ModelConfig& c) { c.algorithm = Algorithm::kAveraged; });
  add("voted", [](ModelConfig& c) {
    c.algorithm = Algorithm::kVoted;
    c.max_voted_vectors = 5;
  });
  add("kernel-linear",
      [](ModelConfig& c) { c.algorithm = Algorithm::kKernel; });
  add("kernel-poly", [](ModelConfig& c) {
    c.algorithm = Algorithm::kKernel;
    c.kernel.type = KernelType::kPolynomial;
    c.kernel.degree = 3;
    c.kernel_budget = 20;
  });
  add("kernel-rbf", [](ModelConfig& c) {
    c.algorithm = Algorithm::kKernel;
    c.kernel.type = KernelType::kRbf;
    c.kernel.sigma = 0.7;
    c.kernel_budget = 15;
  });
  return v;
}

// Drives a model with a mix of labeled examples, issued predictions and
// out-of-order reveals.
class Driver {
 public:
  Driver(uint32_t d, bool sparse, uint64_t seed)
      : d_(d), sparse_(sparse), rng_(seed) {}

  void Step(Model& m, std::vector<Issued>* open, int64_t now = 0) {
    std::uniform_int_distribution<int> action(0, 9);
    const int a = action(rng_);
    if (a < 2 && !open->empty()) {
      std::uniform_int_distribution<size_t> which(0, open->size() - 1);
      const size_t k = which(rng_);
      const int label = (*open)[k].prediction_id % 3 == 0 ? -1 : 1;
      ASSERT_TRUE(m.Reveal((*open)[k].prediction_id, label).ok());
      open->erase(open->begin() + k);
      return;
    }
    Draw();
    const FeatureView x =
        sparse_ ? FeatureView::Sparse(idx_, val_) : FeatureView::Dense(val_);
    if (a < 4) {
      open->push_back(*m.Issue(x, now));
    } else {
      ASSERT_TRUE(m.Learn(x, label_).ok());
    }
  }

 private:
  void Draw() {
    std::normal_distribution<double> normal;
    idx_.clear();
    val_.clear();
    if (sparse_) {
      for (uint32_t i = 0; i < d_; ++i) {
        if (rng_() % 4 == 0) idx_.push_back(i);
      }
      std::shuffle(idx_.begin(), idx_.end(), rng_);
      if (idx_.empty()) idx_.push_back(0);
      for (size_t k = 0; k < idx_.size(); ++k) val_.push_back(normal(rng_));
    } else {
      for (uint32_t i = 0; i < d_; ++i) val_.push_back(normal(rng_));
    }
    double s = 0;
    for (size_t k = 0; k < val_.size(); ++k)
      s += (sparse_ ? idx_[k] % 2 : k % 2) ? val_[k] : -val_[k];
    label_ = (s > 0) == (rng_() % 10 != 0)
                 ? 1
                 : -1;  // a separable rule with 10% noise
  }

  uint32_t d_;
  bool sparse_;
  std::mt19937_64 rng_;
  std::vector<uint32_t> idx_;
  std::vector<double> val_;
  int label_ = 1;
};

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_CORE_DRIVERS_H_
