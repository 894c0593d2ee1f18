#include "server/storage/state_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/candidate_sums.h"
#include "core/config.h"
#include "core/status_macros.h"
#include "server/model/convert.h"

namespace perceptron::server {
namespace {

template <typename T>
std::vector<T> Vec(const google::protobuf::RepeatedField<T>& r) {
  return std::vector<T>(r.begin(), r.end());
}

template <typename T>
void Put(const std::vector<T>& v, google::protobuf::RepeatedField<T>* out) {
  out->Add(v.begin(), v.end());
}

void CountersToProto(const Counters& c, v1::CountersState* out) {
  out->set_examples(c.examples);
  out->set_mistakes(c.mistakes);
  out->set_updates(c.updates);
  out->set_predictions(c.predictions);
  out->set_expired(c.expired);
}

Counters CountersFromProto(const v1::CountersState& c) {
  return Counters{c.examples(), c.mistakes(), c.updates(), c.predictions(),
                  c.expired()};
}

void PendingToProto(const PendingPrediction& p, v1::PendingState* out) {
  out->set_prediction_id(p.prediction_id);
  if (p.features.sparse) {
    Put(p.features.indices,
        out->mutable_features()->mutable_sparse()->mutable_indices());
    Put(p.features.values,
        out->mutable_features()->mutable_sparse()->mutable_values());
  } else {
    Put(p.features.values,
        out->mutable_features()->mutable_dense()->mutable_values());
  }
  out->set_score(p.score);
  out->set_issued_at_unix_nanos(p.issued_at);
  out->set_predicted_class(static_cast<uint32_t>(p.predicted));
}

absl::StatusOr<PendingPrediction> PendingFromProto(const v1::PendingState& p) {
  absl::StatusOr<FeatureView> view = FeaturesFromProto(p.features());
  if (!view.ok()) return view.status();
  // A class past int's range stays out of range (the model refuses it).
  return PendingPrediction{
      p.prediction_id(), Features::Copy(*view), p.score(),
      p.issued_at_unix_nanos(),
      static_cast<int>(std::min<uint32_t>(p.predicted_class(), INT32_MAX))};
}

// `v` into `dense`, or into `*sparse()` where that is smaller: 12 bytes a
// non-zero there against 8 a coordinate in `dense`.
template <typename MutableSparse>
void PutDoubles(const std::vector<double>& v,
                google::protobuf::RepeatedField<double>* dense,
                MutableSparse sparse) {
  const size_t nonzero = SparseNonZeros(v);
  if (!SparseIsSmaller(v.size(), nonzero)) {
    Put(v, dense);
    return;
  }
  v1::SparseDoubles* out = sparse();
  out->set_size(static_cast<uint32_t>(v.size()));
  out->mutable_indices()->Reserve(static_cast<int>(nonzero));
  out->mutable_values()->Reserve(static_cast<int>(nonzero));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!SparseNonZero(v[i])) continue;
    out->add_indices(static_cast<uint32_t>(i));
    out->add_values(v[i]);
  }
}

// A learner's vector as the model exported it: its non-zeros as they are
// (ExportDoubles chose that form), else `v` as PutDoubles writes it.
template <typename MutableSparse>
void PutExported(const std::vector<double>& v,
                 const std::optional<SparseDoubles>& given,
                 google::protobuf::RepeatedField<double>* dense,
                 MutableSparse sparse) {
  if (!given.has_value()) {
    PutDoubles(v, dense, sparse);
    return;
  }
  v1::SparseDoubles* out = sparse();
  out->set_size(static_cast<uint32_t>(given->size));
  Put(given->indices, out->mutable_indices());
  Put(given->values, out->mutable_values());
}

