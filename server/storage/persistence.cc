#include "server/storage/persistence.h"

#include "absl/strings/str_cat.h"
#include "server/model/curves.h"

namespace perceptron::server {

absl::StatusOr<Durability> ParseDurability(absl::string_view text) {
  if (text == "sync") return Durability::kSync;
  if (text == "async") return Durability::kAsync;
  if (text == "none") return Durability::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("durability \"", text, "\" is not sync, async or none"));
}

absl::string_view DurabilityName(Durability d) {
  switch (d) {
    case Durability::kSync:
      return "sync";
    case Durability::kAsync:
      return "async";
    case Durability::kNone:
      return "none";
  }
  return "?";
}

// ---- Commit ----

void Commit::Then(std::function<void(absl::Status)> done) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (!done_) {
      then_ = std::move(done);
      return;
    }
    status = status_;
  }
  done(status);
}

absl::Status Commit::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
  return status_;
}

void Commit::Complete(absl::Status status) {
  std::function<void(absl::Status)> then;
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    status_ = status;
    then = std::move(then_);
  }
  if (then) then(status);
}

void WhenCommitted(const CommitHandle& c,
                   std::function<void(absl::Status)> done) {
  if (c == nullptr) {
    done(absl::OkStatus());
  } else {
    c->Then(std::move(done));
  }
}

absl::Status AwaitCommit(const CommitHandle& c) {
  return c == nullptr ? absl::OkStatus() : c->Wait();
}

// ---- Persistence ----

absl::StatusOr<std::unique_ptr<Persistence>> Persistence::Open(
    const PersistenceOptions& options) {
  std::unique_ptr<Persistence> p(new Persistence(options));
  if (options.durability == Durability::kNone) return p;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.data_dir);
  if (store.ok()) (*store)->set_rows_reserve(options.rows_reserve_bytes);
  if (!store.ok()) return store.status();
  p->store_ = *std::move(store);
  return p;
}

Persistence::~Persistence() { Stop(); }

absl::StatusOr<RecoveryReport> Persistence::Recover(Registry& registry,
                                                    uint32_t max_dimension) {
  RecoveryReport report;
  if (store_ == nullptr) return report;
  const absl::Time start = absl::Now();
  absl::StatusOr<Recovery> recovered = store_->Recover(max_dimension);
  if (!recovered.ok()) return recovered.status();
  for (const SetAsideModel& m : recovered->set_aside) {
    registry.SetAside(m.id, m.reason);
    report.set_aside.push_back(m);
  }
  for (RecoveredModel& r : recovered->models) {
    r.model->SetJournaling(true);
    auto entry =
        std::make_shared<ModelEntry>(r.id, std::move(r.model), r.created_at);
    {
      absl::MutexLock lock(&entry->mu);
      entry->recent = std::move(r.recent);
      entry->history = std::move(r.history);
      entry->curves_journaling = true;
      entry->seq = r.seq;
      entry->records_since_snapshot = r.seq - r.snapshot_seq;
    }
    if (absl::Status s = registry.Insert(std::move(entry)); !s.ok()) return s;
    ++report.models;
    report.records_applied += r.records_applied;
    report.records_dropped += r.records_dropped;
    report.fell_back += r.fell_back;
  }
  report.took = absl::Now() - start;
  return report;
}

absl::Status Persistence::Created(ModelEntry& entry) {
  ModelState state;
  v1::CurvesState curves;
  std::optional<KeptRows> rows;  // an imported certificate's
  {
    if (store_ == nullptr) return absl::OkStatus();
    absl::MutexLock solver_lock(&entry.solver_mu);
    absl::MutexLock lock(&entry.mu);
    entry.model->SetJournaling(true);
    entry.model->TakeJournal();  // the snapshot below holds everything so far
    entry.curves_journaling = true;
    entry.TakeCurvesJournal();
    state = entry.model->ExportState();
    CurvesToProto(entry.recent, entry.history, &curves);
    rows = entry.CertificateRows();
    entry.seq = 0;
  }
  return store_->PutModel(entry.id, entry.created_at, state, curves,
                          rows ? &*rows : nullptr);
}

absl::Status Persistence::Deleted(const std::string& id) {
  if (store_ == nullptr) return absl::OkStatus();
  return store_->DeleteModel(id);
}

CommitHandle Persistence::Stage(ModelEntry& entry) {
  if (store_ == nullptr) return nullptr;
  auto commit = std::make_shared<Commit>();
  Queued q{Store::Record{entry.id, entry.created_at, ++entry.seq,
                         entry.model->TakeJournal(), entry.TakeCurvesJournal()},
           commit};
  ++entry.records_since_snapshot;
  absl::Status failed;
  {
    absl::MutexLock lock(&queue_mu_);
    if (store_error_.ok() && !stopping_) {
      queue_.push_back(std::move(q));
      return commit;
    }
    failed = stopping_ ? absl::UnavailableError("the server is shutting down")
                       : store_error_;
  }
  commit->Complete(failed);
  return commit;
}

