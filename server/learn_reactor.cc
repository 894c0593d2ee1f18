#include "server/learn_reactor.h"

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/model_ops.h"

namespace perceptron::server {

LearnReactor::LearnReactor(Registry* registry, Persistence* persistence,
                           const Limits* limits, StreamSet* streams)
    : registry_(registry),
      persistence_(persistence),
      limits_(limits),
      streams_(streams),
      registered_(streams->Add(this)) {
  absl::MutexLock lock(&mu_);
  if (!registered_) {
    FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "the server is shutting down"));
    return;
  }
  StartRead(&request_);
}

absl::StatusOr<v1::LearnResponse> LearnReactor::Process() {
  if (entry_ == nullptr) {
    if (request_.model_id().empty()) {
      return absl::InvalidArgumentError(
          "the first Learn request must name the model (model_id is empty)");
    }
    absl::StatusOr<std::shared_ptr<ModelEntry>> e =
        registry_->Get(request_.model_id());
    if (!e.ok()) return e.status();
    entry_ = *std::move(e);
  } else if (!request_.model_id().empty() &&
             request_.model_id() != entry_->id) {
    return absl::InvalidArgumentError(
        absl::StrCat("this stream is for model ", entry_->id,
                     "; a request named ", request_.model_id()));
  }
  if (static_cast<size_t>(request_.items_size()) > limits_->max_batch_items) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a batch of ", request_.items_size(),
                     " items is over the limit of ", limits_->max_batch_items));
  }
  v1::LearnResponse response;
  absl::Status s =
      ApplyLearnItems(*entry_, *persistence_, request_.items(), *limits_,
                      response.mutable_results(), response.mutable_stats());
  if (!s.ok()) return s;
  return response;
}

void LearnReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client finished writing (or the call is gone)
    absl::MutexLock lock(&mu_);
    if (!final_status_) final_status_ = grpc::Status::OK;
    MaybeFinishLocked();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (final_status_) return;  // stopping: do not start new work
    processing_ = true;
  }
  absl::StatusOr<v1::LearnResponse> response = Process();
  absl::MutexLock lock(&mu_);
  processing_ = false;
  if (!response.ok()) {
    final_status_ = ToGrpc(response.status());
    MaybeFinishLocked();
    return;
  }
  queue_.push_back(*std::move(response));
  WriteNextLocked();
  if (final_status_) {  // stopped while the batch ran: it was answered; now end
    MaybeFinishLocked();
    return;
  }
  if (queue_.size() < kMaxQueuedResponses) {
    StartRead(&request_);
  } else {
    read_paused_ = true;
  }
}

void LearnReactor::WriteNextLocked() {
  if (writing_ || queue_.empty() || finished_) return;
  writing_ = true;
  StartWrite(&queue_.front());
}

void LearnReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  queue_.pop_front();
  if (!ok) {
    queue_.clear();
    FinishLocked(
        grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    return;
  }
  WriteNextLocked();
  if (read_paused_ && !final_status_ && queue_.size() < kMaxQueuedResponses) {
    read_paused_ = false;
    StartRead(&request_);
  }
  MaybeFinishLocked();
}

void LearnReactor::MaybeFinishLocked() {
  if (final_status_ && !processing_ && !writing_ && queue_.empty())
    FinishLocked(*final_status_);
}

void LearnReactor::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  Finish(status);
}

void LearnReactor::Stop() {
  absl::MutexLock lock(&mu_);
  if (!final_status_) {
    final_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "the server is shutting down");
  }
  MaybeFinishLocked();
}

void LearnReactor::OnCancel() {
  absl::MutexLock lock(&mu_);
  // Drop the answers not yet started; the one being written, if any, must
  // outlive its write.
  while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
  final_status_ = grpc::Status::CANCELLED;
  MaybeFinishLocked();
}

void LearnReactor::OnDone() {
  if (registered_) streams_->Remove(this);
  delete this;
}

}  // namespace perceptron::server