// The vector `dense` holds, or `sparse` does (has_sparse), of at most
// `max_size` coordinates; INVALID_ARGUMENT naming `what` for a malformed
// one (both forms, an index out of order or past the size, lengths that
// differ, a size over the bound).
absl::StatusOr<std::vector<double>> Doubles(
    absl::string_view what,
    const google::protobuf::RepeatedField<double>& dense, bool has_sparse,
    const v1::SparseDoubles& sparse, uint64_t max_size) {
  if (!has_sparse) return Vec(dense);
  auto bad = [what](auto... why) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", why...));
  };
  if (!dense.empty()) return bad("given both whole and by its non-zeros");
  if (sparse.size() > max_size) {
    return bad(sparse.size(), " coordinates, over the model's ", max_size);
  }
  if (sparse.indices_size() != sparse.values_size()) {
    return bad(sparse.indices_size(), " indices and ", sparse.values_size(),
               " values");
  }
  std::vector<double> v(sparse.size(), 0.0);
  int64_t last = -1;
  for (int k = 0; k < sparse.indices_size(); ++k) {
    const uint32_t i = sparse.indices(k);
    if (i >= v.size() || int64_t{i} <= last) {
      return bad("index ", i, " is past the size ", v.size(),
                 " or not above the one before it");
    }
    v[i] = sparse.values(k);
    last = i;
  }
  return v;
}

// `sparse_ok`: the vector may go by its non-zeros (snapshots and blobs; a log
// record's are always whole).
void VotedToProto(const VotedVector& v, v1::VotedVectorState* out,
                  bool sparse_ok) {
  if (sparse_ok) {
    PutDoubles(v.weights, out->mutable_weights(),
               [out] { return out->mutable_sparse_weights(); });
  } else {
    Put(v.weights, out->mutable_weights());
  }
  out->set_survived(v.survived);
}

// `max_size`: the model's weight count; 0 where the vector must be whole.
absl::StatusOr<VotedVector> VotedFromProto(const v1::VotedVectorState& v,
                                           uint64_t max_size) {
  absl::StatusOr<std::vector<double>> w =
      Doubles("a voted vector", v.weights(), v.has_sparse_weights(),
              v.sparse_weights(), max_size);
  if (!w.ok()) return w.status();
  return VotedVector{*std::move(w), v.survived()};
}

void SupportToProto(const SupportVector& v, v1::SupportVectorState* out) {
  Put(v.indices, out->mutable_indices());
  Put(v.values, out->mutable_values());
  out->set_coefficient(v.coefficient);
}

SupportVector SupportFromProto(const v1::SupportVectorState& v) {
  return SupportVector{Vec(v.indices()), Vec(v.values()), v.coefficient()};
}

void DeltaToProto(const VectorDelta& d, v1::VectorDelta* out) {
  out->set_full(d.full);
  Put(d.indices, out->mutable_indices());
  Put(d.values, out->mutable_values());
}

VectorDelta DeltaFromProto(const v1::VectorDelta& d) {
  return VectorDelta{d.full(), Vec(d.indices()), Vec(d.values())};
}

// Whether `v` is p times `of` bit for bit (each value p * of[i] as rounded).
bool BitwiseMultiple(const std::vector<double>& v,
                     const std::vector<double>& of, double p) {
  if (v.size() != of.size()) return false;
  for (size_t i = 0; i < v.size(); ++i) {
    if (absl::bit_cast<uint64_t>(v[i]) != absl::bit_cast<uint64_t>(p * of[i]))
      return false;
  }
  return true;
}

// `compact`: a candidate that is a multiple of an earlier one, bit for bit, is
// given by that one and the scale (the store's records and snapshots).
void CertificateStateToProto(const CertificateState& c,
                             v1::CertificateState* out, bool compact) {
  out->set_phase(PhaseToProto(c.phase));
  out->set_reason(c.reason);
  out->set_permanent_off(c.permanent_off);
  out->set_observed(c.observed);
  out->set_kept(c.kept);
  out->set_kept_examples(c.kept_examples);
  out->set_solved(c.solved);
  out->set_frozen_at(c.frozen_at);
  out->set_lower(c.lower);
  out->set_converged(c.converged);
  out->set_with_candidates(c.with_candidates);
  std::vector<const ScaledCandidates::Multiple*> multiple(c.candidates.size());
  const ScaledCandidates scaled =
      compact ? ScaledCandidates(c.candidates) : ScaledCandidates();
  for (const ScaledCandidates::Multiple& m : scaled.multiples()) {
    if (BitwiseMultiple(c.candidates[m.k], c.candidates[m.of], m.p)) {
      multiple[m.k] = &m;
    }
  }
  for (size_t k = 0; k < c.candidates.size(); ++k) {
    v1::CandidateState* v = out->add_candidates();
    if (multiple[k] != nullptr) {
      v->set_multiple_of(multiple[k]->of + 1);
      v->set_scale(multiple[k]->p);
    } else {
      Put(c.candidates[k], v->mutable_values());
    }
  }
  Put(c.sums, out->mutable_sums());
  out->mutable_support()->Assign(c.support.begin(), c.support.end());
  for (size_t t = 0; t < c.basis.size(); ++t) {
    v1::SupportVectorState* row = out->add_basis();
    row->mutable_indices()->Assign(c.basis.indices(t).begin(),
                                   c.basis.indices(t).end());
    row->mutable_values()->Assign(c.basis.values(t).begin(),
                                  c.basis.values(t).end());
    row->set_coefficient(c.basis.label(t));
  }
}

