#include "server/server.h"

#include <gnutls/gnutls.h>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/memory.h"
#include "server/ops/model_ops.h"

namespace perceptron::server {
namespace {

namespace prom = ::prometheus;

gnutls_datum_t Datum(const std::string& pem) {
  return gnutls_datum_t{
      reinterpret_cast<unsigned char*>(const_cast<char*>(pem.data())),
      static_cast<unsigned int>(pem.size())};
}

// The TLS certificate chain and its key, and the client CA, as GnuTLS (the
// HTTP port's library) reads them: a pair that does not load (swapped, not
// PEM, a key of another certificate) is named here. gRPC would only log its
// own errors and fail to listen, said as an address in use.
absl::Status CheckTlsFiles(const ServerOptions& o) {
  if (o.tls_cert_pem.empty()) return absl::OkStatus();
  gnutls_certificate_credentials_t creds;
  if (gnutls_certificate_allocate_credentials(&creds) < 0) {
    return absl::InternalError("GnuTLS could not allocate credentials");
  }
  const gnutls_datum_t cert = Datum(o.tls_cert_pem), key = Datum(o.tls_key_pem),
                       ca = Datum(o.tls_client_ca_pem);
  const int pair = gnutls_certificate_set_x509_key_mem(creds, &cert, &key,
                                                       GNUTLS_X509_FMT_PEM);
  const int cas = pair < 0 || o.tls_client_ca_pem.empty()
                      ? 1
                      : gnutls_certificate_set_x509_trust_mem(
                            creds, &ca, GNUTLS_X509_FMT_PEM);
  gnutls_certificate_free_credentials(creds);
  if (pair < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the TLS certificate (--tls_cert) and key (--tls_key) are not a PEM "
        "certificate chain and its private key: ",
        gnutls_strerror(pair)));
  }
  if (cas <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the client CA (--tls_client_ca) holds no PEM certificate",
                     cas < 0 ? absl::StrCat(": ", gnutls_strerror(cas)) : ""));
  }
  return absl::OkStatus();
}

