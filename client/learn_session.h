// A Learn stream of the C++ client library: items are batched, and up to
// SessionOptions::max_in_flight batches travel at once; a batch goes as
// packed columns when its items allow. Opened by Client::OpenLearnSession.
//
//   std::unique_ptr<LearnSession> s = client->OpenLearnSession("spam", {});
//   for (const Example& e : examples) s->AddLabeled(e);
//   absl::StatusOr<SessionSummary> summary = s->Finish();
//
// A LearnSession is used by one thread at a time; its answers reach
// on_response on a reader thread of its own. With SessionOptions::retry_for it
// resumes a stream that breaks by itself.
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
#include "absl/time/time.h"
#include "client/example.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::client {

namespace v1 = ::perceptron::v1;

class Client;

// A broken stream resumed (SessionOptions::retry_for).
struct Resumption {
  // Why the stream ended.
  absl::Status broke;
  // The session's examples answered before it broke.
  uint64_t answered = 0;
  // Of the session's examples, the ones the model holds: the new stream
  // starts after them. Those from `answered` to `held` were learned and
  // committed without an answer (none of them reaches on_response).
  uint64_t held = 0;
};

struct SessionOptions {
  // Items per request. Default: 64.
  size_t batch_size = 64;
  // A batch is also sent once its examples' features come to this many bytes
  // (RequestBytes), so that wide rows do not make a request over the message
  // limit. Default: kBatchBytes (4 MiB).
  size_t max_batch_bytes = kBatchBytes;
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
  // what the model holds, with no item applied twice. With retry_for, where
  // the session's examples start among the model's (read when it opens if not
  // given), and each request carries the count before it. Default: none.
  std::optional<uint64_t> if_examples;
  // Above zero, a stream that breaks (the server restarting, a shard behind a
  // proxy killed, a model being moved to another shard: the codes
  // ResumableLearnEnd names) is resumed, as `perceptron train --retry_for`
  // resumes its own: the session waits up to this long, on a connection of
  // its own, for the model to answer again, reads how many labeled examples
  // it holds and sends the rest on a new stream. Each request carries the
  // count the model must hold before it (if_examples), so that no example is
  // lost or learned twice, even should a request go missing on the way.
  // A model that refuses every batch for a while (UNAVAILABLE while it is
  // being moved) is retried with growing pauses until this long passes with
  // no progress. For that the session keeps the examples added and not yet
  // answered (at most max_in_flight + 1 batches of them), takes labeled
  // examples only (AddExample and AddReveal are refused: a prediction's id is
  // the server's), and ends at the first example the server refuses (Finish
  // says which): where to go on is counted in examples the model holds, and
  // a refused one is not among them. It assumes no other client writes to
  // the model meanwhile; if the model holds fewer examples than were
  // answered (a server without durability restarted), Finish says DATA_LOSS
  // instead of resuming. Default: zero (a broken stream ends the session,
  // and Finish says why).
  absl::Duration retry_for = absl::ZeroDuration();
  // With retry_for: called each time a stream breaks and may be resumed,
  // before the session waits for the model (why it ended, and the session's
  // examples answered), and each time a broken stream is resumed, before the
  // new stream's answers reach on_response; both on the thread that adds
  // items. Optional.
  std::function<void(const absl::Status& broke, uint64_t answered)> on_break;
  std::function<void(const Resumption&)> on_resume;
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
  // With retry_for: how often a broken stream was resumed, and the examples
  // learned and committed without an answer (Resumption). `requests` and
  // `items` count every stream's.
  int resumed = 0;
  uint64_t unanswered = 0;
};

// Whether a Learn stream that ended with `code` may be resumed after the
// examples its model holds: the server or the path to it went away
// (UNAVAILABLE; INTERNAL or UNKNOWN when a proxy resets the stream; ABORTED,
// CANCELLED), or another stream's batch came first (FAILED_PRECONDITION from
// if_examples).
bool ResumableLearnEnd(absl::StatusCode code);

// A Learn stream: items are batched, and up to max_in_flight batches travel at
// once.
class LearnSession {
 public:
  ~LearnSession();

