#include "bench/service/proxy.h"

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
#include "client/client.h"
#include "core/certificate.h"
#include "core/model.h"
#include "core/prepare.h"
#include "echo.grpc.pb.h"

namespace perceptron::bench {

std::unique_ptr<Nginx> StartNginx(const std::vector<std::string>& shards) {
  auto n = std::make_unique<Nginx>();
  n->dir = std::filesystem::temp_directory_path() / "nginx-bench-XXXXXX";
  if (mkdtemp(n->dir.data()) == nullptr) std::exit(1);
  std::ifstream in(Options().deploy + "/nginx/nginx.conf");
  std::string conf, line;
  size_t shard = 0;
  bool listen = false;
  while (std::getline(in, line)) {
    const absl::string_view l = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(l, "server perceptrond-") &&
        absl::EndsWith(l, " max_fails=0;") && shard < shards.size()) {
      line = absl::StrCat("    server ", shards[shard++], " max_fails=0;");
    } else if (l == "listen 50051 http2;") {
      line = absl::StrCat("    listen unix:", n->dir, "/grpc.sock http2;");
      listen = true;
    } else if (l == "http {") {
      for (const char* temp :
           {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
        absl::StrAppend(&line, "\n  ", temp, "_temp_path ", n->dir, "/", temp,
                        ";");
      }
    }
    absl::StrAppend(&conf, line, "\n");
  }
  if (shard != shards.size() || !listen) {
    std::fprintf(stderr, "%s/nginx/nginx.conf: not the expected layout\n",
                 Options().deploy.c_str());
    std::exit(1);
  }
  std::ofstream(n->dir + "/nginx.conf") << conf;
  const std::string socket = n->dir + "/grpc.sock";
  absl::StatusOr<std::unique_ptr<launch::Launched>> launched =
      launch::Launched::Start(
          {"/usr/sbin/nginx", "-p", n->dir, "-c", n->dir + "/nginx.conf", "-g",
           absl::StrCat("daemon off; pid ", n->dir, "/nginx.pid; error_log ",
                        n->dir, "/error.log warn;")},
          "", 0);
  if (!launched.ok()) {
    std::fprintf(stderr, "nginx: %s\n",
                 std::string(launched.status().message()).c_str());
    std::exit(1);
  }
  n->process = *std::move(launched);
  // Ready when a connection is accepted (nginx prints nothing, and binds the
  // socket before it listens on it).
  auto accepts = [&] {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    socket.copy(address.sun_path, sizeof(address.sun_path) - 1);
    const bool ok =
        fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                             sizeof(address)) == 0;
    if (fd >= 0) ::close(fd);
    return ok;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!accepts()) {
    if (absl::Now() > deadline) {
      std::fprintf(stderr, "nginx did not listen on %s\n", socket.c_str());
      std::exit(1);
    }
    absl::SleepFor(absl::Milliseconds(20));  // a poll's pause
  }
  n->target = "unix:" + socket;
  return n;
}

double ConcurrentRate(const std::vector<std::string>& targets,
                      const std::vector<std::string>& models,
                      const std::vector<std::vector<grpc::ByteBuffer>>& pools,
                      int64_t batches, int items) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<RawStream>> streams;
  for (size_t k = 0; k < pools.size(); ++k) {
    channels.push_back(Channel(targets[k]));
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->AddMetadata(client::kModelHeader, models[k]);
    streams.push_back(
        OpenRaw(channels.back().get(), kLearn, contexts.back().get()));
  }
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (size_t k = 0; k < pools.size(); ++k) {
    threads.emplace_back([&, k] {
      Pipelined(streams[k].get(), pools[k], batches, items,
                Options().in_flight);
    });
  }
  for (std::thread& t : threads) t.join();
  return static_cast<double>(pools.size()) * batches * items /
         absl::ToDoubleSeconds(absl::Now() - start);
}

void ProxyTable(const Workload& w, int repeats) {
  std::vector<std::unique_ptr<Process>> shards;
  std::vector<std::string> shard_targets;
  for (int i = 0; i < 3; ++i) {
    shards.push_back(Perceptrond("none", true, false));
    shard_targets.push_back(shards.back()->target());
  }
  const std::unique_ptr<Nginx> nginx = StartNginx(shard_targets);
  // Models created through the proxy until every shard owns one.
  std::vector<std::string> models(shards.size());
  {
    auto proxy = v1::PerceptronService::NewStub(Channel(nginx->target));
    for (int i = 0; i < 300; ++i) {
      const std::string id = absl::StrCat("proxied-", i);
      grpc::ClientContext context;
      context.AddMetadata(client::kModelHeader, id);
      v1::CreateModelRequest req;
      req.set_model_id(id);
      req.mutable_config()->set_dimension(w.dimension);
      v1::Model m;
      if (grpc::Status s = proxy->CreateModel(&context, req, &m); !s.ok()) {
        std::fprintf(stderr, "CreateModel %s through nginx: %s\n", id.c_str(),
                     s.error_message().c_str());
        std::exit(1);
      }
      for (size_t k = 0; k < shards.size(); ++k) {
        auto stub = v1::PerceptronService::NewStub(Channel(shard_targets[k]));
        grpc::ClientContext c;
        v1::GetModelRequest get;
        get.set_model_id(id);
        if (models[k].empty() && stub->GetModel(&c, get, &m).ok()) {
          models[k] = id;
        }
      }
      if (std::none_of(models.begin(), models.end(),
                       [](const std::string& m) { return m.empty(); })) {
        break;
      }
    }
  }
  if (std::any_of(models.begin(), models.end(),
                  [](const std::string& m) { return m.empty(); })) {
    std::fprintf(stderr,
                 "300 models through nginx did not reach every shard\n");
    std::exit(1);
  }
  std::vector<std::vector<grpc::ByteBuffer>> pools;
  for (size_t k = 0; k < shards.size(); ++k) {
    const Data d =
        Generate(w, static_cast<size_t>(w.batch) * w.pool_batches, 11 + k);
    pools.push_back(Serialized(Requests(w, d, models[k])));
  }
  const int64_t batches = w.examples / w.batch;
  const std::vector<std::string> proxied(shards.size(), nginx->target);
  std::vector<double> direct, through;
  for (int r = 0; r < repeats; ++r) {
    // The order alternates, so that neither path always runs first.
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == (r % 2 == 0)) {
        direct.push_back(
            ConcurrentRate(shard_targets, models, pools, batches, w.batch));
      } else {
        through.push_back(
            ConcurrentRate(proxied, models, pools, batches, w.batch));
      }
    }
  }
  std::printf(
      "## Shards behind nginx (deploy/nginx/nginx.conf; 3 shards, durability "
      "none, certificate off; one %s stream per shard, %s examples each)\n\n",
      w.name.c_str(), Si(static_cast<double>(w.examples)).c_str());
  std::printf(
      "| | direct | through nginx | nginx/direct |\n|---|---|---|---|\n");
  const double a = Median(direct), b = Median(through);
  std::printf("| %s examples/s, 3 streams | %s | %s | %.2f |\n\n",
              w.name.c_str(), Si(a).c_str(), Si(b).c_str(), b / a);
  std::fflush(stdout);
}

}  // namespace perceptron::bench
