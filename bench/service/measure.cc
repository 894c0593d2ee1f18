#include "bench/service/measure.h"

#include <fcntl.h>
#include <sys/mman.h>
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
#include "core/feature_hash.h"
#include "core/model.h"
#include "core/prepare.h"
#include "echo.grpc.pb.h"

namespace perceptron::bench {

std::vector<grpc::ByteBuffer> Serialized(
    const std::vector<v1::LearnRequest>& requests) {
  std::vector<grpc::ByteBuffer> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    bool own = false;
    if (!grpc::SerializationTraits<v1::LearnRequest>::Serialize(requests[i],
                                                                &out[i], &own)
             .ok()) {
      std::exit(1);
    }
  }
  return out;
}

double Pipelined(RawStream* stream, const std::vector<grpc::ByteBuffer>& pool,
                 int64_t batches, int items_per_batch, int in_flight,
                 absl::Time until) {
  absl::Mutex mu;
  int64_t answered = 0;
  const absl::Time start = absl::Now();
  std::thread reader([&] {
    grpc::ByteBuffer r;
    while (stream->Read(&r)) {
      absl::MutexLock lock(&mu);
      ++answered;
    }
  });
  int64_t written = 0;
  for (; written < batches; ++written) {
    {
      absl::MutexLock lock(&mu);
      auto room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
        return written - answered < in_flight;
      };
      mu.Await(absl::Condition(&room));
    }
    if (written % 64 == 0 && absl::Now() >= until) break;
    stream->Write(pool[written % pool.size()]);
  }
  stream->WritesDone();
  reader.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (!stream->Finish().ok() || answered != written) {
    std::fprintf(stderr, "a stream failed\n");
    std::exit(1);
  }
  return static_cast<double>(written) * items_per_batch / seconds;
}

std::unique_ptr<RawStream> OpenRaw(grpc::Channel* channel, const char* method,
                                   grpc::ClientContext* context) {
  return std::unique_ptr<RawStream>(
      grpc::internal::
          ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
              channel,
              grpc::internal::RpcMethod(
                  method, grpc::internal::RpcMethod::BIDI_STREAMING),
              context));
}

double ServiceRate(const std::string& target,
                   const std::vector<grpc::ByteBuffer>& pool, int64_t batches,
                   int items, absl::Time until, const char* method) {
  std::shared_ptr<grpc::Channel> channel = Channel(target);
  grpc::ClientContext context;
  std::unique_ptr<RawStream> s = OpenRaw(channel.get(), method, &context);
  return Pipelined(s.get(), pool, batches, items, Options().in_flight, until);
}

Latency Percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

