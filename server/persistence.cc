#include "server/persistence.h"

#include "absl/strings/str_cat.h"

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

absl::StatusOr<std::unique_ptr<Persistence>> Persistence::Open(
    const PersistenceOptions& options) {
  std::unique_ptr<Persistence> p(new Persistence(options));
  if (options.durability == Durability::kNone) return p;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.data_dir);
  if (!store.ok()) return store.status();
  p->store_ = *std::move(store);
  return p;
}

Persistence::~Persistence() { Stop(); }

absl::StatusOr<RecoveryReport> Persistence::Recover(Registry& registry, uint32_t max_dimension) {
  RecoveryReport report;
  if (store_ == nullptr) return report;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<RecoveredModel>> models = store_->Recover(max_dimension);
  if (!models.ok()) return models.status();
  for (RecoveredModel& r : *models) {
    r.model->SetJournaling(true);
    auto entry = std::make_shared<ModelEntry>(r.id, std::move(r.model), r.created_at);
    {
      absl::MutexLock lock(&entry->mu);
      entry->seq = r.seq;
      entry->records_since_snapshot = r.seq - r.snapshot_seq;
    }
    {
      absl::MutexLock lock(&entry->written_mu);
      entry->written_upto = r.seq;
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
  {
    absl::MutexLock lock(&entry.mu);
    if (store_ == nullptr) return absl::OkStatus();
    entry.model->SetJournaling(true);
    entry.model->TakeJournal();  // the snapshot below holds everything so far
    state = entry.model->ExportState();
    entry.seq = 0;
  }
  return store_->PutModel(entry.id, entry.created_at, state);
}

absl::Status Persistence::Deleted(const std::string& id) {
  if (store_ == nullptr) return absl::OkStatus();
  return store_->DeleteModel(id);
}

StagedRecord Persistence::Stage(ModelEntry& entry) {
  StagedRecord r;
  if (store_ == nullptr) return r;
  r.journal = entry.model->TakeJournal();
  r.seq = ++entry.seq;
  ++entry.records_since_snapshot;
  return r;
}

absl::Status Persistence::Commit(ModelEntry& entry, StagedRecord record) {
  if (record.seq == 0) return absl::OkStatus();
  {
    absl::MutexLock lock(&entry.written_mu);
    if (!entry.store_error.ok()) return entry.store_error;
  }
  absl::Status s = store_->Append(entry.id, entry.created_at, record.seq, record.journal,
                                  options_.durability == Durability::kSync);
  absl::MutexLock lock(&entry.written_mu);
  if (!s.ok()) {
    entry.store_error = absl::UnavailableError(absl::StrCat(
        "model ", entry.id, " can no longer be stored (", s.message(), "); restart the server"));
  }
  // Mark it written (or failed, which releases the waiters too) and wait for the earlier ones.
  entry.written_ahead.insert(record.seq);
  while (!entry.written_ahead.empty() && *entry.written_ahead.begin() == entry.written_upto + 1) {
    entry.written_upto = *entry.written_ahead.begin();
    entry.written_ahead.erase(entry.written_ahead.begin());
  }
  auto ready = [&entry, seq = record.seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.written_mu) {
    return entry.written_upto >= seq || !entry.store_error.ok();
  };
  entry.written_mu.Await(absl::Condition(&ready));
  return entry.store_error;
}

void Persistence::MaybeSnapshot(ModelEntry& entry) {
  ModelState state;
  uint64_t seq;
  {
    absl::MutexLock lock(&entry.mu);
    if (entry.deleted || entry.records_since_snapshot < options_.snapshot_every) return;
    state = entry.model->ExportState();
    seq = entry.seq;
    entry.records_since_snapshot = 0;
  }
  if (store_->PutSnapshot(entry.id, seq, state).ok()) ++snapshots_;
}

void Persistence::Loop(Registry* registry) {
  const absl::Duration tick = options_.durability == Durability::kAsync
                                  ? options_.async_interval
                                  : absl::Milliseconds(100);
  while (!stop_.WaitForNotificationWithTimeout(tick)) {
    if (options_.durability == Durability::kAsync) store_->Sync().IgnoreError();
    for (const std::shared_ptr<ModelEntry>& e : registry->All()) MaybeSnapshot(*e);
  }
}

void Persistence::Start(Registry* registry) {
  if (store_ == nullptr) return;
  thread_ = std::thread([this, registry] { Loop(registry); });
}

void Persistence::Stop() {
  std::call_once(stop_once_, [this] {
    stop_.Notify();
    if (thread_.joinable()) thread_.join();
    if (store_ != nullptr) store_->Sync().IgnoreError();
  });
}

}  // namespace perceptron::server
