// The certificate of a whole stream (docs/design.md section 2.7): a model's
// tracker, refreshed at random moments by a solver as the server's refresher
// does, reports at every example an upper value that bounds the classic rule's
// updates and equals the bound of the comparator it names; the freeze keeps it
// valid over a stream many times longer than what is kept, and equal to the
// exact certificate at the freeze point.
#include "core/certificate_tracker.h"

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/certificate_rounds.h"
#include "tests/core/state_bits.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::BoundOf;
using testing::Refresher;

TEST(CertificateTrackerTest, BoundsEveryPrefixOfRandomStreams) {
  int checks = 0, frozen = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    testing::StreamSpec spec;
    spec.seed = seed;
    spec.dimension = 2 + static_cast<uint32_t>(seed * 7 % 39);
    spec.length = 60 + seed * 13 % 300;
    spec.bias = seed % 2 == 0;
    spec.normalize = seed % 3 != 0;
    spec.margin = seed % 4 == 0 ? 0.0 : 0.02 * (seed % 5);
    spec.noise = seed % 5 == 0 ? 0.0 : 0.01 * (seed % 7);
    spec.norm_spread = spec.normalize ? 1.0 : 1.0 + (seed % 11);
    const testing::Stream s = testing::MakeStream(spec);
    const ModelConfig config = testing::StreamConfig(spec);
    auto model = *Model::Create(config);
    // Keep a third of the stream at most on some seeds, all of it on others.
    const uint64_t limit = seed % 2 ? s.x.size() / 3 : s.x.size() + 1;
    model->EnableCertificate(limit, /*slack=*/limit);
    Refresher refresher(config.weight_dimension());
    uint64_t state = seed;
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      if ((state >> 33) % 7 == 0) refresher.Round(model.get());
      const double radius = model->stats(false).bound.radius;
      const CertificateReport r = model->certificate()->Report(radius);
      ASSERT_NE(r.phase, CertificatePhase::kOff) << r.reason;
      EXPECT_EQ(r.examples, t + 1);
      if (!r.available) continue;
      EXPECT_LE(r.lower, r.upper) << "seed " << seed;
      EXPECT_LE(static_cast<double>(model->counters().updates),
                r.upper * (1 + 1e-9))
          << "seed " << seed << " at " << t + 1;
      if (t % 17 == 0 || t + 1 == s.x.size()) {
        ++checks;
        EXPECT_NEAR(BoundOf(config, s, t + 1, r.u, r.gamma), r.upper,
                    1e-9 * r.upper)
            << "seed " << seed << " at " << t + 1;
      }
    }
    frozen +=
        model->certificate()->Report(1).phase == CertificatePhase::kFrozen;
  }
  EXPECT_GT(checks, 1000);
  EXPECT_EQ(frozen, 150);
}

// A stream ten times longer than what the model may keep: the freeze happens
// at the limit with the exact certificate over those examples, and the bound
// stays valid (and equal to its comparator's) to the end.
TEST(CertificateTrackerTest, FreezesAtTheLimitWithTheExactCertificate) {
  testing::StreamSpec spec;
  spec.seed = 7;
  spec.dimension = 20;
  spec.length = 5000;
  spec.bias = true;
  spec.normalize = true;
  spec.noise = 0.05;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  const uint64_t limit = 500;
  model->EnableCertificate(limit, /*slack=*/100);
  Refresher refresher(config.weight_dimension());
  Certificate exact;
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    CertificateTracker* tracker = model->certificate();
    // A refresher that lags: it comes every 40 examples.
    if (t % 40 == 39 && tracker->due()) {
      const Certificate c = refresher.Round(model.get());
      if (c.examples == limit) exact = c;
    }
    const CertificateReport r = tracker->Report(1);
    if (t + 1 == 520) {
      // Frozen by the first round after the limit, over exactly the limit.
      ASSERT_EQ(r.phase, CertificatePhase::kFrozen);
      EXPECT_EQ(r.frozen_at, limit);
      EXPECT_EQ(r.solved, limit);
      ASSERT_EQ(exact.examples, limit);
      EXPECT_NEAR(BoundOf(config, s, limit, exact.u, exact.gamma), exact.upper,
                  1e-9 * exact.upper);
    }
    if (r.available) {
      EXPECT_LE(static_cast<double>(model->counters().updates),
                r.upper * (1 + 1e-9));
    }
  }
  const CertificateReport r = model->certificate()->Report(1);
  EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(r.examples, s.x.size());
  EXPECT_EQ(r.kept, limit);
  // The kept rows are freed: what is left is the five candidates (and two
  // empty row sets).
  EXPECT_LT(r.bytes, 5 * config.weight_dimension() * sizeof(double) + 64);
  EXPECT_NEAR(BoundOf(config, s, s.x.size(), r.u, r.gamma), r.upper,
              1e-9 * r.upper);
  std::cout << "10x the limit: updates " << model->counters().updates << ", U "
            << r.upper << ", L " << r.lower << ", exact at " << limit << ": "
            << exact.upper << "\n";
}

