// The Learn stream (DESIGN.md section 4): reads batches, applies them to the
// model, and answers each in order. It keeps reading while earlier answers are
// being written, so a client may have many batches in flight; when too many
// answers wait to be written it stops reading until they drain (backpressure).
#ifndef PERCEPTRON_SERVER_LEARN_REACTOR_H_
#define PERCEPTRON_SERVER_LEARN_REACTOR_H_

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.pb.h"
#include "server/limits.h"
#include "server/persistence.h"
#include "server/registry.h"
#include "server/stream_set.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

class LearnReactor final
    : public grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>,
      public StoppableStream {
 public:
  // Answers written but not yet acknowledged, at most; past it reading pauses.
  static constexpr size_t kMaxQueuedResponses = 32;

  LearnReactor(Registry* registry, Persistence* persistence, const Limits* limits,
               StreamSet* streams);

  void Stop() override;

 private:
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // Applies request_ and returns the answer, or a fatal status that ends the
  // stream.
  absl::StatusOr<v1::LearnResponse> Process();
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finishes with final_status_ once nothing is left to write.
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Registry* const registry_;
  Persistence* const persistence_;
  const Limits* const limits_;
  StreamSet* const streams_;
  const bool registered_;

  // Touched only by the read path (one read at a time).
  v1::LearnRequest request_;
  std::shared_ptr<ModelEntry> entry_;

  absl::Mutex mu_;
  std::deque<v1::LearnResponse> queue_
      ABSL_GUARDED_BY(mu_);  // front() is being written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool processing_ ABSL_GUARDED_BY(mu_) =
      false;  // a batch is being applied (outside mu_)
  std::optional<grpc::Status> final_status_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_LEARN_REACTOR_H_
