#include "server/ops/certificate_refresher.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/candidate_sums.h"
#include "core/certificate.h"
#include "core/certificate_tracker.h"
#include "core/kernel_certificate.h"
#include "core/multiclass_certificate.h"

namespace perceptron::server {
namespace {

// Passes over the kept examples per refresh of one model, at most: a solve
// that needs more goes on at the next round, warm-started.
constexpr int kPassesPerRefresh = 20;
// How long the refresher waits when no model has work, unless a change to a
// model wakes it (CertificateWakeup): a backstop.
constexpr absl::Duration kIdle = absl::Milliseconds(100);
// How much nicer than the server the refresher's thread runs: a core it
// shares with a thread serving requests goes to that thread first (about a
// tenth of the core is left to the refresher when both want all of it), so
// that a request arriving while it solves does not wait for the scheduler.
constexpr int kNicer = 10;

// Names this thread "certificate" (as top -H and /proc show it) and lowers
// its priority by kNicer. Either may fail (nothing else depends on them).
void MarkAsBackground() {
  (void)!::pthread_setname_np(::pthread_self(), "certificate");
  const id_t tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0) {
    (void)!::setpriority(PRIO_PROCESS, tid, std::min(nice + kNicer, 19));
  }
}

}  // namespace

CertificateRefresher::CertificateRefresher(Registry* registry,
                                           Persistence* persistence,
                                           const Limits& limits)
    : registry_(registry), persistence_(persistence), limits_(limits) {}

void CertificateRefresher::Start() {
  if (limits_.certificate_examples == 0 || thread_.joinable()) return;
  // Started marked: from the moment Start returns (before the server takes
  // requests), the refresher yields to the threads serving them.
  absl::Notification marked;
  thread_ = std::thread([this, &marked] {
    MarkAsBackground();
    marked.Notify();
    Loop();
  });
  marked.WaitForNotification();
}

void CertificateRefresher::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  registry_->certificate_wakeup().WakeNow();
  if (thread_.joinable()) thread_.join();
}

void CertificateRefresher::Loop() {
  const double share = std::clamp(limits_.certificate_cpu, 0.01, 1.0);
  CertificateWakeup& wakeup = registry_->certificate_wakeup();
  while (!stop_.HasBeenNotified()) {
    // A model given rows from here on wakes the wait below.
    wakeup.Arm();
    bool worked = false;
    for (const std::shared_ptr<ModelEntry>& entry : registry_->All()) {
      if (stop_.HasBeenNotified()) return;
      bool freezing = false;
      const uint64_t learned = wakeup.learned();
      const absl::Duration busy = Refresh(entry, &freezing);
      if (busy <= absl::ZeroDuration()) continue;
      worked = true;
      // Rest so that the work is at most `share` of the time, but not while
      // new rows press a model's freeze, nor when no batch was learned
      // meanwhile (no stream wants the core).
      if (freezing || wakeup.learned() == learned) continue;
      const absl::Duration rest = busy * ((1 - share) / share);
      if (rest > absl::ZeroDuration() &&
          stop_.WaitForNotificationWithTimeout(rest)) {
        return;
      }
    }
    if (worked) continue;
    if (stop_.HasBeenNotified()) return;
    wakeup.Wait(kIdle);
  }
}

int CertificateRefresher::RefreshAll() {
  int n = 0;
  for (const std::shared_ptr<ModelEntry>& entry : registry_->All()) {
    n += Refresh(entry, nullptr, /*eager=*/true) > absl::ZeroDuration();
  }
  return n;
}

