// Shards behind nginx (docs/design.md section 10): W1 through the proxy against
// direct.
#ifndef PERCEPTRON_BENCH_SERVICE_PROXY_H_
#define PERCEPTRON_BENCH_SERVICE_PROXY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "bench/service/data.h"
#include "bench/service/measure.h"
#include "bench/service/processes.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::bench {

namespace v1 = ::perceptron::v1;

// nginx with deploy/nginx/nginx.conf, its shards and listen address replaced
// by `shards` and a unix socket (as tests/e2e/shards_test.py runs it).
struct Nginx {
  std::unique_ptr<launch::Launched> process;
  std::string dir;
  std::string target;
  ~Nginx() {
    process.reset();  // SIGTERM, and waits
    std::filesystem::remove_all(dir);
  }
};

std::unique_ptr<Nginx> StartNginx(const std::vector<std::string>& shards);

// Examples per second of `pools.size()` pipelined Learn streams at once, the
// k-th to `targets[k]` with model header `models[k]`, `batches` each.
double ConcurrentRate(const std::vector<std::string>& targets,
                      const std::vector<std::string>& models,
                      const std::vector<std::vector<grpc::ByteBuffer>>& pools,
                      int64_t batches, int items);

// W1 through the proxy against direct: three shards (durability none, no
// certificate, so that both paths meet the same server), one model owned by
// each (created through the proxy, found on its shard), one stream per shard;
// direct and proxied interleaved, medians of `repeats`.
void ProxyTable(const Workload& w, int repeats);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_PROXY_H_
