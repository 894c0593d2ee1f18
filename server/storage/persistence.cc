#include "server/storage/persistence.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
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
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open(options.data_dir, options.log_prewrite_bytes);
  if (!store.ok()) return store.status();
  (*store)->set_rows_reserve(options.rows_reserve_bytes);
  (*store)->set_rows_waiting(options.rows_waiting_bytes);
  p->store_ = *std::move(store);
  return p;
}

Persistence::~Persistence() { Stop(); }

absl::StatusOr<RecoveryReport> Persistence::Recover(Registry& registry,
                                                    uint32_t max_dimension) {
  RecoveryReport report;
  if (store_ == nullptr) return report;
  max_dimension_ = max_dimension;
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
    if (absl::Status s = registry.Insert(std::move(entry), /*recovered=*/true);
        !s.ok()) {
      return s;
    }
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
  if (store_ == nullptr) return absl::OkStatus();
  PERCEPTRON_RETURN_IF_ERROR(Writable());
  {
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
  absl::ReaderMutexLock store_lock(&store_mu_);
  return Failing(store_->PutModel(entry.id, entry.created_at, state, curves,
                                  rows ? &*rows : nullptr));
}

absl::Status Persistence::Deleted(const std::string& id) {
  if (store_ == nullptr) return absl::OkStatus();
  PERCEPTRON_RETURN_IF_ERROR(Writable());
  absl::ReaderMutexLock store_lock(&store_mu_);
  return Failing(store_->DeleteModel(id));
}

std::optional<std::string> Persistence::Cause() const {
  if (!failed_.load(std::memory_order_acquire)) return std::nullopt;
  absl::MutexLock lock(&queue_mu_);
  if (store_error_.ok()) return std::nullopt;
  return store_cause_;
}

absl::Status Persistence::Writable() const {
  const std::optional<std::string> cause = Cause();
  if (!cause) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("the store cannot write (", *cause,
                   "); nothing was applied: changes are refused until it "
                   "writes again (tried every second)"));
}

std::string Persistence::Problem() const {
  const std::optional<std::string> cause = Cause();
  if (!cause) return "";
  return absl::StrCat("the store cannot write (", *cause,
                      "); changes are refused until it writes again (tried "
                      "every second)");
}

absl::Status Persistence::Failing(absl::Status s) {
  if (s.ok()) return s;
  absl::MutexLock lock(&queue_mu_);
  if (store_error_.ok()) {
    store_cause_ = std::string(s.message());
    store_error_ = absl::UnavailableError(absl::StrCat(
        "the store cannot write (", store_cause_,
        "); the batch is not stored nor acknowledged, and its model is "
        "restored from the store once it writes again (tried every second)"));
    failed_.store(true, std::memory_order_release);
    std::fprintf(stderr,
                 "perceptrond: the store cannot write (%s); changes are "
                 "refused until it can (tried every second)\n",
                 store_cause_.c_str());
  }
  return store_error_;
}

void Persistence::Behind(const std::string& id, uint64_t seq) {
  auto [it, added] = behind_.try_emplace(id, seq);
  if (!added) it->second = std::min(it->second, seq);
}

void Persistence::StageLater(ModelEntry& entry) {
  if (store_ != nullptr) entry.unstaged = true;
}

void Persistence::StageWaiting(ModelEntry& entry) {
  absl::MutexLock lock(&entry.mu);
  if (entry.unstaged && !entry.deleted) Stage(entry);
}

CommitHandle Persistence::Stage(ModelEntry& entry) {
  if (store_ == nullptr) return nullptr;
  entry.unstaged = false;
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
    if (!store_error_.ok()) Behind(entry.id, q.record.seq);
  }
  commit->Complete(failed);
  return commit;
}

void Persistence::CommitLoop() {
  const bool sync = options_.durability == Durability::kSync;
  std::vector<Queued> batch;
  std::vector<const Store::Record*> records;
  while (true) {
    absl::Status failed;
    {
      absl::MutexLock lock(&queue_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_) {
        return !queue_.empty() || stopping_;
      };
      queue_mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and everything is written
      batch.swap(queue_);
      // Queued before the store failed: not written after a failure (the
      // models are rebuilt from the record before).
      failed = store_error_;
      if (!failed.ok()) {
        for (const Queued& q : batch) Behind(q.record.id, q.record.seq);
      }
    }
    if (!failed.ok()) {
      for (Queued& q : batch) q.commit->Complete(failed);
      batch.clear();
      continue;
    }
    records.clear();
    for (const Queued& q : batch) records.push_back(&q.record);
    const absl::Time start = absl::Now();
    std::vector<std::string> gave_way;
    absl::Status why;
    absl::Status s;
    {
      absl::ReaderMutexLock store_lock(&store_mu_);
      s = store_->Append(records, sync, &gave_way, &why);
    }
    commit_nanos_.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start),
                            std::memory_order_relaxed);
    commits_.fetch_add(1, std::memory_order_relaxed);
    records_.fetch_add(records.size(), std::memory_order_relaxed);
    if (!s.ok()) {
      s = Failing(s);
      absl::MutexLock lock(&queue_mu_);
      for (const Queued& q : batch) Behind(q.record.id, q.record.seq);
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
    if (entry.deleted) return;
    // What waits is staged first (StageLater): a snapshot comes after it.
    if (entry.unstaged) Stage(entry);
    if (entry.records_since_snapshot < options_.snapshot_every) return;
    state = entry.model->ExportState();
    CurvesToProto(entry.recent, entry.history, &curves);
    seq = entry.seq;
    entry.records_since_snapshot = 0;
  }
  absl::ReaderMutexLock store_lock(&store_mu_);
  if (Failing(store_->PutSnapshot(entry.id, seq, std::move(state),
                                  std::move(curves)))
          .ok()) {
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
  c.resumed = resumed_.load(std::memory_order_relaxed);
  c.models_reloaded = models_reloaded_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&queue_mu_);
  c.failed = !store_error_.ok();
  return c;
}