  // Queue one item; a full batch is sent. An error means the stream has ended
  // (Finish tells why); with retry_for, one that broke is resumed first.
  // Examples are copied: the caller may reuse them.
  absl::Status AddLabeled(const Example& e);
  // Both refused with retry_for (INVALID_ARGUMENT, the session unchanged).
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
  LearnSession(Client* client, std::string model_id, SessionOptions options,
               uint32_t dimension);
  bool retrying() const { return options_.retry_for > absl::ZeroDuration(); }
  // A new stream through `via`, its first request carrying `if_examples` (with
  // retry_for, each request the count before it), and its reader.
  void Open(Client& via, std::optional<uint64_t> if_examples);
  // Whether an item of this kind keeps the batch columnar.
  bool Fits(Rows rows, bool labeled) const;
  // The batch's columns so far as items; later items go as items too.
  void ToItems();
  void AddRow(const Example& e, bool labeled);
  absl::Status Queued();
  // Counts an item queued; whether the batch is full (batch_size items or
  // max_batch_bytes of features).
  bool Counted();
  // Sends the batch being built (waiting for room); false if the stream has
  // ended.
  bool Send();
  // Empties the batch being built.
  void ClearBatch();
  // Waits for the reader of a stream that ended before everything was sent,
  // or after WritesDone: why it ended (UNAVAILABLE for one that ended OK with
  // requests unanswered), or OK if everything was answered.
  absl::Status EndStream();
  // With retry_for: resumes after `broke` (the status of the stream that
  // ended), re-sending the kept examples the model does not hold; the batch
  // being built then holds what did not fill a batch. OK once a new stream
  // is open and they are sent; else why the session ends.
  absl::Status Resume(absl::Status broke);
  // The model's labeled examples, asked through `via` until it answers
  // (within retry_for, with growing pauses); `broke`, if not OK, is named in
  // the error.
  absl::StatusOr<uint64_t> HeldExamples(Client& via, const absl::Status& broke);
  // With retry_for: records the first refused example (`item` of the
  // session) and ends the stream.
  void Refused(uint64_t item, const v1::ItemError& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReadLoop();
  void Expand(const Sent& sent, v1::LearnResponse* r) const;

  Client* const client_;
  const std::string model_id_;
  const SessionOptions options_;
  const uint32_t dimension_;
  // After a stream broke (retry_for): the client on a connection of its own
  // that the streams after it go through.
  std::unique_ptr<Client> via_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>>
      stream_;
  // Carried by the current stream's first request; with retry_for, by each
  // request, as the count the model holds before it.
  std::optional<uint64_t> if_examples_;
  // The batch being built: columns while its items fit them, else items.
  v1::LearnRequest request_;
  size_t count_ = 0;
  size_t bytes_ = 0;  // of its examples' features (RequestBytes)
  bool as_items_ = false;
  Rows rows_ = Rows::kNone;
  bool labeled_ = false;
  // The batch's strings, while its rows are by name.
  NamedColumns names_;
  bool named_ = false;
  bool finished_ = false;
  // Whether the current stream's reader was joined and its status read.
  bool stream_ended_ = false;
  // Why the session ended, if it could not be resumed (or not opened).
  absl::Status ended_;
  std::thread reader_;
  // With retry_for: the model's labeled examples when the session opened;
  // the examples added; those not yet known to be held by the model, from
  // the session's example `kept_first_` on; the session's examples the model
  // held when the current stream opened; and while resumed streams make no
  // progress, since when, and the pause before the next try.
  uint64_t base_ = 0;
  uint64_t added_ = 0;
  std::deque<Example> kept_;
  uint64_t kept_first_ = 0;
  uint64_t opened_at_ = 0;
  std::optional<absl::Time> stalled_since_;
  absl::Duration stalled_pause_ = absl::Milliseconds(100);

  absl::Mutex mu_;
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Sent> sent_ ABSL_GUARDED_BY(mu_);
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  SessionSummary summary_ ABSL_GUARDED_BY(mu_);
  // With retry_for: the first example the server refused, which ends the
  // session.
  absl::Status rejected_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_LEARN_SESSION_H_