absl::Duration CertificateRefresher::Refresh(
    const std::shared_ptr<ModelEntry>& entry, bool* freezing, bool eager) {
  bool still_freezing = false;
  const absl::Time start = absl::Now();
  // The time this refresh took (at least a nanosecond: it did work).
  auto busy = [start] {
    return std::max(absl::Now() - start, absl::Nanoseconds(1));
  };
  absl::ReleasableMutexLock solver_lock(&entry->solver_mu);
  KeptRows rows;
  std::vector<uint32_t> repeats;
  uint64_t generation = 0;
  double radius = 0;
  uint32_t dimension = 0;
  bool margin_rule = false;
  std::optional<KernelConfig> kernel;
  int classes = 0;
  {
    absl::MutexLock lock(&entry->mu);
    CertificateTracker* tracker =
        entry->deleted ? nullptr : entry->model->certificate();
    // A model being moved to another shard changes in nothing until the move
    // ends (its copy is compared with it byte for byte).
    if (tracker == nullptr || entry->moving) return absl::ZeroDuration();
    generation = tracker->generation();
    const bool stale =
        entry->solver != nullptr && entry->solver_generation != generation;
    const bool live = tracker->phase() == CertificatePhase::kKeeping ||
                      tracker->phase() == CertificatePhase::kFreezing;
    if (!live || stale) {
      // Frozen, off or reset: the solver's rows serve nothing any more.
      entry->solver.reset();
      entry->kernel_solver.reset();
      entry->class_solver.reset();
      entry->solver_converged = true;
      if (!live) return absl::ZeroDuration();
    }
    if (!tracker->due() && entry->solver_converged) {
      return absl::ZeroDuration();
    }
    // Examples still coming are solved again when they are ripe; what waits
    // below that once the model is quiet (its examples the same as at the
    // last look, a wait of the loop or more before).
    const bool quiet = tracker->observed() == entry->refresher_observed;
    entry->refresher_observed = tracker->observed();
    if (entry->solver_converged && !eager && !quiet && !tracker->ripe()) {
      return absl::ZeroDuration();
    }
    rows = tracker->Take(&repeats);
    radius = entry->model->CertificateRadius();
    const ModelConfig& config = entry->model->config();
    dimension = config.weight_dimension();
    margin_rule = config.algorithm == Algorithm::kMargin;
    if (config.algorithm == Algorithm::kKernel) kernel = config.kernel;
    classes = static_cast<int>(config.classes.size());
  }
  CertificateOptions options;
  options.tolerance = kConvergedGap;
  options.max_passes = kPassesPerRefresh;
  // A solve the tracker would throw away ends at the next pass: the model
  // froze (its tail of rows filled first), turned off, was reset, deleted or
  // marked for a move. Its solver is then dropped, or solved again later.
  options.stop = [&entry, generation] {
    absl::MutexLock lock(&entry->mu);
    const CertificateTracker* tracker =
        entry->deleted ? nullptr : entry->model->certificate();
    return tracker == nullptr || entry->moving ||
           tracker->generation() != generation ||
           (tracker->phase() != CertificatePhase::kKeeping &&
            tracker->phase() != CertificatePhase::kFreezing);
  };
  auto stopped = [&] {
    entry->solver_converged = false;
    solver_lock.Release();
    return busy();
  };
  if (kernel) {
    if (entry->kernel_solver == nullptr) {
      entry->kernel_solver =
          std::make_unique<KernelCertificateSolver>(dimension, *kernel);
      entry->solver_generation = generation;
    }
    KernelCertificateSolver& solver = *entry->kernel_solver;
    solver.Add(std::move(rows), repeats);
    const KernelCertificate c = solver.Solve(radius, options);
    if (c.stopped) return stopped();
    KernelCandidates k = KernelCandidatesFrom(c, solver.rows());
    std::vector<double> sums =
        KernelHingeSums(solver.rows(), k.basis, solver.kernel(), k.vs);
    entry->solver_converged = c.converged;
    still_freezing = Install(*entry, std::move(k.vs), std::move(sums), c.lower,
                             c.converged, solver.size(), generation,
                             std::move(k.basis), nullptr, &solver.rows());
    solver_lock.Release();
    if (freezing != nullptr) *freezing = still_freezing;
    entry->NotifyChanged();
    return busy();
  }
  if (classes > 0) {
    if (entry->class_solver == nullptr) {
      entry->class_solver =
          std::make_unique<MulticlassCertificateSolver>(classes, dimension);
      entry->solver_generation = generation;
    }
    MulticlassCertificateSolver& solver = *entry->class_solver;
    solver.Add(std::move(rows), repeats);
    MulticlassCertificate c = solver.Solve(radius, options);
    if (c.stopped) return stopped();
    std::shared_ptr<const CandidateSupport> support;
    if (solver.wide()) {
      support = CandidateSupport::Of(solver.coordinates(), &c.candidates,
                                     dimension, classes);
    }
    entry->solver_converged = c.converged;
    still_freezing = Install(*entry, std::move(c.candidates), std::move(c.sums),
                             c.lower, c.converged, solver.size(), generation,
                             KeptRows(), std::move(support), &solver.rows());
    solver_lock.Release();
    if (freezing != nullptr) *freezing = still_freezing;
    entry->NotifyChanged();
    return busy();
  }
  if (entry->solver == nullptr) {
    entry->solver = std::make_unique<CertificateSolver>(dimension);
    entry->solver_generation = generation;
  }
  CertificateSolver& solver = *entry->solver;
  solver.Add(std::move(rows), repeats);
  const Certificate c = solver.Solve(radius, options);
  if (c.stopped) return stopped();
  // The margin rule's bound needs a comparator that separates every example
  // with the model's margin: the hard-margin solution, when it separates.
  std::optional<HardMargin> hard;
  if (margin_rule) hard = solver.SolveHardMargin(options);
  std::vector<std::vector<double>> vs =
      CandidatesFrom(c, hard ? &*hard : nullptr);
  // A wide solver's candidates are over the coordinates its rows use: the
  // tracker's table of them is built here, off the model's lock, and knows
  // which candidates are multiples of another (ScaledCandidates, a pass over
  // each: made once).
  std::shared_ptr<const CandidateSupport> support;
  if (solver.wide()) {
    support = CandidateSupport::Of(solver.coordinates(), &vs, dimension);
  }
  std::vector<double> sums =
      support != nullptr ? HingeSums(solver.rows(), vs, *support->scaled())
                         : HingeSums(solver.rows(), vs);
  entry->solver_converged = c.converged;
  still_freezing = Install(*entry, std::move(vs), std::move(sums), c.lower,
                           c.converged, solver.size(), generation, KeptRows(),
                           std::move(support), &solver.rows());
  solver_lock.Release();
  if (freezing != nullptr) *freezing = still_freezing;
  entry->NotifyChanged();
  return busy();
}

bool CertificateRefresher::Install(
    ModelEntry& entry, std::vector<std::vector<double>> vs,
    std::vector<double> sums, double lower, bool converged, uint64_t covered,
    uint64_t generation, KeptRows basis,
    std::shared_ptr<const CandidateSupport> support,
    const KeptRows* solved_rows) {
  absl::MutexLock lock(&entry.mu);
  CertificateTracker* tracker =
      entry.deleted ? nullptr : entry.model->certificate();
  if (tracker == nullptr) return false;
  if (entry.moving) {
    // Marked while this solve ran: solved again once the mark is lifted.
    entry.solver_converged = false;
    return false;
  }
  tracker->Install(std::move(vs), std::move(sums), lower, converged, covered,
                   generation, std::move(basis), std::move(support),
                   solved_rows);
  // Not awaited (a failed write fails the next batch's commit too), and
  // staged with the model's next record rather than committed alone.
  if (persistence_ != nullptr) persistence_->StageLater(entry);
  return tracker->pressed();
}

}  // namespace perceptron::server
