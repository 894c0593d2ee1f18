// perceptrond: the online perceptron learning service.
//   perceptrond [--host=127.0.0.1] [--port=50051] [limits...]
// Prints "perceptrond listening on HOST:PORT" once it accepts calls, then
// "perceptrond http on HOST:PORT" (https with --tls_cert) for the HTTP port
// unless it is off. SIGTERM or SIGINT shut it down cleanly: in-flight batches
// are answered, open streams end with UNAVAILABLE.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/program.h"
#include "perceptron/v1/perceptron.grpc.pb.h"
#include "server/allocator_env.h"
#include "server/huge_heap.h"
#include "server/memory.h"
#include "server/server.h"

ABSL_FLAG(
    std::string, host, "127.0.0.1",
    "Address to listen on (loopback by default; 0.0.0.0 for every interface)");
ABSL_FLAG(int, port, 50051, "TCP port; 0 picks a free one (printed at start)");
ABSL_FLAG(uint64_t, max_models, 100000, "Most models the server holds");
ABSL_FLAG(uint64_t, max_models_mb, 0,
          "Most MiB every model may take together: its weight vectors (k "
          "vectors of d+1 doubles a model, twice that averaged, "
          "max_voted_vectors + 1 times that voted, a comparator twice), and a "
          "kernel model's stored mistakes as they come; a model past it is "
          "refused with RESOURCE_EXHAUSTED, and so is a kernel model's "
          "learning once they are past it. 0: three quarters of the memory "
          "the server may use (the machine's, or its cgroup's limit)");
ABSL_FLAG(uint32_t, max_dimension, 1u << 24,
          "Largest input dimension of a model");
ABSL_FLAG(uint64_t, max_batch_items, 10000, "Most items in one request");
ABSL_FLAG(uint64_t, max_message_bytes, 64u << 20,
          "Largest request message, bytes");
ABSL_FLAG(uint64_t, max_pending, 1000000, "Most pending predictions per model");
ABSL_FLAG(uint64_t, max_pending_bytes, 256u << 20,
          "Most memory one model's pending predictions may hold, bytes");
ABSL_FLAG(uint64_t, max_pending_mb, 1024,
          "Most memory every model's pending predictions may hold together, "
          "MiB");
ABSL_FLAG(absl::Duration, pending_ttl, absl::Hours(1),
          "Pending predictions not revealed within this long expire");
ABSL_FLAG(uint32_t, max_train_epochs, 10000,
          "Most passes one Train request may ask for");
ABSL_FLAG(std::string, data_dir, "perceptrond-data",
          "The data directory (an embedded LevelDB store); created if missing");
ABSL_FLAG(std::string, durability, "sync",
          "sync: answer a batch once it is on disk (group commit); async: once "
          "the operating "
          "system has it, synced every --async_interval (a machine crash may "
          "lose that "
          "interval); none: memory only");
ABSL_FLAG(absl::Duration, async_interval, absl::Milliseconds(100),
          "async durability: how often the store is synced");
ABSL_FLAG(uint64_t, snapshot_every, 1000,
          "Snapshot a model after this many logged batches");
ABSL_FLAG(std::string, tls_cert, "",
          "TLS: the server's certificate chain (PEM file)");
ABSL_FLAG(std::string, tls_key, "", "TLS: the server's private key (PEM file)");
ABSL_FLAG(
    std::string, tls_client_ca, "",
    "Mutual TLS: clients must present a certificate from this CA (PEM file)");
ABSL_FLAG(std::string, tokens_file, "",
          "Require bearer tokens: a file of lines TOKEN ROLE [MODEL-ID-PREFIX "
          "...], roles "
          "read, learn, admin");
ABSL_FLAG(int, http_port, 8080,
          "HTTP port for /metrics, /healthz, JSON status and the live page, on "
          "--host; 0 picks a free one, -1 serves no HTTP. HTTPS with the "
          "gRPC port's certificate when --tls_cert is given");
