// The freeze of a certificate whose stream cycles (docs/certificate.md,
// "Limits and the freeze"): past the limit, an example equal to a row kept
// before it counts that row again for the solver, and one equal to a row
// after it counts that row, so a stream cycling through fewer rows than the
// limit and the slack together does not fill its slack with copies: it is
// frozen once a solution converges with no count waiting, and the bound stays
// the comparator's over every example.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/certificate_tracker.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/certificate_rounds.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::BoundOf;
using testing::Refresher;

// 150 rows cycled 40 times through a model that keeps 100 and may keep 100
// more, with a refresher that comes at the 50th example and then at the
// 500th: the rows after the limit are 50, the copies of the first 100 count
// on them, and the freeze comes with the solution that converged over the
// rows before the limit and every copy of them seen. U bounds the updates at
// every example and equals its comparator's bound over the whole stream. The
// journal's rows, given to a model restored mid-freeze, carry it on to the
// same kind of freeze.
TEST(CertificateFreezeTest, ACyclingStreamWaitsForTheConvergedSolution) {
  testing::StreamSpec spec;
  spec.seed = 21;
  spec.dimension = 6;
  spec.length = 150;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100, /*slack=*/100);
  model->SetJournaling(true);
  model->TakeJournal();
  Refresher refresher(config.weight_dimension());
  KeptRows journaled;
  auto journal = [&](Model* m, KeptRows* rows) {
    Journal j = m->TakeJournal();
    CertificateTracker::Apply(
        {j.certificate_rows_cleared, j.certificate_rows, j.certificate_repeats},
        rows);
  };
  std::vector<size_t> order;
  std::unique_ptr<Model> restored;
  constexpr int kPasses = 40;
  for (int pass = 0; pass < kPasses; ++pass) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      order.push_back(t);
      if (restored != nullptr) {
        ASSERT_TRUE(restored->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      }
      if (order.size() == 50) refresher.Round(model.get());
      if (order.size() == 500) {
        // Rounds until the freeze: nothing learned meanwhile, so the solver
        // goes on over the same rows.
        for (int k = 0; k < 100 && model->certificate()->phase() ==
                                       CertificatePhase::kFreezing;
             ++k) {
          refresher.Round(model.get());
        }
      }
      const CertificateReport r =
          model->certificate()->Report(model->CertificateRadius(), false);
      if (r.available) {
        ASSERT_LE(static_cast<double>(model->counters().updates), r.upper)
            << "at " << order.size();
      }
      if (order.size() == 400) {
        // Freezing since the 100th example, solved once at the 50th over
        // 50 rows: carried over with the journal's rows.
        ASSERT_EQ(r.phase, CertificatePhase::kFreezing);
        journal(model.get(), &journaled);
        EXPECT_EQ(journaled.examples(), 400u);
        EXPECT_EQ(journaled.size(), 150u);
        restored = *Model::FromState(model->ExportState());
        ASSERT_TRUE(restored->AttachCertificateRows(journaled));
        restored->EnableCertificate(100, 100);
        EXPECT_EQ(restored->ExportState().certificate,
                  model->ExportState().certificate);
      }
    }
  }
  const double radius = model->CertificateRadius();
  const CertificateReport r = model->certificate()->Report(radius);
  ASSERT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.reason,
            "the examples kept reached 100 rows: perceptrond "
            "--certificate_examples");
  // Frozen by the rounds at the 500th example, over the rows before the
  // limit and their copies: the first 50 seen 4 times by then, the other 50
  // 3 times.
  EXPECT_EQ(r.frozen_at, 350u);
  EXPECT_EQ(r.solved, 350u);
  EXPECT_EQ(r.kept, 350u);
  EXPECT_EQ(r.kept_rows, 100u);
  EXPECT_EQ(r.examples, order.size());
  EXPECT_NEAR(BoundOf(config, s, order, r.u, r.gamma), r.upper, 1e-9 * r.upper);

  // The restored model, refreshed by its own solver, also freezes converged,
  // its figures its comparator's over its stream.
  Refresher again(config.weight_dimension());
  Certificate c;
  do {
    c = again.Round(restored.get());
  } while (restored->certificate()->phase() == CertificatePhase::kFreezing);
  const CertificateReport rr = restored->certificate()->Report(radius);
  ASSERT_EQ(rr.phase, CertificatePhase::kFrozen);
  EXPECT_TRUE(rr.converged);
  EXPECT_EQ(rr.examples, order.size());
  EXPECT_LE(static_cast<double>(restored->counters().updates), rr.upper);
  EXPECT_NEAR(BoundOf(config, s, order, rr.u, rr.gamma), rr.upper,
              1e-9 * rr.upper);
}

