// The certificate solver (core/certificate.h) on issue 14's shape: 10^5
// kept examples of d = 20 (normalized, bias on), labels from a random
// separator with 10% flipped. Reports the passes to the 1e-4 gap and the
// cost of a cold solve and of a warm refresh after 1% more examples; the
// cold solve of W2's shape (d = 1000, 5,000 kept: a model's 64 MiB holds about
// 5,500); and a kernel model's cold solve at its limit of kept examples.
// Run: build/release/bench/core/certificate_benchmark
#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/candidate_sums.h"
#include "core/certificate.h"
#include "core/certificate_tracker.h"
#include "core/kernel_certificate.h"
#include "core/multiclass_certificate.h"

namespace perceptron {
namespace {

constexpr uint32_t kDim = 20;

struct Data {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
};

Data MakeData(size_t n, uint32_t dim = kDim) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  std::vector<double> separator(dim);
  for (double& v : separator) v = normal(rng);
  Data d;
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> x(dim);
    double s = 0;
    for (uint32_t i = 0; i < dim; ++i) s += separator[i] * (x[i] = normal(rng));
    d.x.push_back(std::move(x));
    d.y.push_back((s >= 0) == (rng() % 10 != 0) ? 1 : -1);
  }
  return d;
}

void Fill(const Data& d, size_t from, size_t to, const Preparer& preparer,
          CertificateSolver* solver) {
  for (size_t t = from; t < to; ++t) {
    solver->Add(*preparer.Prepare(FeatureView::Dense(d.x[t])), d.y[t]);
  }
}

ModelConfig Config(uint32_t dim = kDim) {
  ModelConfig c;
  c.dimension = dim;
  return c;
}

// The shapes solved: 10^4 to 3 x 10^5 kept examples of d = 20, and W2's.
void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "d"})
      ->Args({10000, kDim})
      ->Args({100000, kDim})
      ->Args({300000, kDim})
      ->Args({5000, 1000})
      ->Unit(benchmark::kMillisecond);
}

