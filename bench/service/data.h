// The workloads of docs/design.md section 7 and their data, as per-item and
// columnar Learn requests built before any timing.
#ifndef PERCEPTRON_BENCH_SERVICE_DATA_H_
#define PERCEPTRON_BENCH_SERVICE_DATA_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::bench {

namespace v1 = ::perceptron::v1;

struct Workload {
  std::string name;
  uint32_t dimension;
  uint32_t nonzeros;  // 0: dense
  int batch;
  int pool_batches;        // distinct batches, cycled
  int64_t examples;        // per throughput measurement
  uint32_t hash_bits = 0;  // the model's (named features); 0: none
  // A multiclass model's classes (labels 0..classes-1); 0: a binary model.
  uint32_t classes = 0;
};

struct Data {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<uint32_t>> indices;
  std::vector<int> labels;
};

Data Generate(const Workload& w, size_t n, uint64_t seed);

std::vector<v1::LearnRequest> Requests(const Workload& w, const Data& d,
                                       const std::string& model);

// The same batches as Requests, as columns (LearnRequest.columns).
std::vector<v1::LearnRequest> ColumnarRequests(const Workload& w, const Data& d,
                                               const std::string& model);

// W5 (docs/design.md section 7): text-like examples of 30 named features in 3
// namespaces from a vocabulary of 10^5 words, each example's label from which
// half of the vocabulary most of its words come from (10% flipped).
struct NamedData {
  std::vector<std::vector<v1::NamedFeature>> features;
  std::vector<int> labels;
};

NamedData GenerateNamed(size_t n, uint64_t seed);

// W5's batches of features by name (items).
std::vector<v1::LearnRequest> NamedRequests(const Workload& w,
                                            const NamedData& d,
                                            const std::string& model);
// The same batches as columns by name (a string table a batch), encoded as
// the client library encodes them (client::NamedColumns).
std::vector<v1::LearnRequest> NamedColumnarRequests(const Workload& w,
                                                    const NamedData& d,
                                                    const std::string& model);
// The same examples hashed with the model's function (w.hash_bits), before
// timing: sparse rows for Requests and ColumnarRequests.
Data Hashed(const Workload& w, const NamedData& d);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_DATA_H_