// The slack fills before a refresher comes: the candidates installed last are
// frozen at the first new row it has no room for, still valid; with none
// installed the certificate is off and says why.
TEST(CertificateTrackerTest, AFullSlackFreezesWhatWasInstalled) {
  testing::StreamSpec spec;
  spec.seed = 3;
  spec.dimension = 5;
  spec.length = 400;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(100, 10);
  Refresher refresher(config.weight_dimension());
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t == 49) refresher.Round(model.get());
  }
  const CertificateReport r =
      model->certificate()->Report(model->stats(false).bound.radius);
  EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(r.frozen_at, 111u);
  EXPECT_EQ(r.solved, 50u);
  EXPECT_LE(static_cast<double>(model->counters().updates), r.upper);
  EXPECT_NEAR(BoundOf(config, s, s.x.size(), r.u, r.gamma), r.upper,
              1e-9 * r.upper);

  auto never = *Model::Create(config);
  never->EnableCertificate(100, 10);
  for (size_t t = 0; t < 200; ++t) {
    ASSERT_TRUE(never->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  const CertificateReport off = never->certificate()->Report(1);
  EXPECT_EQ(off.phase, CertificatePhase::kOff);
  EXPECT_FALSE(off.available);
  EXPECT_NE(off.reason.find("before a first solution"), std::string::npos);
}

// At the limit the tracker waits for a solution that converged: one that did
// not is installed (the rows after the limit still kept), the next converged
// one freezes it with the exact certificate; and after kFreezeRounds that did
// not, it freezes at the last of them.
TEST(CertificateTrackerTest, TheFreezeWaitsForAConvergedSolution) {
  testing::StreamSpec spec;
  spec.seed = 11;
  spec.dimension = 10;
  spec.length = 600;
  spec.noise = 0.1;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  for (bool ever : {true, false}) {
    auto model = *Model::Create(config);
    model->EnableCertificate(200, 300);
    CertificateTracker* t = model->certificate();
    CertificateSolver solver(config.weight_dimension());
    // Solutions that stop short: one pass, and a tolerance of 0 with passes
    // that go on from where the last stopped.
    auto round = [&](int passes, double tolerance = 0) {
      solver.Add(t->Take());
      CertificateOptions options;
      options.max_passes = passes;
      options.tolerance = tolerance;
      const Certificate c =
          solver.Solve(model->stats(false).bound.radius, options);
      const std::vector<std::vector<double>> vs = CandidatesFrom(c);
      t->Install(vs, HingeSums(solver.rows(), vs), c.lower, c.converged,
                 solver.size(), t->generation());
      return c;
    };
    for (size_t k = 0; k < 210; ++k) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[k]), s.y[k]).ok());
    }
    ASSERT_EQ(t->phase(), CertificatePhase::kFreezing);
    ASSERT_FALSE(round(1).converged);
    EXPECT_EQ(t->phase(), CertificatePhase::kFreezing);
    EXPECT_EQ(t->Report(1).solved, 200u);
    for (size_t k = 210; k < 260; ++k) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[k]), s.y[k]).ok());
    }
    if (ever) {
      const Certificate c = round(1000, 1e-4);
      ASSERT_TRUE(c.converged);
      const CertificateReport r = t->Report(1);
      EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
      EXPECT_EQ(r.frozen_at, 200u);
      EXPECT_TRUE(r.converged);
    } else {
      for (int k = 2; k < CertificateTracker::kFreezeRounds; ++k) {
        ASSERT_FALSE(round(1).converged);
        ASSERT_EQ(t->phase(), CertificatePhase::kFreezing) << k;
      }
      round(1);
      EXPECT_EQ(t->phase(), CertificatePhase::kFrozen);
      EXPECT_FALSE(t->Report(1).converged);
    }
    for (size_t k = 260; k < s.x.size(); ++k) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[k]), s.y[k]).ok());
    }
    const CertificateReport r = t->Report(model->stats(false).bound.radius);
    EXPECT_EQ(r.examples, s.x.size());
    EXPECT_LE(static_cast<double>(model->counters().updates), r.upper);
    EXPECT_NEAR(BoundOf(config, s, s.x.size(), r.u, r.gamma), r.upper,
                1e-9 * r.upper);
  }
}

