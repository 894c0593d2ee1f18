// The core learner's predict+learn step on the docs/design.md section 7 shapes:
// the compute limit that later measurements of the service are compared
// against. Prints examples per second (items_per_second). Run:
// build/release/bench/core/core_benchmark
//
//   W1: dense, d = 20        W2: dense, d = 1000        W3: sparse, 32
//   non-zeros of d = 2^20    W6: dense, d = 64, a multiclass model of 10
//   classes
#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/byte_budget.h"
#include "core/candidate_sums.h"
#include "core/certificate.h"
#include "core/certificate_tracker.h"
#include "core/model.h"
#include "core/multiclass_certificate.h"

namespace perceptron {
namespace {

// A pool of examples cycled through. The sparse pool is larger: with 32 of 2^20
// coordinates, examples barely overlap, and a small pool would be learned by
// heart after one cycle.
size_t PoolSize(uint32_t nonzeros) { return nonzeros == 0 ? 4096 : 65536; }

struct Workload {
  uint32_t dimension;
  uint32_t nonzeros;     // 0: dense
  uint32_t classes = 0;  // a multiclass model's; 0: binary
};

constexpr Workload kW1{20, 0}, kW2{1000, 0}, kW3{1u << 20, 32}, kW6{64, 0, 10};

// The model for `w` (its classes named "0", "1", ...).
ModelConfig ConfigOf(const Workload& w) {
  ModelConfig config;
  config.dimension = w.dimension;
  for (uint32_t r = 0; r < w.classes; ++r) {
    config.classes.push_back(std::to_string(r));
  }
  return config;
}

struct Data {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<uint32_t>> indices;
  std::vector<int> labels;
  std::vector<double> separator;
};

// Labels from a random separator with 10% flipped, so the learner keeps
// updating.
Data MakeData(const Workload& w) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  Data d;
  d.separator.resize(w.dimension);
  for (double& v : d.separator) v = normal(rng);
  for (size_t t = 0; t < PoolSize(w.nonzeros); ++t) {
    std::vector<double> val;
    std::vector<uint32_t> idx;
    double s = 0;
    if (w.nonzeros == 0) {
      val.resize(w.dimension);
      for (uint32_t i = 0; i < w.dimension; ++i)
        s += d.separator[i] * (val[i] = normal(rng));
    } else {
      std::uniform_int_distribution<uint32_t> pick(0, w.dimension - 1);
      while (idx.size() < w.nonzeros) {
        const uint32_t i = pick(rng);
        if (std::find(idx.begin(), idx.end(), i) == idx.end()) idx.push_back(i);
      }
      for (uint32_t i : idx)
        s += d.separator[i] * val.emplace_back(normal(rng));
    }
    int label = (s >= 0) == (rng() % 10 != 0) ? 1 : -1;
    if (w.classes > 0) {
      // The class of the highest of the first `classes` coordinates, 10%
      // replaced at random.
      label = static_cast<int>(
          std::max_element(val.begin(), val.begin() + w.classes) - val.begin());
      if (rng() % 10 == 0) label = static_cast<int>(rng() % w.classes);
    }
    d.values.push_back(std::move(val));
    d.indices.push_back(std::move(idx));
    d.labels.push_back(label);
  }
  return d;
}

FeatureView View(const Data& d, size_t t, bool sparse) {
  return sparse ? FeatureView::Sparse(d.indices[t], d.values[t])
                : FeatureView::Dense(d.values[t]);
}

void Run(benchmark::State& state, const Workload& w, Algorithm algorithm,
         bool comparator) {
  const Data data = MakeData(w);
  ModelConfig config = ConfigOf(w);
  config.algorithm = algorithm;
  if (comparator) {
    config.gamma = 0.05;
    config.comparator = data.separator;
  }
  auto model = *Model::Create(config);
  const bool sparse = w.nonzeros > 0;
  size_t t = 0;
  for (auto _ : state) {
    const size_t next = t + 1 == data.labels.size() ? 0 : t + 1;
    model->Prefetch(View(data, next, sparse));  // as the server's batches do
    absl::StatusOr<Outcome> o =
        model->Learn(View(data, t, sparse), data.labels[t]);
    benchmark::DoNotOptimize(o);
    t = next;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["mistake_rate"] =
      static_cast<double>(model->counters().mistakes) /
      model->counters().examples;
}

// A multiclass model with its certificate keeping rows (the pool seen once,
// solved and installed as the server's refresher does): what each example
// then costs the tracker (its candidates' margins, the row kept or counted
// again). Binary models' certificates are measured by certificate_benchmark.
void RunCertificate(benchmark::State& state, const Workload& w) {
  const Data data = MakeData(w);
  const ModelConfig config = ConfigOf(w);
  auto model = *Model::Create(config);
  model->EnableCertificate(UINT64_MAX / 2, UINT64_MAX / 2);
  for (size_t t = 0; t < data.labels.size(); ++t) {
    model->Learn(View(data, t, false), data.labels[t]).IgnoreError();
  }
  CertificateTracker* tracker = model->certificate();
  MulticlassCertificateSolver solver(static_cast<int>(w.classes),
                                     config.weight_dimension());
  std::vector<uint32_t> repeats;
  KeptRows rows = tracker->Take(&repeats);
  solver.Add(std::move(rows), repeats);
  const MulticlassCertificate c =
      solver.Solve(model->stats(false).bound.radius, {});
  tracker->Install(c.candidates, c.sums, c.lower, c.converged, solver.size(),
                   tracker->generation(), KeptRows(), nullptr, &solver.rows());
  size_t t = 0;
  for (auto _ : state) {
    const size_t next = t + 1 == data.labels.size() ? 0 : t + 1;
    model->Prefetch(View(data, next, false));
    absl::StatusOr<Outcome> o =
        model->Learn(View(data, t, false), data.labels[t]);
    benchmark::DoNotOptimize(o);
    t = next;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["available"] = tracker->Report(1).available;
}

// A wide binary model whose certificate froze over the pool's first
// state.range(0) examples (solved and installed as the server's refresher
// does, its candidates over the coordinates those use): what each example
// then costs, the candidates' scores over their support included, with the
// next example prefetched as the server's batches do.
void RunFrozen(benchmark::State& state, const Workload& w) {
  const Data data = MakeData(w);
  const ModelConfig config = ConfigOf(w);
  auto model = *Model::Create(config);
  const size_t kept = static_cast<size_t>(state.range(0));
  model->EnableCertificate(kept, /*slack=*/kept);
  for (size_t t = 0; t < kept; ++t) {
    model->Learn(View(data, t, true), data.labels[t]).IgnoreError();
  }
  CertificateTracker* tracker = model->certificate();
  CertificateSolver solver(config.weight_dimension());
  std::vector<uint32_t> repeats;
  solver.Add(tracker->Take(&repeats), repeats);
  CertificateOptions options;
  options.tolerance = 1e-3;
  const Certificate c = solver.Solve(model->stats(false).bound.radius, options);
  std::vector<std::vector<double>> vs = CandidatesFrom(c);
  std::vector<double> sums = HingeSums(solver.rows(), vs);
  std::shared_ptr<const CandidateSupport> support = CandidateSupport::Of(
      solver.coordinates(), &vs, config.weight_dimension());
  tracker->Install(std::move(vs), std::move(sums), c.lower, c.converged,
                   solver.size(), tracker->generation(), KeptRows(),
                   std::move(support), &solver.rows());
  if (tracker->phase() != CertificatePhase::kFrozen) {
    state.SkipWithError("the certificate did not freeze");
    return;
  }
  size_t t = 0;
  for (auto _ : state) {
    const size_t next = t + 1 == data.labels.size() ? 0 : t + 1;
    model->Prefetch(View(data, next, true));
    absl::StatusOr<Outcome> o =
        model->Learn(View(data, t, true), data.labels[t]);
    benchmark::DoNotOptimize(o);
    t = next;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["coordinates"] =
      static_cast<double>(solver.coordinates().size());
}

// Model::LearnDense on batches of 64 rows (the server's columnar path), the
// pool's rows packed one after another.
void RunDense(benchmark::State& state, const Workload& w, bool comparator) {
  const Data data = MakeData(w);
  ModelConfig config = ConfigOf(w);
  if (comparator) {
    config.gamma = 0.05;
    config.comparator = data.separator;
  }
  auto model = *Model::Create(config);
  constexpr size_t kBatch = 64;
  std::vector<double> packed;
  for (const std::vector<double>& row : data.values)
    packed.insert(packed.end(), row.begin(), row.end());
  size_t t = 0;
  for (auto _ : state) {
    const absl::Status s =
        model->LearnDense(absl::MakeConstSpan(packed).subspan(
                              t * w.dimension, kBatch * w.dimension),
                          absl::MakeConstSpan(data.labels).subspan(t, kBatch),
                          [](size_t, const absl::StatusOr<Outcome>& r) {
                            benchmark::DoNotOptimize(r);
                          });
    benchmark::DoNotOptimize(s);
    t = t + 2 * kBatch > data.labels.size() ? 0 : t + kBatch;
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["mistake_rate"] =
      static_cast<double>(model->counters().mistakes) /
      model->counters().examples;
}

void Predict(benchmark::State& state, const Workload& w) {
  const Data data = MakeData(w);
  ModelConfig config;
  config.dimension = w.dimension;
  auto model = *Model::Create(config);
  const bool sparse = w.nonzeros > 0;
  for (size_t t = 0; t < data.labels.size(); ++t)
    model->Learn(View(data, t, sparse), data.labels[t]).IgnoreError();
  size_t t = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(model->Predict(View(data, t, sparse)));
    if (++t == data.labels.size()) t = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

// The predict-then-reveal path: each example issued, and the one issued 64
// before it revealed (a stream of batches of 64 keeps as many pending), its
// pending prediction counted in a budget that models share (a server's
// --max_pending_mb) or in none: what the budget costs a prediction.
void IssueReveal(benchmark::State& state, const Workload& w, bool budget) {
  const Data data = MakeData(w);
  auto model = *Model::Create(ConfigOf(w));
  if (budget) {
    model->set_pending_limits(
        {.budget = std::make_shared<ByteBudget>(uint64_t{1} << 30, "taken")});
  }
  const bool sparse = w.nonzeros > 0;
  constexpr size_t kLag = 64;
  std::vector<std::pair<uint64_t, int>> issued(kLag);
  size_t t = 0;
  uint64_t n = 0;
  for (auto _ : state) {
    const size_t next = t + 1 == data.labels.size() ? 0 : t + 1;
    model->Prefetch(View(data, next, sparse));
    std::pair<uint64_t, int>& slot = issued[n % kLag];
    if (n >= kLag) {
      benchmark::DoNotOptimize(model->Reveal(slot.first, slot.second));
    }
    slot = {model->Issue(View(data, t, sparse), 0)->prediction_id,
            data.labels[t]};
    ++n;
    t = next;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["pending"] = static_cast<double>(model->pending_count());
}

// Classic with a comparator: the path the service runs (TD_gamma kept per
// example).
BENCHMARK_CAPTURE(Run, W1_classic_bound, kW1, Algorithm::kClassic, true);
BENCHMARK_CAPTURE(Run, W2_classic_bound, kW2, Algorithm::kClassic, true);
BENCHMARK_CAPTURE(Run, W3_classic_bound, kW3, Algorithm::kClassic, true);
// Without a comparator.
BENCHMARK_CAPTURE(Run, W1_classic, kW1, Algorithm::kClassic, false);
BENCHMARK_CAPTURE(Run, W2_classic, kW2, Algorithm::kClassic, false);
BENCHMARK_CAPTURE(Run, W3_classic, kW3, Algorithm::kClassic, false);
// Batches of dense rows.
BENCHMARK_CAPTURE(RunDense, W1_classic, kW1, false);
BENCHMARK_CAPTURE(RunDense, W2_classic, kW2, false);
BENCHMARK_CAPTURE(RunDense, W1_classic_bound, kW1, true);
// The averaged learner keeps a second accumulator.
BENCHMARK_CAPTURE(Run, W1_averaged_bound, kW1, Algorithm::kAveraged, true);
BENCHMARK_CAPTURE(Run, W2_averaged_bound, kW2, Algorithm::kAveraged, true);
BENCHMARK_CAPTURE(Run, W3_averaged_bound, kW3, Algorithm::kAveraged, true);
// Predictions issued then revealed, pending within a shared budget or not.
BENCHMARK_CAPTURE(IssueReveal, W1, kW1, false);
BENCHMARK_CAPTURE(IssueReveal, W1_budget, kW1, true);
BENCHMARK_CAPTURE(IssueReveal, W3, kW3, false);
BENCHMARK_CAPTURE(IssueReveal, W3_budget, kW3, true);
// Scores only.
BENCHMARK_CAPTURE(Predict, W1, kW1);
BENCHMARK_CAPTURE(Predict, W2, kW2);
BENCHMARK_CAPTURE(Predict, W3, kW3);
// W3 with its certificate frozen over 2,000 or 16,384 examples' coordinates.
BENCHMARK_CAPTURE(RunFrozen, W3_certificate, kW3)->Arg(2000)->Arg(16384);
// A multiclass model of 10 classes (docs/design.md section 2.8).
BENCHMARK_CAPTURE(Run, W6_multiclass, kW6, Algorithm::kClassic, false);
BENCHMARK_CAPTURE(RunDense, W6_multiclass, kW6, false);
BENCHMARK_CAPTURE(RunCertificate, W6_multiclass_certificate, kW6);
BENCHMARK_CAPTURE(Run, W6_multiclass_averaged, kW6, Algorithm::kAveraged,
                  false);

}  // namespace
}  // namespace perceptron

BENCHMARK_MAIN();
