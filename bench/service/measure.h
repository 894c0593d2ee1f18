// Measurements: pipelined streams of bytes serialized before timing, W4's round
// trips, the core in-process, and the paths a measurement goes through.
#ifndef PERCEPTRON_BENCH_SERVICE_MEASURE_H_
#define PERCEPTRON_BENCH_SERVICE_MEASURE_H_

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "bench/service/data.h"
#include "bench/service/options.h"
#include "bench/service/processes.h"
#include "grpcpp/grpcpp.h"
#include "perceptron/v1/perceptron.grpc.pb.h"

namespace perceptron::bench {

namespace v1 = ::perceptron::v1;

using Stream = grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>;

// A Learn (or echo) stream of serialized messages: the client writes bytes
// made before timing and reads the answers without parsing them.
using RawStream = grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

// Each request serialized once, before any timing.
std::vector<grpc::ByteBuffer> Serialized(
    const std::vector<v1::LearnRequest>& requests);

// Examples per second through `stream`: `batches` requests cycled from `pool`
// (or fewer, if `until` comes first), at most `in_flight` unanswered.
double Pipelined(RawStream* stream, const std::vector<grpc::ByteBuffer>& pool,
                 int64_t batches, int items_per_batch, int in_flight,
                 absl::Time until = absl::InfiniteFuture());

// Opens `method` ("/pkg.Service/Method", bidirectional) as a stream of bytes.
std::unique_ptr<RawStream> OpenRaw(grpc::Channel* channel, const char* method,
                                   grpc::ClientContext* context);

inline constexpr char kLearn[] = "/perceptron.v1.PerceptronService/Learn";

inline constexpr char kEcho[] = "/perceptron.bench.Echo/Stream";

double ServiceRate(const std::string& target,
                   const std::vector<grpc::ByteBuffer>& pool, int64_t batches,
                   int items, absl::Time until = absl::InfiniteFuture(),
                   const char* method = kLearn);

struct Latency {
  double p50 = 0, p99 = 0;
};

Latency Percentiles(std::vector<double> us);

// W4: one example at a time, predict then reveal: the round trip of each
// request.
Latency PingPong(Stream* s, const Data& d, int examples, bool echo);

// Runs `cmd` and calls f(fields) for each line it prints, the line split at
// spaces and a number parsed from its last field (lines without one are
// skipped). False if it could not run or did not exit 0.
template <typename F>
bool ForEachOutputLine(const std::string& cmd, F f) {
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) return false;
  char line[256];
  while (fgets(line, sizeof line, out) != nullptr) {
    const std::vector<std::string> fields =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ');
    double v = 0;
    if (absl::SimpleAtod(fields.back(), &v)) f(fields, v);
  }
  return pclose(out) == 0;
}

double CoreRate(const Workload& w, const Data& d, int64_t examples);

// The names of `d` hashed in-process by the core's FeatureHasher (Vowpal
// Wabbit's function into 2^bits slots, the sums by slot included): the median
// over `repeats` passes of nanoseconds a feature.
double HashNsPerFeature(const NamedData& d, uint32_t bits, int repeats);

// A model of dimension d (hash_bits: names hashed into 2^hash_bits = d).
// `classes` > 0: a multiclass model of classes named "0".."classes-1".
void CreateModel(perceptron::v1::PerceptronService::Stub& stub,
                 const std::string& id, uint32_t d, uint32_t hash_bits = 0,
                 uint32_t classes = 0);

void CreateModel(const std::string& target, const std::string& id, uint32_t d,
                 uint32_t hash_bits = 0, uint32_t classes = 0);

// What a measurement streams through: the echo, or perceptrond with these
// flags.
struct Path {
  std::string name;
  bool echo = false;
  std::string durability = "none";
  bool rpc_metrics = true;
  bool certificate = true;
  bool columnar = false;  // sends the batches as columns
  bool names = true;      // hashing models keep their names
};

std::unique_ptr<Process> Start(const Path& path);

struct Measured {
  double rate = 0;       // examples/s
  double server_us = 0;  // the server's CPU time per example, microseconds
  double others = 0;     // cores busy with other processes meanwhile
  // The server's peak RSS at the stream's end less its RSS as the stream
  // began, MiB: the memory it touched for the first time while streaming.
  double grown_mib = 0;
  std::string certificate;  // where the model's certificate ended, if on
  std::string names;        // a hashing model's table of names, if any
};

// What memory new to a process costs this machine: milliseconds a MiB to
// touch 64 MiB of anonymous memory on transparent huge pages (as the servers'
// heaps are) the first time, and again after unmapping and mapping it anew
// (pages the process had). A virtual machine whose host takes back the
// memory its guest frees (free page reporting) faults it in again at the
// first touch.
struct NewMemoryCost {
  double first_ms_per_mib = 0;
  double again_ms_per_mib = 0;
};
NewMemoryCost MeasureNewMemory();

// Where a model's certificate stands, in a few words.
std::string CertificateEnd(const v1::Certificate& c);

// One pipelined stream of `pool` through a fresh server of `path` (model
// "bench"), and what the server and the rest of the machine spent meanwhile.
Measured Fresh(const Path& path, const Workload& w,
               const std::vector<grpc::ByteBuffer>& pool, int64_t batches);

// W4 ping-pong through each of `paths` (columnar ones left out), interleaved,
// a fresh server each: every repeat's p50 and p99 by path name; and under
// kBareSync, a bare 200-byte append and fdatasync's in the same directory.
inline constexpr char kBareSync[] = "bare fdatasync (200 B append)";
// And under kDurableEcho, the echo server appending each request to a file
// and fdatasyncing it before the answer (echo_server --sync_dir): the least a
// durable server does, with the disk asked at the pace of the requests (an
// fdatasync between idle gaps takes longer here than one of a tight loop).
inline constexpr char kDurableEcho[] = "echo + fdatasync a request";
std::pair<std::map<std::string, std::vector<double>>,
          std::map<std::string, std::vector<double>>>
W4Latencies(const std::vector<Path>& paths, int repeats, bool quick);

void WriteForSklearn(const std::string& dir, const Workload& w, const Data& d);

// The median of `v`; 0 if it is empty (nothing measured).
double Median(std::vector<double> v);

std::string Si(double v);

}  // namespace perceptron::bench

#endif  // PERCEPTRON_BENCH_SERVICE_MEASURE_H_
