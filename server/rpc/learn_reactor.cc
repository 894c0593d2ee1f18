#include "server/rpc/learn_reactor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/read_ahead.h"
#include "server/model/convert.h"
#include "server/ops/model_ops.h"

namespace perceptron::server {

LearnReactor::LearnReactor(Registry* registry, Persistence* persistence,
                           const Limits* limits, StreamSet* streams,
                           const Authorizer* auth, std::string authorization,
                           RpcCounts* counts)
    : registry_(registry),
      persistence_(persistence),
      limits_(limits),
      streams_(streams),
      auth_(auth),
      authorization_(std::move(authorization)),
      record_(counts),
      registered_(streams->Add(this)),
      self_(this) {
  absl::MutexLock lock(&mu_);
  if (!registered_) {
    final_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "the server is shutting down");
    MaybeFinishLocked();
    return;
  }
  MaybeReadLocked();
}

v1::LearnRequest* LearnReactor::Slot::Renew() {
  request = nullptr;
  arena.Reset();
  request = google::protobuf::Arena::CreateMessage<v1::LearnRequest>(&arena);
  return request;
}

absl::Status LearnReactor::Process(v1::LearnResponse* response,
                                   CommitHandle* commit) {
  const v1::LearnRequest& request = *current_->request;
  if (entry_ == nullptr) {
    if (request.model_id().empty()) {
      return absl::InvalidArgumentError(
          "the first Learn request must name the model (model_id is empty)");
    }
    if (auth_ != nullptr) {
      absl::Status allowed =
          auth_->CheckHeader(authorization_, Role::kLearn, request.model_id());
      if (!allowed.ok()) return allowed;
    }
    absl::StatusOr<std::shared_ptr<ModelEntry>> e =
        registry_->Get(request.model_id());
    if (!e.ok()) return e.status();
    entry_ = *std::move(e);
  } else if (!request.model_id().empty() && request.model_id() != entry_->id) {
    return absl::InvalidArgumentError(
        absl::StrCat("this stream is for model ", entry_->id,
                     "; a request named ", request.model_id()));
  }
  const std::optional<uint64_t> if_examples =
      request.has_if_examples() ? std::optional<uint64_t>(request.if_examples())
                                : std::nullopt;
  if (request.has_columns()) {
    if (request.items_size() > 0) {
      return absl::InvalidArgumentError(
          "a Learn request carries items or columns, not both");
    }
    return ApplyLearnColumns(*entry_, *persistence_, request.columns(),
                             *limits_, response->mutable_columns(),
                             response->mutable_stats(), commit, if_examples);
  }
  if (static_cast<size_t>(request.items_size()) > limits_->max_batch_items) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a batch of ", request.items_size(),
                     " items is over the limit of ", limits_->max_batch_items));
  }
  return ApplyLearnItems(*entry_, *persistence_, request.items(),
                         response->mutable_results(), response->mutable_stats(),
                         commit, if_examples);
}

void LearnReactor::MaybeReadLocked() {
  // Answers queued, plus the one being applied and the one waiting, stay
  // within kMaxQueuedResponses.
  if (reading_ || has_next_ || final_status_ ||
      queue_.size() + (processing_ ? 1 : 0) >= kMaxQueuedResponses)
    return;
  reading_ = true;
  StartRead(request_->Renew());
}

void LearnReactor::OnReadDone(bool ok) {
  absl::MutexLock lock(&mu_);
  reading_ = false;
  if (!ok) {  // the client finished writing (or the call is gone)
    if (!final_status_) final_status_ = grpc::Status::OK;
    MaybeFinishLocked();
    return;
  }
  record_.Received();
  if (final_status_) return;  // stopping: no new work
  if (processing_) {
    // Applied in its turn by the thread applying the one before it.
    std::swap(next_, request_);
    has_next_ = true;
    return;
  }
  std::swap(current_, request_);
  processing_ = true;
  ProcessLocked();
  MaybeFinishLocked();
}

void LearnReactor::ProcessLocked() {
  while (true) {
    // The next request is read while this one is applied if the last one took
    // long enough for the overlap to pay for handing the read to another
    // thread.
    if (read_ahead_) MaybeReadLocked();
    const uint64_t number = next_number_++;
    mu_.Unlock();
    CommitHandle commit;
    auto arena = std::make_unique<google::protobuf::Arena>();
    v1::LearnResponse* response =
        google::protobuf::Arena::CreateMessage<v1::LearnResponse>(arena.get());
    const absl::Time start = absl::Now();
    const absl::Status processed = Process(response, &commit);
    const bool ahead = ReadAhead(*current_->request, absl::Now() - start);
    mu_.Lock();
    read_ahead_ = ahead;
    if (!processed.ok()) {
      final_status_ = ToGrpc(processed);
      has_next_ = false;  // dropped: the stream ends here
      break;
    }
    queue_.push_back(Answer{number, false, std::move(arena), response});
    ++uncommitted_;
    mu_.Unlock();
    // May call back at once (nothing to write, or already written).
    WhenCommitted(commit, [self = self_, number](absl::Status s) {
      self->OnCommitted(number, std::move(s));
    });
    mu_.Lock();
    if (!has_next_ || final_status_) break;
    std::swap(current_, next_);
    has_next_ = false;
  }
  processing_ = false;
  has_next_ = false;
  MaybeReadLocked();
}

void LearnReactor::OnCommitted(uint64_t number, absl::Status status) {
  absl::MutexLock lock(&mu_);
  --uncommitted_;
  for (Answer& a : queue_) {
    if (a.number == number) a.committed = true;
  }
  if (!status.ok()) {
    // The batch was applied but could not be stored: its answer and those
    // after it are never sent, and the stream ends saying why (even if the
    // client had finished writing: an end that would otherwise be OK).
    if (!final_status_ || final_status_->ok()) final_status_ = ToGrpc(status);
    while (!queue_.empty() && queue_.back().number >= number &&
           !(writing_ && queue_.size() == 1)) {
      queue_.pop_back();
    }
  }
  WriteNextLocked();
  MaybeFinishLocked();
}

void LearnReactor::WriteNextLocked() {
  if (writing_ || finished_ || queue_.empty() || !queue_.front().committed)
    return;
  writing_ = true;
  record_.Sent();
  StartWrite(queue_.front().response);
}

void LearnReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  queue_.pop_front();
  if (!ok) {
    queue_.clear();  // the client is gone: nothing more can be written
    if (!final_status_) {
      final_status_ =
          grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
  }
  WriteNextLocked();
  MaybeReadLocked();
  MaybeFinishLocked();
}

void LearnReactor::MaybeFinishLocked() {
  if (finished_ || !final_status_ || processing_ || writing_ ||
      uncommitted_ > 0)
    return;
  if (!queue_.empty()) return;
  finished_ = true;
  record_.Handled(final_status_->error_code());
  Finish(*final_status_);
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
  // Drop the answers not being written; commits still call back (they only mark
  // answers).
  while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
  final_status_ = grpc::Status::CANCELLED;
  MaybeFinishLocked();
}

void LearnReactor::OnDone() {
  if (registered_) streams_->Remove(this);
  // Deleted now, or by the last commit callback once it has let go of mu_.
  std::shared_ptr<LearnReactor> last = std::move(self_);
}

}  // namespace perceptron::server