absl::StatusOr<CertificateState> CertificateStateFromProto(
    const v1::CertificateState& c) {
  CertificateState s;
  absl::StatusOr<CertificatePhase> phase = PhaseFromProto(c.phase());
  if (!phase.ok()) return phase.status();
  s.phase = *phase;
  s.reason = c.reason();
  s.permanent_off = c.permanent_off();
  s.observed = c.observed();
  s.kept = c.kept();
  s.kept_examples = c.kept_examples();
  s.solved = c.solved();
  s.frozen_at = c.frozen_at();
  s.lower = c.lower();
  s.converged = c.converged();
  s.with_candidates = c.with_candidates();
  for (const v1::CandidateState& v : c.candidates()) {
    const size_t k = s.candidates.size();
    if (v.multiple_of() == 0) {
      s.candidates.push_back(Vec(v.values()));
      continue;
    }
    if (v.multiple_of() > k || v.values_size() > 0 || !(v.scale() > 0) ||
        !std::isfinite(v.scale())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "certificate: candidate ", k, " is given as ", v.scale(),
          " times candidate ", v.multiple_of() - 1,
          ", not a positive multiple of an earlier one without values"));
    }
    const std::vector<double>& of = s.candidates[v.multiple_of() - 1];
    std::vector<double> values(of.size());
    for (size_t i = 0; i < of.size(); ++i) values[i] = v.scale() * of[i];
    s.candidates.push_back(std::move(values));
  }
  if (!s.with_candidates && !s.candidates.empty()) {
    return absl::InvalidArgumentError(
        "certificate: candidates given without with_candidates");
  }
  s.sums = Vec(c.sums());
  if (!s.with_candidates && c.support_size() > 0) {
    return absl::InvalidArgumentError(
        "certificate: a support given without with_candidates");
  }
  s.support.assign(c.support().begin(), c.support().end());
  if (!s.with_candidates && c.basis_size() > 0) {
    return absl::InvalidArgumentError(
        "certificate: a basis given without with_candidates");
  }
  for (const v1::SupportVectorState& row : c.basis()) {
    if (row.indices_size() != row.values_size()) {
      return absl::InvalidArgumentError(
          "certificate: a basis row has indices and values of different "
          "lengths");
    }
    s.basis.Add(row.indices(), row.values(), row.coefficient() > 0 ? 1 : -1);
  }
  return s;
}

void NamesToProto(const NameTableState& in, v1::NameTableState* out) {
  out->mutable_slots()->Reserve(in.names.size());
  out->mutable_hashes()->Reserve(in.names.size());
  out->mutable_names()->Reserve(in.names.size());
  for (const NamedSlot& n : in.names) {
    out->add_slots(n.slot);
    out->add_hashes(n.hash);
    out->add_names(n.name);
  }
  out->set_unnamed_slots(in.unnamed_slots);
}

absl::StatusOr<NameTableState> NamesFromProto(const v1::NameTableState& in) {
  if (in.slots_size() != in.hashes_size() ||
      in.slots_size() != in.names_size()) {
    return absl::InvalidArgumentError(
        "names: slots, hashes and names differ in length");
  }
  NameTableState out;
  out.names.reserve(in.slots_size());
  for (int i = 0; i < in.slots_size(); ++i) {
    out.names.push_back({in.slots(i), in.hashes(i), in.names(i)});
  }
  out.unnamed_slots = in.unnamed_slots();
  return out;
}

}  // namespace

