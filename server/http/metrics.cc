#include "server/http/metrics.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/http/metrics_text.h"

namespace perceptron::server {
namespace {

namespace prom = ::prometheus;

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

// A series of a multiclass model's class: labels model and class.
void AddClassValue(prom::MetricFamily& f, const std::string& model,
                   const std::string& name, double v) {
  AddValue(f, model, v);
  f.metric.back().label.push_back({"class", name});
}

}  // namespace

Metrics::Metrics(Registry* registry, Families more)
    : registry_(registry),
      more_(std::move(more)),
      prom_(std::make_shared<prom::Registry>()),
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
}

void Metrics::CountHttp(absl::string_view handler, int code) {
  http_.Add({{"handler", std::string(handler)}, {"code", absl::StrCat(code)}})
      .Increment();
}

std::string Metrics::Render(
    const std::function<bool(absl::string_view)>& visible) const {
  std::vector<prom::MetricFamily> families = prom_->Collect();
  if (more_) {
    for (prom::MetricFamily& f : more_()) families.push_back(std::move(f));
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
  // Per class of a multiclass model: at most kMaxClasses series a model.
  prom::MetricFamily class_examples = Family(
      "perceptron_model_class_examples_total",
      "A multiclass model's labeled examples of each true class", T::Counter);
  prom::MetricFamily class_missed = Family(
      "perceptron_model_class_misclassified_total",
      "A multiclass model's labeled examples of each true class that were "
      "issued another class (a row of the confusion matrix less its diagonal)",
      T::Counter);
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
    const std::vector<std::string>& classes = entry->model->config().classes;
    const size_t k = classes.size();
    if (k > 0 && s.confusion.size() == k * k) {
      for (size_t y = 0; y < k; ++y) {
        uint64_t row = 0;
        for (size_t p = 0; p < k; ++p) row += s.confusion[y * k + p];
        AddClassValue(class_examples, entry->id, classes[y],
                      static_cast<double>(row));
        AddClassValue(class_missed, entry->id, classes[y],
                      static_cast<double>(row - s.confusion[y * k + y]));
      }
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
        &cert_frozen, &class_examples, &class_missed, &set_aside}) {
    families.push_back(std::move(*f));
  }
  return ExpositionText(families);
}

}  // namespace perceptron::server