void Persistence::BackgroundLoop(Registry* registry) {
  const absl::Duration tick = options_.durability == Durability::kAsync
                                  ? options_.async_interval
                                  : options_.background_tick;
  while (!stop_background_.WaitForNotificationWithTimeout(tick)) {
    if (failed_.load(std::memory_order_acquire)) {
      if (absl::Now() - last_attempt_ >= absl::Seconds(1)) {
        last_attempt_ = absl::Now();
        TryResume();
      }
      continue;
    }
    if (options_.durability == Durability::kAsync) {
      absl::ReaderMutexLock store_lock(&store_mu_);
      Failing(store_->Sync()).IgnoreError();
    }
    for (const std::shared_ptr<ModelEntry>& e : registry->All())
      MaybeSnapshot(*e);
  }
  // Stopping: the changes still waiting go before the committer stops.
  for (const std::shared_ptr<ModelEntry>& e : registry->All()) StageWaiting(*e);
}

void Persistence::TryResume() {
  absl::Status s;
  {
    absl::WriterMutexLock store_lock(&store_mu_);
    s = store_->Reopen();
    // A write that shows the disk takes writes again.
    if (s.ok()) s = store_->Sync();
  }
  size_t reloaded = 0;
  while (s.ok()) {
    std::vector<std::pair<std::string, uint64_t>> todo;
    {
      absl::MutexLock lock(&queue_mu_);
      if (behind_.empty()) {
        store_error_ = absl::OkStatus();
        store_cause_.clear();
        failed_.store(false, std::memory_order_release);
        break;
      }
      todo.assign(behind_.begin(), behind_.end());
    }
    absl::ReaderMutexLock store_lock(&store_mu_);
    for (size_t i = 0; i < todo.size() && s.ok(); ++i) {
      s = ReloadModel(todo[i].first, todo[i].second);
      reloaded += s.ok();
    }
  }
  if (!s.ok()) {
    if (s.message() != last_retry_error_) {
      last_retry_error_ = std::string(s.message());
      std::fprintf(stderr, "perceptrond: the store still cannot write (%s)\n",
                   last_retry_error_.c_str());
    }
    return;
  }
  last_retry_error_.clear();
  resumed_.fetch_add(1, std::memory_order_relaxed);
  models_reloaded_.fetch_add(reloaded, std::memory_order_relaxed);
  std::fprintf(stderr,
               "perceptrond: the store writes again; %zu model(s) restored as "
               "stored\n",
               reloaded);
}

absl::Status Persistence::ReloadModel(const std::string& id,
                                      uint64_t from_seq) {
  absl::StatusOr<std::shared_ptr<ModelEntry>> found = registry_->Get(id);
  if (!found.ok()) {  // deleted meanwhile
    absl::MutexLock lock(&queue_mu_);
    behind_.erase(id);
    return absl::OkStatus();
  }
  PERCEPTRON_RETURN_IF_ERROR(store_->DropLogFrom(id, from_seq));
  absl::StatusOr<RecoveredModel> r = store_->Reload(id, max_dimension_);
  if (absl::IsDataLoss(r.status())) {
    // What is stored cannot rebuild it (as at start-up): set aside with its
    // records untouched, rather than keep every other model waiting.
    std::fprintf(stderr, "perceptrond: model %s set aside: %s\n", id.c_str(),
                 std::string(r.status().message()).c_str());
    registry_->Delete(id).IgnoreError();
    registry_->SetAside(id, r.status());
    absl::MutexLock lock(&queue_mu_);
    behind_.erase(id);
    return absl::OkStatus();
  }
  if (!r.ok()) return r.status();
  ModelEntry& e = **found;
  {
    absl::MutexLock solver_lock(&e.solver_mu);
    absl::MutexLock lock(&e.mu);
    r->model->SetJournaling(true);
    e.model = std::move(r->model);
    e.recent = std::move(r->recent);
    e.history = std::move(r->history);
    e.TakeCurvesJournal();
    e.curves_journaling = true;
    e.seq = r->seq;
    e.records_since_snapshot = r->seq - r->snapshot_seq;
    // The solvers' rows were the model's before: solved again from its own.
    e.solver.reset();
    e.kernel_solver.reset();
    e.class_solver.reset();
    e.solver_converged = true;
    absl::MutexLock queue_lock(&queue_mu_);
    behind_.erase(id);
  }
  registry_->Attach(e);
  e.WakeCertificate();
  e.NotifyChanged();
  return absl::OkStatus();
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
    if (store_ != nullptr && Writable().ok()) {
      absl::ReaderMutexLock store_lock(&store_mu_);
      store_->Sync().IgnoreError();
    }
  });
}

uint64_t Persistence::MemtableBytes() const {
  absl::ReaderMutexLock store_lock(&store_mu_);
  return store_ == nullptr ? 0 : store_->MemtableBytes();
}

bool Persistence::FlushIfIdle() {
  const uint64_t commits = commits_.load(std::memory_order_relaxed);
  const bool idle = commits == commits_seen_;
  commits_seen_ = commits;
  if (!idle || !Writable().ok()) return false;
  absl::ReaderMutexLock store_lock(&store_mu_);
  if (store_ == nullptr || store_->MemtableBytes() < kIdleFlushBytes) {
    return false;
  }
  store_->FlushMemtable();
  return true;
}

}  // namespace perceptron::server
