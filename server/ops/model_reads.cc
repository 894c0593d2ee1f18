// The answers that read a model (ModelStatus, Weights, History, the
// certificate): server/ops/model_ops.h, apart from what changes a model.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/util/time_util.h"
#include "server/model/convert.h"
#include "server/model/curves.h"
#include "server/ops/model_ops.h"

namespace perceptron::server {
namespace {

using google::protobuf::util::TimeUtil;

void NamesToProto(const NameTable& t, v1::NameTableInfo* out) {
  out->set_names(t.names());
  out->set_collided_slots(t.collided_slots());
  out->set_unnamed_slots(t.unnamed_slots());
  out->set_bytes(t.name_bytes());
  out->set_limit_bytes(t.limit_bytes());
  out->set_tag_bytes(t.tag_bytes());
}

}  // namespace

absl::Status FillStatus(ModelEntry& entry, v1::ModelStatus* status) {
  absl::MutexLock lock(&entry.mu);
  if (entry.deleted) return entry.GoneStatus();
  const Model& model = *entry.model;
  const Stats s = model.stats();
  status->set_model_id(entry.id);
  status->set_algorithm(ConfigToProto(model.config()).algorithm());
  status->set_dimension(model.config().dimension);
  StatsToProto(s, status->mutable_stats());
  if (s.gamma) status->set_gamma(*s.gamma);
  status->set_mistake_rate(s.counters.examples == 0
                               ? 0.0
                               : static_cast<double>(s.counters.mistakes) /
                                     s.counters.examples);
  status->set_recent_mistake_rate(entry.recent.rate());
  status->set_recent_window(entry.recent.size());
  status->set_weight_norm(s.weight_norm);
  status->set_support_vectors(s.figures.support_vectors);
  status->set_voted_vectors(s.figures.voted_vectors);
  status->set_dropped(s.figures.dropped);
  if (const NameTable* t = model.names()) {
    NamesToProto(*t, status->mutable_names());
  }
  status->mutable_classes()->Add(model.config().classes.begin(),
                                 model.config().classes.end());
  status->mutable_confusion()->Add(s.confusion.begin(), s.confusion.end());
  *status->mutable_created_at() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(entry.created_at));
  *status->mutable_updated_at() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(entry.updated_at));
  return absl::OkStatus();
}

absl::Status FillCertificate(ModelEntry& entry, v1::CertificateResponse* out) {
  absl::MutexLock lock(&entry.mu);
  if (entry.deleted) return entry.GoneStatus();
  const std::optional<CertificateReport> r =
      entry.model->CertificateNow(/*with_u=*/true);
  if (!r) {
    out->mutable_certificate()->set_state(v1::Certificate::OFF);
    out->mutable_certificate()->set_reason(
        "the server computes no certificate (--certificate_examples=0)");
    return absl::OkStatus();
  }
  CertificateToProto(*r, out->mutable_certificate());
  out->mutable_comparator()->Assign(r->u.begin(), r->u.end());
  out->mutable_comparator_indices()->Assign(r->u_indices.begin(),
                                            r->u_indices.end());
  for (size_t t = 0; t < r->basis.size(); ++t) {
    v1::KernelTerm* term = out->add_expansion();
    term->mutable_indices()->Assign(r->basis.indices(t).begin(),
                                    r->basis.indices(t).end());
    term->mutable_values()->Assign(r->basis.values(t).begin(),
                                   r->basis.values(t).end());
    term->set_coefficient(r->coefficients[t]);
  }
  return absl::OkStatus();
}

absl::Status FillHistory(ModelEntry& entry, v1::History* history) {
  absl::MutexLock lock(&entry.mu);
  if (entry.deleted) return entry.GoneStatus();
  history->set_model_id(entry.id);
  history->set_stride(entry.history.stride());
  history->set_capacity(entry.history.capacity());
  const std::vector<HistoryPoint>& points = entry.history.points();
  const HistoryPoint now = entry.CurrentPoint();
  const bool ends_now = !points.empty() &&
                        points.back().examples == now.examples &&
                        points.back().mistakes == now.mistakes &&
                        points.back().updates == now.updates;
  history->mutable_points()->Reserve(points.size() + 1);
  auto add = [history](const HistoryPoint& p) {
    PointToProto(p, history->add_points());
  };
  // The last point is the model now: when the last recorded one has its
  // counts, it is given with the certificate now (a refresh since it was
  // recorded may have lowered U).
  for (size_t i = 0; i + (ends_now ? 1 : 0) < points.size(); ++i) {
    add(points[i]);
  }
  add(now);
  return absl::OkStatus();
}

absl::Status FillWeights(ModelEntry& entry, v1::Weights* weights,
                         uint32_t top) {
  if (top > kMaxTopFeatures) {
    return absl::InvalidArgumentError(
        absl::StrCat("top ", top, " is over the limit of ", kMaxTopFeatures));
  }
  absl::MutexLock lock(&entry.mu);
  if (entry.deleted) return entry.GoneStatus();
  const Model& model = *entry.model;
  const absl::Span<const double> w = model.weights();
  weights->set_has_bias(model.config().bias);
  if (top == 0) {
    weights->mutable_values()->Add(w.begin(), w.end());
    return absl::OkStatus();
  }
  // One pass with a heap of the `top` heaviest so far (the lightest on top),
  // under the lock: no copy of the vector.
  auto heavier = [&w](uint32_t a, uint32_t b) {
    const double wa = std::abs(w[a]), wb = std::abs(w[b]);
    return wa != wb ? wa > wb : a < b;
  };
  std::vector<uint32_t> heap;
  heap.reserve(top);
  for (uint32_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0.0) continue;
    if (heap.size() < top) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), heavier);
    } else if (heavier(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), heavier);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), heavier);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), heavier);
  const ModelConfig& config = model.config();
  const NameTable* table = model.names();
  const uint32_t dim = config.weight_dimension();
  for (uint32_t at : heap) {
    v1::WeightedFeature* f = weights->add_top();
    // A multiclass model's weights are k vectors one after another.
    const uint32_t i = at % dim;
    f->set_index(i);
    f->set_weight(w[at]);
    if (config.multiclass()) f->set_class_name(config.classes[at / dim]);
    if (config.bias && i == config.dimension) {
      f->set_bias(true);
    } else if (i < config.feature_names.size()) {
      f->add_names(config.feature_names[i]);
    } else if (table != nullptr) {
      for (absl::string_view n : table->NamesOf(i)) {
        f->add_names(std::string(n));
      }
    }
  }
  if (table != nullptr) NamesToProto(*table, weights->mutable_names());
  return absl::OkStatus();
}

}  // namespace perceptron::server
