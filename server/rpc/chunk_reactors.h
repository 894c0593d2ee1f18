// Streams of chunks for what may not fit in one message: a weight vector or an
// export blob sent in pieces (ChunkWriter), an import blob received in pieces
// (ChunkReader). Each counts as a call in progress on the StreamSet, so that
// shutdown waits for it.
#ifndef PERCEPTRON_SERVER_RPC_CHUNK_REACTORS_H_
#define PERCEPTRON_SERVER_RPC_CHUNK_REACTORS_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/model/convert.h"
#include "server/rpc/stream_set.h"

namespace perceptron::server {

// Writes the messages `next` makes until it returns false, then OK. `next`
// fills its argument (cleared) and returns true, or returns false at the end.
template <typename Message>
class ChunkWriter final : public grpc::ServerWriteReactor<Message> {
 public:
  ChunkWriter(StreamSet* streams, std::function<bool(Message*)> next)
      : streams_(streams), next_(std::move(next)) {
    streams_->BeginUnary();
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      this->Finish(
          grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    WriteNext();
  }
  void OnDone() override {
    streams_->EndUnary();
    delete this;
  }

 private:
  void WriteNext() {
    chunk_.Clear();
    if (next_(&chunk_)) {
      this->StartWrite(&chunk_);
    } else {
      this->Finish(grpc::Status::OK);
    }
  }

  StreamSet* const streams_;
  std::function<bool(Message*)> next_;
  Message chunk_;
};

// A write stream that ends at once with `status`.
template <typename Message>
class FailedWriter final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit FailedWriter(const absl::Status& status) {
    this->Finish(ToGrpc(status));
  }
  void OnDone() override { delete this; }
};

// Reads every message, appending `blob(m)` of each to one string (at most
// `max_bytes`), then answers `finish(first message, whole string, response)`.
// `first` checks the first message before anything more is read.
template <typename Request, typename Response>
class ChunkReader final : public grpc::ServerReadReactor<Request> {
 public:
  using FirstCheck = std::function<absl::Status(const Request& first)>;
  using Finisher = std::function<absl::Status(
      const Request& first, const std::string& whole, Response* response)>;

  ChunkReader(StreamSet* streams, size_t max_bytes,
              const std::string& (*blob)(const Request&), FirstCheck first,
              Finisher finish, Response* response)
      : streams_(streams),
        max_bytes_(max_bytes),
        blob_(blob),
        check_first_(std::move(first)),
        finish_(std::move(finish)),
        response_(response) {
    streams_->BeginUnary();
    this->StartRead(&chunk_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the client finished sending (or went away)
      if (!started_) {
        this->Finish(
            ToGrpc(absl::InvalidArgumentError("the stream sent no message")));
        return;
      }
      this->Finish(ToGrpc(finish_(first_, whole_, response_)));
      return;
    }
    const std::string& piece = blob_(chunk_);
    if (!started_) {
      started_ = true;
      first_ = chunk_;
      if (absl::Status s = check_first_(first_); !s.ok()) {
        this->Finish(ToGrpc(s));
        return;
      }
    }
    if (piece.size() > max_bytes_ - whole_.size()) {
      this->Finish(ToGrpc(absl::ResourceExhaustedError(absl::StrCat(
          "the chunks pass ", max_bytes_, " bytes, the most one holds"))));
      return;
    }
    whole_.append(piece);
    this->StartRead(&chunk_);
  }
  void OnDone() override {
    streams_->EndUnary();
    delete this;
  }

 private:
  StreamSet* const streams_;
  const size_t max_bytes_;
  const std::string& (*blob_)(const Request&);
  FirstCheck check_first_;
  Finisher finish_;
  Response* const response_;
  Request chunk_;
  Request first_;
  bool started_ = false;
  std::string whole_;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_RPC_CHUNK_REACTORS_H_