ABSL_FLAG(int, http_threads, 4,
          "Worker threads of the HTTP port; each serves any number of "
          "connections");
ABSL_FLAG(bool, rpc_metrics, true,
          "Record per-RPC metrics (grpc_server_* on /metrics): calls, "
          "messages, status codes and handling times of every method");
ABSL_FLAG(uint64_t, certificate_examples, 100000,
          "Labeled examples each model keeps for its certificate (the bound "
          "with no comparator given); past them it is frozen. 0 computes no "
          "certificate");
ABSL_FLAG(uint64_t, certificate_model_mb, 64,
          "MiB the examples one model keeps for its certificate may take");
ABSL_FLAG(uint64_t, certificate_memory_mb, 1024,
          "MiB the examples every model keeps for certificates may take "
          "together");
ABSL_FLAG(uint64_t, name_table_mb, 8,
          "MiB of feature names each hashing model keeps, to read its "
          "weights by name (besides two bytes per slot); past them it keeps "
          "no new names and counts the slots left unnamed. 0 keeps none");
ABSL_FLAG(uint64_t, name_tables_mb, 1024,
          "MiB of feature names every hashing model keeps together; past "
          "them none keeps new names");
ABSL_FLAG(double, certificate_cpu, 0.1,
          "Share of one core the certificate's background solver may use "
          "while models learn, in (0, 1]; while none does it may use the "
          "whole core");
ABSL_FLAG(absl::Duration, expiry_interval, absl::Seconds(1),
          "How often pending predictions are checked for expiry (and idle "
          "models, and the allocator's free memory)");
ABSL_FLAG(uint64_t, rows_reserve_mb, 32,
          "The certificate's kept examples are stored only while the data "
          "directory's file system keeps this many MiB free beside them (for "
          "the log); past that, or on a full disk, a model's certificate "
          "freezes and its examples' file is deleted");
ABSL_FLAG(uint64_t, rows_waiting_kb, 1024,
          "The certificate's kept examples of a batch are written with its "
          "log record (one sync) until a model's reach this many KiB, then "
          "moved to its examples' file; 0 writes and syncs each batch's to "
          "the file first");
ABSL_FLAG(bool, prewrite_log, true,
          "With durability sync or async, LevelDB's log files are made of "
          "files of zeros written beforehand in the background (5 MiB each), "
          "so that each commit's sync writes its data alone; false appends "
          "to them as LevelDB does (nothing is prewritten on a tmpfs)");
ABSL_FLAG(uint64_t, memory_release_mb, 16,
          "Once the allocator holds this many MiB free (after a burst of "
          "streams, say), they are given back to the system; 0 never");

ABSL_FLAG(uint64_t, allocator_thread_cache_mb, 4,
          "The freed memory tcmalloc's per-thread caches may keep together, "
          "in MiB (tcmalloc's own default is 32): the threads that served a "
          "burst keep what they cached until they next free");

ABSL_FLAG(uint32_t, allocator_transfer_objects, 4,
          "The batch of small objects tcmalloc moves at a time between a "
          "thread's cache and its shared caches, which keep up to 64 batches "
          "of each size: smaller batches keep less of what a burst freed "
          "(tcmalloc reads it as the program starts, so the server starts "
          "itself again with TCMALLOC_TRANSFER_NUM_OBJ set; a value already "
          "in the environment is kept); 0 leaves tcmalloc's own, 32");

ABSL_FLAG(bool, allocator_huge_pages, true,
          "The allocator's heap grows in 2 MiB pages advised as transparent "
          "huge pages (where the system gives them on request: Debian's "
          "\"madvise\"), so memory written for the first time faults once "
          "each 2 MiB instead of each 4 KiB (tcmalloc only)");

