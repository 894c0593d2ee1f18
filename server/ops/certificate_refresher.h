// The background refresher of every model's certificate (docs/design.md
// section 2.7): in turn, for each model whose tracker has new rows (or whose
// last solution had not converged), it takes the rows under the model's lock,
// adds them to the model's solver and solves warm-started off that lock, then
// installs the candidates under the lock again, journaling them (so that a
// restart finds the last solution). It sleeps between models so that it uses
// at most its share of one core, on a thread named "certificate" that runs
// nicer than the server's (it yields a core to a thread serving requests).
// A model whose last solve converged is solved again once what waits is
// worth it (CertificateTracker::ripe: an eighth more examples than were
// solved), or once the model is quiet (no example since the refresher's last
// look, a wait or more before). With nothing to do it waits until a batch
// leaves a model ripe (Registry::certificate_wakeup), or 100 ms at most.
//
//   CertificateRefresher refresher(&registry, &persistence, limits);
//   refresher.Start();
//   ...
//   refresher.Stop();  // also in the destructor
#ifndef PERCEPTRON_SERVER_OPS_CERTIFICATE_REFRESHER_H_
#define PERCEPTRON_SERVER_OPS_CERTIFICATE_REFRESHER_H_

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/model/limits.h"
#include "server/model/registry.h"
#include "server/storage/persistence.h"

namespace perceptron::server {

class CertificateRefresher {
 public:
  // `persistence` (may be null: nothing is journaled) must outlive Stop.
  CertificateRefresher(Registry* registry, Persistence* persistence,
                       const Limits& limits);
  ~CertificateRefresher() { Stop(); }

  void Start();
  void Stop();

  // One round over every model, on the caller's thread (for tests): returns
  // the models refreshed. Every model with rows waiting is solved, ripe or
  // not.
  int RefreshAll();

 private:
  // Refreshes one model; the time it took, or zero if there was nothing to do.
  // `freezing` (if given): whether the model's freeze is pressed (new rows
  // after its limit came during the solve, CertificateTracker::pressed), which
  // the loop works on without resting: those rows are kept only until the
  // solution comes, or the slack fills.
  // With `eager`, what waits is solved even if it is not ripe and the model
  // not quiet.
  absl::Duration Refresh(const std::shared_ptr<ModelEntry>& entry,
                         bool* freezing = nullptr, bool eager = false);
  // Installs a solution in the model's tracker (under its lock) and stages
  // the log record that carries it; whether the tracker's freeze is pressed.
  // Nothing is installed in a model marked moving (SetMoving), which is
  // then solved again once the mark is lifted.
  bool Install(ModelEntry& entry, std::vector<std::vector<double>> vs,
               std::vector<double> sums, double lower, bool converged,
               uint64_t covered, uint64_t generation, KeptRows basis,
               std::shared_ptr<const CandidateSupport> support = nullptr,
               const KeptRows* solved_rows = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.solver_mu);
  void Loop();

  Registry* const registry_;
  Persistence* const persistence_;
  const Limits limits_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_OPS_CERTIFICATE_REFRESHER_H_