// A family of one series: `v` as a counter's or a gauge's value.
prom::MetricFamily One(const char* name, const char* help,
                       prom::MetricType type, double v,
                       std::vector<prom::ClientMetric::Label> labels = {}) {
  prom::ClientMetric m;
  m.label = std::move(labels);
  if (type == prom::MetricType::Counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  return prom::MetricFamily{name, help, type, {std::move(m)}};
}

// The data directory's figures (docs/design.md section 8): commits, the
// records they held, the seconds they took, snapshots, a failed store, and
// the durability mode.
std::vector<prom::MetricFamily> StorageFamilies(absl::string_view durability,
                                                const StorageCounters& c) {
  using T = prom::MetricType;
  std::vector<prom::MetricFamily> out;
  auto one = [&out](const char* name, const char* help, T type, double v,
                    std::vector<prom::ClientMetric::Label> labels = {}) {
    out.push_back(One(name, help, type, v, std::move(labels)));
  };
  one("perceptron_storage_commits_total",
      "Writes of queued log records to the data directory (one fsync each in "
      "sync mode)",
      T::Counter, static_cast<double>(c.commits));
  one("perceptron_storage_records_total",
      "Log records written (one per batch that changed a model)", T::Counter,
      static_cast<double>(c.records));
  one("perceptron_storage_commit_seconds_total",
      "Seconds spent writing (and in sync mode syncing) log records",
      T::Counter, c.commit_seconds);
  one("perceptron_storage_snapshots_total", "Model snapshots written",
      T::Counter, static_cast<double>(c.snapshots));
  one("perceptron_storage_failed",
      "1 while the store cannot write (a write to the data directory failed): "
      "changes are refused until it writes again, tried every second",
      T::Gauge, c.failed ? 1 : 0);
  one("perceptron_storage_resumed_total",
      "Times the store wrote again after a failure (its models behind were "
      "restored as stored)",
      T::Counter, static_cast<double>(c.resumed));
  one("perceptron_storage_models_restored_total",
      "Models rebuilt from the store when it wrote again after a failure (each "
      "had a batch whose record failed)",
      T::Counter, static_cast<double>(c.models_reloaded));
  one("perceptron_storage_rows_gave_way_total",
      "Certificates that stopped keeping examples because those kept could not "
      "be stored (a full disk): the log went on without them",
      T::Counter, static_cast<double>(c.rows_gave_way));
  one("perceptron_storage_durability",
      "The server's durability mode (--durability), as its label: always 1",
      T::Gauge, 1, {{"mode", std::string(durability)}});
  return out;
}

// The process's memory (server/memory.h).
std::vector<prom::MetricFamily> MemoryFamilies(uint64_t releases) {
  using T = prom::MetricType;
  const MemoryFigures m = ReadMemory();
  std::vector<prom::MetricFamily> out;
  auto one = [&out](const char* name, const char* help, T type, double v,
                    std::vector<prom::ClientMetric::Label> labels = {}) {
    out.push_back(One(name, help, type, v, std::move(labels)));
  };
  one("process_resident_memory_bytes", "Resident memory size in bytes",
      T::Gauge, static_cast<double>(m.resident));
  one("perceptron_memory_allocated_bytes",
      "Bytes the server holds from its allocator", T::Gauge,
      static_cast<double>(m.allocated));
  one("perceptron_memory_allocator_free_bytes",
      "Bytes the allocator holds free, given back to the system once they "
      "reach --memory_release_mb",
      T::Gauge, static_cast<double>(m.allocator_free));
  one("perceptron_memory_allocator_cached_bytes",
      "Bytes freed that the allocator keeps in its caches for reuse (not "
      "given back; the threads' share is bounded by "
      "--allocator_thread_cache_mb)",
      T::Gauge, static_cast<double>(m.allocator_cached));
  one("perceptron_memory_thread_cache_limit_bytes",
      "The bound on what the allocator's per-thread caches keep together "
      "(--allocator_thread_cache_mb; 0 for the system allocator)",
      T::Gauge, static_cast<double>(m.thread_cache_limit));
  one("perceptron_memory_allocator_transfer_objects",
      "The batch of small objects the allocator moves between its per-thread "
      "and shared caches (--allocator_transfer_objects; 0 for the system "
      "allocator)",
      T::Gauge, static_cast<double>(m.transfer_batch));
  one("perceptron_memory_releases_total",
      "Times the allocator's free memory was given back to the system",
      T::Counter, static_cast<double>(releases));
  one("perceptron_memory_allocator",
      "The allocator the server runs on, as its label: always 1", T::Gauge, 1,
      {{"allocator", m.allocator}});
  return out;
}

}  // namespace

PerceptronServer::PerceptronServer(const ServerOptions& options,
                                   std::unique_ptr<Persistence> persistence,
                                   std::unique_ptr<Authorizer> auth)
    : options_(options),
      registry_(options.limits),
      persistence_(std::move(persistence)),
      auth_(std::move(auth)),
      rpc_metrics_(options.rpc_metrics),
      service_(&registry_, persistence_.get(), options.limits, auth_.get(),
               &rpc_metrics_),
      metrics_(
          &registry_,
          [this] {
            std::vector<prometheus::MetricFamily> f = rpc_metrics_.Collect();
            for (prometheus::MetricFamily& s :
                 StorageFamilies(DurabilityName(persistence_->durability()),
                                 persistence_->counters())) {
              f.push_back(std::move(s));
            }
            for (prometheus::MetricFamily& m : MemoryFamilies(
                     memory_releases_.load(std::memory_order_relaxed))) {
              f.push_back(std::move(m));
            }
            // What the memory bounds leave: each a gauge of bytes.
            struct Gauge {
              const char* name;
              const char* help;
              uint64_t value;
            };
            const ByteBudget& pending = registry_.pending_budget();
            const ByteBudget& names = registry_.names_budget();
            for (const Gauge& g : {
                     Gauge{"perceptron_models_weight_bytes",
                           "Bytes the models' weight vectors may take "
                           "together (as many as each model's rule keeps, "
                           "and comparators), and kernel models' stored "
                           "mistakes take, bounded by --max_models_mb",
                           registry_.weight_bytes()},
                     Gauge{"perceptron_models_weight_bytes_limit",
                           "The bound on the models' bytes "
                           "(--max_models_mb; 0: none)",
                           options_.limits.models_bytes},
                     Gauge{"perceptron_pending_prediction_bytes",
                           "Bytes every model's pending predictions hold "
                           "together, bounded by --max_pending_mb",
                           pending.used()},
                     Gauge{"perceptron_pending_prediction_bytes_limit",
                           "The bound on the pending predictions' bytes "
                           "(--max_pending_mb)",
                           pending.limit()},
                     Gauge{"perceptron_name_bytes",
                           "Bytes of feature names every hashing model keeps "
                           "together, bounded by --name_tables_mb",
                           names.used()},
                     Gauge{"perceptron_name_bytes_limit",
                           "The bound on the feature names' bytes "
                           "(--name_tables_mb)",
                           names.limit()},
                 }) {
              f.push_back(One(g.name, g.help, prometheus::MetricType::Gauge,
                              static_cast<double>(g.value)));
            }
            return f;
          }),
      refresher_(&registry_, persistence_.get(), options.limits) {
  service_.set_server_status(
      [this](v1::ServerStatus* status) { FillServerStatus(status); });
}