void StateToProto(const ModelState& in, v1::ModelState* out, bool compact) {
  *out->mutable_config() = ConfigToProto(in.config);
  CountersToProto(in.counters, out->mutable_counters());
  out->set_td_gamma(in.td_gamma);
  out->set_radius(in.radius);
  v1::LearnerState* l = out->mutable_learner();
  PutExported(in.learner.weights, in.learner.sparse_weights,
              l->mutable_weights(),
              [l] { return l->mutable_sparse_weights(); });
  l->set_weight_norm_sq(in.learner.weight_norm_sq);
  PutExported(in.learner.average_accumulator,
              in.learner.sparse_average_accumulator,
              l->mutable_average_accumulator(),
              [l] { return l->mutable_sparse_average_accumulator(); });
  l->set_average_steps(in.learner.average_steps);
  for (const VotedVector& v : in.learner.voted) {
    VotedToProto(v, l->add_voted(), /*sparse_ok=*/true);
  }
  l->set_current_survived(in.learner.current_survived);
  for (const SupportVector& v : in.learner.support)
    SupportToProto(v, l->add_support());
  l->set_dropped(in.learner.dropped);
  out->set_next_prediction_id(in.next_prediction_id);
  for (const PendingPrediction& p : in.pending)
    PendingToProto(p, out->add_pending());
  if (in.certificate) {
    CertificateStateToProto(*in.certificate, out->mutable_certificate(),
                            compact);
  }
  if (!in.names.names.empty() || in.names.unnamed_slots != 0) {
    NamesToProto(in.names, out->mutable_names());
  }
  Put(in.confusion, out->mutable_confusion());
}

absl::StatusOr<ModelState> StateFromProto(const v1::ModelState& in,
                                          uint32_t max_dimension) {
  ModelState s;
  absl::StatusOr<ModelConfig> config =
      ConfigFromProto(in.config(), max_dimension);
  if (!config.ok()) return config.status();
  s.config = *std::move(config);
  s.counters = CountersFromProto(in.counters());
  s.td_gamma = in.td_gamma();
  s.radius = in.radius();
  const v1::LearnerState& l = in.learner();
  const uint64_t weights = s.config.weight_count();
  PERCEPTRON_ASSIGN_OR_RETURN(
      s.learner.weights,
      Doubles("the weights", l.weights(), l.has_sparse_weights(),
              l.sparse_weights(), weights));
  s.learner.weight_norm_sq = l.weight_norm_sq();
  PERCEPTRON_ASSIGN_OR_RETURN(
      s.learner.average_accumulator,
      Doubles("the average's sums", l.average_accumulator(),
              l.has_sparse_average_accumulator(),
              l.sparse_average_accumulator(), weights));
  s.learner.average_steps = l.average_steps();
  for (const auto& v : l.voted()) {
    PERCEPTRON_ASSIGN_OR_RETURN(VotedVector voted, VotedFromProto(v, weights));
    s.learner.voted.push_back(std::move(voted));
  }
  s.learner.current_survived = l.current_survived();
  for (const auto& v : l.support())
    s.learner.support.push_back(SupportFromProto(v));
  s.learner.dropped = l.dropped();
  s.next_prediction_id = in.next_prediction_id();
  for (const v1::PendingState& p : in.pending()) {
    absl::StatusOr<PendingPrediction> pp = PendingFromProto(p);
    if (!pp.ok()) return pp.status();
    s.pending.push_back(*std::move(pp));
  }
  if (in.has_certificate()) {
    absl::StatusOr<CertificateState> c =
        CertificateStateFromProto(in.certificate());
    if (!c.ok()) return c.status();
    s.certificate = *std::move(c);
  }
  absl::StatusOr<NameTableState> names = NamesFromProto(in.names());
  if (!names.ok()) return names.status();
  s.names = *std::move(names);
  s.confusion = Vec(in.confusion());
  return s;
}

