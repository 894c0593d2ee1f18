#include "server/model/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "server/model/model_id.h"

namespace perceptron::server {

void ModelEntry::Observe(bool mistake) {
  recent.Add(mistake);
  if (curves_journaling) curves_journal.mistakes.push_back(mistake);
  if (history.Due(model->counters().examples)) {
    const HistoryPoint p = CurrentPoint();
    history.Add(p);
    if (curves_journaling) curves_journal.points.push_back(p);
  }
}

std::optional<KeptRows> ModelEntry::CertificateRows() const {
  const CertificateTracker* t = model->certificate();
  if (t == nullptr) return std::nullopt;
  const KeptRows* taken = nullptr;
  std::optional<KeptRows> original;  // a wide solver's rows, at coordinates
  if (solver_generation == t->generation()) {
    if (solver != nullptr) {
      if (solver->wide()) original = solver->OriginalRows();
      taken = original ? &*original : &solver->rows();
    }
    if (kernel_solver != nullptr) taken = &kernel_solver->rows();
    if (class_solver != nullptr) {
      if (class_solver->wide()) original = class_solver->OriginalRows();
      taken = original ? &*original : &class_solver->rows();
    }
  }
  return t->RowsNow(taken);
}

HistoryPoint ModelEntry::CurrentPoint() const {
  const Stats s = model->stats(/*with_weight_norm=*/false);
  HistoryPoint p;
  p.examples = s.counters.examples;
  p.mistakes = s.counters.mistakes;
  p.updates = s.counters.updates;
  if (s.bound.bound_available) p.bound = s.bound.bound;
  if (s.bound.td_available) p.td_gamma = s.bound.td_gamma;
  if (s.certificate && s.certificate->available) {
    p.certificate_upper = s.certificate->upper;
    p.certificate_lower = s.certificate->lower;
  }
  return p;
}

void ModelEntry::ClearCurves() {
  recent.Clear();
  history.Clear();
  curves_journal = CurvesJournal();
  curves_journal.cleared = curves_journaling;
}

void ModelEntry::AddListener(ModelListener* l) {
  absl::MutexLock lock(&listeners_mu);
  listeners.insert(l);
}

void ModelEntry::RemoveListener(ModelListener* l) {
  absl::MutexLock lock(&listeners_mu);
  listeners.erase(l);
}

void CertificateWakeup::Arm() {
  absl::MutexLock lock(&mu_);
  woken_ = false;
  armed_.store(true);
}

bool CertificateWakeup::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const bool woken = mu_.AwaitWithTimeout(absl::Condition(&woken_), timeout);
  armed_.store(false, std::memory_order_relaxed);
  woken_ = false;
  return woken;
}

void CertificateWakeup::Wake() {
  // Armed before the refresher looked at any model (each under its lock,
  // which the change held before this load), so a change it did not see
  // finds it armed here.
  if (!armed_.load()) return;
  WakeNow();
}

void CertificateWakeup::WakeNow() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

bool ModelEntry::CertificateDue() const {
  const CertificateTracker* tracker = model->certificate();
  return tracker != nullptr && tracker->ripe();
}

void ModelEntry::NotifyChanged() {
  absl::MutexLock lock(&listeners_mu);
  for (ModelListener* l : listeners) l->OnModelChanged();
}

void ModelEntry::NotifyDeleted(const absl::Status& why) {
  absl::MutexLock lock(&listeners_mu);
  for (ModelListener* l : listeners) l->OnModelDeleted(why);
}

absl::Status MovedAway(absl::string_view id) {
  return absl::UnavailableError(absl::StrCat(
      "model ", id,
      " was moved to another shard: retry through the proxy, which routes it "
      "there"));
}

absl::Status ModelEntry::GoneStatus() const {
  if (moved_away) return MovedAway(id);
  return absl::NotFoundError(absl::StrCat("model ", id, " was deleted"));
}

Model::PendingLimits Registry::PendingLimits(
    std::shared_ptr<ByteBudget> budget) const {
  return {.count = limits_.max_pending,
          .bytes = limits_.max_pending_bytes,
          .bytes_name = "--max_pending_bytes",
          .budget = std::move(budget)};
}

void Registry::Attach(ModelEntry& entry) const {
  entry.certificate_wakeup = certificate_wakeup_;
  absl::MutexLock lock(&entry.mu);
  if (NameTable* names = entry.model->names()) {
    names->set_limit_bytes(limits_.name_table_bytes);
    names->set_budget(names_budget_);
  }
  entry.model->set_pending_limits(PendingLimits(pending_budget_));
  entry.model->set_store_budget(models_budget_);
  if (limits_.certificate_examples == 0) {
    entry.model->DisableCertificate();  // one carried by a stored state
    return;
  }
  const uint64_t limit = limits_.certificate_examples;
  // As many rows after the limit as before it (and no more bytes), while the
  // solution over the limit converges (CertificateTracker).
  entry.model->EnableCertificate(limit, limit, limits_.certificate_model_bytes,
                                 certificate_budget_);
}

