// Memory and threads of a server: many models, durability sync streaming, open
// streams.
#ifndef PERCEPTRON_BENCH_SERVICE_MEMORY_H_
#define PERCEPTRON_BENCH_SERVICE_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "bench/service/measure.h"
#include "bench/service/processes.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::bench {

namespace v1 = ::perceptron::v1;

struct MemoryFigures {
  double models_mb = 0;       // 10,000 models of d=1000
  double sync_growth_mb = 0;  // durability sync, W1 streamed
  // The same with the certificate off (its kept examples, bounded by
  // --certificate_model_mb, are most of the difference).
  double sync_growth_nocert_mb = 0;
};

// Memory and threads: 10,000 models, durability sync streaming W1 (`w1_pool`)
// for 60 s (also with the certificate off if `with_certificate_off`), 1,000
// open streams.
MemoryFigures Memory(const std::vector<grpc::ByteBuffer>& w1_pool,
                     const std::vector<v1::LearnRequest>& w1_requests,
                     bool quick, bool with_certificate_off);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_MEMORY_H_
