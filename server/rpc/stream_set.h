// The calls in progress on a server: open streams, so that shutdown can end
// each with UNAVAILABLE, and a count of unary calls, so that shutdown can wait
// for them. Thread-safe.
#ifndef PERCEPTRON_SERVER_RPC_STREAM_SET_H_
#define PERCEPTRON_SERVER_RPC_STREAM_SET_H_

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace perceptron::server {

// A stream that can be told to stop.
class StoppableStream {
 public:
  virtual ~StoppableStream() = default;
  // Ends the stream with UNAVAILABLE once the batch in progress, if any, has
  // been answered. Called with the StreamSet's lock held: must not call back
  // into the StreamSet.
  virtual void Stop() = 0;
};

class StreamSet {
 public:
  // False (and `s` not added) once StopAll has been called: the caller should
  // refuse the stream.
  bool Add(StoppableStream* s) {
    absl::MutexLock lock(&mu_);
    if (stopped_) return false;
    streams_.insert(s);
    return true;
  }
  // Call before `s` is destroyed; afterwards Stop is never called on it.
  void Remove(StoppableStream* s) {
    absl::MutexLock lock(&mu_);
    streams_.erase(s);
  }
  void StopAll() {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    for (StoppableStream* s : streams_) s->Stop();
  }
  bool stopped() const {
    absl::MutexLock lock(&mu_);
    return stopped_;
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return streams_.size();
  }
  // Counts a unary call in progress (see UnaryCall); AwaitIdle waits for these
  // too.
  void BeginUnary() {
    absl::MutexLock lock(&mu_);
    ++unary_;
  }
  void EndUnary() {
    absl::MutexLock lock(&mu_);
    --unary_;
  }
  // True once no stream and no unary call is in progress, false at `deadline`.
  bool AwaitIdle(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return streams_.empty() && unary_ == 0;
    };
    return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
  }

 private:
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<StoppableStream*> streams_ ABSL_GUARDED_BY(mu_);
  int unary_ ABSL_GUARDED_BY(mu_) = 0;
};

// Counts one unary call for the life of the scope.
class UnaryCall {
 public:
  explicit UnaryCall(StreamSet* s) : s_(s) { s_->BeginUnary(); }
  ~UnaryCall() { s_->EndUnary(); }
  UnaryCall(const UnaryCall&) = delete;
  UnaryCall& operator=(const UnaryCall&) = delete;

 private:
  StreamSet* s_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_RPC_STREAM_SET_H_