// A cycle through more rows than the limit and the slack together still
// fills the slack, with the rows after the limit alone (no copies), and
// freezes at the candidates installed last, its bound still valid.
TEST(CertificateFreezeTest, MoreRowsThanTheLimitAndTheSlackStillFillIt) {
  testing::StreamSpec spec;
  spec.seed = 22;
  spec.dimension = 6;
  spec.length = 250;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100, /*slack=*/100);
  Refresher refresher(config.weight_dimension());
  std::vector<size_t> order;
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      order.push_back(t);
      if (order.size() == 50) refresher.Round(model.get());
    }
  }
  const CertificateReport r =
      model->certificate()->Report(model->CertificateRadius());
  ASSERT_EQ(r.phase, CertificatePhase::kFrozen);
  // At the 201st new row: the 100 before the limit and the 100 after it
  // leave it no room.
  EXPECT_EQ(r.frozen_at, 201u);
  EXPECT_EQ(r.solved, 50u);
  EXPECT_LE(static_cast<double>(model->counters().updates), r.upper);
  EXPECT_NEAR(BoundOf(config, s, order, r.u, r.gamma), r.upper, 1e-9 * r.upper);
}

// A stream that stops with its slack just full is not frozen yet: the
// slack is full, not passed, so the solver may still converge over the rows
// before the limit (a model restored from its state and rows is the same),
// and only a new row after that freezes the candidates installed last.
TEST(CertificateFreezeTest, ASlackJustFullWaitsForTheNextNewRow) {
  testing::StreamSpec spec;
  spec.seed = 3;
  spec.dimension = 5;
  spec.length = 111;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100, /*slack=*/10);
  model->SetJournaling(true);
  model->TakeJournal();
  Refresher refresher(config.weight_dimension());
  for (size_t t = 0; t < 110; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t == 49) refresher.Round(model.get());
  }
  const double radius = model->CertificateRadius();
  CertificateReport r = model->certificate()->Report(radius);
  ASSERT_EQ(r.phase, CertificatePhase::kFreezing);
  EXPECT_EQ(r.kept_rows, 100u);  // and the 10 after the limit

  Journal j = model->TakeJournal();
  KeptRows rows;
  CertificateTracker::Apply(
      {j.certificate_rows_cleared, j.certificate_rows, j.certificate_repeats},
      &rows);
  auto restored = *Model::FromState(model->ExportState());
  ASSERT_TRUE(restored->AttachCertificateRows(rows));
  restored->EnableCertificate(100, 10);
  EXPECT_EQ(restored->ExportState().certificate,
            model->ExportState().certificate);
  ASSERT_EQ(restored->certificate()->phase(), CertificatePhase::kFreezing);

  // The solver's turn: converged over the 100 rows before the limit.
  for (int k = 0;
       k < 100 && model->certificate()->phase() == CertificatePhase::kFreezing;
       ++k) {
    refresher.Round(model.get());
  }
  r = model->certificate()->Report(radius);
  ASSERT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.frozen_at, 100u);
  EXPECT_EQ(r.examples, 110u);
  EXPECT_EQ(r.reason.find("filled as many again"), std::string::npos)
      << r.reason;
  EXPECT_LE(static_cast<double>(model->counters().updates), r.upper);
  EXPECT_NEAR(BoundOf(config, s, 110, r.u, r.gamma), r.upper, 1e-9 * r.upper);

  // A new row first: frozen there, at the candidates installed last.
  ASSERT_TRUE(restored->Learn(FeatureView::Dense(s.x[110]), s.y[110]).ok());
  const CertificateReport q = restored->certificate()->Report(radius);
  ASSERT_EQ(q.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(q.frozen_at, 111u);
  EXPECT_EQ(q.solved, 50u);
  EXPECT_NE(q.reason.find("filled as many again"), std::string::npos)
      << q.reason;
  EXPECT_LE(static_cast<double>(restored->counters().updates), q.upper);
  EXPECT_NEAR(BoundOf(config, s, 111, q.u, q.gamma), q.upper, 1e-9 * q.upper);
}