void JournalToProto(const Journal& in, v1::Journal* out) {
  v1::LearnerDelta* l = out->mutable_learner();
  DeltaToProto(in.learner.weights, l->mutable_weights());
  DeltaToProto(in.learner.average_accumulator,
               l->mutable_average_accumulator());
  l->set_weight_norm_sq(in.learner.weight_norm_sq);
  l->set_average_steps(in.learner.average_steps);
  l->set_current_survived(in.learner.current_survived);
  l->set_dropped(in.learner.dropped);
  for (const VotedVector& v : in.learner.voted_added)
    VotedToProto(v, l->add_voted_added(), /*sparse_ok=*/false);
  l->set_voted_removed(in.learner.voted_removed);
  for (const SupportVector& v : in.learner.support_added) {
    SupportToProto(v, l->add_support_added());
  }
  l->set_support_removed(in.learner.support_removed);
  CountersToProto(in.counters, out->mutable_counters());
  out->set_td_gamma(in.td_gamma);
  out->set_radius(in.radius);
  out->set_next_prediction_id(in.next_prediction_id);
  out->set_pending_cleared(in.pending_cleared);
  for (const PendingPrediction& p : in.pending_added)
    PendingToProto(p, out->add_pending_added());
  Put(in.pending_removed, out->mutable_pending_removed());
  if (in.certificate) {
    CertificateStateToProto(*in.certificate, out->mutable_certificate(),
                            /*compact=*/true);
  }
  if (!in.names.names.empty() || in.names.unnamed_slots != 0) {
    NamesToProto(in.names, out->mutable_names());
  }
  Put(in.confusion, out->mutable_confusion());
}

absl::StatusOr<Journal> JournalFromProto(const v1::Journal& in) {
  Journal j;
  const v1::LearnerDelta& l = in.learner();
  j.learner.weights = DeltaFromProto(l.weights());
  j.learner.average_accumulator = DeltaFromProto(l.average_accumulator());
  j.learner.weight_norm_sq = l.weight_norm_sq();
  j.learner.average_steps = l.average_steps();
  j.learner.current_survived = l.current_survived();
  j.learner.dropped = l.dropped();
  for (const auto& v : l.voted_added()) {
    PERCEPTRON_ASSIGN_OR_RETURN(VotedVector voted,
                                VotedFromProto(v, /*max_size=*/0));
    j.learner.voted_added.push_back(std::move(voted));
  }
  j.learner.voted_removed = l.voted_removed();
  for (const auto& v : l.support_added())
    j.learner.support_added.push_back(SupportFromProto(v));
  j.learner.support_removed = l.support_removed();
  j.counters = CountersFromProto(in.counters());
  j.td_gamma = in.td_gamma();
  j.radius = in.radius();
  j.next_prediction_id = in.next_prediction_id();
  j.pending_cleared = in.pending_cleared();
  for (const v1::PendingState& p : in.pending_added()) {
    absl::StatusOr<PendingPrediction> pp = PendingFromProto(p);
    if (!pp.ok()) return pp.status();
    j.pending_added.push_back(*std::move(pp));
  }
  j.pending_removed = Vec(in.pending_removed());
  if (in.has_certificate()) {
    absl::StatusOr<CertificateState> c =
        CertificateStateFromProto(in.certificate());
    if (!c.ok()) return c.status();
    j.certificate = *std::move(c);
  }
  absl::StatusOr<NameTableState> names = NamesFromProto(in.names());
  if (!names.ok()) return names.status();
  j.names = *std::move(names);
  j.confusion = Vec(in.confusion());
  return j;
}

