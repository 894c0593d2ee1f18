#include "bench/service/memory.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/certificate.h"
#include "core/model.h"
#include "core/prepare.h"
#include "echo.grpc.pb.h"

namespace perceptron::bench {

MemoryFigures Memory(const std::vector<grpc::ByteBuffer>& w1_pool,
                     const std::vector<v1::LearnRequest>& w1_requests,
                     bool quick, bool with_certificate_off) {
  MemoryFigures m;
  // Memory: 10,000 models of d=1000 in one server (default durability).
  {
    auto p = Perceptrond("sync");
    const long before = RssAndThreads(p->pid).first;
    const int models = quick ? 1000 : 10000;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto stub =
            perceptron::v1::PerceptronService::NewStub(Channel(p->target()));
        for (int i = t; i < models; i += 4)
          CreateModel(*stub, absl::StrCat("m", i), 1000);
      });
    }
    for (std::thread& t : threads) t.join();
    auto [rss, th] = RssAndThreads(p->pid);
    std::printf("\n## Memory and threads\n\n");
    std::printf(
        "- %d models of d=1000 in one server: RSS %.1f MB (%.1f MB before; "
        "target: under 150 MB for 10,000), %ld threads\n",
        models, rss / 1024.0, before / 1024.0, th);
    m.models_mb = rss / 1024.0;
  }
  // Durability sync, streaming at full rate: the server's RSS sampled every
  // 100 ms against its idle RSS (the model created, nothing streamed).
  for (const bool certificate : {true, false}) {
    if (!certificate && !with_certificate_off) break;
    auto p = Perceptrond("sync", true, certificate);
    CreateModel(p->target(), "bench", 20);
    const long idle = RssAndThreads(p->pid).first;
    const auto [idle_anon, idle_file] = AnonAndFile(p->pid);
    std::atomic<long> peak = idle;
    long peak_anon = idle_anon, peak_file = idle_file;  // the sampler's
    absl::Notification done;
    std::thread sampler([&] {
      do {
        peak = std::max(peak.load(), RssAndThreads(p->pid).first);
        const auto [anon, file] = AnonAndFile(p->pid);
        peak_anon = std::max(peak_anon, anon);
        peak_file = std::max(peak_file, file);
      } while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
    });
    const double span = quick ? 10 : 60;
    const double rate =
        ServiceRate(p->target(), w1_pool, std::numeric_limits<int64_t>::max(),
                    64, absl::Now() + absl::Seconds(span));
    done.Notify();
    sampler.join();
    const double growth = (peak - idle) / 1024.0;
    (certificate ? m.sync_growth_mb : m.sync_growth_nocert_mb) = growth;
    std::printf(
        "- durability sync%s, W1 streamed for %.0f s at %s examples/s: server "
        "RSS %.1f MB idle, at most %.1f MB while streaming (%.1f MB above "
        "idle; target: under 64 MB); at most %.1f MB more of its own memory "
        "(RssAnon) and %.1f MB more of mapped files (RssFile; LevelDB's "
        "tables are read with pread, so their pages are the kernel's page "
        "cache, not in it)\n",
        certificate ? "" : ", certificate off", span, Si(rate).c_str(),
        idle / 1024.0, peak / 1024.0, growth, (peak_anon - idle_anon) / 1024.0,
        (peak_file - idle_file) / 1024.0);
  }
  // 1,000 concurrent open Learn streams.
  {
    auto p = Perceptrond("none");
    CreateModel(p->target(), "s", 20);
    auto channel = Channel(p->target());
    auto stub = perceptron::v1::PerceptronService::NewStub(channel);
    const int streams = quick ? 200 : 1000;
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<Stream>> open;
    perceptron::v1::LearnResponse r;
    for (int i = 0; i < streams; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      open.push_back(stub->Learn(contexts.back().get()));
      perceptron::v1::LearnRequest req = w1_requests[i % w1_requests.size()];
      req.set_model_id("s");
      if (!open.back()->Write(req) || !open.back()->Read(&r)) std::exit(1);
    }
    auto [rss, th] = RssAndThreads(p->pid);
    std::printf(
        "- %d Learn streams open at once (each answered a batch): server RSS "
        "%.1f MB, "
        "%ld threads\n",
        streams, rss / 1024.0, th);
    for (auto& s : open) {
      s->WritesDone();
      s->Finish();
    }
  }
  return m;
}

}  // namespace perceptron::bench