absl::StatusOr<std::unique_ptr<PerceptronServer>> PerceptronServer::Start(
    const ServerOptions& options) {
  if (absl::Status s = CheckTlsFiles(options); !s.ok()) return s;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  absl::StatusOr<std::unique_ptr<Persistence>> persistence =
      Persistence::Open(options.persistence);
  if (!persistence.ok()) return persistence.status();
  std::unique_ptr<Authorizer> auth;
  if (!options.tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<Authorizer>> loaded =
        Authorizer::Load(options.tokens_file);
    if (!loaded.ok()) return loaded.status();
    auth = *std::move(loaded);
  }
  std::unique_ptr<PerceptronServer> s(
      new PerceptronServer(options, *std::move(persistence), std::move(auth)));
  absl::StatusOr<RecoveryReport> recovered =
      s->persistence_->Recover(s->registry_, options.limits.max_dimension);
  if (!recovered.ok()) return recovered.status();
  s->recovery_ = *recovered;
  s->persistence_->Start(&s->registry_);
  grpc::ServerBuilder builder;
  const std::string address = absl::StrCat(options.host, ":", options.port);
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (!options.tls_cert_pem.empty()) {
    grpc::SslServerCredentialsOptions tls(
        options.tls_client_ca_pem.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_root_certs = options.tls_client_ca_pem;
    tls.pem_key_cert_pairs.push_back(
        {options.tls_key_pem, options.tls_cert_pem});
    credentials = grpc::SslServerCredentials(tls);
  }
  builder.AddListeningPort(address, credentials, &s->port_);
  // gRPC sets SO_REUSEPORT by default: a second server on the same address
  // would then start and the kernel would split clients between the two.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&s->service_);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(options.limits.max_message_bytes));
  builder.SetMaxSendMessageSize(
      static_cast<int>(options.limits.max_message_bytes));
  if (auto factory = s->rpc_metrics_.InterceptorFactory()) {
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(std::move(factory));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address,
                     ": the address is in use (another perceptrond or "
                     "program listens there) or not available on this host"));
  }
  if (options.http_port >= 0) {
    HttpOptions http_options;
    http_options.host = options.host;
    http_options.port = options.http_port;
    http_options.threads = options.http_threads;
    http_options.tls_cert_pem = options.tls_cert_pem;
    http_options.tls_key_pem = options.tls_key_pem;
    http_options.tls_client_ca_pem = options.tls_client_ca_pem;
    http_options.health_note = [p = s->persistence_.get()] {
      return p->Problem();
    };
    http_options.server_status = [p = s.get()](v1::ServerStatus* status) {
      p->FillServerStatus(status);
    };
    absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
        http_options, &s->registry_, &s->metrics_, s->auth_.get());
    if (!http.ok()) {
      s->Shutdown();
      return http.status();
    }
    s->http_ = *std::move(http);
  }
  if (grpc::HealthCheckServiceInterface* health =
          s->server_->GetHealthCheckService()) {
    health->SetServingStatus(kStoreHealthService, true);
  }
  s->expiry_ = std::thread([p = s.get()] { p->ExpiryLoop(); });
  s->refresher_.Start();
  return s;
}