void KeptRowsToProto(const KeptRows& in, v1::KeptRowsState* out, bool compact) {
  // A multiclass model's classes as they are, unless all are 1 (or -1).
  bool signs = true;
  for (size_t t = 0; t < in.size() && signs; ++t) {
    signs = in.label(t) == 1 || in.label(t) == -1;
  }
  std::string* labels = signs ? out->mutable_labels() : out->mutable_classes();
  labels->reserve(in.size());
  std::string* dense = compact ? out->mutable_dense() : nullptr;
  // Room for every non-zero at once: grown a row at a time, the arrays were
  // copied again at each doubling.
  size_t values = 0, indices = 0;
  for (size_t t = 0; t < in.size(); ++t) {
    values += in.values(t).size();
    if (!compact || !in.dense(t)) indices += in.values(t).size();
  }
  out->mutable_indices()->Reserve(static_cast<int>(indices));
  out->mutable_values()->Reserve(static_cast<int>(values));
  out->mutable_ends()->Reserve(static_cast<int>(in.size()));
  if (dense != nullptr) dense->reserve(in.size());
  uint64_t end = 0;
  for (size_t t = 0; t < in.size(); ++t) {
    const absl::Span<const double> value = in.values(t);
    out->mutable_values()->Add(value.begin(), value.end());
    if (dense != nullptr) dense->push_back(in.dense(t) ? 1 : 0);
    if (dense == nullptr || !in.dense(t)) {
      const absl::Span<const uint32_t> index = in.indices(t);
      out->mutable_indices()->Add(index.begin(), index.end());
    }
    end += value.size();
    out->add_ends(end);
    labels->push_back(signs ? (in.label(t) > 0 ? 1 : 0)
                            : static_cast<char>(in.label(t)));
  }
  if (in.examples() != in.size()) {
    for (size_t t = 0; t < in.size(); ++t) out->add_counts(in.count(t));
  }
}

absl::Status KeptRowsFromProto(const v1::KeptRowsState& in, KeptRows* out) {
  const bool marked = !in.dense().empty();
  const bool classes = !in.classes().empty();
  const std::string& labels = classes ? in.classes() : in.labels();
  if (in.ends_size() != static_cast<int>(labels.size()) ||
      (classes && !in.labels().empty()) ||
      (marked && in.ends_size() != static_cast<int>(in.dense().size())) ||
      (!marked && in.indices_size() != in.values_size())) {
    return absl::InvalidArgumentError(
        "certificate rows: ends, labels, dense marks, indices and values "
        "disagree in length");
  }
  std::vector<uint32_t> iota;  // the indices of a dense row
  uint64_t begin = 0, index_begin = 0;
  for (int t = 0; t < in.ends_size(); ++t) {
    const uint64_t end = in.ends(t);
    const char label = labels[t];
    const char dense = marked ? in.dense()[t] : 0;
    if (end < begin || end > static_cast<uint64_t>(in.values_size()) ||
        (classes ? label < 0 || label >= static_cast<int>(kMaxClasses)
                 : label != 0 && label != 1) ||
        (dense != 0 && dense != 1) ||
        (dense == 0 && end - begin > static_cast<uint64_t>(in.indices_size()) -
                                         index_begin)) {
      return absl::InvalidArgumentError(
          absl::StrCat("certificate rows: row ", t, " is malformed"));
    }
    const size_t n = end - begin;
    absl::Span<const uint32_t> indices;
    if (dense == 1) {
      for (size_t i = iota.size(); i < n; ++i)
        iota.push_back(static_cast<uint32_t>(i));
      indices = absl::MakeConstSpan(iota.data(), n);
    } else {
      indices = absl::MakeConstSpan(in.indices().data() + index_begin, n);
      index_begin += n;
    }
    out->Add(indices, absl::MakeConstSpan(in.values().data() + begin, n),
             classes      ? label
             : label == 1 ? 1
                          : -1);
    begin = end;
  }
  if (in.counts_size() > 0) {
    if (in.counts_size() != in.ends_size()) {
      return absl::InvalidArgumentError(
          "certificate rows: counts and rows disagree in length");
    }
    const size_t first = out->size() - in.counts_size();
    for (int t = 0; t < in.counts_size(); ++t) {
      if (in.counts(t) == 0 || !out->AddCount(first + t, in.counts(t) - 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("certificate rows: row ", t, "'s count is 0"));
      }
    }
  }
  if (begin != static_cast<uint64_t>(in.values_size()) ||
      index_begin != static_cast<uint64_t>(in.indices_size())) {
    return absl::InvalidArgumentError(
        "certificate rows: non-zeros after the last row");
  }
  return absl::OkStatus();
}

}  // namespace perceptron::server
