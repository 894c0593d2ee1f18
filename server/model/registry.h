// The server's models: each a ModelEntry whose updates are serialized by its
// own mutex, so different models run in parallel. Thread-safe.
//
//   Registry registry(limits);
//   absl::StatusOr<std::shared_ptr<ModelEntry>> e =
//       registry.Create("spam", config);
//   {
//     absl::MutexLock lock(&(*e)->mu);
//     (*e)->model->Learn(...);
//   }
//   (*e)->NotifyChanged();
#ifndef PERCEPTRON_SERVER_MODEL_REGISTRY_H_
#define PERCEPTRON_SERVER_MODEL_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/certificate.h"
#include "core/kernel_certificate.h"
#include "core/model.h"
#include "core/multiclass_certificate.h"
#include "server/model/history.h"
#include "server/model/limits.h"

namespace perceptron::server {

// Receives a model's change notifications (see ModelEntry::AddListener).
class ModelListener {
 public:
  virtual ~ModelListener() = default;
  // The model changed. Called without the entry's `mu` held; must not call
  // AddListener or RemoveListener.
  virtual void OnModelChanged() = 0;
  // The model was deleted; `why` is what calls naming it are told from now on
  // (ModelEntry::GoneStatus). Same rules.
  virtual void OnModelDeleted(const absl::Status& why) = 0;
};

// What a call naming model `id` is told once the model was moved to another
// shard (deleted here by Registry::Delete with if_moving): UNAVAILABLE, to be
// retried through the proxy, whose old connections may still route it here
// for a moment after it was switched.
absl::Status MovedAway(absl::string_view id);

// How the learning path wakes the certificate's refresher
// (server/ops/certificate_refresher.h) when it waits with nothing to do, so
// that a model's first rows are solved as they come, not after the
// refresher's idle wait (a stream of 10^6 examples a second fills a model's
// limit of kept examples, and the rows after it, in less than that wait).
// Thread-safe.
//
//   wakeup.Arm();               // the refresher, before a round over models
//   ... finds nothing to do ...
//   wakeup.Wait(kIdle);         // returns at a Wake since Arm, or timeout
//   wakeup.Wake();              // the learning path, rows kept (cheap)
class CertificateWakeup {
 public:
  // From now on a Wake is remembered, until the next Wait returns.
  void Arm() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for a Wake since Arm (returning at once if one came), or for
  // `timeout`: whether it was woken.
  bool Wait(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes the refresher if it is armed; an atomic load if not.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes it whether armed or not (to stop it).
  void WakeNow() ABSL_LOCKS_EXCLUDED(mu_);
  // Counts a batch that changed a model; the refresher rests after its work
  // only if one came meanwhile (while none comes it has the core to itself).
  void Learned() { learned_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t learned() const { return learned_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> armed_{false};
  std::atomic<uint64_t> learned_{0};
  absl::Mutex mu_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
};

struct ModelEntry {
  ModelEntry(std::string id, std::unique_ptr<Model> m, absl::Time now)
      : id(std::move(id)),
        created_at(now),
        model(std::move(m)),
        updated_at(now) {}

  const std::string id;
  const absl::Time created_at;
  // Its weight vectors' bytes (Registry::WeightBytes), counted against
  // Limits::models_bytes while the registry holds it; set before it does.
  uint64_t weight_bytes = 0;

  absl::Mutex mu;
  std::unique_ptr<Model> model ABSL_GUARDED_BY(mu);
  RecentWindow recent ABSL_GUARDED_BY(mu){kRecentWindow};
  History history ABSL_GUARDED_BY(mu);
  absl::Time updated_at ABSL_GUARDED_BY(mu);
  bool deleted ABSL_GUARDED_BY(mu) = false;
  // Being moved to another shard (SetMoving): changes are refused.
  bool moving ABSL_GUARDED_BY(mu) = false;
  // Deleted because it moved to another shard (Registry::Delete's if_moving).
  bool moved_away ABSL_GUARDED_BY(mu) = false;

  // The certificate's solver (the refresher's own, off the learning path):
  // the rows taken from the model's tracker, in the tracker's generation.
  // Lock order: solver_mu, then mu.
  absl::Mutex solver_mu ABSL_ACQUIRED_BEFORE(mu);
  std::unique_ptr<CertificateSolver> solver ABSL_GUARDED_BY(solver_mu);
  // A kernel model's instead.
  std::unique_ptr<KernelCertificateSolver> kernel_solver
      ABSL_GUARDED_BY(solver_mu);
  // A multiclass model's instead.
  std::unique_ptr<MulticlassCertificateSolver> class_solver
      ABSL_GUARDED_BY(solver_mu);
  uint64_t solver_generation ABSL_GUARDED_BY(solver_mu) = 0;
  bool solver_converged ABSL_GUARDED_BY(solver_mu) = true;
  // The tracker's observed() at the refresher's last look (what waits is
  // solved once it stays the same from one look to the next).
  uint64_t refresher_observed ABSL_GUARDED_BY(solver_mu) = UINT64_MAX;
  // The refresher's wake-up, set by the registry before the entry is shared
  // (null in an entry no registry holds).
  std::shared_ptr<CertificateWakeup> certificate_wakeup;
  // Whether the model's certificate has kept rows worth a solve now
  // (CertificateTracker::ripe); a change that leaves it so calls
  // WakeCertificate after `mu`.
  bool CertificateDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void WakeCertificate() const {
    if (certificate_wakeup != nullptr) certificate_wakeup->Wake();
  }
  // Tells the refresher a batch changed the model (CertificateWakeup::Learned).
  void CountLearned() const {
    if (certificate_wakeup != nullptr) certificate_wakeup->Learned();
  }

  // Persistence (persistence.h): the last log record staged, and records since
  // the snapshot.
  uint64_t seq ABSL_GUARDED_BY(mu) = 0;
  uint64_t records_since_snapshot ABSL_GUARDED_BY(mu) = 0;
  // A change no client waits for (a certificate's new solution) is in the
  // journal, not yet staged: it goes with the model's next record, or within
  // the background's tick (Persistence::StageLater).
  bool unstaged ABSL_GUARDED_BY(mu) = false;

  // What changed in `recent` and `history` since the last TakeCurvesJournal,
  // for the log record of the batch (persistence.h).
  // Kept only while the model is stored (curves_journaling).
  CurvesJournal curves_journal ABSL_GUARDED_BY(mu);
  bool curves_journaling ABSL_GUARDED_BY(mu) = false;

  // Accounts a labeled example the model just learned from: the recent window
  // and, when due, a history point.
  void Observe(bool mistake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  CurvesJournal TakeCurvesJournal() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return std::exchange(curves_journal, CurvesJournal());
  }
  // The model's point now, for the end of a chart.
  HistoryPoint CurrentPoint() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // A copy of every example the certificate keeps, in order (its solver's
  // rows, then the tracker's), while it is keeping; else none.
  std::optional<KeptRows> CertificateRows() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(solver_mu, mu);
  // What a call holding this entry is told once it is deleted: NOT_FOUND, or
  // MovedAway if it moved to another shard (a stream opened before the move
  // ended is then resumed through the proxy, as a new call would be).
  absl::Status GoneStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Empties the recent window and the history (a reset: call it before the
  // reset's batch is staged, so that its record says so).
  void ClearCurves() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Listeners are called in NotifyChanged/NotifyDeleted under `listeners_mu`.
  // Lock order: listeners_mu, then a listener's own lock, then `mu`.
  void AddListener(ModelListener* l) ABSL_LOCKS_EXCLUDED(listeners_mu);
  // After it returns, `l` is never called again.
  void RemoveListener(ModelListener* l) ABSL_LOCKS_EXCLUDED(listeners_mu);
  void NotifyChanged() ABSL_LOCKS_EXCLUDED(listeners_mu, mu);
  void NotifyDeleted(const absl::Status& why)
      ABSL_LOCKS_EXCLUDED(listeners_mu, mu);

 private:
  absl::Mutex listeners_mu;
  absl::flat_hash_set<ModelListener*> listeners ABSL_GUARDED_BY(listeners_mu);
};

class Registry {
 public:
  explicit Registry(const Limits& limits)
      : limits_(limits),
        certificate_budget_(std::make_shared<CertificateBudget>(
            limits.certificate_memory,
            "the server's memory for certificates (--certificate_memory_mb) "
            "is taken")),
        pending_budget_(std::make_shared<ByteBudget>(
            limits.pending_memory,
            "the server's memory for pending predictions (--max_pending_mb) "
            "is taken")),
        names_budget_(std::make_shared<ByteBudget>(
            limits.name_tables_memory,
            "the server's memory for feature names (--name_tables_mb) is "
            "taken")),
        models_budget_(std::make_shared<ByteBudget>(
            limits.models_bytes == 0 ? UINT64_MAX : limits.models_bytes,
            "the server's memory for models (--max_models_mb) is taken")) {}

  // INVALID_ARGUMENT for a bad id or config, ALREADY_EXISTS,
  // FAILED_PRECONDITION for the id of a model set aside, or RESOURCE_EXHAUSTED
  // at the limit.
  absl::StatusOr<std::shared_ptr<ModelEntry>> Create(const std::string& id,
                                                     const ModelConfig& config);
  // Adds a model built elsewhere (recovered or imported). ALREADY_EXISTS,
  // FAILED_PRECONDITION (set aside) or RESOURCE_EXHAUSTED. The id is not
  // checked here: an import checks it, and a recovered model keeps the id it
  // was stored under, even one that an older version accepted and this one
  // refuses for new models. A `recovered` model counts against
  // Limits::models_bytes but is never refused for it (its data is there).
  absl::Status Insert(std::shared_ptr<ModelEntry> entry,
                      bool recovered = false);
  // The bytes of the weight vectors a model of `config` may take: its k
  // vectors of the weight dimension (twice that for the averaged rule's sums;
  // max_voted_vectors + 1 times that for the voted rule, its current vector
  // and as many past ones as it keeps; none for a kernel model, whose stored
  // mistakes its learner counts as they come, Model::set_store_budget), and
  // its comparator's two copies.
  static uint64_t WeightBytes(const ModelConfig& config);
  // The bytes of every model held: their weight bytes, and the kernel models'
  // stored mistakes (Limits::models_bytes bounds them).
  uint64_t weight_bytes() const { return models_budget_->used(); }
  // Removes `entry` if it is still the one under its id (undoing a Create whose
  // storing failed).
  void Remove(const std::shared_ptr<ModelEntry>& entry);
  // NOT_FOUND if there is no such model; DATA_LOSS if it is set aside.
  absl::StatusOr<std::shared_ptr<ModelEntry>> Get(const std::string& id) const;
  // Starts the model's certificate, limits its names and counts its pending
  // predictions in the server's memory for them, as the limits say (done by
  // Create and Insert; again after an entry's model is replaced).
  void Attach(ModelEntry& entry) const;
  // Removes the model, marks its entry deleted and tells its listeners; or
  // forgets a model set aside (the caller then deletes its data). NOT_FOUND
  // if unknown; with `if_moving`, FAILED_PRECONDITION (nothing removed) unless
  // the model is marked moving.
  absl::Status Delete(const std::string& id, bool if_moving = false);
  // Removes the model of `entry` as Delete does if its configuration's
  // idle_expiry_seconds is set and it has learned nothing for that long at
  // `now` (checked and marked under its lock, so that nothing learned is
  // lost); not one being moved. Returns whether it did (the caller then
  // deletes its data).
  bool DeleteIfIdle(const std::shared_ptr<ModelEntry>& entry, absl::Time now);
  // Up to `limit` models with ids greater than `after`, in id order, counting
  // only those `visible` accepts (all when it is null).
  std::vector<std::shared_ptr<ModelEntry>> List(
      const std::string& after, size_t limit,
      const std::function<bool(absl::string_view)>& visible = nullptr) const;
  // Every model, for background work.
  std::vector<std::shared_ptr<ModelEntry>> All() const;
  size_t size() const;
  const Limits& limits() const { return limits_; }
  // What wakes the certificate's refresher (every entry's).
  CertificateWakeup& certificate_wakeup() const { return *certificate_wakeup_; }
  // The server-wide memory for certificates, shared by every model's tracker.
  const CertificateBudget& certificate_budget() const {
    return *certificate_budget_;
  }
  // The server-wide memory for pending predictions, shared by every model.
  const ByteBudget& pending_budget() const { return *pending_budget_; }
  // The server-wide memory for feature names, shared by every name table.
  const ByteBudget& names_budget() const { return *names_budget_; }

  // A model recovery could not rebuild (docs/design.md section 5): its id stays
  // taken, every call naming it answers DATA_LOSS with `reason`, and its data
  // stays untouched until DeleteModel discards it.
  void SetAside(const std::string& id, const absl::Status& reason);
  // The models set aside, in id order, with their reasons.
  std::vector<std::pair<std::string, absl::Status>> SetAsideModels() const;

 private:
  const Limits limits_;
  const std::shared_ptr<CertificateBudget> certificate_budget_;
  const std::shared_ptr<ByteBudget> pending_budget_;
  const std::shared_ptr<ByteBudget> names_budget_;
  // Limits::models_bytes: the weight bytes of the models held, taken by the
  // registry, and the kernel models' stored mistakes, counted by their
  // learners (Model::set_store_budget).
  const std::shared_ptr<ByteBudget> models_budget_;
  const std::shared_ptr<CertificateWakeup> certificate_wakeup_ =
      std::make_shared<CertificateWakeup>();
  mutable absl::Mutex mu_;
  absl::btree_map<std::string, std::shared_ptr<ModelEntry>> models_
      ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, absl::Status> set_aside_ ABSL_GUARDED_BY(mu_);
  // Models moved to another shard (deleted with if_moving) and not created
  // here since: calls naming them get UNAVAILABLE, not NOT_FOUND, since a
  // proxy's old connections may still route them here for a moment after it
  // was switched. Not stored: a restart forgets them. At most as many as
  // models the server may hold (limits.max_models), the oldest forgotten
  // first, so a server that moves models away for good does not grow.
  std::list<std::string> moved_order_ ABSL_GUARDED_BY(mu_);  // oldest first
  absl::flat_hash_map<std::string, std::list<std::string>::iterator> moved_
      ABSL_GUARDED_BY(mu_);
  void Unmoved(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // OK if `id` may name a new model.
  absl::Status CheckFree(const std::string& id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK if `bytes` more of weights stay within Limits::models_bytes; with
  // `take`, they are then taken.
  absl::Status CheckRoom(uint64_t bytes, bool take = false) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A model's pending limits (Limits::max_pending, max_pending_bytes) with
  // `budget` as the memory shared for them.
  Model::PendingLimits PendingLimits(std::shared_ptr<ByteBudget> budget) const;
  // A model deleted gives its pending predictions' and names' room back at
  // once (its entry may live on a while in a stream or the refresher); its
  // own limits stay.
  void Detach(ModelEntry& entry) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // Takes `entry` out of models_ if it is still the one under its id, and its
  // weight bytes from models_budget_.
  void Erase(const std::shared_ptr<ModelEntry>& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NOT_FOUND, or DATA_LOSS for a model set aside.
  absl::Status Missing(const std::string& id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MODEL_REGISTRY_H_
