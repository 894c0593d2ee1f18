#include "server/rpc/watch_reactor.h"

#include "server/model/convert.h"
#include "server/ops/model_ops.h"

namespace perceptron::server {

WatchReactor::WatchReactor(std::shared_ptr<ModelEntry> entry,
                           absl::Duration interval, StreamSet* streams)
    : entry_(std::move(entry)), interval_(interval), streams_(streams) {
  registered_ = streams_->Add(this);
  entry_->AddListener(this);
  absl::MutexLock lock(&mu_);
  if (!registered_) {
    FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "the server is shutting down"));
    return;
  }
  MaybeWriteLocked();
}

void WatchReactor::OnModelChanged() {
  absl::MutexLock lock(&mu_);
  dirty_ = true;
  MaybeWriteLocked();
}

void WatchReactor::OnModelDeleted(const absl::Status& why) {
  absl::MutexLock lock(&mu_);
  FinishLocked(ToGrpc(why));
}

void WatchReactor::Stop() {
  absl::MutexLock lock(&mu_);
  FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "the server is shutting down"));
}

void WatchReactor::MaybeWriteLocked() {
  if (finished_ || writing_ || !dirty_) return;
  const absl::Time now = absl::Now();
  if (now < last_write_ + interval_) {
    if (!alarm_armed_) {
      alarm_armed_ = true;
      alarm_ = std::make_unique<grpc::Alarm>();
      alarm_->Set(absl::ToChronoTime(last_write_ + interval_),
                  [this](bool ok) { OnAlarm(ok); });
    }
    return;
  }
  status_.Clear();
  absl::Status s = FillStatus(*entry_, &status_);
  if (!s.ok()) {
    FinishLocked(ToGrpc(s));
    return;
  }
  dirty_ = false;
  writing_ = true;
  last_write_ = now;
  StartWrite(&status_);
}

void WatchReactor::OnAlarm(bool fired) {
  bool destroy = false;
  {
    absl::MutexLock lock(&mu_);
    alarm_armed_ = false;
    if (done_) {
      destroy = !cancelling_;  // else OnDone, still in Cancel, deletes
    } else {
      MaybeWriteLocked();
    }
  }
  if (destroy) delete this;
}

void WatchReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) {
    FinishLocked(
        grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    return;
  }
  MaybeWriteLocked();
}

void WatchReactor::OnCancel() {
  absl::MutexLock lock(&mu_);
  FinishLocked(grpc::Status::CANCELLED);
}

void WatchReactor::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  Finish(status);
}

void WatchReactor::OnDone() {
  entry_->RemoveListener(this);  // no notification arrives after this
  if (registered_) streams_->Remove(this);
  grpc::Alarm* armed = nullptr;
  {
    absl::MutexLock lock(&mu_);
    done_ = true;  // finished_ is set too, so alarm_ is never replaced again
    if (alarm_armed_) {
      armed = alarm_.get();
      cancelling_ = true;
    }
  }
  if (armed == nullptr) {
    delete this;
    return;
  }
  armed->Cancel();  // OnAlarm runs now, or ran, or will run later
  bool destroy;
  {
    absl::MutexLock lock(&mu_);
    cancelling_ = false;
    destroy =
        !alarm_armed_;  // OnAlarm already ran; else it deletes when it runs
  }
  if (destroy) delete this;
}

}  // namespace perceptron::server