int main(int argc, char** argv) {
  perceptron::SetProgramUsage(
      "perceptrond", "server/main.cc",
      "online perceptron models over gRPC; --help lists every flag");
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::fprintf(stderr,
                 "perceptrond: takes flags only; \"%s\" is not one (--help "
                 "lists them)\n",
                 rest[1]);
    return 2;
  }
  // Limits that would refuse every request, and intervals that would spin.
  const std::pair<bool, const char*> checks[] = {
      {absl::GetFlag(FLAGS_max_models) == 0, "--max_models must be at least 1"},
      {absl::GetFlag(FLAGS_max_dimension) == 0,
       "--max_dimension must be at least 1"},
      {absl::GetFlag(FLAGS_max_batch_items) == 0,
       "--max_batch_items must be at least 1"},
      {absl::GetFlag(FLAGS_max_train_epochs) == 0,
       "--max_train_epochs must be at least 1"},
      {absl::GetFlag(FLAGS_max_message_bytes) < 1024,
       "--max_message_bytes must be at least 1024"},
      {!(absl::GetFlag(FLAGS_pending_ttl) > absl::ZeroDuration()),
       "--pending_ttl must be positive"},
      {!(absl::GetFlag(FLAGS_expiry_interval) > absl::ZeroDuration()) ||
           absl::GetFlag(FLAGS_expiry_interval) == absl::InfiniteDuration(),
       "--expiry_interval must be positive and finite"},
      {!(absl::GetFlag(FLAGS_async_interval) > absl::ZeroDuration()) ||
           absl::GetFlag(FLAGS_async_interval) == absl::InfiniteDuration(),
       "--async_interval must be positive and finite"},
      {absl::GetFlag(FLAGS_allocator_transfer_objects) >
           perceptron::server::kMaxTransferObjects,
       "--allocator_transfer_objects must be at most 1024"},
  };
  for (const auto& [bad, why] : checks) {
    if (bad) {
      std::fprintf(stderr, "perceptrond: %s\n", why);
      return 2;
    }
  }
  // Before any thread starts: tcmalloc takes its transfer batch from the
  // environment as the program starts (server/allocator_env.h).
  perceptron::server::StartWithTransferBatch(
      "perceptrond", argv, absl::GetFlag(FLAGS_allocator_transfer_objects));

  // Debian's Abseil keeps its debug checks, among them a search for lock-order
  // cycles on every Mutex lock (a graph shared by every thread, under one
  // spinlock). The server's lock order is checked by the `tsan` test preset
  // instead, which reports lock-order inversions.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // Signals are taken by a waiting thread (below), never by an asynchronous
  // handler.
  perceptron::BlockStopSignals();

  perceptron::server::ServerOptions options;
  options.host = absl::GetFlag(FLAGS_host);
  options.port = absl::GetFlag(FLAGS_port);
  if (options.port < 0 || options.port > 65535) {
    std::fprintf(stderr, "perceptrond: --port must be 0 to 65535\n");
    return 2;
  }
  options.limits.max_models = absl::GetFlag(FLAGS_max_models);
  options.limits.models_bytes =
      absl::GetFlag(FLAGS_max_models_mb) > 0
          ? std::min(absl::GetFlag(FLAGS_max_models_mb), uint64_t{1} << 40)
                << 20
          : perceptron::server::MemoryAvailable() / 4 * 3;
  options.limits.max_dimension = absl::GetFlag(FLAGS_max_dimension);
  options.limits.max_batch_items = absl::GetFlag(FLAGS_max_batch_items);
  options.limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.limits.max_pending = absl::GetFlag(FLAGS_max_pending);
  options.limits.max_pending_bytes = absl::GetFlag(FLAGS_max_pending_bytes);
  if (options.limits.max_pending_bytes > (uint64_t{1} << 30)) {
    // An export carries the pending predictions, in a blob of at most 2 GiB.
    std::fprintf(stderr,
                 "perceptrond: --max_pending_bytes must be at most 1 GiB "
                 "(an export, which carries the pending predictions, holds at "
                 "most 2 GiB)\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_max_pending_mb) == 0 ||
      absl::GetFlag(FLAGS_max_pending_mb) > (uint64_t{1} << 20)) {
    std::fprintf(stderr, "perceptrond: --max_pending_mb must be 1 to 2^20\n");
    return 2;
  }
  options.limits.pending_memory = absl::GetFlag(FLAGS_max_pending_mb) << 20;
  options.limits.pending_ttl = absl::GetFlag(FLAGS_pending_ttl);
  options.limits.max_train_epochs = absl::GetFlag(FLAGS_max_train_epochs);
  options.limits.certificate_examples =
      absl::GetFlag(FLAGS_certificate_examples);
  options.limits.certificate_model_bytes =
      absl::GetFlag(FLAGS_certificate_model_mb) << 20;
  options.limits.certificate_memory = absl::GetFlag(FLAGS_certificate_memory_mb)
                                      << 20;
  options.limits.certificate_cpu = absl::GetFlag(FLAGS_certificate_cpu);
  if (absl::GetFlag(FLAGS_name_table_mb) > (uint64_t{1} << 16)) {
    std::fprintf(stderr,
                 "perceptrond: --name_table_mb must be at most 65536\n");
    return 2;
  }
  options.limits.name_table_bytes = absl::GetFlag(FLAGS_name_table_mb) << 20;
  if (absl::GetFlag(FLAGS_name_tables_mb) > (uint64_t{1} << 20)) {
    std::fprintf(stderr,
                 "perceptrond: --name_tables_mb must be at most 2^20\n");
    return 2;
  }
  options.limits.name_tables_memory = absl::GetFlag(FLAGS_name_tables_mb) << 20;
  if (!(options.limits.certificate_cpu > 0 &&
        options.limits.certificate_cpu <= 1)) {
    std::fprintf(stderr, "perceptrond: --certificate_cpu must be in (0, 1]\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_certificate_model_mb) > (uint64_t{1} << 20) ||
      absl::GetFlag(FLAGS_certificate_memory_mb) > (uint64_t{1} << 30)) {
    std::fprintf(stderr,
                 "perceptrond: --certificate_model_mb and "
                 "--certificate_memory_mb must be at most 2^20 and 2^30\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_allocator_thread_cache_mb) > 4096 ||
      absl::GetFlag(FLAGS_memory_release_mb) > (uint64_t{1} << 30)) {
    std::fprintf(stderr,
                 "perceptrond: --allocator_thread_cache_mb must be at most "
                 "4096 and --memory_release_mb at most 2^30\n");
    return 2;
  }
  options.expiry_interval = absl::GetFlag(FLAGS_expiry_interval);
  options.memory_release_bytes = absl::GetFlag(FLAGS_memory_release_mb) << 20;
  perceptron::server::LimitThreadCaches(
      absl::GetFlag(FLAGS_allocator_thread_cache_mb) << 20);
  if (absl::GetFlag(FLAGS_allocator_huge_pages) &&
      perceptron::server::PutHeapOnHugePages()) {
    perceptron::server::SetAfterRelease(
        &perceptron::server::StopHugePagesSoFar);
  }
  absl::StatusOr<perceptron::server::Durability> durability =
      perceptron::server::ParseDurability(absl::GetFlag(FLAGS_durability));
  if (!durability.ok()) {
    std::fprintf(stderr, "perceptrond: --%s\n",
                 std::string(durability.status().message()).c_str());
    return 2;
  }
  options.persistence.durability = *durability;
  options.persistence.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.persistence.async_interval = absl::GetFlag(FLAGS_async_interval);
  options.persistence.rows_reserve_bytes = absl::GetFlag(FLAGS_rows_reserve_mb)
                                           << 20;
  options.persistence.rows_waiting_bytes = absl::GetFlag(FLAGS_rows_waiting_kb)
                                           << 10;
  options.persistence.log_prewrite_bytes =
      absl::GetFlag(FLAGS_prewrite_log) ? perceptron::server::kLogPrewriteBytes
                                        : 0;
  options.persistence.snapshot_every =
      std::max<uint64_t>(1, absl::GetFlag(FLAGS_snapshot_every));
  auto read_file = [](const std::string& path, std::string* out) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    *out = text.str();
    return static_cast<bool>(in);
  };
  const std::string cert = absl::GetFlag(FLAGS_tls_cert),
                    key = absl::GetFlag(FLAGS_tls_key),
                    client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  if (cert.empty() != key.empty() || (!client_ca.empty() && cert.empty())) {
    std::fprintf(stderr,
                 "perceptrond: --tls_cert and --tls_key go together, and "
                 "--tls_client_ca "
                 "needs them\n");
    return 2;
  }
  for (const auto& [path, out] :
       {std::pair{cert, &options.tls_cert_pem},
        std::pair{key, &options.tls_key_pem},
        std::pair{client_ca, &options.tls_client_ca_pem}}) {
    if (!path.empty() && (!read_file(path, out) || out->empty())) {
      std::fprintf(stderr, "perceptrond: cannot read %s\n", path.c_str());
      return 2;
    }
  }
  options.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  options.http_port = absl::GetFlag(FLAGS_http_port);
  options.rpc_metrics = absl::GetFlag(FLAGS_rpc_metrics);
  options.http_threads = absl::GetFlag(FLAGS_http_threads);
  if (options.http_threads < 1 || options.http_threads > 256) {
    std::fprintf(stderr, "perceptrond: --http_threads must be 1 to 256\n");
    return 2;
  }
  if (options.http_port < -1 || options.http_port > 65535) {
    std::fprintf(stderr, "perceptrond: --http_port must be -1 to 65535\n");
    return 2;
  }
  if (options.limits.max_message_bytes > (1u << 31) - 1) {
    std::fprintf(stderr,
                 "perceptrond: --max_message_bytes must be below 2 GiB\n");
    return 2;
  }

  absl::StatusOr<std::unique_ptr<perceptron::server::PerceptronServer>> server =
      perceptron::server::PerceptronServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "perceptrond: not starting: %s: %s\n",
                 absl::StatusCodeToString(server.status().code()).c_str(),
                 std::string(server.status().message()).c_str());
    return 1;
  }
  const perceptron::server::RecoveryReport& r = (*server)->recovery();
  if (options.persistence.durability == perceptron::server::Durability::kNone) {
    std::fprintf(stderr,
                 "perceptrond: durability none: models live in memory only\n");
  } else {
    std::fprintf(
        stderr,
        "perceptrond: data directory %s, durability %s: recovered %zu models "
        "(%llu log "
        "records replayed, %llu dropped, %zu from an older snapshot) in %s\n",
        options.persistence.data_dir.c_str(),
        std::string(
            perceptron::server::DurabilityName(options.persistence.durability))
            .c_str(),
        r.models, static_cast<unsigned long long>(r.records_applied),
        static_cast<unsigned long long>(r.records_dropped), r.fell_back,
        absl::FormatDuration(r.took).c_str());
    for (const perceptron::server::SetAsideModel& m : r.set_aside) {
      std::fprintf(stderr,
                   "perceptrond: model %s set aside, its data kept untouched: "
                   "%s\n",
                   m.id.c_str(), std::string(m.reason.message()).c_str());
    }
  }
  std::printf("perceptrond listening on %s:%d\n", options.host.c_str(),
              (*server)->port());
  if ((*server)->http_port() >= 0) {
    std::printf("perceptrond %s on %s:%d\n",
                (*server)->http_tls() ? "https" : "http", options.host.c_str(),
                (*server)->http_port());
  }
  std::fflush(stdout);

  const int signal = perceptron::WaitForStopSignal();
  std::fprintf(stderr, "perceptrond: %s, shutting down\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
  const absl::Time start = absl::Now();
  (*server)->Shutdown();
  std::fprintf(stderr, "perceptrond: stopped in %s\n",
               absl::FormatDuration(absl::Now() - start).c_str());
  return 0;
}