// A reset starts over; a model that learned before its certificate started
// reports it off until a reset; a refresher's stale round is ignored.
TEST(CertificateTrackerTest, ResetsAndLateStarts) {
  testing::StreamSpec spec;
  spec.seed = 5;
  spec.dimension = 4;
  spec.length = 100;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  for (size_t t = 0; t < 10; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  model->EnableCertificate(1000, 10);
  const CertificateReport late = model->certificate()->Report(1);
  EXPECT_EQ(late.phase, CertificatePhase::kOff);
  EXPECT_NE(late.reason.find("10 labeled examples"), std::string::npos)
      << late.reason;
  model->Reset();
  Refresher refresher(config.weight_dimension());
  for (size_t t = 0; t < 50; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  // Rows taken, then a reset before the install: the install is ignored.
  CertificateTracker* tracker = model->certificate();
  const uint64_t generation = tracker->generation();
  CertificateSolver solver(config.weight_dimension());
  solver.Add(tracker->Take());
  const Certificate c = solver.Solve(1, {});
  model->Reset();
  const std::vector<std::vector<double>> vs = CandidatesFrom(c);
  tracker->Install(vs, HingeSums(solver.rows(), vs), c.lower, c.converged,
                   solver.size(), generation);
  EXPECT_FALSE(tracker->Report(1).available);
  EXPECT_EQ(tracker->Report(1).examples, 0u);
  for (size_t t = 0; t < 30; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  refresher.Round(model.get());
  const CertificateReport r = tracker->Report(1);
  EXPECT_TRUE(r.available);
  EXPECT_EQ(r.examples, 30u);
  EXPECT_EQ(r.solved, 30u);
}

// Trackers sharing a budget hold no more than it together: the one that finds
// it taken freezes where it stood (its bound still covering every example, the
// refused one included) and gives its bytes back, which another may then take;
// a reset or a model destroyed gives back what it held too.
TEST(CertificateTrackerTest, ASharedBudgetHoldsAndIsGivenBack) {
  testing::StreamSpec spec;
  spec.seed = 9;
  spec.dimension = 6;
  spec.length = 3000;
  spec.noise = 0.05;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  const uint64_t row = CertificateTracker::RowBytes(config.weight_dimension());
  // Room for one chunk and a half: a model's second chunk does not fit, nor
  // a second model's first.
  auto budget = std::make_shared<CertificateBudget>(
      CertificateTracker::kBudgetChunk * 3 / 2, "the budget is taken");
  auto first = *Model::Create(config);
  auto second = *Model::Create(config);
  first->EnableCertificate(100000, 1000, UINT64_MAX, budget);
  second->EnableCertificate(100000, 1000, UINT64_MAX, budget);
  Refresher refresher(config.weight_dimension());
  const size_t fit = CertificateTracker::kBudgetChunk / row;  // first chunk
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(first->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t == 100) refresher.Round(first.get());
    ASSERT_LE(budget->used(), budget->limit());
  }
  const CertificateReport r =
      first->certificate()->Report(first->stats(false).bound.radius);
  EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_EQ(r.frozen_at, fit + 1) << "the second chunk is refused";
  EXPECT_EQ(r.examples, s.x.size());
  EXPECT_LE(static_cast<double>(first->counters().updates), r.upper);
  EXPECT_NEAR(BoundOf(config, s, s.x.size(), r.u, r.gamma), r.upper,
              1e-9 * r.upper);
  EXPECT_EQ(first->certificate()->held(), 0u);
  EXPECT_EQ(budget->used(), 0u) << "frozen, it holds nothing";

  // Given back, the chunk serves the second model; a third, with no solution
  // yet, finds the budget taken and turns off, saying why.
  auto third = *Model::Create(config);
  third->EnableCertificate(100000, 1000, UINT64_MAX, budget);
  for (size_t t = 0; t < fit; ++t) {
    ASSERT_TRUE(second->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  ASSERT_TRUE(third->Learn(FeatureView::Dense(s.x[0]), s.y[0]).ok());
  EXPECT_EQ(second->certificate()->phase(), CertificatePhase::kKeeping);
  EXPECT_EQ(second->certificate()->held(), CertificateTracker::kBudgetChunk);
  const CertificateReport off = third->certificate()->Report(1);
  EXPECT_EQ(off.phase, CertificatePhase::kOff);
  EXPECT_EQ(off.reason, "the budget is taken");
  EXPECT_EQ(budget->used(), CertificateTracker::kBudgetChunk);
  second->Reset();
  EXPECT_EQ(budget->used(), 0u);
  ASSERT_TRUE(second->Learn(FeatureView::Dense(s.x[0]), s.y[0]).ok());
  EXPECT_EQ(budget->used(), CertificateTracker::kBudgetChunk);
  second.reset();
  EXPECT_EQ(budget->used(), 0u);
}

// What a restart or an import carries: a state (snapshot, export) or the
// journals after it (the log) rebuild the tracker's comparators and sums, so
// the rebuilt model reports the same U, L, gamma and TD_gamma bit for bit,
// frozen at the last example covered, and its U keeps bounding the updates
// (and equalling its comparator's bound) over what it learns next.
TEST(CertificateTrackerTest, AStateOrItsJournalsCarryTheCertificateFrozen) {
  testing::StreamSpec spec;
  spec.seed = 11;
  spec.dimension = 8;
  spec.length = 1200;
  spec.bias = true;
  spec.noise = 0.05;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(100000, 1000);
  model->SetJournaling(true);
  model->TakeJournal();
  // The replica fed journals starts from the state before any example.
  auto replica = *Model::FromState(model->ExportState());
  Refresher refresher(config.weight_dimension());
  const size_t half = s.x.size() / 2;
  int with_candidates = 0, without = 0;
  for (size_t t = 0; t < half; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t % 100 == 99) refresher.Round(model.get());
    if (t % 30 == 29 || t + 1 == half) {
      const Journal j = model->TakeJournal();
      ASSERT_TRUE(j.certificate.has_value());
      (j.certificate->with_candidates ? with_candidates : without)++;
      ASSERT_TRUE(replica->ApplyJournal(j).ok());
    }
  }
  EXPECT_GT(with_candidates, 1);
  EXPECT_GT(without, with_candidates) << "unchanged candidates are not sent";
  const double radius = model->stats(false).bound.radius;
  const CertificateReport was = model->certificate()->Report(radius);
  ASSERT_TRUE(was.available);
  ASSERT_EQ(was.phase, CertificatePhase::kKeeping);

  const ModelState state = model->ExportState();
  auto restored = *Model::FromState(state);
  for (Model* m : {restored.get(), replica.get()}) {
    SCOPED_TRACE(m == replica.get() ? "journals" : "state");
    m->EnableCertificate(100000, 1000);
    const CertificateReport r =
        m->certificate()->Report(m->stats(false).bound.radius);
    EXPECT_EQ(r.phase, CertificatePhase::kFrozen);
    EXPECT_EQ(r.frozen_at, half);
    EXPECT_EQ(r.examples, half);
    EXPECT_NE(r.reason.find("were not carried over"), std::string::npos)
        << r.reason;
    EXPECT_TRUE(r.available);
    EXPECT_EQ(r.upper, was.upper);
    EXPECT_EQ(r.lower, was.lower);
    EXPECT_EQ(r.gamma, was.gamma);
    EXPECT_EQ(r.td, was.td);
    EXPECT_EQ(r.solved, was.solved);
    for (size_t t = half; t < s.x.size(); ++t) {
      ASSERT_TRUE(m->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    }
    const CertificateReport after =
        m->certificate()->Report(m->stats(false).bound.radius);
    EXPECT_EQ(after.phase, CertificatePhase::kFrozen);
    EXPECT_EQ(after.examples, s.x.size());
    EXPECT_LE(static_cast<double>(m->counters().updates), after.upper);
    EXPECT_NEAR(BoundOf(config, s, s.x.size(), after.u, after.gamma),
                after.upper, 1e-9 * after.upper);
    // A reset keeps examples again.
    m->Reset();
    EXPECT_EQ(m->certificate()->phase(), CertificatePhase::kKeeping);
  }
  // The state itself round-trips: what a rebuilt model exports is what it
  // was rebuilt from, but for the phase it continues in.
  auto again = *Model::FromState(state);
  ModelState back = again->ExportState();
  ASSERT_TRUE(back.certificate.has_value());
  EXPECT_EQ(back.certificate->phase, CertificatePhase::kFrozen);
  EXPECT_EQ(back.certificate->candidates, state.certificate->candidates);
  EXPECT_EQ(back.certificate->sums, state.certificate->sums);
}

// Given the rows its journals carried, a model rebuilt from its state or from
// its journals goes on keeping: its certificate's state is what it was, bit
// for bit, the solver gets back every row kept, in order, and none is due
// while the solution covers them converged. A freeze or a reset tells the
// next journal that the rows before no longer count.
TEST(CertificateTrackerTest, WithTheRowsItsJournalsCarriedItGoesOnKeeping) {
  testing::StreamSpec spec;
  spec.seed = 13;
  spec.dimension = 6;
  spec.length = 900;
  spec.bias = true;
  spec.noise = 0.05;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(600, 600);
  model->SetJournaling(true);
  model->TakeJournal();
  auto replica = *Model::FromState(model->ExportState());
  Refresher refresher(config.weight_dimension());
  KeptRows journaled;
  const size_t part = 400;
  for (size_t t = 0; t < part; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t % 100 == 99) refresher.Round(model.get());
    if (t % 30 == 29 || t + 1 == part) {
      Journal j = model->TakeJournal();
      EXPECT_FALSE(j.certificate_rows_cleared);
      journaled.Append(j.certificate_rows);
      ASSERT_TRUE(replica->ApplyJournal(j).ok());
    }
  }
  // Converged over all of them, then 7 more not yet solved.
  while (!refresher.Round(model.get()).converged) {
  }
  KeptRows all = refresher.solver.rows();
  for (size_t t = part; t < part + 7; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  Journal last = model->TakeJournal();
  EXPECT_EQ(last.certificate_rows.size(), 7u);
  journaled.Append(last.certificate_rows);
  ASSERT_TRUE(replica->ApplyJournal(last).ok());
  all.Append(last.certificate_rows);
  ASSERT_EQ(all.size(), part + 7);
  EXPECT_TRUE(journaled == all);
  const CertificateState was = model->ExportState().certificate.value();
  ASSERT_EQ(was.phase, CertificatePhase::kKeeping);

  auto restored = *Model::FromState(model->ExportState());
  for (Model* m : {restored.get(), replica.get()}) {
    SCOPED_TRACE(m == replica.get() ? "journals" : "state");
    EXPECT_FALSE(m->AttachCertificateRows(KeptRows())) << "not as many";
    EXPECT_EQ(m->certificate()->phase(), CertificatePhase::kFrozen);
    ASSERT_TRUE(m->AttachCertificateRows(journaled));
    m->EnableCertificate(600, 600);
    EXPECT_EQ(m->ExportState().certificate.value(), was);
    // 7 rows are not solved yet: due; all of them go to a new solver.
    EXPECT_TRUE(m->certificate()->due());
    EXPECT_TRUE(m->certificate()->Take() == all);
  }
  // Solved and converged when stored: nothing is due.
  while (!refresher.Round(model.get()).converged) {
  }
  auto settled = *Model::FromState(model->ExportState());
  ASSERT_TRUE(settled->AttachCertificateRows(journaled));
  settled->EnableCertificate(600, 600);
  EXPECT_FALSE(settled->certificate()->due());
  EXPECT_EQ(settled->ExportState().certificate,
            model->ExportState().certificate);
  // Lower limits than the rows were kept under: freezing at once.
  auto lower = *Model::FromState(model->ExportState());
  ASSERT_TRUE(lower->AttachCertificateRows(journaled));
  lower->EnableCertificate(300, 600);
  EXPECT_EQ(lower->certificate()->phase(), CertificatePhase::kFreezing);

  // Past the limit and its slack the tracker freezes: the rows no longer count.
  for (size_t t = part + 7; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  for (int round = 0; round < 100 && model->certificate()->phase() !=
                                         CertificatePhase::kFrozen;
       ++round) {
    refresher.Round(model.get());
  }
  ASSERT_EQ(model->certificate()->phase(), CertificatePhase::kFrozen);
  Journal frozen = model->TakeJournal();
  EXPECT_TRUE(frozen.certificate_rows_cleared);
  EXPECT_EQ(frozen.certificate_rows.size(), 0u);
  EXPECT_FALSE(model->TakeJournal().certificate_rows_cleared) << "once";
  model->Reset();
  Journal reset = model->TakeJournal();
  EXPECT_TRUE(reset.certificate_rows_cleared);
  ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[0]), s.y[0]).ok());
  EXPECT_EQ(model->TakeJournal().certificate_rows.size(), 1u);
  model->DisableCertificate();
  EXPECT_TRUE(model->TakeJournal().certificate_rows_cleared);
}

// A state or journal whose certificate does not fit the model turns the
// certificate off, naming the field, and loses nothing else (a log record is
// never dropped for its certificate); a model with no solution yet comes
// back off, saying why; certificates disabled drop what a state carried.
TEST(CertificateTrackerTest, ABadCertificateStateTurnsItOffAndLosesNothing) {
  testing::StreamSpec spec;
  spec.seed = 12;
  spec.dimension = 4;
  spec.length = 50;
  const testing::Stream s = testing::MakeStream(spec);
  const ModelConfig config = testing::StreamConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(1000, 100);
  model->SetJournaling(true);
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  // No solution yet: off, and says the kept examples were not carried over.
  ModelState unsolved = model->ExportState();
  auto off = *Model::FromState(unsolved);
  off->EnableCertificate(1000, 100);
  const CertificateReport r = off->certificate()->Report(1);
  EXPECT_EQ(r.phase, CertificatePhase::kOff);
  EXPECT_NE(
      r.reason.find("50 labeled examples kept for it were not carried over"),
      std::string::npos)
      << r.reason;
  off->Reset();
  EXPECT_EQ(off->certificate()->phase(), CertificatePhase::kKeeping);
  off->DisableCertificate();
  EXPECT_FALSE(off->ExportState().certificate.has_value());

  Refresher refresher(config.weight_dimension());
  refresher.Round(model.get());
  const ModelState good = model->ExportState();
  ASSERT_GE(good.certificate->candidates.size(), 2u);
  // The state without its certificate, bit for bit.
  auto learner_bits = [](ModelState st) {
    st.certificate.reset();
    return testing::StateBits(st);
  };
  auto bad = [&](auto change) {
    ModelState st = good;
    change(*st.certificate);
    absl::StatusOr<std::unique_ptr<Model>> m = Model::FromState(st);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return std::string();
    EXPECT_EQ(learner_bits((*m)->ExportState()), learner_bits(good));
    const CertificateReport r = *(*m)->CertificateNow(false);
    EXPECT_EQ(r.phase, CertificatePhase::kOff);
    EXPECT_FALSE(r.available);
    return r.reason;
  };
  EXPECT_THAT(bad([](CertificateState& c) { c.candidates[1].pop_back(); }),
              ::testing::HasSubstr("candidate 1 has"));
  EXPECT_THAT(bad([](CertificateState& c) { c.sums.pop_back(); }),
              ::testing::HasSubstr(" sums for "));
  EXPECT_THAT(bad([](CertificateState& c) { c.candidates[0][0] = NAN; }),
              ::testing::HasSubstr("candidate 0 is not finite"));
  EXPECT_THAT(bad([](CertificateState& c) { c.sums[0] = -1; }),
              ::testing::HasSubstr("sum 0"));
  EXPECT_THAT(bad([](CertificateState& c) { c.kept = c.observed + 1; }),
              ::testing::HasSubstr("its stored state could not be used"));

  // A journal likewise: applied whole, the certificate off until a reset.
  auto replica = *Model::FromState(good);
  ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[0]), s.y[0]).ok());
  Journal j = model->TakeJournal();
  ASSERT_TRUE(j.certificate.has_value());
  j.certificate->sums.push_back(0);
  const absl::Status applied = replica->ApplyJournal(j);
  EXPECT_TRUE(applied.ok()) << applied;
  EXPECT_EQ(learner_bits(replica->ExportState()),
            learner_bits(model->ExportState()));
  const CertificateReport turned = *replica->CertificateNow(false);
  EXPECT_EQ(turned.phase, CertificatePhase::kOff);
  EXPECT_THAT(turned.reason, ::testing::HasSubstr("could not be used"));
  EXPECT_EQ(turned.examples, model->counters().examples);
  replica->Reset();
  EXPECT_EQ(replica->certificate()->phase(), CertificatePhase::kKeeping);
}

