// echo_server: the bare gRPC echo stream of docs/design.md section 7, on the
// same callback API and threading as perceptrond, answering each request with a
// response shaped like perceptrond's (columnar for a columnar request).
//   echo_server [--port=0]     prints "echo listening on 127.0.0.1:PORT";
//   SIGTERM stops it.
// With --sync_dir=DIR it is the least a durable server does: each request's
// bytes are appended to DIR/echo.log and fdatasync'd before it is answered.
// Its allocator's heap is perceptrond's: tcmalloc on huge pages
// (--allocator_huge_pages, server/huge_heap.h), with the same transfer batch
// (--allocator_transfer_objects, server/allocator_env.h).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/program.h"
#include "common/read_ahead.h"
#include "echo.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/allocator_env.h"
#include "server/huge_heap.h"

ABSL_FLAG(int, port, 0, "TCP port; 0 picks a free one");
ABSL_FLAG(bool, allocator_huge_pages, true,
          "The allocator's heap on transparent huge pages, as perceptrond's "
          "flag of the same name");
ABSL_FLAG(uint32_t, allocator_transfer_objects, 4,
          "tcmalloc's transfer batch, as perceptrond's flag of the same name "
          "(at most 1024; 0 leaves tcmalloc's own)");
ABSL_FLAG(std::string, sync_dir, "",
          "If set, each request is appended to SYNC_DIR/echo.log and "
          "fdatasync'd before its answer");

namespace perceptron::bench {
namespace {

namespace v1 = ::perceptron::v1;

// Reads requests and writes one response per request, in order, with reads
// ahead of writes as perceptrond's Learn stream does.
// The log of --sync_dir, or -1.
int log_fd = -1;

// Appends `request`'s bytes to the log and waits for them to be on disk.
void Log(const v1::LearnRequest& request) {
  if (log_fd < 0) return;
  const std::string bytes = request.SerializeAsString();
  if (::write(log_fd, bytes.data(), bytes.size()) !=
          static_cast<ssize_t>(bytes.size()) ||
      ::fdatasync(log_fd) != 0) {
    std::perror("echo_server: the log");
    std::exit(1);
  }
}

class EchoReactor final
    : public grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse> {
 public:
  EchoReactor() {
    absl::MutexLock lock(&mu_);
    StartRead(&request_);
  }

 private:
  void OnReadDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    if (!ok) {
      done_reading_ = true;
      MaybeFinishLocked();
      return;
    }
    // What the answer needs is taken from the request. As Learn does
    // (common/read_ahead.h), the next request is read while the answer is
    // built if the last answer took 20 us or more to build and its items were
    // not by name, else after it.
    const bool columns = request_.has_columns();
    const int n = columns ? request_.columns().labels_size() +
                                request_.columns().reveal_ids_size()
                          : 0;
    const int items = request_.items_size();
    Log(request_);
    v1::LearnResponse& r = queue_.emplace_back();
    const bool ahead = read_ahead_;
    if (ahead) ReadNextLocked();
    const absl::Time start = absl::Now();
    if (columns) {
      // A columnar answer of one entry per label and reveal.
      v1::ColumnResults* out = r.mutable_columns();
      out->mutable_scores()->Resize(n, 0.5);
      out->mutable_labels()->Resize(n, 1);
      out->set_mistakes(std::string((n + 7) / 8, '\x01'));
      out->set_updates(std::string((n + 7) / 8, '\x01'));
    }
    r.mutable_results()->Reserve(items);
    for (int i = 0; i < items; ++i) {
      v1::Outcome* o = r.add_results()->mutable_outcome();
      o->set_label(1);
      o->set_score(0.5);
      o->set_mistake(i % 8 == 0);
      o->set_updated(i % 8 == 0);
    }
    v1::ModelStats* s = r.mutable_stats();
    s->set_examples(123456);
    s->set_mistakes(1234);
    s->set_updates(1234);
    s->set_td_gamma(12.5);
    s->set_td_available(true);
    s->set_bound(4567.5);
    s->set_bound_available(true);
    s->set_radius(1);
    read_ahead_ = ReadAhead(request_, absl::Now() - start);
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
    if (!ahead) ReadNextLocked();
  }

  void ReadNextLocked() {
    if (queue_.size() < 32) {
      StartRead(&request_);
    } else {
      paused_ = true;
    }
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    queue_.pop_front();
    if (!ok) {
      queue_.clear();
      done_reading_ = true;
    }
    if (!queue_.empty()) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
    if (paused_ && !done_reading_ && queue_.size() < 32) {
      paused_ = false;
      StartRead(&request_);
    }
    MaybeFinishLocked();
  }

  void MaybeFinishLocked() {
    if (done_reading_ && !writing_ && queue_.empty() && !finished_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  void OnDone() override { delete this; }

  absl::Mutex mu_;
  v1::LearnRequest request_;
  std::deque<v1::LearnResponse> queue_;
  bool writing_ = false, paused_ = false, done_reading_ = false,
       finished_ = false, read_ahead_ = false;
};

class EchoService final : public Echo::CallbackService {
  grpc::ServerBidiReactor<v1::LearnRequest, v1::LearnResponse>* Stream(
      grpc::CallbackServerContext*) override {
    return new EchoReactor();
  }
};

}  // namespace
}  // namespace perceptron::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // The same heap as perceptrond's (its flags of the same names).
  if (absl::GetFlag(FLAGS_allocator_transfer_objects) >
      perceptron::server::kMaxTransferObjects) {
    std::fprintf(stderr,
                 "echo_server: --allocator_transfer_objects must be at most "
                 "1024\n");
    return 2;
  }
  perceptron::server::StartWithTransferBatch(
      "echo_server", argv, absl::GetFlag(FLAGS_allocator_transfer_objects));
  if (absl::GetFlag(FLAGS_allocator_huge_pages)) {
    perceptron::server::PutHeapOnHugePages();
  }
  perceptron::BlockStopSignals();
  if (const std::string dir = absl::GetFlag(FLAGS_sync_dir); !dir.empty()) {
    perceptron::bench::log_fd = ::open((dir + "/echo.log").c_str(),
                                       O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (perceptron::bench::log_fd < 0) {
      std::perror("echo_server: --sync_dir");
      return 1;
    }
  }
  perceptron::bench::EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      "127.0.0.1:" + std::to_string(absl::GetFlag(FLAGS_port)),
      grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(64 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::printf("echo listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  perceptron::WaitForStopSignal();
  server->Shutdown(std::chrono::system_clock::now());
  return 0;
}