Latency PingPong(Stream* s, const Data& d, int examples, bool echo) {
  std::vector<double> us;
  v1::LearnResponse r;
  for (int t = 0; t < examples; ++t) {
    v1::LearnRequest predict;
    if (t == 0) predict.set_model_id("w4");
    predict.add_items()
        ->mutable_example()
        ->mutable_dense()
        ->mutable_values()
        ->Add(d.values[t].begin(), d.values[t].end());
    absl::Time start = absl::Now();
    if (!s->Write(predict) || !s->Read(&r)) std::exit(1);
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
    const uint64_t id = echo ? 1 : r.results(0).prediction().prediction_id();
    v1::LearnRequest reveal;
    v1::RevealItem* item = reveal.add_items()->mutable_reveal();
    item->set_prediction_id(id);
    item->set_label(d.labels[t]);
    start = absl::Now();
    if (!s->Write(reveal) || !s->Read(&r)) std::exit(1);
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  s->WritesDone();
  s->Finish();
  return Percentiles(us);
}

double HashNsPerFeature(const NamedData& d, uint32_t bits, int repeats) {
  std::vector<std::vector<NamedFeature>> xs;
  size_t features = 0;
  for (const std::vector<v1::NamedFeature>& row : d.features) {
    std::vector<NamedFeature>& x = xs.emplace_back();
    for (const v1::NamedFeature& f : row) {
      NamedFeature& g = x.emplace_back();
      g.space = f.space();
      g.name = f.name();
      if (f.has_category()) {
        g.categorical = true;
        g.category = f.category();
      } else {
        g.value = f.has_number() ? f.number() : 1.0;
      }
    }
    features += x.size();
  }
  const FeatureHasher hasher(bits, {});
  Features out;
  std::vector<double> ns;
  for (int r = 0; r < repeats; ++r) {
    const absl::Time start = absl::Now();
    for (const std::vector<NamedFeature>& x : xs) {
      if (!hasher.Hash(x, &out).ok() || out.indices.empty()) std::exit(1);
    }
    ns.push_back(absl::ToDoubleNanoseconds(absl::Now() - start) /
                 static_cast<double>(features));
  }
  return Median(ns);
}

double CoreRate(const Workload& w, const Data& d, int64_t examples) {
  ModelConfig c;
  c.dimension = w.dimension;
  for (uint32_t r = 0; r < w.classes; ++r) c.classes.push_back(absl::StrCat(r));
  auto model = *Model::Create(c);
  if (w.nonzeros == 0) {
    // Dense rows packed before timing and learned a batch at a time
    // (Model::LearnDense), as the server's columnar path learns them.
    std::vector<double> packed;
    for (const std::vector<double>& row : d.values)
      packed.insert(packed.end(), row.begin(), row.end());
    const size_t batch = static_cast<size_t>(w.batch);
    const size_t batches = d.labels.size() / batch;
    int64_t mistakes = 0;
    const absl::Time start = absl::Now();
    for (int64_t k = 0; k * static_cast<int64_t>(batch) < examples; ++k) {
      const size_t t = (k % batches) * batch;
      absl::Status s =
          model->LearnDense(absl::MakeConstSpan(packed).subspan(
                                t * w.dimension, batch * w.dimension),
                            absl::MakeConstSpan(d.labels).subspan(t, batch),
                            [&](size_t, const absl::StatusOr<Outcome>& o) {
                              if (!o.ok()) std::exit(1);
                              mistakes += o->mistake;
                            });
      if (!s.ok()) std::exit(1);
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (mistakes == 0) std::exit(1);
    return static_cast<double>(model->counters().examples) / seconds;
  }
  const absl::Time start = absl::Now();
  for (int64_t k = 0; k < examples; ++k) {
    const size_t t = k % d.labels.size();
    const FeatureView x = FeatureView::Sparse(d.indices[t], d.values[t]);
    // The next example's weights fetched ahead, as the server's batches do.
    const size_t next = (k + 1) % d.labels.size();
    model->Prefetch(FeatureView::Sparse(d.indices[next], d.values[next]));
    if (!model->Learn(x, d.labels[t]).ok()) std::exit(1);
  }
  return examples / absl::ToDoubleSeconds(absl::Now() - start);
}

void CreateModel(perceptron::v1::PerceptronService::Stub& stub,
                 const std::string& id, uint32_t d, uint32_t hash_bits,
                 uint32_t classes) {
  grpc::ClientContext context;
  v1::CreateModelRequest req;
  req.set_model_id(id);
  req.mutable_config()->set_dimension(d);
  req.mutable_config()->set_hash_bits(hash_bits);
  for (uint32_t r = 0; r < classes; ++r) {
    req.mutable_config()->add_classes(absl::StrCat(r));
  }
  v1::Model m;
  grpc::Status s = stub.CreateModel(&context, req, &m);
  if (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
    std::fprintf(stderr, "CreateModel %s: %s\n", id.c_str(),
                 s.error_message().c_str());
    std::exit(1);
  }
}

void CreateModel(const std::string& target, const std::string& id, uint32_t d,
                 uint32_t hash_bits, uint32_t classes) {
  auto stub = v1::PerceptronService::NewStub(Channel(target));
  CreateModel(*stub, id, d, hash_bits, classes);
}

std::unique_ptr<Process> Start(const Path& path) {
  if (path.echo) {
    return EchoServer();
  }
  return Perceptrond(path.durability, path.rpc_metrics, path.certificate,
                     path.names);
}

std::string CertificateEnd(const v1::Certificate& c) {
  switch (c.state()) {
    case v1::Certificate::FROZEN:
      return absl::StrFormat("frozen at %d (last solution over %d%s), U %.6g",
                             c.frozen_at(), c.solved(),
                             c.converged() ? ", converged" : "", c.upper());
    case v1::Certificate::KEEPING:
    case v1::Certificate::FREEZING:
      return absl::StrFormat("%s, %d kept, solved over %d, U %.6g",
                             v1::Certificate::State_Name(c.state()), c.kept(),
                             c.solved(), c.upper());
    default:
      return absl::StrCat("off: ", c.reason());
  }
}

Measured Fresh(const Path& path, const Workload& w,
               const std::vector<grpc::ByteBuffer>& pool, int64_t batches) {
  std::unique_ptr<Process> server = Start(path);
  if (!path.echo) {
    CreateModel(server->target(), "bench", w.dimension, w.hash_bits, w.classes);
  }
  const std::string pid = absl::StrCat(server->pid);
  const long rss0 = StatusKiB(server->pid, "VmRSS");
  const double server0 = CpuSeconds(pid), self0 = CpuSeconds("self"),
               busy0 = MachineBusySeconds();
  const absl::Time t0 = absl::Now();
  Measured m;
  m.rate = ServiceRate(server->target(), pool, batches, w.batch,
                       absl::InfiniteFuture(), path.echo ? kEcho : kLearn);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
  const double server_cpu = CpuSeconds(pid) - server0;
  m.grown_mib = std::max(0L, StatusKiB(server->pid, "VmHWM") - rss0) / 1024.0;
  if (!path.echo && path.certificate) {
    auto stub =
        perceptron::v1::PerceptronService::NewStub(Channel(server->target()));
    grpc::ClientContext context;
    v1::GetStatusRequest request;
    request.set_model_id("bench");
    v1::ModelStatus status;
    const grpc::Status s = stub->GetStatus(&context, request, &status);
    m.certificate = s.ok() ? CertificateEnd(status.stats().certificate())
                           : "GetStatus failed: " + s.error_message();
    // A freeze still waiting for its solution when the stream ends comes
    // once the model is quiet, and a solution over every kept row: where it
    // ended then (10 s at most).
    const absl::Time quiet = absl::Now();
    auto unsettled = [](const v1::Certificate& c) {
      return c.state() == v1::Certificate::FREEZING ||
             (c.state() == v1::Certificate::KEEPING &&
              !(c.converged() && c.solved() == c.kept()));
    };
    bool waiting = s.ok() && unsettled(status.stats().certificate());
    while (waiting && absl::Now() - quiet < absl::Seconds(10)) {
      absl::SleepFor(absl::Milliseconds(20));
      grpc::ClientContext again;
      v1::ModelStatus later;
      if (!stub->GetStatus(&again, request, &later).ok()) break;
      waiting = unsettled(later.stats().certificate());
      if (!waiting || absl::Now() - quiet >= absl::Seconds(10)) {
        m.certificate +=
            absl::StrFormat("; quiet, after %.1f s: %s",
                            absl::ToDoubleSeconds(absl::Now() - quiet),
                            CertificateEnd(later.stats().certificate()));
      }
    }
    if (s.ok() && status.has_names()) {
      const v1::NameTableInfo& n = status.names();
      m.names = absl::StrFormat(
          "%d names kept, %d slots with more than one, %d unnamed; %.1f MiB "
          "of names, %.1f MiB of tags",
          n.names(), n.collided_slots(), n.unnamed_slots(),
          n.bytes() / 1048576.0, n.tag_bytes() / 1048576.0);
    }
  }
  const double self_cpu = CpuSeconds("self") - self0;
  m.server_us = server_cpu / (m.rate * seconds) * 1e6;
  m.others = std::max(
      0.0, (MachineBusySeconds() - busy0 - server_cpu - self_cpu) / seconds);
  return m;
}

NewMemoryCost MeasureNewMemory() {
  constexpr size_t kBytes = size_t{64} << 20, kHuge = size_t{2} << 20;
  auto touch = [] {
    void* p = ::mmap(nullptr, kBytes + kHuge, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0.0;
    char* at = reinterpret_cast<char*>(
        (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
    (void)::madvise(at, kBytes, MADV_HUGEPAGE);
    const absl::Time start = absl::Now();
    for (size_t i = 0; i < kBytes; i += 4096) {
      reinterpret_cast<volatile char*>(at)[i] = 1;
    }
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    ::munmap(p, kBytes + kHuge);
    return ms / 64;
  };
  NewMemoryCost c;
  c.first_ms_per_mib = touch();
  c.again_ms_per_mib = touch();
  return c;
}

// A bare 200-byte append and fdatasync, `n` times, in a file of a new
// directory where the servers keep their data (the temporary directory).
Latency AppendAndSync(int n) {
  std::string dir =
      std::filesystem::temp_directory_path() / "perceptrond-fdatasync-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) std::exit(1);
  const std::string path = dir + "/probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::exit(1);
  const std::string bytes(200, 'x');
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const absl::Time start = absl::Now();
    if (::write(fd, bytes.data(), bytes.size()) !=
            static_cast<ssize_t>(bytes.size()) ||
        ::fdatasync(fd) != 0) {
      std::exit(1);
    }
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  ::close(fd);
  std::filesystem::remove_all(dir);
  return Percentiles(us);
}

std::pair<std::map<std::string, std::vector<double>>,
          std::map<std::string, std::vector<double>>>
W4Latencies(const std::vector<Path>& paths, int repeats, bool quick) {
  const Data w4 = Generate({"W4", 20, 0, 1, 1, 0}, 4000, 9);
  std::map<std::string, std::vector<double>> p50, p99;
  const bool with_echo = std::any_of(paths.begin(), paths.end(),
                                     [](const Path& p) { return p.echo; });
  for (int r = 0; r < repeats; ++r) {
    const int n = quick ? 500 : 2000;
    for (const Path& path : paths) {
      if (path.columnar) continue;
      std::unique_ptr<Process> server = Start(path);
      grpc::ClientContext c;
      Latency l;
      if (path.echo) {
        auto stub = Echo::NewStub(Channel(server->target()));
        auto s = stub->Stream(&c);
        l = PingPong(s.get(), w4, n, true);
      } else {
        CreateModel(server->target(), "w4", 20);
        auto stub = perceptron::v1::PerceptronService::NewStub(
            Channel(server->target()));
        auto s = stub->Learn(&c);
        l = PingPong(s.get(), w4, n, false);
      }
      p50[path.name].push_back(l.p50);
      p99[path.name].push_back(l.p99);
    }
    const Latency sync = AppendAndSync(n);
    p50[kBareSync].push_back(sync.p50);
    p99[kBareSync].push_back(sync.p99);
    if (with_echo) {
      std::string dir = std::filesystem::temp_directory_path() /
                        "perceptrond-echo-sync-XXXXXX";
      if (mkdtemp(dir.data()) == nullptr) std::exit(1);
      std::unique_ptr<Process> echo = EchoServer({"--sync_dir=" + dir}, dir);
      grpc::ClientContext c;
      auto stub = Echo::NewStub(Channel(echo->target()));
      auto s = stub->Stream(&c);
      const Latency l = PingPong(s.get(), w4, n, true);
      p50[kDurableEcho].push_back(l.p50);
      p99[kDurableEcho].push_back(l.p99);
    }
  }
  return {std::move(p50), std::move(p99)};
}

void WriteForSklearn(const std::string& dir, const Workload& w, const Data& d) {
  const size_t n = d.labels.size();
  std::ofstream(dir + "/" + w.name + ".meta")
      << n << " " << w.dimension << " " << w.nonzeros;
  std::ofstream x(dir + "/" + w.name + ".x", std::ios::binary);
  std::ofstream y(dir + "/" + w.name + ".y", std::ios::binary);
  std::ofstream i(dir + "/" + w.name + ".i", std::ios::binary);
  for (size_t t = 0; t < n; ++t) {
    x.write(reinterpret_cast<const char*>(d.values[t].data()),
            d.values[t].size() * 8);
    const double label = d.labels[t];
    y.write(reinterpret_cast<const char*>(&label), 8);
    for (uint32_t k : d.indices[t]) {
      const int32_t v = static_cast<int32_t>(k);
      i.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Si(double v) {
  if (v >= 1e6) return absl::StrFormat("%.2f M", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1f k", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

}  // namespace perceptron::bench
