#include "server/http/metrics.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "google/protobuf/descriptor.h"
#include "perceptron/v1/perceptron.pb.h"
#include "server/http/metrics_text.h"

namespace perceptron::server {
namespace {

namespace prom = ::prometheus;
using Hook = grpc::experimental::InterceptionHookPoints;

// Seconds buckets for RPC handling, from 100 us (a small batch) to 10 s.
const prom::Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* b = new prom::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return *b;
}

class RpcInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcInterceptor(Metrics* metrics, Metrics::Method* method)
      : metrics_(metrics), method_(method), start_(absl::Now()) {
    method_->started->Increment();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) &&
        m->GetRecvMessage() != nullptr) {
      method_->received->Increment();
    }
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) {
      method_->sent->Increment();
    }
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      metrics_->CountHandled(*method_, m->GetSendStatus().error_code());
      method_->seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    }
    m->Proceed();
  }

 private:
  Metrics* metrics_;
  Metrics::Method* method_;
  absl::Time start_;
};

class RpcInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcInterceptorFactory(Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    Metrics::Method* method = metrics_->FindMethod(info->method());
    return method == nullptr ? nullptr : new RpcInterceptor(metrics_, method);
  }

 private:
  Metrics* metrics_;
};

const char* const kCodeNames[] = {"OK",
                                  "Canceled",
                                  "Unknown",
                                  "InvalidArgument",
                                  "DeadlineExceeded",
                                  "NotFound",
                                  "AlreadyExists",
                                  "PermissionDenied",
                                  "ResourceExhausted",
                                  "FailedPrecondition",
                                  "Aborted",
                                  "OutOfRange",
                                  "Unimplemented",
                                  "Internal",
                                  "Unavailable",
                                  "DataLoss",
                                  "Unauthenticated"};