// The margin rule (docs/design.md section 2.3) gets its bound 8/gamma^2 once
// the hard-margin solution separates every example with the model's gamma: the
// margin reported is a lower value of gamma*, and updates stay within the
// bound; with gamma above gamma*, or noise that breaks separability, none.
TEST(CertificateTrackerTest,
     TheMarginRuleGetsItsBoundFromASeparatingComparator) {
  for (const double noise : {0.0, 0.05}) {
    for (const double gamma : {0.04, 0.5}) {
      SCOPED_TRACE(::testing::Message()
                   << "noise " << noise << " gamma " << gamma);
      testing::StreamSpec spec;
      spec.seed = 21;
      spec.dimension = 10;
      spec.length = 3000;
      spec.bias = true;
      spec.margin = 0.1;
      spec.noise = noise;
      const testing::Stream s = testing::MakeStream(spec);
      ModelConfig config = testing::StreamConfig(spec);
      config.algorithm = Algorithm::kMargin;
      config.gamma = gamma;
      config.comparator.clear();
      auto model = *Model::Create(config);
      model->EnableCertificate(100000, 1000);
      Refresher refresher(config.weight_dimension(), /*margin_rule=*/true);
      for (size_t t = 0; t < s.x.size(); ++t) {
        ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
        if (t % 500 == 499) refresher.Round(model.get());
      }
      const CertificateReport r = *model->CertificateNow(/*with_u=*/false);
      ASSERT_TRUE(r.available);
      const bool separable = noise == 0;
      EXPECT_EQ(refresher.hard.separable, separable);
      if (!separable) {
        EXPECT_EQ(r.margin, 0);
        EXPECT_FALSE(r.margin_bound_available);
        continue;
      }
      // A lower value of gamma*: at most the dual's upper value, and at
      // least the stream's margin less what the solver may leave.
      EXPECT_GT(r.margin, 0);
      EXPECT_LE(r.margin, refresher.hard.upper);
      EXPECT_GE(r.margin, refresher.hard.lower * (1 - 1e-8));
      EXPECT_EQ(r.margin_bound_available, r.margin >= gamma);
      if (gamma == 0.04) {
        ASSERT_TRUE(r.margin_bound_available) << "margin " << r.margin;
        EXPECT_EQ(r.margin_bound, 8 / (gamma * gamma));
        EXPECT_LE(static_cast<double>(model->counters().updates),
                  r.margin_bound);
      } else {
        EXPECT_FALSE(r.margin_bound_available) << "gamma above gamma*";
      }
    }
  }
}