void Persistence::CommitLoop() {
  const bool sync = options_.durability == Durability::kSync;
  std::vector<Queued> batch;
  std::vector<const Store::Record*> records;
  while (true) {
    {
      absl::MutexLock lock(&queue_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_) {
        return !queue_.empty() || stopping_;
      };
      queue_mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and everything is written
      batch.swap(queue_);
    }
    records.clear();
    for (const Queued& q : batch) records.push_back(&q.record);
    const absl::Time start = absl::Now();
    std::vector<std::string> gave_way;
    absl::Status why;
    absl::Status s = store_->Append(records, sync, &gave_way, &why);
    commit_nanos_.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start),
                            std::memory_order_relaxed);
    commits_.fetch_add(1, std::memory_order_relaxed);
    records_.fetch_add(records.size(), std::memory_order_relaxed);
    if (!s.ok()) {
      s = absl::UnavailableError(absl::StrCat("the store failed (", s.message(),
                                              "); models can no longer be "
                                              "stored: restart the server"));
      absl::MutexLock lock(&queue_mu_);
      store_error_ = s;
    }
    for (Queued& q : batch) q.commit->Complete(s);
    batch.clear();
    if (s.ok() && !gave_way.empty()) RowsGaveWay(gave_way, why);
  }
}

void Persistence::RowsGaveWay(const std::vector<std::string>& ids,
                              const absl::Status& why) {
  const std::string reason =
      absl::StrCat("the examples kept for it could not be stored (",
                   why.message(), "); the log goes on without them");
  for (const std::string& id : ids) {
    absl::StatusOr<std::shared_ptr<ModelEntry>> entry = registry_->Get(id);
    if (!entry.ok()) continue;  // deleted meanwhile
    ModelEntry& e = **entry;
    {
      absl::MutexLock lock(&e.mu);
      CertificateTracker* tracker =
          e.deleted ? nullptr : e.model->certificate();
      if (tracker == nullptr) continue;
      tracker->RowsGaveWay(reason);
      // Not awaited: the freeze goes with the model's next records.
      Stage(e);
    }
    e.NotifyChanged();
    rows_gave_way_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Persistence::MaybeSnapshot(ModelEntry& entry) {
  ModelState state;
  v1::CurvesState curves;
  uint64_t seq;
  {
    absl::MutexLock lock(&entry.mu);
    if (entry.deleted || entry.records_since_snapshot < options_.snapshot_every)
      return;
    state = entry.model->ExportState();
    CurvesToProto(entry.recent, entry.history, &curves);
    seq = entry.seq;
    entry.records_since_snapshot = 0;
  }
  if (store_->PutSnapshot(entry.id, seq, state, curves).ok()) {
    snapshots_.fetch_add(1, std::memory_order_relaxed);
  }  // else the log still holds everything
}

StorageCounters Persistence::counters() const {
  StorageCounters c;
  c.commits = commits_.load(std::memory_order_relaxed);
  c.records = records_.load(std::memory_order_relaxed);
  c.commit_seconds =
      static_cast<double>(commit_nanos_.load(std::memory_order_relaxed)) * 1e-9;
  c.snapshots = snapshots_.load(std::memory_order_relaxed);
  c.rows_gave_way = rows_gave_way_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&queue_mu_);
  c.failed = !store_error_.ok();
  return c;
}

void Persistence::BackgroundLoop(Registry* registry) {
  const absl::Duration tick = options_.durability == Durability::kAsync
                                  ? options_.async_interval
                                  : absl::Milliseconds(100);
  while (!stop_background_.WaitForNotificationWithTimeout(tick)) {
    if (options_.durability == Durability::kAsync) store_->Sync().IgnoreError();
    for (const std::shared_ptr<ModelEntry>& e : registry->All())
      MaybeSnapshot(*e);
  }
}

void Persistence::Start(Registry* registry) {
  if (store_ == nullptr) return;
  registry_ = registry;
  committer_ = std::thread([this] { CommitLoop(); });
  background_ = std::thread([this, registry] { BackgroundLoop(registry); });
}

void Persistence::Stop() {
  std::call_once(stop_once_, [this] {
    stop_background_.Notify();
    if (background_.joinable()) background_.join();
    {
      absl::MutexLock lock(&queue_mu_);
      stopping_ = true;
    }
    if (committer_.joinable()) committer_.join();
    if (store_ != nullptr) store_->Sync().IgnoreError();
  });
}

}  // namespace perceptron::server