// A freeze is pressed (its refresher solves without resting) while new rows
// after the limit come at a pace that fills the slack within
// kPressedSolves solves; repeats of rows kept, or new rows that trickle in,
// do not press it.
TEST(CertificateFreezeTest, OnlyNewRowsComingFastPressAFreeze) {
  testing::StreamSpec spec;
  spec.seed = 23;
  spec.dimension = 6;
  spec.length = 300;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100, /*slack=*/100);
  CertificateTracker* t = model->certificate();
  CertificateSolver solver(config.weight_dimension());
  // Solutions of one pass that do not converge: the freeze waits.
  auto round = [&] {
    std::vector<uint32_t> repeats;
    KeptRows rows = t->Take(&repeats);
    solver.Add(std::move(rows), repeats);
    CertificateOptions options;
    options.max_passes = 1;
    options.tolerance = 0;
    const Certificate c = solver.Solve(model->CertificateRadius(), options);
    ASSERT_FALSE(c.converged);
    const std::vector<std::vector<double>> vs = CandidatesFrom(c);
    t->Install(vs, HingeSums(solver.rows(), vs), c.lower, c.converged,
               solver.size(), t->generation(), KeptRows(), nullptr,
               &solver.rows());
    ASSERT_EQ(t->phase(), CertificatePhase::kFreezing);
  };
  auto learn = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[k]), s.y[k]).ok());
    }
  };
  learn(0, 100);
  round();
  EXPECT_FALSE(t->pressed());  // no row after the limit yet
  learn(100, 130);             // 30 new rows, 70 of room: 30 * 16 >= 70
  round();
  EXPECT_TRUE(t->pressed());
  learn(0, 130);  // repeats only
  round();
  EXPECT_FALSE(t->pressed());
  learn(130, 133);  // 3 new rows, 67 of room: 3 * 16 < 67
  round();
  EXPECT_FALSE(t->pressed());
  learn(133, 170);
  round();
  EXPECT_TRUE(t->pressed());
  EXPECT_EQ(t->Report(1).examples, 300u);
}

// A wide model's coordinates count against its limit in bytes as the rows
// that bring them are kept, so the limit holds and the rows kept for the
// solver are the same whatever the solver's pace: with no solve at all, a
// solve every 25 examples or every 300, and carried over mid-way with the
// journal's rows. The test counts the bytes itself: each row's RowBytes
// and kWideCoordinateBytes for each coordinate no row before it used.
TEST(CertificateFreezeTest, AWideModelsLimitHoldsWhateverTheSolversPace) {
  ModelConfig config;
  config.hash_bits = 20;
  config.dimension = 1u << 20;
  std::mt19937_64 random(7);
  std::normal_distribution<double> normal;
  struct Row {
    std::vector<uint32_t> indices;
    std::vector<double> values;
    int label;
  };
  std::vector<Row> rows(1500);
  for (Row& row : rows) {
    std::set<uint32_t> at;
    while (at.size() < 8) at.insert(random() % config.dimension);
    row.indices.assign(at.begin(), at.end());
    for (size_t k = 0; k < at.size(); ++k) {
      row.values.push_back(normal(random) + 3);  // never 0
    }
    row.label = random() % 2 ? 1 : -1;
  }
  constexpr uint64_t kLimitBytes = uint64_t{1} << 20;
  // The rows kept before the limit, counted here.
  uint64_t want = 0;
  {
    std::set<uint32_t> used;
    uint64_t bytes = 0;
    while (bytes < kLimitBytes && want < rows.size()) {
      std::vector<uint32_t> at = rows[want].indices;
      at.push_back(config.weight_dimension() - 1);  // the bias
      uint64_t fresh = 0;
      for (uint32_t i : at) fresh += used.insert(i).second;
      bytes += CertificateTracker::RowBytes(at.size()) +
               fresh * CertificateTracker::kWideCoordinateBytes;
      ++want;
    }
    ASSERT_LT(want, rows.size() / 2);
  }
  auto learn = [&](Model* m, const Row& row) {
    ASSERT_TRUE(
        m->Learn(FeatureView::Sparse(row.indices, row.values), row.label).ok());
  };
  for (const size_t pace : {size_t{0}, size_t{25}, size_t{300}}) {
    SCOPED_TRACE(pace);
    auto model = *Model::Create(config);
    model->EnableCertificate(/*limit=*/100000, /*slack=*/100000, kLimitBytes);
    model->SetJournaling(true);
    Refresher refresher(config.weight_dimension());
    KeptRows journaled;
    for (size_t t = 0; t < rows.size(); ++t) {
      learn(model.get(), rows[t]);
      if (pace > 0 && t % pace == pace - 1) refresher.Round(model.get());
      const CertificateReport r = model->certificate()->Report(1, false);
      ASSERT_EQ(r.kept_rows, std::min<uint64_t>(t + 1, want)) << "at " << t;
      // Keeping below the limit; past it freezing, or frozen once a solve
      // converged over the rows before it.
      ASSERT_EQ(r.phase == CertificatePhase::kKeeping, t + 1 < want)
          << "at " << t;
    }
    const CertificateReport r = model->certificate()->Report(1, false);
    EXPECT_LE(r.bytes, kLimitBytes + (kLimitBytes >> 1));
    // Freezing or frozen, it says which limit and flag.
    EXPECT_EQ(r.reason,
              absl::StrCat("the examples kept reached 1 MiB at ", want,
                           " rows, the certificate's memory per "
                           "model: perceptrond "
                           "--certificate_model_mb"));
    if (pace != 0) continue;
    // Carried over with its rows, the restored model counts the same.
    const Journal j = model->TakeJournal();
    CertificateTracker::Apply(
        {j.certificate_rows_cleared, j.certificate_rows, j.certificate_repeats},
        &journaled);
    ASSERT_EQ(journaled.size(), rows.size());
    auto restored = *Model::FromState(model->ExportState());
    ASSERT_TRUE(restored->AttachCertificateRows(journaled));
    restored->EnableCertificate(100000, 100000, kLimitBytes);
    EXPECT_EQ(restored->ExportState().certificate,
              model->ExportState().certificate);
    const CertificateReport again = restored->certificate()->Report(1, false);
    EXPECT_EQ(again.kept_rows, want);
    EXPECT_EQ(again.phase, CertificatePhase::kFreezing);
  }
}