// The five candidates CandidatesFrom gives are v and its multiples p * v[i]
// by kCandidateScales, scored as p (v . x^) from v's sum; so is 3 v. A frozen
// tracker's sums, and HingeSums over kept rows, are those of that rule bit for
// bit, and within rounding those of summing each candidate on its own, on
// dense and sparse examples. Vectors that are not a multiple p > 0 of another
// (one coordinate a step off, -v) are summed.
TEST(CertificateTrackerTest, ScaledCandidatesSumAsTheirRuleSays) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  constexpr uint32_t kDim = 40;
  ModelConfig config;
  config.dimension = kDim;
  const Preparer preparer(config);
  Certificate solution;
  solution.u.resize(config.weight_dimension());
  for (double& e : solution.u) e = 3 * normal(rng);
  solution.gamma = 0.37;
  std::vector<std::vector<double>> vs = CandidatesFrom(solution);
  ASSERT_EQ(vs.size(), 5u);
  std::vector<double> off = vs[0];
  for (double& e : off) e *= 2;
  off[7] = std::nextafter(off[7], 1e300);
  std::vector<double> negative = vs[0];
  for (double& e : negative) e = -e;
  std::vector<double> three = vs[0];
  for (double& e : three) e *= 3;
  vs.push_back(off);
  vs.push_back(negative);
  vs.push_back(three);
  EXPECT_THAT(ScaledCandidates(vs).summed(), ::testing::ElementsAre(0, 5, 6));
  // Each candidate's scale of the one it is scored from (vs[k] itself if 0).
  std::vector<double> scale_of_v(vs.size(), 0.0);
  for (size_t k = 0; k < 5; ++k) scale_of_v[k] = kCandidateScales[k];
  scale_of_v[7] = 3;

  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    // 2,000 examples, a third of them small (scores near 0, hinge terms near
    // 1).
    std::vector<std::vector<double>> dense;
    std::vector<std::vector<uint32_t>> indices;
    std::vector<std::vector<double>> values;
    std::vector<int> labels;
    for (int t = 0; t < 2000; ++t) {
      std::vector<double> x(kDim, 0.0);
      std::vector<uint32_t> idx;
      std::vector<double> val;
      for (uint32_t i = 0; i < kDim; ++i) {
        if (sparse && rng() % 4 != 0) continue;
        x[i] = normal(rng) * (t % 3 == 0 ? 1e-3 : 1.0);
        idx.push_back(i);
        val.push_back(x[i]);
      }
      dense.push_back(x);
      indices.push_back(idx);
      values.push_back(val);
      labels.push_back(rng() % 2 ? 1 : -1);
    }
    auto prepare = [&](size_t t) {
      return *preparer.Prepare(sparse
                                   ? FeatureView::Sparse(indices[t], values[t])
                                   : FeatureView::Dense(dense[t]));
    };
    std::vector<double> expected(vs.size(), 0.0), own(vs.size(), 0.0);
    std::vector<size_t> positive(vs.size(), 0);
    // Adds candidate k's hinge term of score f to expected[k], and that of
    // summing it on its own (g) to own[k].
    auto add = [&](size_t k, int label, double f, double g) {
      const double h = 1 - label * f;
      if (h > 0) expected[k] += h;
      positive[k] += h > 0;
      const double i = 1 - label * g;
      if (i > 0) own[k] += i;
    };
    KeptRows rows;
    for (size_t t = 0; t < 1000; ++t) rows.Add(prepare(t), labels[t]);
    for (size_t t = 0; t < rows.size(); ++t) {
      for (size_t k = 0; k < vs.size(); ++k) {
        const double g = rows.DotUnordered(t, vs[k]);
        add(k, rows.label(t),
            scale_of_v[k] > 0 ? scale_of_v[k] * rows.DotUnordered(t, vs[0]) : g,
            g);
      }
    }
    const std::vector<double> prefix = HingeSums(rows, vs);
    EXPECT_EQ(prefix, expected);
    std::fill(positive.begin(), positive.end(), 0);

    CertificateTracker tracker(/*limit=*/1000, /*slack=*/1);
    for (size_t t = 0; t < 1000; ++t) tracker.Observe(prepare(t), labels[t]);
    const KeptRows taken = tracker.Take();
    ASSERT_EQ(taken.size(), 1000u);
    tracker.Install(vs, prefix, 0, /*converged=*/true, tracker.taken(),
                    tracker.generation());
    ASSERT_EQ(tracker.phase(), CertificatePhase::kFrozen);
    for (size_t t = 1000; t < dense.size(); ++t) {
      const Prepared x = prepare(t);
      tracker.Observe(x, labels[t]);
      for (size_t k = 0; k < vs.size(); ++k) {
        const double g = Dot(vs[k], x);
        add(k, labels[t], scale_of_v[k] > 0 ? scale_of_v[k] * Dot(vs[0], x) : g,
            g);
      }
    }
    const std::vector<double> sums = tracker.Save().sums;
    EXPECT_EQ(sums, expected);
    for (size_t k = 0; k < vs.size(); ++k) {
      EXPECT_NEAR(sums[k], own[k], 1e-12 * own[k]) << k;
    }
    // Each candidate's terms after the freeze were 0 for some examples and
    // positive for others.
    for (size_t k = 0; k < vs.size(); ++k) {
      EXPECT_GT(positive[k], 100u);
      EXPECT_LT(positive[k], 900u);
    }
  }
}

}  // namespace
}  // namespace perceptron