absl::StatusOr<std::shared_ptr<ModelEntry>> Registry::Create(
    const std::string& id, const ModelConfig& config) {
  PERCEPTRON_RETURN_IF_ERROR(ValidateModelId(id));
  const uint64_t bytes = WeightBytes(config);
  {
    // Before the weights are made: a model refused takes no memory.
    absl::MutexLock lock(&mu_);
    PERCEPTRON_RETURN_IF_ERROR(CheckRoom(bytes));
  }
  PERCEPTRON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                              Model::Create(config));
  auto entry = std::make_shared<ModelEntry>(id, std::move(model), absl::Now());
  entry->weight_bytes = bytes;
  Attach(*entry);
  absl::MutexLock lock(&mu_);
  PERCEPTRON_RETURN_IF_ERROR(CheckFree(id));
  PERCEPTRON_RETURN_IF_ERROR(CheckRoom(bytes, /*take=*/true));
  models_.emplace(id, entry);
  Unmoved(id);
  return entry;
}

absl::Status Registry::Insert(std::shared_ptr<ModelEntry> entry,
                              bool recovered) {
  uint64_t stored = 0;  // a kernel model's stored mistakes
  {
    absl::MutexLock lock(&entry->mu);
    entry->weight_bytes = WeightBytes(entry->model->config());
    stored = entry->model->store_bytes();
  }
  if (!recovered) {
    // The whole model, before Attach counts its stored mistakes: one refused
    // never counts.
    absl::MutexLock lock(&mu_);
    PERCEPTRON_RETURN_IF_ERROR(CheckRoom(entry->weight_bytes + stored));
  }
  Attach(*entry);
  absl::MutexLock lock(&mu_);
  PERCEPTRON_RETURN_IF_ERROR(CheckFree(entry->id));
  if (recovered) {
    models_budget_->Force(entry->weight_bytes);
  } else {
    PERCEPTRON_RETURN_IF_ERROR(CheckRoom(entry->weight_bytes, /*take=*/true));
  }
  Unmoved(entry->id);
  models_.emplace(entry->id, std::move(entry));
  return absl::OkStatus();
}

void Registry::Remove(const std::shared_ptr<ModelEntry>& entry) {
  absl::MutexLock lock(&mu_);
  Erase(entry);
}

void Registry::Erase(const std::shared_ptr<ModelEntry>& entry) {
  auto it = models_.find(entry->id);
  if (it == models_.end() || it->second != entry) return;
  models_.erase(it);
  models_budget_->Give(entry->weight_bytes);
}

uint64_t Registry::WeightBytes(const ModelConfig& config) {
  // In double, then saturated: max_voted_vectors may be any count (a model
  // whose vectors no export could carry is refused when created).
  const double vector = 8.0 * static_cast<double>(config.weight_count());
  double vectors = 0;
  switch (config.algorithm) {
    case Algorithm::kAveraged:
      vectors = 2;
      break;
    case Algorithm::kVoted:
      vectors = static_cast<double>(config.max_voted_vectors) + 1;
      break;
    case Algorithm::kKernel:
      break;
    default:
      vectors = 1;
      break;
  }
  double bytes = vectors * vector;
  if (!config.comparator.empty()) {
    // The comparator as given (the model's configuration) and scaled to unit
    // length over every weight coordinate (its bound's).
    bytes += 8.0 * static_cast<double>(config.comparator.size()) + vector;
  }
  constexpr double kMost = 0x1p63;
  return bytes >= kMost ? uint64_t{1} << 63 : static_cast<uint64_t>(bytes);
}

absl::Status Registry::CheckRoom(uint64_t bytes, bool take) const {
  const uint64_t most = limits_.models_bytes;
  const uint64_t used = models_budget_->used();
  if (take ? models_budget_->Take(bytes)
           : most == 0 || (bytes <= most && used <= most - bytes)) {
    return absl::OkStatus();
  }
  const auto mib = [](uint64_t b) {
    return absl::StrFormat("%.1f MiB", static_cast<double>(b) / (1 << 20));
  };
  return absl::ResourceExhaustedError(
      absl::StrCat("the model takes ", mib(bytes), ", and the ", models_.size(),
                   " models held take ", mib(used), " of the ", mib(most),
                   " the server gives models (--max_models_mb)"));
}

