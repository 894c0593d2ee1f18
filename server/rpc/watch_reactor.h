// The WatchStatus stream: the model's status at once, then after each change,
// at most once per interval (a change inside the interval is sent when it
// ends). Ends with NOT_FOUND when the model is deleted and UNAVAILABLE on
// shutdown.
#ifndef PERCEPTRON_SERVER_RPC_WATCH_REACTOR_H_
#define PERCEPTRON_SERVER_RPC_WATCH_REACTOR_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.pb.h"
#include "server/model/registry.h"
#include "server/rpc/stream_set.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

class WatchReactor final : public grpc::ServerWriteReactor<v1::ModelStatus>,
                           public ModelListener,
                           public StoppableStream {
 public:
  // Starts watching `entry` (which must not be null).
  WatchReactor(std::shared_ptr<ModelEntry> entry, absl::Duration interval,
               StreamSet* streams);

  void OnModelChanged() override;
  void OnModelDeleted(const absl::Status& why) override;
  void Stop() override;

 private:
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  void OnAlarm(bool fired);

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<ModelEntry> entry_;
  const absl::Duration interval_;
  StreamSet* const streams_;
  bool registered_ = false;

  absl::Mutex mu_;
  v1::ModelStatus status_ ABSL_GUARDED_BY(mu_);  // the message being written
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) =
      false;  // OnDone ran; delete when the alarm is quiet
  bool alarm_armed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelling_ ABSL_GUARDED_BY(mu_) =
      false;  // OnDone is cancelling the alarm
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // A new alarm for each arming; the last one stays until this is destroyed.
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
};

// A WatchStatus call refused at the start (unknown model, shutting down):
// finishes at once.
class FailedWatch final : public grpc::ServerWriteReactor<v1::ModelStatus> {
 public:
  explicit FailedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_RPC_WATCH_REACTOR_H_
