// The open streams of a server, so that shutdown can end each with UNAVAILABLE. Thread-safe.
#ifndef PERCEPTRON_SERVER_STREAM_SET_H_
#define PERCEPTRON_SERVER_STREAM_SET_H_

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace perceptron::server {

// A stream that can be told to stop.
class StoppableStream {
 public:
  virtual ~StoppableStream() = default;
  // Ends the stream with UNAVAILABLE once the batch in progress, if any, has been answered.
  // Called with the StreamSet's lock held: must not call back into the StreamSet.
  virtual void Stop() = 0;
};

class StreamSet {
 public:
  // False (and `s` not added) once StopAll has been called: the caller should refuse the stream.
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

 private:
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<StoppableStream*> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STREAM_SET_H_
