// A Learn stream of the C++ client library: items are batched, and up to
// SessionOptions::max_in_flight batches travel at once; a batch goes as
// packed columns when its items allow. Opened by Client::OpenLearnSession.
//
//   std::unique_ptr<LearnSession> s = client->OpenLearnSession("spam", {});
//   for (const Example& e : examples) s->AddLabeled(e);
//   absl::StatusOr<SessionSummary> summary = s->Finish();
//
// A LearnSession is used by one thread at a time; its answers reach
// on_response on a reader thread of its own.
#ifndef PERCEPTRON_CLIENT_LEARN_SESSION_H_
#define PERCEPTRON_CLIENT_LEARN_SESSION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/example.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::client {

namespace v1 = ::perceptron::v1;

struct SessionOptions {
  // Items per request. Default: 64.
  size_t batch_size = 64;
  // Requests sent and not yet answered, at most; Add* blocks past it. Deep
  // enough that a server in sync durability mode commits many batches per
  // fsync. Default: 64.
  size_t max_in_flight = 64;
  // Send each batch as packed columns (docs/design.md section 4) when its
  // items allow: reveals, then rows that are all dense of the model's
  // dimension or all sparse, and all labeled or all not. Any other batch goes
  // as items, as does every batch if the model's dimension could not be read
  // when the session opened (one GetModel call). Batches end at the same
  // items either way, and the answers and the model's state are the same, bit
  // for bit. Default: true.
  bool columnar = true;
  // Called with each answer, in order, on the session's reader thread, as
  // per-item results (a columnar answer is expanded to them). Optional.
  std::function<void(const v1::LearnResponse&)> on_response;
  // Sent with the first request (LearnRequest.if_examples): the session's
  // batches are applied only if the model has learned from exactly this many
  // labeled examples when the first one comes; else the stream ends with
  // FAILED_PRECONDITION, nothing applied. For resuming a broken stream after
  // what the model holds, with no item applied twice. Default: none.
  std::optional<uint64_t> if_examples;
};

struct SessionSummary {
  uint64_t requests = 0;
  // Of those, the ones sent as columns.
  uint64_t columnar_requests = 0;
  uint64_t items = 0;
  uint64_t item_errors = 0;
  // The first item error's message, if any.
  std::string first_error;
  // The model's statistics after the last answered batch.
  v1::ModelStats stats;
};

// A Learn stream: items are batched, and up to max_in_flight batches travel at
// once.
class LearnSession {
 public:
  ~LearnSession();

  // Queue one item; a full batch is sent. An error means the stream has ended
  // (Finish tells why). Examples are copied: the caller may reuse them.
  absl::Status AddLabeled(const Example& e);
  absl::Status AddExample(const Example& e);
  absl::Status AddReveal(uint64_t prediction_id, int label);
  // Sends the queued items now, as a batch.
  absl::Status Flush();
  // Sends what is queued, closes the stream and waits for every answer. The
  // stream's status if it failed, else the summary.
  absl::StatusOr<SessionSummary> Finish();

 private:
  friend class Client;
  // The rows of the batch being built.
  enum class Rows { kNone, kDense, kSparse, kNamed };
  // What the reader needs to expand a columnar answer into items.
  struct Sent {
    bool columnar = false;
    bool labeled = false;
    std::vector<uint64_t> reveal_ids;
  };

  // `dimension`: the model's, or 0 to send every batch as items.
  LearnSession(v1::PerceptronService::Stub* stub, std::string model_id,
               SessionOptions options, uint32_t dimension,
               const std::string& token);
  // Whether an item of this kind keeps the batch columnar.
  bool Fits(Rows rows, bool labeled) const;
  // The batch's columns so far as items; later items go as items too.
  void ToItems();
  void AddRow(const Example& e, bool labeled);
  absl::Status Queued();
  void ReadLoop();
  void Expand(const Sent& sent, v1::LearnResponse* r) const;

  const std::string model_id_;
  const SessionOptions options_;
  const uint32_t dimension_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>>
      stream_;
  // The batch being built: columns while its items fit them, else items.
  v1::LearnRequest request_;
  size_t count_ = 0;
  bool as_items_ = false;
  Rows rows_ = Rows::kNone;
  bool labeled_ = false;
  // The batch's strings, while its rows are by name.
  NamedColumns names_;
  bool named_ = false;
  bool finished_ = false;
  std::thread reader_;

  absl::Mutex mu_;
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Sent> sent_ ABSL_GUARDED_BY(mu_);
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  SessionSummary summary_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_LEARN_SESSION_H_