// The same for a wide model given dense examples: each coordinate of the
// first row counts with it (every row uses them all).
TEST(CertificateFreezeTest, AWideModelsDenseRowsCountTheirCoordinates) {
  ModelConfig config;
  config.dimension = 70000;
  ASSERT_TRUE(IsWide(config.weight_dimension()));
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> uniform(1, 2);  // never 0
  std::vector<double> x(config.dimension);
  constexpr uint64_t kLimitBytes = uint64_t{32} << 20;
  const uint64_t row = CertificateTracker::RowBytes(config.weight_dimension());
  const uint64_t first = row + config.weight_dimension() *
                                   CertificateTracker::kWideCoordinateBytes;
  ASSERT_LT(first, kLimitBytes);
  // The rows kept: the first with its coordinates, then rows alone.
  const uint64_t want = 1 + (kLimitBytes - first + row - 1) / row;
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100000, /*slack=*/100000, kLimitBytes);
  for (uint64_t t = 0; t < want + 3; ++t) {
    for (double& v : x) v = uniform(random);
    ASSERT_TRUE(
        model->Learn(FeatureView::Dense(x), random() % 2 ? 1 : -1).ok());
    const CertificateReport r = model->certificate()->Report(1, false);
    ASSERT_EQ(r.kept_rows, std::min(t + 1, want)) << "at " << t;
  }
}

