// The certificate's refresher done in place, and the bound a comparator gives
// a model, for the tests of a model's certificate (certificate_tracker_test,
// certificate_freeze_test).
#ifndef PERCEPTRON_TESTS_CORE_CERTIFICATE_ROUNDS_H_
#define PERCEPTRON_TESTS_CORE_CERTIFICATE_ROUNDS_H_

#include <cstdint>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "core/certificate_tracker.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron::testing {

// The refresher's round, done in place: take the rows kept, solve over all of
// them, install the candidates with their sums.
struct Refresher {
  explicit Refresher(uint32_t weight_dimension, bool margin_rule = false)
      : solver(weight_dimension), margin_rule(margin_rule) {}
  // `meanwhile`, if given, runs between the solve and the installation (as
  // examples arrive while the server's refresher solves).
  Certificate Round(Model* model,
                    const std::function<void()>& meanwhile = nullptr) {
    CertificateTracker* t = model->certificate();
    if (t->generation() != generation) {
      solver = CertificateSolver(model->config().weight_dimension());
      generation = t->generation();
    }
    std::vector<uint32_t> repeats;
    KeptRows rows = t->Take(&repeats);
    solver.Add(std::move(rows), repeats);
    const Certificate c = solver.Solve(model->stats(false).bound.radius, {});
    if (margin_rule) hard = solver.SolveHardMargin({});
    const std::vector<std::vector<double>> vs =
        CandidatesFrom(c, margin_rule ? &hard : nullptr);
    if (meanwhile) meanwhile();
    t->Install(
        vs, HingeSums(solver.rows(), vs), c.lower, c.converged, solver.size(),
        generation, KeptRows(),
        solver.wide() ? CandidateSupport::Of(solver.coordinates()) : nullptr,
        &solver.rows());
    return c;
  }
  CertificateSolver solver;
  bool margin_rule;
  HardMargin hard;
  uint64_t generation = 0;
};

// The bound a model given (u, gamma) as its comparator reports over the
// examples `order` picks from `s`, in that order.
inline double BoundOf(const ModelConfig& config, const Stream& s,
                      const std::vector<size_t>& order,
                      const std::vector<double>& u, double gamma) {
  ModelConfig with = config;
  with.comparator = u;
  with.gamma = gamma;
  auto check = *Model::Create(with);
  for (size_t k : order) {
    EXPECT_TRUE(check->Learn(FeatureView::Dense(s.x[k]), s.y[k]).ok());
  }
  const BoundReport b = check->stats().bound;
  EXPECT_TRUE(b.bound_available);
  return b.bound;
}

// The same over the first n examples of `s`.
inline double BoundOf(const ModelConfig& config, const Stream& s, size_t n,
                      const std::vector<double>& u, double gamma) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  return BoundOf(config, s, order, u, gamma);
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_CORE_CERTIFICATE_ROUNDS_H_