absl::Status Registry::CheckFree(const std::string& id) const {
  if (models_.contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("model ", id, " already exists"));
  }
  if (auto it = set_aside_.find(id); it != set_aside_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", id, " is set aside (", it->second.message(),
                     "); DeleteModel discards its data"));
  }
  if (models_.size() >= limits_.max_models) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the server holds its maximum of ", limits_.max_models, " models"));
  }
  return absl::OkStatus();
}

void Registry::Unmoved(const std::string& id) {
  if (auto it = moved_.find(id); it != moved_.end()) {
    moved_order_.erase(it->second);
    moved_.erase(it);
  }
}

absl::Status Registry::Missing(const std::string& id) const {
  if (auto it = set_aside_.find(id); it != set_aside_.end()) {
    return absl::DataLossError(absl::StrCat(
        "model ", id,
        " could not be recovered and is set aside, its data kept untouched: ",
        it->second.message()));
  }
  if (moved_.contains(id)) return MovedAway(id);
  return absl::NotFoundError(absl::StrCat("model ", id, " not found"));
}

absl::StatusOr<std::shared_ptr<ModelEntry>> Registry::Get(
    const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = models_.find(id);
  if (it == models_.end()) return Missing(id);
  return it->second;
}

void Registry::SetAside(const std::string& id, const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  set_aside_[id] = reason;
}

std::vector<std::pair<std::string, absl::Status>> Registry::SetAsideModels()
    const {
  absl::MutexLock lock(&mu_);
  return {set_aside_.begin(), set_aside_.end()};
}

void Registry::Detach(ModelEntry& entry) const {
  entry.model->set_pending_limits(PendingLimits(nullptr));
  if (NameTable* names = entry.model->names()) names->set_budget(nullptr);
  entry.model->set_store_budget(nullptr);
}

absl::Status Registry::Delete(const std::string& id, bool if_moving) {
  std::shared_ptr<ModelEntry> entry;
  absl::Status why;  // what calls naming it are told from now on
  {
    absl::MutexLock lock(&mu_);
    if (!if_moving && set_aside_.erase(id) > 0) return absl::OkStatus();
    auto it = models_.find(id);
    if (it == models_.end()) return Missing(id);
    entry = it->second;
  }
  {
    // Checked and marked deleted under the entry's lock, so that nothing
    // changes the model between the check and the deletion.
    absl::MutexLock lock(&entry->mu);
    if (entry->deleted) return entry->GoneStatus();
    if (if_moving && !entry->moving) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model ", id,
          " is not marked moving (the mark was lifted, or the server "
          "restarted since): not deleted"));
    }
    entry->deleted = true;
    entry->moved_away = if_moving;
    Detach(*entry);
    why = entry->GoneStatus();
  }
  {
    absl::MutexLock lock(&mu_);
    Erase(entry);
    if (if_moving) {
      Unmoved(id);
      moved_.emplace(id, moved_order_.insert(moved_order_.end(), id));
      while (moved_.size() > std::max<size_t>(limits_.max_models, 1)) {
        moved_.erase(moved_order_.front());
        moved_order_.pop_front();
      }
    }
  }
  entry->NotifyDeleted(why);
  return absl::OkStatus();
}

bool Registry::DeleteIfIdle(const std::shared_ptr<ModelEntry>& entry,
                            absl::Time now) {
  absl::Status why;
  {
    absl::MutexLock lock(&entry->mu);
    const double idle = entry->model->config().idle_expiry_seconds;
    if (entry->deleted || entry->moving || !(idle > 0) ||
        now - entry->updated_at < absl::Seconds(idle)) {
      return false;
    }
    entry->deleted = true;
    why = entry->GoneStatus();
    Detach(*entry);
  }
  {
    absl::MutexLock lock(&mu_);
    Erase(entry);
  }
  entry->NotifyDeleted(why);
  return true;
}

std::vector<std::shared_ptr<ModelEntry>> Registry::List(
    const std::string& after, size_t limit,
    const std::function<bool(absl::string_view)>& visible) const {
  std::vector<std::shared_ptr<ModelEntry>> out;
  absl::MutexLock lock(&mu_);
  for (auto it = models_.upper_bound(after);
       it != models_.end() && out.size() < limit; ++it) {
    if (visible && !visible(it->first)) continue;
    out.push_back(it->second);
  }
  return out;
}

std::vector<std::shared_ptr<ModelEntry>> Registry::All() const {
  std::vector<std::shared_ptr<ModelEntry>> out;
  absl::MutexLock lock(&mu_);
  out.reserve(models_.size());
  for (const auto& [id, e] : models_) out.push_back(e);
  return out;
}

size_t Registry::size() const {
  absl::MutexLock lock(&mu_);
  return models_.size();
}

}  // namespace perceptron::server