// Each example counts the row equal to it, whatever order the rows come in:
// in the order kept (the tracker then finds the row after the last one met
// without its table), backwards, by strides, at random, twice in a row, and
// past the limit (the rows after it, while freezing). The rows' counts, told
// apart by their first value, are the test's own tally of the examples, and
// a model restored halfway with the journal's rows counts the same.
TEST(CertificateFreezeTest, EachExampleCountsItsOwnRowWhateverTheOrder) {
  constexpr int kRows = 40;
  ModelConfig config;
  config.dimension = 3;
  config.bias = false;
  config.normalize = false;
  std::vector<std::vector<double>> x(kRows);
  for (int t = 0; t < kRows; ++t) x[t] = {t + 1.0, std::sin(t), std::cos(t)};
  auto label = [](int t) { return t % 3 == 0 ? -1 : 1; };
  std::vector<int> order;
  for (int t = 0; t < 30; ++t) order.push_back(t);  // kept in order
  for (int c = 0; c < 3; ++c) {
    for (int t = 0; t < 30; ++t) order.push_back(t);  // cycled
  }
  for (int t = 29; t >= 0; --t) order.push_back(t);  // backwards
  for (int t = 0; t < 30; t += 3) order.push_back(t);
  for (int t = 0; t < 30; ++t) {
    order.push_back(t);  // twice in a row
    order.push_back(t);
  }
  for (int t = 30; t < kRows; ++t) order.push_back(t);  // past the limit
  std::mt19937_64 random(8);
  for (int k = 0; k < 400; ++k) {
    const int t = static_cast<int>(random() % kRows);
    if (k % 5 == 0) {
      for (int u = t; u < std::min(kRows, t + 12); ++u) order.push_back(u);
    } else {
      order.push_back(t);
    }
  }
  auto model = *Model::Create(config);
  model->EnableCertificate(25, 1000);
  model->SetJournaling(true);
  model->TakeJournal();
  std::unique_ptr<Model> restored;
  std::vector<uint64_t> tally(kRows, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const int t = order[k];
    ASSERT_TRUE(model->Learn(FeatureView::Dense(x[t]), label(t)).ok());
    if (restored != nullptr) {
      ASSERT_TRUE(restored->Learn(FeatureView::Dense(x[t]), label(t)).ok());
    }
    ++tally[t];
    if (k == order.size() / 2) {
      Journal j = model->TakeJournal();
      KeptRows rows;
      CertificateTracker::Apply({j.certificate_rows_cleared, j.certificate_rows,
                                 j.certificate_repeats},
                                &rows);
      restored = *Model::FromState(model->ExportState());
      ASSERT_TRUE(restored->AttachCertificateRows(std::move(rows)));
      restored->EnableCertificate(25, 1000);
    }
  }
  ASSERT_EQ(model->certificate()->phase(), CertificatePhase::kFreezing);
  for (const Model* m : {model.get(), restored.get()}) {
    const std::optional<KeptRows> rows = m->certificate()->RowsNow(nullptr);
    ASSERT_TRUE(rows.has_value());
    ASSERT_EQ(rows->size(), static_cast<size_t>(kRows));
    for (size_t r = 0; r < rows->size(); ++r) {
      const int t = static_cast<int>(rows->values(r)[0]) - 1;
      ASSERT_GE(t, 0);
      ASSERT_LT(t, kRows);
      EXPECT_EQ(rows->count(r), tally[t]) << "row " << r << ", example " << t;
    }
  }
}

// A stream cycling through more rows than the limit counts the rows before
// it again while every solve runs. A converged solution over exactly those
// rows freezes them all the same: its U covers the examples counted while it
// was solved (the bound of its comparator over the whole stream), then every
// later one.
TEST(CertificateFreezeTest, ExamplesCountedWhileASolveRunsDoNotHoldItBack) {
  testing::StreamSpec spec;
  spec.seed = 23;
  spec.dimension = 5;
  spec.length = 80;
  spec.bias = true;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(50, 1000);
  std::vector<size_t> order;
  auto learn = [&](size_t t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    order.push_back(t);
  };
  for (size_t t = 0; t < s.x.size(); ++t) learn(t);
  ASSERT_EQ(model->certificate()->phase(), CertificatePhase::kFreezing);
  Refresher refresher(config.weight_dimension());
  const Certificate c = refresher.Round(model.get(), [&] {
    for (size_t t = 0; t < 30; ++t) learn(t);  // rows before the limit
  });
  ASSERT_TRUE(c.converged);
  const double radius = model->CertificateRadius();
  CertificateReport r = model->certificate()->Report(radius);
  EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(r.frozen_at, 50u);
  EXPECT_EQ(r.examples, order.size());
  EXPECT_NEAR(BoundOf(config, s, order, r.u, r.gamma), r.upper, 1e-9 * r.upper);
  EXPECT_GE(r.upper, static_cast<double>(model->counters().updates));
  for (size_t t = 0; t < s.x.size(); ++t) learn(t);
  r = model->certificate()->Report(radius);
  EXPECT_NEAR(BoundOf(config, s, order, r.u, r.gamma), r.upper, 1e-9 * r.upper);
}

