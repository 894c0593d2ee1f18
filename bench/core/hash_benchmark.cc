// Named features (docs/design.md section 2.9) in the core: hashing alone, and
// learning from names beside learning from the same examples hashed before
// timing, so that the pair's ratio is the hashing's share of the work. The W5
// shape: 30 features in 3 namespaces drawn from a vocabulary of 10^5 names,
// hash_bits 20. Prints items_per_second (features or examples). Run:
// build/release/bench/core/hash_benchmark
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "core/feature_hash.h"
#include "core/model.h"

namespace perceptron {
namespace {

constexpr uint32_t kBits = 20;
constexpr size_t kVocabulary = 100000;
constexpr size_t kPerExample = 30;
constexpr size_t kPool = 4096;
const char* const kSpaces[] = {"title", "body", "meta"};

struct Pool {
  std::vector<std::string> words;
  // Per example: (namespace, word index), and its label.
  std::vector<std::vector<std::pair<int, size_t>>> picks;
  std::vector<int> labels;
  // Per example, its names copied one after another, as a request's parsed
  // strings lie (the vocabulary itself is spread over megabytes).
  std::vector<std::string> text;
};

const Pool& Examples() {
  static const Pool* pool = [] {
    auto* p = new Pool;
    std::mt19937_64 rng(5);
    for (size_t i = 0; i < kVocabulary; ++i) {
      p->words.push_back(absl::StrCat("w", rng() % 1000000000));
    }
    std::uniform_int_distribution<size_t> word(0, kVocabulary - 1);
    for (size_t t = 0; t < kPool; ++t) {
      std::vector<std::pair<int, size_t>> x;
      size_t low = 0;
      for (size_t k = 0; k < kPerExample; ++k) {
        const size_t w = word(rng);
        low += w < kVocabulary / 2;
        x.emplace_back(static_cast<int>(k % 3), w);
      }
      std::string text;
      for (const auto& [space, w] : x) text += p->words[w];
      p->text.push_back(std::move(text));
      p->picks.push_back(std::move(x));
      p->labels.push_back(low * 2 >= kPerExample ? 1 : -1);
    }
    return p;
  }();
  return *pool;
}

std::vector<NamedFeature> Named(const Pool& p, size_t t) {
  std::vector<NamedFeature> x;
  size_t at = 0;
  for (const auto& [space, w] : p.picks[t]) {
    const size_t n = p.words[w].size();
    x.push_back({.space = kSpaces[space],
                 .name = absl::string_view(p.text[t]).substr(at, n)});
    at += n;
  }
  return x;
}

// Hashing a cycle of `state.range(0)` examples: 256 stay in cache, as a
// request's just-parsed batch does; 4096 come from memory each time.
void BM_Hash(benchmark::State& state) {
  const Pool& p = Examples();
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::vector<NamedFeature>> xs;
  for (size_t t = 0; t < n; ++t) xs.push_back(Named(p, t));
  const FeatureHasher hasher(kBits, {});
  Features out;
  size_t t = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(hasher.Hash(xs[t], &out));
    t = (t + 1) % n;
  }
  state.SetItemsProcessed(state.iterations() * kPerExample);
  state.SetLabel("features");
}
BENCHMARK(BM_Hash)->Arg(256)->Arg(kPool);

// Learning: from names (hashed in the loop) or from their hashed vectors.
void Learn(benchmark::State& state, bool by_name) {
  const Pool& p = Examples();
  std::vector<std::vector<NamedFeature>> xs;
  std::vector<Features> hashed(kPool);
  ModelConfig config;
  config.hash_bits = kBits;
  config.dimension = 1u << kBits;
  const FeatureHasher hasher(kBits, {});
  for (size_t t = 0; t < kPool; ++t) {
    xs.push_back(Named(p, t));
    if (!hasher.Hash(xs[t], &hashed[t]).ok()) state.SkipWithError("hash");
  }
  auto model = *Model::Create(config);
  Features scratch;
  size_t t = 0;
  for (auto _ : state) {
    if (by_name) {
      benchmark::DoNotOptimize(model->hasher()->Hash(xs[t], &scratch));
      benchmark::DoNotOptimize(model->Learn(scratch.view(), p.labels[t]));
    } else {
      benchmark::DoNotOptimize(model->Learn(hashed[t].view(), p.labels[t]));
    }
    t = (t + 1) % kPool;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("examples");
}
void BM_LearnByName(benchmark::State& state) { Learn(state, true); }
void BM_LearnHashedBefore(benchmark::State& state) { Learn(state, false); }
BENCHMARK(BM_LearnByName);
BENCHMARK(BM_LearnHashedBefore);

// The server's loop over a batch by name: the next example hashed and its
// reads asked for (Model::Prefetch) while this one learns, then this one's
// names recorded in the model's table (NameTable::Record). A cycle of
// `state.range(0)` examples: past 4096, the table's slots are read at random
// from memory as a long stream reads them.
void BM_LearnByNameRecorded(benchmark::State& state) {
  const Pool& p = Examples();
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::vector<NamedFeature>> xs;
  for (size_t t = 0; t < n; ++t) xs.push_back(Named(p, t % kPool));
  ModelConfig config;
  config.hash_bits = kBits;
  config.dimension = 1u << kBits;
  auto model = *Model::Create(config);
  Features hashed[2];
  HashTrace traces[2];
  size_t t = 0;
  if (!model->hasher()->Hash(xs[0], &hashed[0], &traces[0]).ok()) {
    state.SkipWithError("hash");
  }
  for (auto _ : state) {
    const size_t next = (t + 1) % n;
    const size_t b = t % 2, c = (t + 1) % 2;
    benchmark::DoNotOptimize(
        model->hasher()->Hash(xs[next], &hashed[c], &traces[c]));
    model->Prefetch(hashed[c].view());
    benchmark::DoNotOptimize(
        model->Learn(hashed[b].view(), p.labels[t % kPool]));
    model->names()->Record(xs[t], traces[b]);
    t = next;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("examples");
}
BENCHMARK(BM_LearnByNameRecorded)->Arg(kPool)->Arg(1 << 17);

}  // namespace
}  // namespace perceptron

BENCHMARK_MAIN();
