// How a Learn request's bytes become a message, in-process: W5's batches of
// 256 examples (bench/service/data.h) by name as items (argument 0) and as
// columns (1), and hashed before as sparse items (2) and as columns (3),
// parsed onto an arena that is reset between requests (as the server's
// streams do), onto an arena that keeps a first block of 4 MiB between
// requests, and into a message reused on the heap (as the echo does).
// items_per_second counts examples. Run:
// build/release/bench/service/parse_benchmark
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/service/data.h"
#include "google/protobuf/arena.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::bench {
namespace {

constexpr int kBatch = 256;
constexpr int kBatches = 16;

const std::vector<std::string>& Bytes(int64_t kind) {
  static const auto* const pools = [] {
    const Workload w{"W5", 1u << 20, 30, kBatch, kBatches, 0, 20};
    const NamedData d = GenerateNamed(size_t{kBatch} * kBatches, 11);
    const Data hashed = Hashed(w, d);
    auto* out = new std::vector<std::string>[4];
    auto add = [](const std::vector<v1::LearnRequest>& requests,
                  std::vector<std::string>* to) {
      for (const v1::LearnRequest& r : requests) {
        to->push_back(r.SerializeAsString());
      }
    };
    add(NamedRequests(w, d, "bench"), &out[0]);
    add(NamedColumnarRequests(w, d, "bench"), &out[1]);
    add(Requests(w, hashed, "bench"), &out[2]);
    add(ColumnarRequests(w, hashed, "bench"), &out[3]);
    return out;
  }();
  return pools[kind];
}

// Parses the pool's requests in turn onto `arena`, reset before each.
void ParseOnto(benchmark::State& state, google::protobuf::Arena& arena) {
  const std::vector<std::string>& pool = Bytes(state.range(0));
  size_t i = 0;
  for (auto _ : state) {
    arena.Reset();
    auto* r = google::protobuf::Arena::CreateMessage<v1::LearnRequest>(&arena);
    if (!r->ParseFromString(pool[i++ % pool.size()])) state.SkipWithError("");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void ArenaReset(benchmark::State& state) {
  google::protobuf::Arena arena;
  ParseOnto(state, arena);
}
BENCHMARK(ArenaReset)->DenseRange(0, 3);

void ArenaFirstBlock(benchmark::State& state) {
  std::vector<char> block(size_t{4} << 20);
  google::protobuf::ArenaOptions options;
  options.initial_block = block.data();
  options.initial_block_size = block.size();
  google::protobuf::Arena arena(options);
  ParseOnto(state, arena);
}
BENCHMARK(ArenaFirstBlock)->DenseRange(0, 3);

void Reused(benchmark::State& state) {
  const std::vector<std::string>& pool = Bytes(state.range(0));
  v1::LearnRequest r;
  size_t i = 0;
  for (auto _ : state) {
    if (!r.ParseFromString(pool[i++ % pool.size()])) state.SkipWithError("");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(Reused)->DenseRange(0, 3);

}  // namespace
}  // namespace perceptron::bench

BENCHMARK_MAIN();