// An example counts a kept row again only if it is that row bit for bit: its
// label, its indices and its values (the row's 128-bit key, KeyOf).
TEST(CertificateTrackerTest, OnlyAnExampleEqualBitForBitCountsARowAgain) {
  ModelConfig config;
  config.dimension = 8;
  config.bias = false;
  config.normalize = false;
  auto model = *Model::Create(config);
  model->EnableCertificate(1000, 1000);
  struct Row {
    std::vector<uint32_t> i;
    std::vector<double> v;
    int label;
  };
  const double next = std::nextafter(-1.0, 0.0);
  const std::vector<Row> rows = {
      {{1, 5}, {0.5, -1}, 1},        // a row
      {{1, 6}, {0.5, -1}, 1},        // another index
      {{1, 5}, {0.5, -1}, -1},       // another label
      {{1, 5}, {0.5, next}, 1},      // a value one bit away
      {{1, 5, 7}, {0.5, -1, 2}, 1},  // one more non-zero
      {{5, 6}, {0.5, -1}, 1},        // the same bytes of values, indices apart
      {{1, 5}, {0.5, -1}, 1},        // the first again
      {{1, 6}, {0.5, -1}, 1},        // the second again
  };
  for (const Row& r : rows) {
    ASSERT_TRUE(model->Learn(FeatureView::Sparse(r.i, r.v), r.label).ok());
  }
  const CertificateReport report =
      model->certificate()->Report(model->CertificateRadius(), false);
  EXPECT_EQ(report.kept_rows, 6u);
  EXPECT_EQ(report.kept, 8u);
}

// Cyclic training (200 passes over 60 examples) keeps 60 rows, each
// standing for its 200 copies: U bounds the updates at every example and is
// the solution over the 12,000 examples, the journal's deltas rebuild the
// rows with their counts, and a state with them goes on bit for bit.
TEST(CertificateTrackerTest, CyclicTrainingKeepsEachRowOnceWithItsCount) {
  testing::StreamSpec spec;
  spec.seed = 5;
  spec.dimension = 5;
  spec.length = 60;
  spec.bias = true;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(1000, 1000);
  model->SetJournaling(true);
  model->TakeJournal();
  Refresher refresher(config.weight_dimension());
  KeptRows journaled;
  constexpr int kPasses = 200;
  for (int pass = 0; pass < kPasses; ++pass) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      const CertificateReport r =
          model->certificate()->Report(model->CertificateRadius(), false);
      if (r.available) {
        ASSERT_GE(r.upper, static_cast<double>(model->counters().updates));
      }
    }
    if (pass % 7 == 3) refresher.Round(model.get());
    if (pass % 5 == 0) {
      Journal j = model->TakeJournal();
      CertificateTracker::Apply({j.certificate_rows_cleared, j.certificate_rows,
                                 j.certificate_repeats},
                                &journaled);
    }
  }
  Journal j = model->TakeJournal();
  CertificateTracker::Apply(
      {j.certificate_rows_cleared, j.certificate_rows, j.certificate_repeats},
      &journaled);
  Certificate c;
  do {
    c = refresher.Round(model.get());
  } while (!c.converged);
  const double radius = model->CertificateRadius();
  const CertificateReport r = model->certificate()->Report(radius);
  EXPECT_EQ(r.phase, CertificatePhase::kKeeping);
  EXPECT_EQ(r.kept_rows, s.x.size());
  EXPECT_EQ(r.kept, kPasses * s.x.size());
  EXPECT_EQ(r.solved, kPasses * s.x.size());
  EXPECT_EQ(refresher.solver.rows().examples(), kPasses * s.x.size());
  EXPECT_GE(r.upper, static_cast<double>(model->counters().updates));

  // The same examples as 12,000 rows: the same optimum.
  CertificateSolver copies(config.weight_dimension());
  const Preparer preparer(config);
  for (int pass = 0; pass < kPasses; ++pass) {
    for (size_t t = 0; t < s.x.size(); ++t) {
      copies.Add(*preparer.Prepare(FeatureView::Dense(s.x[t])), s.y[t]);
    }
  }
  const Certificate exact = copies.Solve(radius, {});
  ASSERT_TRUE(exact.converged);
  EXPECT_NEAR(r.upper, exact.upper, 1e-3 * exact.upper);
  EXPECT_LE(r.lower, exact.upper);
  EXPECT_LE(exact.lower, r.upper);

  // The journal's deltas are the rows with their counts.
  EXPECT_EQ(journaled.size(), s.x.size());
  EXPECT_TRUE(journaled == refresher.solver.rows());
  auto restored = *Model::FromState(model->ExportState());
  ASSERT_TRUE(restored->AttachCertificateRows(journaled));
  restored->EnableCertificate(1000, 1000);
  EXPECT_EQ(restored->ExportState().certificate,
            model->ExportState().certificate);
  EXPECT_FALSE(restored->certificate()->due());
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    ASSERT_TRUE(restored->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  EXPECT_EQ(model->certificate()->Report(radius).upper,
            restored->certificate()->Report(radius).upper);
  EXPECT_EQ(restored->certificate()->Report(radius).kept,
            (kPasses + 1) * s.x.size());
}

}  // namespace
}  // namespace perceptron