void BM_ColdSolve(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const uint32_t dim = static_cast<uint32_t>(state.range(1));
  const Data data = MakeData(n, dim);
  const Preparer preparer(Config(dim));
  for (auto _ : state) {
    state.PauseTiming();
    CertificateSolver solver(dim + 1);
    Fill(data, 0, n, preparer, &solver);
    state.ResumeTiming();
    const Certificate c = solver.Solve(1.0, {});
    state.counters["passes"] = c.passes;
    state.counters["gap"] = (c.upper - c.lower) / c.upper;
    state.counters["U"] = c.upper;
    state.counters["kept_bytes_per_example"] =
        static_cast<double>(solver.bytes()) / n;
    // Seconds per example per pass: constant if a pass costs linearly.
    state.counters["per_example_pass"] =
        benchmark::Counter(static_cast<double>(c.passes) * n,
                           benchmark::Counter::kIsIterationInvariantRate |
                               benchmark::Counter::kInvert);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ColdSolve)->Apply(Shapes);

void BM_WarmRefresh(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const Data data = MakeData(n + n / 100);
  const Preparer preparer(Config());
  for (auto _ : state) {
    state.PauseTiming();
    CertificateSolver solver(kDim + 1);
    Fill(data, 0, n, preparer, &solver);
    solver.Solve(1.0, {});
    Fill(data, n, n + n / 100, preparer, &solver);
    state.ResumeTiming();
    const Certificate c = solver.Solve(1.0, {});
    state.counters["passes"] = c.passes;
  }
}
BENCHMARK(BM_WarmRefresh)->Arg(100000)->Unit(benchmark::kMillisecond);

// Solves as the server's refresher does: rounds of at most 20 passes
// (kPassesPerRefresh in server/ops/certificate_refresher.cc) to the gap it
// solves to (kConvergedGap), until one has converged. Counts the rounds and
// passes and reports the last gap; returns the last solution.
template <typename Solver>
auto SolveInRounds(Solver& solver, double radius, benchmark::State& state) {
  CertificateOptions options;
  options.tolerance = kConvergedGap;
  options.max_passes = 20;
  int rounds = 0, passes = 0;
  decltype(solver.Solve(radius, options)) c;
  do {
    c = solver.Solve(radius, options);
    ++rounds;
    passes += c.passes;
  } while (!c.converged && rounds < 1000);
  state.counters["rounds"] = rounds;
  state.counters["passes"] = passes;
  state.counters["gap"] = (c.upper - c.lower) / c.upper;
  return c;
}

// A cold solve as the server's refresher runs it (SolveInRounds).
void BM_RefresherRounds(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const uint32_t dim = static_cast<uint32_t>(state.range(1));
  const Data data = MakeData(n, dim);
  const Preparer preparer(Config(dim));
  for (auto _ : state) {
    state.PauseTiming();
    CertificateSolver solver(dim + 1);
    Fill(data, 0, n, preparer, &solver);
    state.ResumeTiming();
    SolveInRounds(solver, 1.0, state);
  }
}
BENCHMARK(BM_RefresherRounds)->Apply(Shapes);

// W1's shape cycling: state.range(0) rows of d = 20 solved cold as the
// refresher runs it, then each row counted state.range(1) times more, as a
// stream cycling through them counts it, and solved again warm (only the warm
// solve is timed): its rounds and passes to the refresher's gap.
void BM_CycleRounds(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto again = static_cast<uint32_t>(state.range(1));
  const Data data = MakeData(n, kDim);
  const Preparer preparer(Config(kDim));
  std::vector<uint32_t> repeats;
  for (uint32_t k = 0; k < again; ++k) {
    for (size_t t = 0; t < n; ++t) repeats.push_back(static_cast<uint32_t>(t));
  }
  for (auto _ : state) {
    state.PauseTiming();
    CertificateSolver solver(kDim + 1);
    Fill(data, 0, n, preparer, &solver);
    SolveInRounds(solver, 1.0, state);
    solver.Add(KeptRows(), repeats);
    state.ResumeTiming();
    SolveInRounds(solver, 1.0, state);
  }
}
BENCHMARK(BM_CycleRounds)
    ->ArgNames({"n", "again"})
    ->Args({32768, 1})
    ->Args({32768, 5})
    ->Args({32768, 30})
    ->Unit(benchmark::kMillisecond);

// A kernel model's certificate at its limit (kKernelCertificateLimit = 2,000
// kept examples), rbf with sigma 1 on the same data.
void BM_KernelColdSolve(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const Data data = MakeData(n);
  ModelConfig config = Config();
  config.algorithm = Algorithm::kKernel;
  config.kernel.type = KernelType::kRbf;
  const Preparer preparer(config);
  KeptRows rows;
  for (size_t t = 0; t < n; ++t) {
    rows.Add(*preparer.Prepare(FeatureView::Dense(data.x[t])), data.y[t]);
  }
  for (auto _ : state) {
    state.PauseTiming();
    KernelCertificateSolver solver(kDim + 1, config.kernel);
    solver.Add(rows);
    state.ResumeTiming();
    const KernelCertificate c = solver.Solve(1.0, {});
    state.counters["passes"] = c.passes;
    state.counters["gap"] = (c.upper - c.lower) / c.upper;
    state.counters["U"] = c.upper;
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_KernelColdSolve)
    ->Arg(500)
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond);

// A frozen tracker's cost per labeled example on the learning path: the hinge
// terms of its candidates, for a dense x of dimension state.range(0).
void BM_ObserveFrozen(benchmark::State& state) {
  const uint32_t d = static_cast<uint32_t>(state.range(0));
  ModelConfig c;
  c.dimension = d;
  const Preparer preparer(c);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> xs(256, std::vector<double>(d));
  for (auto& x : xs)
    for (double& v : x) v = normal(rng);
  CertificateTracker tracker(/*limit=*/1, /*slack=*/1);
  tracker.Observe(*preparer.Prepare(FeatureView::Dense(xs[0])), 1);
  KeptRows rows = tracker.Take();
  // The five candidates a refresher installs (v and four multiples, three of
  // them scored from others: ScaledCandidates), or, as the second argument
  // 0 asks, five unrelated vectors, each summed.
  std::vector<std::vector<double>> vs;
  if (state.range(1) != 0) {
    Certificate solution;
    solution.u.resize(c.weight_dimension());
    for (double& e : solution.u) e = normal(rng);
    solution.gamma = 0.25;
    vs = CandidatesFrom(solution);
  } else {
    for (int k = 0; k < 5; ++k) {
      std::vector<double> v(c.weight_dimension());
      for (double& e : v) e = normal(rng);
      vs.push_back(std::move(v));
    }
  }
  const std::vector<double> sums = HingeSums(rows, vs);
  tracker.Install(vs, sums, 0, /*converged=*/true, tracker.taken(),
                  tracker.generation());
  if (tracker.phase() != CertificatePhase::kFrozen) {
    state.SkipWithError("the tracker did not freeze");
    return;
  }
  std::vector<Prepared> prepared;
  for (const auto& x : xs)
    prepared.push_back(*preparer.Prepare(FeatureView::Dense(x)));
  size_t t = 0;
  for (auto _ : state) {
    tracker.Observe(prepared[t++ % prepared.size()], 1);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ObserveFrozen)
    ->ArgNames({"d", "scaled"})
    ->Args({20, 1})
    ->Args({1000, 1})
    ->Args({20, 0})
    ->Args({1000, 0});

// A keeping tracker's cost per labeled example on the learning path when the
// stream cycles through n distinct rows of d = 20 (the service benchmark's W1
// cycles through 32,768) or of W2's d = 1000 (4,096): the candidates' hinge
// terms, the copy of the row and its lookup among the kept rows, which finds
// it and counts it again. The rows were taken and solved once, as a refresher
// does; the repeats since are taken every 2^16 examples, outside the timing.
// (Each example's values are read here first, from memory for W2's 32 MB of
// rows: the server's were just parsed.)
void BM_ObserveKeepingRepeats(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto dim = static_cast<uint32_t>(state.range(1));
  const Data d = MakeData(n, dim);
  const ModelConfig c = Config(dim);
  const Preparer preparer(c);
  std::vector<Prepared> prepared;
  for (const auto& x : d.x) {
    prepared.push_back(*preparer.Prepare(FeatureView::Dense(x)));
  }
  CertificateTracker tracker(/*limit=*/4 * n, /*slack=*/n);
  for (size_t t = 0; t < n; ++t) tracker.Observe(prepared[t], d.y[t]);
  KeptRows rows = tracker.Take();
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  Certificate solution;
  solution.u.resize(c.weight_dimension());
  for (double& e : solution.u) e = normal(rng);
  solution.gamma = 0.25;
  std::vector<std::vector<double>> vs = CandidatesFrom(solution);
  const std::vector<double> sums = HingeSums(rows, vs);
  tracker.Install(vs, sums, 0, /*converged=*/false, tracker.taken(),
                  tracker.generation());
  if (tracker.phase() != CertificatePhase::kKeeping) {
    state.SkipWithError("the tracker is not keeping");
    return;
  }
  size_t t = 0;
  uint64_t i = 0;
  std::vector<uint32_t> repeats;
  for (auto _ : state) {
    tracker.Observe(prepared[t], d.y[t]);
    if (++t == n) t = 0;
    if ((++i & 0xffff) == 0) {
      state.PauseTiming();
      tracker.Take(&repeats);
      state.ResumeTiming();
    }
  }
  if (tracker.taken() != n) state.SkipWithError("a repeat was kept again");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ObserveKeepingRepeats)
    ->ArgNames({"n", "d"})
    ->Args({4096, kDim})
    ->Args({32768, kDim})
    ->Args({100000, kDim})
    ->Args({4096, 1000});  // W2's shape

// A fresh model's first stream while its certificate keeps: state.range(0)
// distinct rows of d = 20 (the Python package's benchmark keeps its first
// 100,000), each new to a tracker made for them and nothing taken (no
// refresher): the row's key, its lookup and its copy among the kept rows,
// per example. The memory is the allocator's again after the first
// iteration, so the kernel's faults on new memory are not counted here.
void BM_ObserveKeepingNew(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const Data d = MakeData(n);
  const Preparer preparer(Config());
  std::vector<Prepared> prepared;
  for (const auto& x : d.x) {
    prepared.push_back(*preparer.Prepare(FeatureView::Dense(x)));
  }
  for (auto _ : state) {
    auto tracker = std::make_unique<CertificateTracker>(n, n);
    for (size_t t = 0; t < n; ++t) tracker->Observe(prepared[t], d.y[t]);
    state.PauseTiming();
    if (tracker->Report(1.0, /*with_u=*/false).kept_rows != n) {
      state.SkipWithError("a row was not kept");
    }
    tracker.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_ObserveKeepingNew)->Arg(100000);

// A wide model's candidates scored on a sparse x (W3's shape: 32 non-zeros
// out of d = 2^20), the tracker's per-example work once it has a support of
// state.range(0) coordinates, state.range(1) eighths of x's non-zeros among
// them (W3's are all: its rows cycle): the candidates a refresher installs
// (two of them summed), looked up coordinate by coordinate.
void BM_SupportScores(benchmark::State& state) {
  constexpr uint32_t d = 1u << 20;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  std::vector<uint32_t> coordinates;
  {
    std::vector<uint32_t> all(d);
    for (uint32_t i = 0; i < d; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    coordinates.assign(all.begin(), all.begin() + state.range(0));
  }
  Certificate solution;
  solution.u.resize(coordinates.size());
  for (double& e : solution.u) e = normal(rng);
  solution.gamma = 0.25;
  const std::vector<std::vector<double>> vs = CandidatesFrom(solution);
  const ScaledCandidates scaled(vs);
  const auto support = CandidateSupport::Of(coordinates, &vs, d + 1);
  std::vector<Features> xs(4096);
  for (Features& x : xs) {
    x.sparse = true;
    for (int j = 0; j < 32; ++j) {
      x.indices.push_back(j % 8 < state.range(1)
                              ? coordinates[rng() % coordinates.size()]
                              : static_cast<uint32_t>(rng() % d));
    }
    std::sort(x.indices.begin(), x.indices.end());
    x.indices.erase(std::unique(x.indices.begin(), x.indices.end()),
                    x.indices.end());
    for (size_t j = 0; j < x.indices.size(); ++j)
      x.values.push_back(normal(rng));
  }
  std::vector<Prepared> prepared(xs.size());
  for (size_t t = 0; t < xs.size(); ++t) {
    prepared[t].x = xs[t].view();
    prepared[t].dimension = d;
  }
  std::vector<double> scores(vs.size());
  size_t t = 0;
  for (auto _ : state) {
    support->Scores(vs, scaled.summed(), prepared[t++ % prepared.size()],
                    scores.data());
    benchmark::DoNotOptimize(scores.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["MiB"] = static_cast<double>(support->bytes()) / (1 << 20);
}
BENCHMARK(BM_SupportScores)
    ->ArgNames({"coordinates", "eighths_in"})
    ->Args({40000, 8})
    ->Args({200000, 8})
    ->Args({200000, 1})
    ->Args({600000, 8});

// W3's shape (the service benchmark's sparse workload): n rows of 32
// non-zeros out of d = 2^20, labels from a random separator with 10% flipped,
// prepared as a model of that dimension prepares them; *radius their largest
// norm.
constexpr uint32_t kWide = 1u << 20;
KeptRows W3Rows(size_t n, uint64_t seed, double* radius) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> separator(kWide);
  for (double& v : separator) v = normal(rng);
  ModelConfig config;
  config.dimension = kWide;
  const Preparer preparer(config);
  KeptRows rows;
  *radius = 0;
  for (size_t t = 0; t < n; ++t) {
    Features x;
    x.sparse = true;
    while (x.indices.size() < 32) {
      x.indices.push_back(static_cast<uint32_t>(rng() % kWide));
      std::sort(x.indices.begin(), x.indices.end());
      x.indices.erase(std::unique(x.indices.begin(), x.indices.end()),
                      x.indices.end());
    }
    double s = 0;
    for (uint32_t i : x.indices)
      s += separator[i] * x.values.emplace_back(normal(rng));
    const Prepared p = *preparer.Prepare(x.view());
    *radius = std::max(*radius, p.norm);
    rows.Add(p, (s >= 0) == (rng() % 10 != 0) ? 1 : -1);
  }
  return rows;
}

// W3's shape (the service benchmark's sparse workload): state.range(0) rows
// of 32 non-zeros out of d = 2^20, labels from a random separator with 10%
// flipped: a wide solver (over the coordinates its rows use). Rows handed
// over as the tracker hands them (Add: coordinates to positions) and solved
// cold in rounds of at most 20 passes to the gap the refresher solves to.
void BM_WideRounds(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  ModelConfig config;
  config.dimension = kWide;
  double radius = 0;
  const KeptRows rows = W3Rows(n, 23, &radius);
  for (auto _ : state) {
    state.PauseTiming();
    KeptRows copy = rows;
    CertificateSolver solver(config.weight_dimension());
    state.ResumeTiming();
    solver.Add(std::move(copy));
    SolveInRounds(solver, radius, state);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_WideRounds)->Arg(20000)->Arg(32768)->Unit(benchmark::kMillisecond);

// The refresher's whole cycle on W3's shape, as a stream brings rows: each
// refresh adds the rows since the last (an eighth more, as the tracker's
// ripe() asks), solves for at most 20 passes, makes the candidates, sums
// their hinges over the rows and builds their support, the last refresh's
// candidates and support held meanwhile (as the tracker holds them), up to
// state.range(0) rows. What it allocates counts as much as what it computes.
void BM_WideRefreshes(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  ModelConfig config;
  config.dimension = kWide;
  double radius = 0;
  const KeptRows rows = W3Rows(n, 29, &radius);
  CertificateOptions options;
  options.tolerance = kConvergedGap;
  options.max_passes = 20;
  int refreshes = 0;
  double upper = 0;
  for (auto _ : state) {
    CertificateSolver solver(config.weight_dimension());
    std::vector<std::vector<double>> held;
    std::shared_ptr<const CandidateSupport> held_support;
    refreshes = 0;
    for (size_t done = 0; done < n;) {
      const size_t next = std::min(n, std::max(done + 64, done + done / 8));
      KeptRows more;
      for (size_t t = done; t < next; ++t) {
        more.Add(rows.indices(t), rows.values(t), rows.label(t));
      }
      done = next;
      solver.Add(std::move(more));
      const Certificate c = solver.Solve(radius, options);
      std::vector<std::vector<double>> vs = CandidatesFrom(c, nullptr);
      std::shared_ptr<const CandidateSupport> support = CandidateSupport::Of(
          solver.coordinates(), &vs, config.weight_dimension());
      std::vector<double> sums =
          HingeSums(solver.rows(), vs, *support->scaled());
      benchmark::DoNotOptimize(sums.data());
      held = std::move(vs);
      held_support = std::move(support);
      upper = c.upper;
      ++refreshes;
    }
  }
  state.counters["refreshes"] = refreshes;
  state.counters["U"] = upper;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_WideRefreshes)->Arg(9728)->Unit(benchmark::kMillisecond);

// W6's shape (the service benchmark's multiclass workload): state.range(0)
// rows of d = 64, each labeled with the highest of 10 random directions (10%
// of labels replaced by a random class), bias on. The multiclass solver as
// the server's refresher runs it: rounds of at most 20 passes to the gap it
// solves to, until one has converged; cold (the rows' first solve), then, as
// a stream cycling through them does, warm once every row is counted
// state.range(1) times more (only the warm solve is timed when that is > 0).
// 262,144 rows (136 MB of values) are far past the caches: a pass visits
// them in random order.
void BM_MulticlassRounds(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const uint32_t again = static_cast<uint32_t>(state.range(1));
  constexpr uint32_t kDim64 = 64;
  constexpr int kClasses = 10;
  std::mt19937_64 rng(17);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> us(kClasses, std::vector<double>(kDim64));
  for (auto& u : us)
    for (double& v : u) v = normal(rng);
  const Preparer preparer(Config(kDim64));
  KeptRows rows;
  double radius = 0;
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> x(kDim64);
    for (double& v : x) v = normal(rng);
    int best = 0;
    double top = -1e300;
    for (int r = 0; r < kClasses; ++r) {
      double s = 0;
      for (uint32_t i = 0; i < kDim64; ++i) s += us[r][i] * x[i];
      if (s > top) top = s, best = r;
    }
    if (rng() % 10 == 0) best = static_cast<int>(rng() % kClasses);
    const Prepared p = *preparer.Prepare(FeatureView::Dense(x));
    radius = std::max(radius, p.norm);
    rows.Add(p, best);
  }
  auto solve = [&](MulticlassCertificateSolver& solver) {
    state.counters["U"] = SolveInRounds(solver, radius, state).upper;
  };
  std::vector<uint32_t> every(n);
  for (size_t t = 0; t < n; ++t) every[t] = static_cast<uint32_t>(t);
  for (auto _ : state) {
    state.PauseTiming();
    MulticlassCertificateSolver solver(kClasses, kDim64 + 1);
    solver.Add(rows);
    if (again > 0) {
      solve(solver);
      for (uint32_t k = 0; k < again; ++k) solver.Add(KeptRows(), every);
    }
    state.ResumeTiming();
    solve(solver);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_MulticlassRounds)
    ->ArgNames({"n", "again"})
    ->Args({4096, 0})
    ->Args({4096, 1})
    ->Args({4096, 8})
    ->Args({32768, 0})
    ->Args({262144, 0})
    ->Unit(benchmark::kMillisecond);

// A frozen multiclass tracker's cost per labeled example on the learning
// path (the k class scores of its summed candidate): 10 classes, sparse rows
// of 30 non-zeros over 50,000 coordinates used, with the candidates over
// those coordinates at 2^20 (state.range(0) = 20: a wide model, scores by
// the table of positions) or dense over 2^16 coordinates (16: the widest a
// model is before its certificate goes wide).
void BM_ObserveFrozenMulticlass(benchmark::State& state) {
  const uint32_t bits = static_cast<uint32_t>(state.range(0));
  constexpr int kClasses = 10;
  constexpr size_t kUsed = 50000;
  ModelConfig c;
  c.dimension = (uint32_t{1} << bits) - (bits == 16 ? 1 : 0);  // and the bias
  for (int r = 0; r < kClasses; ++r) c.classes.push_back(std::to_string(r));
  const uint32_t w = c.weight_dimension();
  const Preparer preparer(c);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  std::vector<uint32_t> used(kUsed);
  for (uint32_t& i : used) i = static_cast<uint32_t>(rng() % c.dimension);
  // The rows' features (a Prepared borrows them).
  std::vector<std::vector<uint32_t>> all_indices(4096);
  std::vector<std::vector<double>> all_values(4096);
  std::vector<Prepared> prepared;
  KeptRows rows;
  for (int n = 0; n < 4096; ++n) {
    std::vector<uint32_t>& indices = all_indices[n];
    for (int j = 0; j < 30; ++j) indices.push_back(used[rng() % kUsed]);
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    std::vector<double>& values = all_values[n];
    values.resize(indices.size());
    for (double& v : values) v = normal(rng);
    prepared.push_back(*preparer.Prepare(FeatureView::Sparse(indices, values)));
    rows.Add(prepared.back(), static_cast<int>(rng() % kClasses));
  }
  // The solver's positions (the wide case) give the support and the
  // candidates' length.
  MulticlassCertificateSolver solver(kClasses, w);
  solver.Add(rows);
  const size_t m = solver.wide() ? solver.coordinates().size() : w;
  MulticlassCertificate solution;
  std::vector<double> v(m * kClasses);
  for (double& e : v) e = normal(rng);
  for (double scale : {1.0, 0.5, 2.0, 4.0}) {
    std::vector<double> scaled(v.size());
    for (size_t i = 0; i < v.size(); ++i) scaled[i] = scale * v[i];
    solution.candidates.push_back(std::move(scaled));
  }
  CertificateTracker tracker(/*limit=*/1, /*slack=*/1, UINT64_MAX, nullptr,
                             std::nullopt, w, kClasses);
  tracker.Observe(prepared[0], 0);
  (void)tracker.Take();
  std::shared_ptr<const CandidateSupport> support;
  if (solver.wide()) {
    support = CandidateSupport::Of(solver.coordinates(), &solution.candidates,
                                   w, kClasses);
  }
  tracker.Install(solution.candidates,
                  std::vector<double>(solution.candidates.size(), 0.0), 0,
                  /*converged=*/true, tracker.taken(), tracker.generation(),
                  KeptRows(), support);
  if (tracker.phase() != CertificatePhase::kFrozen) {
    state.SkipWithError("the tracker did not freeze");
    return;
  }
  size_t t = 0;
  for (auto _ : state) {
    tracker.Observe(prepared[t % prepared.size()], static_cast<int>(t % 10));
    ++t;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ObserveFrozenMulticlass)->ArgName("bits")->Arg(16)->Arg(20);

}  // namespace
}  // namespace perceptron

BENCHMARK_MAIN();