PerceptronServer::~PerceptronServer() { Shutdown(); }

void PerceptronServer::ExpiryLoop() {
  while (!stop_.WaitForNotificationWithTimeout(options_.expiry_interval)) {
    const absl::Time now = absl::Now();
    for (const std::shared_ptr<ModelEntry>& e : registry_.All()) {
      ExpirePending(*e, *persistence_, options_.limits.pending_ttl);
      // A model made for a while (idle_expiry_seconds) goes once idle.
      // A store that fails here says so itself (health, /metrics).
      if (persistence_->Writable().ok() && registry_.DeleteIfIdle(e, now)) {
        persistence_->Deleted(e->id).IgnoreError();
      }
    }
    // An idle store's memtable first, so that its memory is given back too.
    persistence_->FlushIfIdle();
    ReleaseMemory();
    // Health's named service for the store: SERVING while it writes.
    if (grpc::HealthCheckServiceInterface* health =
            server_->GetHealthCheckService()) {
      health->SetServingStatus(kStoreHealthService,
                               persistence_->Writable().ok());
    }
  }
}

void PerceptronServer::ReleaseMemory() {
  if (options_.memory_release_bytes == 0) return;
  if (AllocatorFreeBytes() < options_.memory_release_bytes) return;
  ReleaseFreeMemory();
  memory_releases_.fetch_add(1, std::memory_order_relaxed);
}

void PerceptronServer::FillServerStatus(v1::ServerStatus* status) {
  status->set_server_id(service_.server_id());
  *status->mutable_started_at() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
          absl::ToUnixNanos(started_at_));
  status->set_models(registry_.size());
  status->set_durability(
      std::string(DurabilityName(persistence_->durability())));
  const StorageCounters c = persistence_->counters();
  status->set_store_writing(!c.failed);
  status->set_store_error(c.failed ? persistence_->Problem() : "");
  status->set_store_resumed(c.resumed);
  const MemoryFigures m = ReadMemory();
  status->set_resident_memory_bytes(m.resident);
  status->set_allocated_bytes(m.allocated);
  status->set_allocator_free_bytes(m.allocator_free);
  status->set_allocator(m.allocator);
  status->set_max_batch_items(options_.limits.max_batch_items);
  status->set_max_message_bytes(options_.limits.max_message_bytes);
  status->set_models_weight_bytes(registry_.weight_bytes());
  status->set_max_models_weight_bytes(options_.limits.models_bytes);
  status->set_pending_prediction_bytes(registry_.pending_budget().used());
  status->set_max_pending_prediction_bytes(registry_.pending_budget().limit());
  status->set_name_bytes(registry_.names_budget().used());
  status->set_max_name_bytes(registry_.names_budget().limit());
}

void PerceptronServer::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    if (server_ == nullptr) {  // never started
      persistence_->Stop();
      return;
    }
    grpc::HealthCheckServiceInterface* health =
        server_->GetHealthCheckService();
    if (health != nullptr) health->Shutdown();
    if (http_ != nullptr) http_->SetNotServing();
    service_.BeginShutdown();
    // gRPC's own Shutdown would also wait, up to its deadline, for clients to
    // close idle connections; wait only for the calls in progress instead, then
    // close everything at once.
    service_.AwaitIdle(absl::Now() + options_.shutdown_grace);
    server_->Shutdown(absl::ToChronoTime(absl::Now()));
    server_->Wait();
    stop_.Notify();
    if (expiry_.joinable()) expiry_.join();
    refresher_.Stop();
    http_.reset();
    persistence_->Stop();
  });
}

}  // namespace perceptron::server
