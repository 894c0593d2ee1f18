// The Learn stream (docs/design.md section 4): reads batches, applies them to
// the model in order, and answers each, in order, once its log record is
// committed (persistence.h). It keeps reading while earlier batches are being
// committed and written, so a client may have many batches in flight and they
// share fsyncs; when too many answers wait it stops reading until they drain
// (backpressure). While a request is applied, the one after it is read (and
// parsed, on another of gRPC's threads) if the request before took 20 us or
// more to apply; else it is read once this one is done.
#ifndef PERCEPTRON_SERVER_RPC_LEARN_REACTOR_H_
#define PERCEPTRON_SERVER_RPC_LEARN_REACTOR_H_

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/arena.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.pb.h"
#include "server/auth/auth.h"
#include "server/model/limits.h"
#include "server/model/registry.h"
#include "server/rpc/rpc_metrics.h"
#include "server/rpc/stream_set.h"
#include "server/storage/persistence.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

class LearnReactor final
    : public grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>,
      public StoppableStream {
 public:
  // Answers not yet written, at most; past it reading pauses.
  static constexpr size_t kMaxQueuedResponses = 32;

  // `auth` may be null (every stream allowed); `authorization` is the call's
  // header. The stream is recorded in `counts` (null: not recorded).
  LearnReactor(Registry* registry, Persistence* persistence,
               const Limits* limits, StreamSet* streams,
               const Authorizer* auth = nullptr, std::string authorization = "",
               RpcCounts* counts = nullptr);

  void Stop() override;

 private:
  struct Answer {
    uint64_t number;         // the request's position in the stream
    bool committed = false;  // its log record is written as the mode requires
    // The response and everything in it live on one arena, freed at once after
    // the write.
    std::unique_ptr<google::protobuf::Arena> arena;
    v1::LearnResponse* response = nullptr;
  };

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // Applies current_; the answer and its commit, or a fatal status that ends
  // the stream.
  absl::Status Process(v1::LearnResponse* response, CommitHandle* commit);
  // Applies current_ and then each request read meanwhile, in order, until
  // none is waiting; called with mu_ held and processing_ set, returns with
  // mu_ held and processing_ clear.
  void ProcessLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnCommitted(uint64_t number, absl::Status status);
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finishes with final_status_ once nothing is being applied, committed or
  // written.
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Registry* const registry_;
  Persistence* const persistence_;
  const Limits* const limits_;
  StreamSet* const streams_;
  const Authorizer* const auth_;
  const std::string authorization_;
  RpcCall record_;
  const bool registered_;
  // gRPC's reference to this reactor, dropped in OnDone. Commit callbacks hold
  // references too: they run on the committer's thread and may finish the
  // stream, and the reactor must outlive their return from its mutex.
  std::shared_ptr<LearnReactor> self_;

  // The next request is read while the one before it is applied (unless that
  // one took under kReadAheadAfter or its items are by name: ReadAhead, in
  // common/read_ahead.h), so that its parsing (on gRPC's thread) overlaps the
  // learning: request_ is the read's target (while reading_), next_ a request
  // read and waiting (while has_next_), current_ the one being applied (while
  // processing_, by one thread at a time, outside mu_). Each moves to the next
  // by a swap of slots under mu_.
  // Each request is parsed onto an arena of its own, emptied when the slot is
  // read into again: its items' messages and arrays are then a few blocks
  // instead of an allocation each, freed at once.
  struct Slot {
    google::protobuf::Arena arena;
    v1::LearnRequest* request = nullptr;
    // Empties the arena and places a new, empty request on it.
    v1::LearnRequest* Renew();
  };
  std::unique_ptr<Slot> request_ = std::make_unique<Slot>();
  std::unique_ptr<Slot> next_ ABSL_GUARDED_BY(mu_) = std::make_unique<Slot>();
  std::unique_ptr<Slot> current_ = std::make_unique<Slot>();
  std::shared_ptr<ModelEntry> entry_;  // touched only while processing_

  absl::Mutex mu_;
  bool has_next_ ABSL_GUARDED_BY(mu_) = false;
  // Whether the last request took long enough to apply that the next is read
  // while one is applied (ProcessLocked).
  bool read_ahead_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Answer> queue_
      ABSL_GUARDED_BY(mu_);  // front() is being written when writing_
  uint64_t next_number_ ABSL_GUARDED_BY(mu_) = 0;
  int uncommitted_ ABSL_GUARDED_BY(mu_) = 0;  // commits not yet called back
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool processing_ ABSL_GUARDED_BY(mu_) =
      false;  // a batch is being applied (outside mu_)
  std::optional<grpc::Status> final_status_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_RPC_LEARN_REACTOR_H_
