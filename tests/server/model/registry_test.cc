#include "server/model/registry.h"

#include <atomic>
#include <memory>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "server/ops/model_ops.h"
#include "server/storage/persistence.h"

namespace perceptron::server {
namespace {

ModelConfig Dim(uint32_t d) {
  ModelConfig c;
  c.dimension = d;
  return c;
}

class CountingListener : public ModelListener {
 public:
  void OnModelChanged() override { ++changed; }
  void OnModelDeleted(const absl::Status& why) override {
    ++deleted;
    code = why.code();
  }
  std::atomic<int> changed{0}, deleted{0};
  std::atomic<absl::StatusCode> code{absl::StatusCode::kOk};
};

TEST(RegistryTest, CreateGetListDelete) {
  Registry r(Limits{});
  ASSERT_TRUE(r.Create("b", Dim(2)).ok());
  ASSERT_TRUE(r.Create("a", Dim(3)).ok());
  EXPECT_EQ(r.Create("a", Dim(3)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.Create("bad id", Dim(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Create("c", Dim(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.size(), 2u);
  std::vector<std::shared_ptr<ModelEntry>> page = r.List("", 1);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0]->id, "a");
  page = r.List("a", 10);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0]->id, "b");
  absl::StatusOr<std::shared_ptr<ModelEntry>> b = r.Get("b");
  ASSERT_TRUE(b.ok());
  CountingListener listener;
  (*b)->AddListener(&listener);
  (*b)->NotifyChanged();
  ASSERT_TRUE(r.Delete("b").ok());
  EXPECT_EQ(listener.changed, 1);
  EXPECT_EQ(listener.deleted, 1);
  EXPECT_EQ(listener.code, absl::StatusCode::kNotFound);
  {
    absl::MutexLock lock(&(*b)->mu);
    EXPECT_TRUE((*b)->deleted);
  }
  (*b)->RemoveListener(&listener);
  EXPECT_EQ(r.Get("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.Delete("b").code(), absl::StatusCode::kNotFound);
}

TEST(RegistryTest, TheModelLimitIsEnforced) {
  Limits limits;
  limits.max_models = 2;
  Registry r(limits);
  ASSERT_TRUE(r.Create("a", Dim(1)).ok());
  ASSERT_TRUE(r.Create("b", Dim(1)).ok());
  absl::Status s = r.Create("c", Dim(1)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("maximum of 2 models"));
}

// A model moved to another shard answers UNAVAILABLE (the proxy may still
// route it here for a moment) until created here again; the marks are at
// most as many as models the server may hold, the oldest forgotten first.
TEST(RegistryTest, MovedModelsAreRememberedUpToTheModelLimit) {
  Limits limits;
  limits.max_models = 2;
  Registry r(limits);
  auto move = [&](const std::string& id) {
    absl::StatusOr<std::shared_ptr<ModelEntry>> e = r.Create(id, Dim(1));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(r.Delete(id, /*if_moving=*/true).code(),
              absl::StatusCode::kFailedPrecondition)
        << "not marked moving: not deleted";
    {
      absl::MutexLock lock(&(*e)->mu);
      (*e)->moving = true;
    }
    CountingListener listener;
    (*e)->AddListener(&listener);
    ASSERT_TRUE(r.Delete(id, /*if_moving=*/true).ok());
    (*e)->RemoveListener(&listener);
    // A call that held the entry (a stream opened before the move ended) and
    // its watchers are told what a new call is told.
    EXPECT_EQ(listener.code, absl::StatusCode::kUnavailable);
    absl::MutexLock lock(&(*e)->mu);
    EXPECT_EQ((*e)->GoneStatus().code(), absl::StatusCode::kUnavailable);
  };
  move("a");
  move("b");
  EXPECT_EQ(r.Get("a").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.Get("b").status().code(), absl::StatusCode::kUnavailable);
  move("a");  // moved again: now the newest mark
  move("c");  // over the limit of 2: b's mark, the oldest, goes
  EXPECT_EQ(r.Get("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.Get("a").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.Get("c").status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(r.Create("c", Dim(1)).ok());  // created here again
  EXPECT_TRUE(r.Get("c").ok());
  ASSERT_TRUE(r.Delete("c").ok());
  EXPECT_EQ(r.Get("c").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.Get("a").status().code(), absl::StatusCode::kUnavailable);
}

// The refresher's wake-up keeps a Wake only between Arm and Wait, and a
// model's kept rows are what calls it: a labeled example while the
// certificate keeps, not one after it is off.
TEST(RegistryTest, KeptRowsWakeTheArmedRefresher) {
  Limits limits;
  limits.certificate_examples = 2;
  Registry r(limits);
  CertificateWakeup& wakeup = r.certificate_wakeup();
  wakeup.Wake();  // not armed: forgotten
  wakeup.Arm();
  EXPECT_FALSE(wakeup.Wait(absl::ZeroDuration()));
  wakeup.Arm();
  wakeup.Wake();
  EXPECT_TRUE(wakeup.Wait(absl::InfiniteDuration()));
  // Each Wait ends the arming: a Wake after it is forgotten too.
  wakeup.Wake();
  wakeup.Arm();
  EXPECT_FALSE(wakeup.Wait(absl::ZeroDuration()));

  absl::StatusOr<std::shared_ptr<ModelEntry>> e = r.Create("m", Dim(2));
  ASSERT_TRUE(e.ok());
  ModelEntry& entry = **e;
  const std::vector<double> x = {1, 2};
  auto learn = [&] {
    absl::MutexLock lock(&entry.mu);
    EXPECT_TRUE(entry.model->Learn(FeatureView::Dense(x), 1).ok());
    return entry.CertificateDue();
  };
  {
    absl::MutexLock lock(&entry.mu);
    EXPECT_FALSE(entry.CertificateDue());
  }
  wakeup.Arm();
  ASSERT_TRUE(learn());
  entry.WakeCertificate();
  EXPECT_TRUE(wakeup.Wait(absl::InfiniteDuration()));
  // Turned off: its examples are no longer kept, and nothing is due.
  {
    absl::MutexLock lock(&entry.mu);
    entry.model->certificate()->TurnOff("a test");
  }
  EXPECT_FALSE(learn());
  // An entry no registry holds has no wake-up to call.
  ModelEntry alone("alone", *Model::Create(Dim(2)), absl::Now());
  alone.WakeCertificate();
}

// After the refresher took a model's rows, a batch wakes it again only once
// the rows since are ripe (an eighth of those taken), not for every row.
TEST(RegistryTest, AModelIsDueAgainOnceItsNewRowsAreRipe) {
  Limits limits;
  limits.certificate_examples = 1000;
  Registry r(limits);
  absl::StatusOr<std::shared_ptr<ModelEntry>> e = r.Create("m", Dim(2));
  ASSERT_TRUE(e.ok());
  ModelEntry& entry = **e;
  double v = 0;
  auto learn = [&] {
    absl::MutexLock lock(&entry.mu);
    const std::vector<double> x = {1, v += 1};  // a new row each time
    EXPECT_TRUE(entry.model->Learn(FeatureView::Dense(x), 1).ok());
    return entry.CertificateDue();
  };
  for (int t = 0; t < 80; ++t) EXPECT_TRUE(learn());
  {
    absl::MutexLock lock(&entry.mu);
    ASSERT_EQ(entry.model->certificate()->Take().size(), 80u);
  }
  for (int t = 0; t < 9; ++t) EXPECT_FALSE(learn()) << t;
  EXPECT_TRUE(learn());
}

TEST(RecentWindowTest, RateOverTheLastExamples) {
  RecentWindow w(4);
  EXPECT_EQ(w.rate(), 0);
  w.Add(true);
  w.Add(false);
  EXPECT_EQ(w.rate(), 0.5);
  w.Add(true);
  w.Add(true);
  w.Add(false);  // pushes out the first mistake: window is false, true, true,
                 // false
  EXPECT_EQ(w.rate(), 0.5);
  w.Add(false);
  w.Add(false);
  w.Add(false);
  EXPECT_EQ(w.rate(), 0);
}

// A registry holding one model "m" of d = 2, stored nowhere.
struct OneModel {
  OneModel() {
    PersistenceOptions o;
    o.durability = Durability::kNone;
    none = *Persistence::Open(o);
    EXPECT_TRUE(registry.Create("m", Dim(2)).ok());
    entry = *registry.Get("m");
  }
  Limits limits;
  Registry registry{limits};
  std::unique_ptr<Persistence> none;
  std::shared_ptr<ModelEntry> entry;
};

// A Train request of two examples of d = 2, at most three epochs.
v1::TrainRequest TwoExamplesThreeEpochs() {
  v1::TrainRequest train;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(examples {
             features { dense { values: [ 1, 2 ] } }
             label: 1
           }
           examples {
             features { dense { values: [ -2, 1 ] } }
             label: -1
           }
           max_epochs: 3)pb",
      &train));
  return train;
}

// Each batch learned counts once for the refresher's rest
// (CertificateWakeup::learned): a Learn batch and a Train call alike; a batch
// refused whole does not.
TEST(RegistryTest, EveryBatchLearnedCountsForTheRefresher) {
  OneModel m;
  ModelEntry& entry = *m.entry;
  const CertificateWakeup& wakeup = m.registry.certificate_wakeup();
  const uint64_t before = wakeup.learned();

  v1::LearnRequest learn;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(items {
             labeled {
               features { dense { values: [ 1, 2 ] } }
               label: 1
             }
           }
           items {
             labeled {
               features { dense { values: [ -1, 0 ] } }
               label: -1
             }
           })pb",
      &learn));
  v1::LearnResponse answer;
  CommitHandle commit;
  ASSERT_TRUE(ApplyLearnItems(entry, *m.none, learn.items(),
                              answer.mutable_results(), answer.mutable_stats(),
                              &commit)
                  .ok());
  EXPECT_EQ(wakeup.learned(), before + 1);

  v1::TrainRequest train = TwoExamplesThreeEpochs();
  v1::TrainResponse trained;
  ASSERT_TRUE(TrainOn(entry, *m.none, train, m.limits, &trained).ok());
  EXPECT_EQ(wakeup.learned(), before + 2);

  // Refused whole (a row of the wrong dimension): nothing learned, not counted.
  train.mutable_examples(0)->mutable_features()->mutable_dense()->add_values(3);
  EXPECT_FALSE(TrainOn(entry, *m.none, train, m.limits, &trained).ok());
  EXPECT_EQ(wakeup.learned(), before + 2);
}

// A Train call ends as a Learn batch does: one with examples announces the
// change to watchers and is stored; one with none changes nothing, and is
// neither announced nor counted for the refresher, its answer the model's
// figures as they were.
TEST(RegistryTest, ATrainCallWithNoExamplesChangesNothing) {
  OneModel m;
  ModelEntry& entry = *m.entry;
  CountingListener listener;
  entry.AddListener(&listener);
  const CertificateWakeup& wakeup = m.registry.certificate_wakeup();
  const uint64_t before = wakeup.learned();

  v1::TrainRequest train = TwoExamplesThreeEpochs();
  v1::TrainResponse trained;
  ASSERT_TRUE(TrainOn(entry, *m.none, train, m.limits, &trained).ok());
  EXPECT_EQ(listener.changed.load(), 1);
  EXPECT_EQ(wakeup.learned(), before + 1);
  EXPECT_GT(trained.stats().examples(), 0u);
  absl::Time updated;
  {
    absl::MutexLock lock(&entry.mu);
    updated = entry.updated_at;
  }

  v1::TrainRequest empty;
  empty.set_max_epochs(3);
  v1::TrainResponse nothing;
  ASSERT_TRUE(TrainOn(entry, *m.none, empty, m.limits, &nothing).ok());
  EXPECT_EQ(listener.changed.load(), 1);
  EXPECT_EQ(wakeup.learned(), before + 1);
  EXPECT_EQ(nothing.updates(), 0u);
  EXPECT_EQ(nothing.mistakes(), 0u);
  EXPECT_EQ(nothing.stats().examples(), trained.stats().examples());
  EXPECT_EQ(nothing.stats().mistakes(), trained.stats().mistakes());
  {
    absl::MutexLock lock(&entry.mu);
    EXPECT_EQ(entry.updated_at, updated);
  }
  entry.RemoveListener(&listener);
}

}  // namespace
}  // namespace perceptron::server