prom::MetricFamily Family(std::string name, std::string help,
                          prom::MetricType type) {
  prom::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void AddValue(prom::MetricFamily& f, const std::string& model, double v) {
  prom::ClientMetric m;
  m.label.push_back({"model", model});
  if (f.type == prom::MetricType::Counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  f.metric.push_back(std::move(m));
}

}  // namespace

Metrics::Metrics(Registry* registry, bool rpc_metrics)
    : registry_(registry),
      rpc_metrics_(rpc_metrics),
      prom_(std::make_shared<prom::Registry>()),
      started_(prom::BuildCounter()
                   .Name("grpc_server_started_total")
                   .Help("RPCs started on the server")
                   .Register(*prom_)),
      handled_(prom::BuildCounter()
                   .Name("grpc_server_handled_total")
                   .Help("RPCs completed on the server, by status code")
                   .Register(*prom_)),
      received_(prom::BuildCounter()
                    .Name("grpc_server_msg_received_total")
                    .Help("Request messages received")
                    .Register(*prom_)),
      sent_(prom::BuildCounter()
                .Name("grpc_server_msg_sent_total")
                .Help("Response messages sent")
                .Register(*prom_)),
      seconds_(prom::BuildHistogram()
                   .Name("grpc_server_handling_seconds")
                   .Help("Time from an RPC's start to its status, seconds")
                   .Register(*prom_)),
      http_(prom::BuildCounter()
                .Name("perceptron_http_requests_total")
                .Help("HTTP requests served, by handler and status code")
                .Register(*prom_)),
      start_time_(prom::BuildGauge()
                      .Name("process_start_time_seconds")
                      .Help("When the server started, seconds since the epoch")
                      .Register(*prom_)
                      .Add({})) {
  start_time_.Set(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  auto add = [this](const std::string& service, const std::string& name,
                    const std::string& type) {
    prom::Labels labels = {
        {"grpc_service", service}, {"grpc_method", name}, {"grpc_type", type}};
    auto m = std::make_unique<Method>();
    m->started = &started_.Add(labels);
    m->received = &received_.Add(labels);
    m->sent = &sent_.Add(labels);
    m->seconds = &seconds_.Add(labels, SecondsBuckets());
    m->type = type;
    m->service = service;
    m->name = name;
    methods_[absl::StrCat("/", service, "/", name)] = std::move(m);
  };
  const google::protobuf::ServiceDescriptor* service =
      v1::LearnRequest::descriptor()->file()->FindServiceByName(
          "PerceptronService");
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* m = service->method(i);
    const char* type =
        m->client_streaming()
            ? (m->server_streaming() ? "bidi_stream" : "client_stream")
            : (m->server_streaming() ? "server_stream" : "unary");
    add(service->full_name(), m->name(), type);
  }
  add("grpc.health.v1.Health", "Check", "unary");
  add("grpc.health.v1.Health", "Watch", "server_stream");
}

Metrics::Method* Metrics::FindMethod(absl::string_view full_name) {
  auto it = methods_.find(full_name);
  return it == methods_.end() ? nullptr : it->second.get();
}

void Metrics::CountHandled(Method& method, int code) {
  const char* name = code >= 0 && code <= 16 ? kCodeNames[code] : kCodeNames[2];
  handled_
      .Add({{"grpc_service", method.service},
            {"grpc_method", method.name},
            {"grpc_type", method.type},
            {"grpc_code", name}})
      .Increment();
}

void Metrics::CountHttp(absl::string_view handler, int code) {
  http_.Add({{"handler", std::string(handler)}, {"code", absl::StrCat(code)}})
      .Increment();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
Metrics::InterceptorFactory() {
  if (!rpc_metrics_) return nullptr;
  return std::make_unique<RpcInterceptorFactory>(this);
}

std::string Metrics::Render(
    const std::function<bool(absl::string_view)>& visible) const {
  std::vector<prom::MetricFamily> families = prom_->Collect();
  if (!rpc_metrics_) {
    std::erase_if(families, [](const prom::MetricFamily& f) {
      return absl::StartsWith(f.name, "grpc_server_");
    });
  }
  using T = prom::MetricType;
  prom::MetricFamily models =
      Family("perceptron_models", "Models the server holds", T::Gauge);
  prom::MetricFamily examples =
      Family("perceptron_model_examples_total",
             "Labeled examples the model learned from", T::Counter);
  prom::MetricFamily mistakes = Family(
      "perceptron_model_mistakes_total",
      "Labeled examples whose issued score had the wrong sign (y s <= 0)",
      T::Counter);
  prom::MetricFamily updates =
      Family("perceptron_model_updates_total",
             "Times the model's state changed", T::Counter);
  prom::MetricFamily predictions =
      Family("perceptron_model_predictions_total",
             "Predictions issued with an id", T::Counter);
  prom::MetricFamily expired =
      Family("perceptron_model_expired_total",
             "Pending predictions removed unrevealed", T::Counter);
  prom::MetricFamily pending =
      Family("perceptron_model_pending_predictions",
             "Predictions issued and not yet revealed or expired", T::Gauge);
  prom::MetricFamily bound =
      Family("perceptron_model_update_bound",
             "The theory's bound on updates, (R/gamma)^2 + 2 TD_gamma/gamma "
             "(models with a comparator only)",
             T::Gauge);
  prom::MetricFamily td = Family(
      "perceptron_model_td_gamma",
      "TD_gamma = sum max(0, gamma - y u.x) (models with a comparator only)",
      T::Gauge);
  prom::MetricFamily radius = Family(
      "perceptron_model_radius",
      "R = max ||x|| over labeled examples (after preparation)", T::Gauge);
  prom::MetricFamily recent = Family(
      "perceptron_model_recent_mistake_rate",
      "Mistake rate over the model's last labeled examples (the window of "
      "GetStatus)",
      T::Gauge);
  prom::MetricFamily cert_upper = Family(
      "perceptron_model_certificate_upper",
      "The certificate's U: the bound of the best comparator the server "
      "found, over every labeled example (updates <= U for the classic rule)",
      T::Gauge);
  prom::MetricFamily cert_lower =
      Family("perceptron_model_certificate_lower",
             "The certificate's L: no comparator's bound is lower", T::Gauge);
  prom::MetricFamily cert_frozen = Family(
      "perceptron_model_certificate_frozen",
      "1 once the model's certificate is frozen (its examples outgrew what "
      "it may keep), 0 while it is exact or being refreshed",
      T::Gauge);
  double count = 0;
  for (const std::shared_ptr<ModelEntry>& entry : registry_->All()) {
    if (visible && !visible(entry->id)) continue;
    absl::MutexLock lock(&entry->mu);
    if (entry->deleted) continue;
    const Stats s = entry->model->stats(/*with_weight_norm=*/false);
    ++count;
    AddValue(examples, entry->id, s.counters.examples);
    AddValue(mistakes, entry->id, s.counters.mistakes);
    AddValue(updates, entry->id, s.counters.updates);
    AddValue(predictions, entry->id, s.counters.predictions);
    AddValue(expired, entry->id, s.counters.expired);
    AddValue(pending, entry->id, s.pending);
    if (s.bound.bound_available) AddValue(bound, entry->id, s.bound.bound);
    if (s.bound.td_available) AddValue(td, entry->id, s.bound.td_gamma);
    AddValue(radius, entry->id, s.bound.radius);
    AddValue(recent, entry->id, entry->recent.rate());
    if (s.certificate && s.certificate->available) {
      AddValue(cert_upper, entry->id, s.certificate->upper);
      AddValue(cert_lower, entry->id, s.certificate->lower);
      AddValue(cert_frozen, entry->id,
               s.certificate->phase == CertificatePhase::kFrozen ? 1 : 0);
    }
  }
  prom::ClientMetric total;
  total.gauge.value = count;
  models.metric.push_back(total);
  prom::MetricFamily set_aside = Family(
      "perceptron_model_set_aside",
      "1 for a model recovery could not rebuild: its calls answer DATA_LOSS, "
      "its data is kept untouched (the server's log says why)",
      T::Gauge);
  for (const auto& [id, reason] : registry_->SetAsideModels()) {
    if (visible && !visible(id)) continue;
    AddValue(set_aside, id, 1);
  }
  for (prom::MetricFamily* f :
       {&models, &examples, &mistakes, &updates, &predictions, &expired,
        &pending, &bound, &td, &radius, &recent, &cert_upper, &cert_lower,
        &cert_frozen, &set_aside}) {
    families.push_back(std::move(*f));
  }
  return ExpositionText(families);
}

}  // namespace perceptron::server
