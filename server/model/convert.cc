#include "server/model/convert.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/certificate.h"
#include "core/feature_hash.h"
#include "core/quoted.h"
#include "core/status_macros.h"
#include "google/protobuf/stubs/common.h"

namespace perceptron::server {
namespace {

// `in`'s comparator given as its non-zeros (comparator_indices), spread over
// every weight coordinate of `c` (whose dimension and classes are set), the
// rest 0.
absl::StatusOr<std::vector<double>> SpreadComparator(const v1::ModelConfig& in,
                                                     const ModelConfig& c) {
  if (in.comparator_indices_size() != in.comparator_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: comparator_indices has ", in.comparator_indices_size(),
        " coordinates for ", in.comparator_size(),
        " comparator values; they go in pairs"));
  }
  const uint64_t total = c.weight_count();
  std::vector<uint32_t> sorted(in.comparator_indices().begin(),
                               in.comparator_indices().end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (sorted[k] >= total) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: comparator_indices: coordinate ", sorted[k],
                       " is past the model's ", total,
                       " weight coordinates (0 to ", total - 1, ")"));
    }
    if (k > 0 && sorted[k] == sorted[k - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: comparator_indices: coordinate ", sorted[k],
                       " is given twice"));
    }
  }
  std::vector<double> u(total, 0.0);
  for (int k = 0; k < in.comparator_size(); ++k) {
    u[in.comparator_indices(k)] = in.comparator(k);
  }
  return u;
}

}  // namespace

absl::StatusOr<ModelConfig> ConfigFromProto(const v1::ModelConfig& in,
                                            uint32_t max_dimension) {
  ModelConfig c;
  if (in.dimension() > max_dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: dimension ", in.dimension(),
                     " is over the server's limit ", max_dimension));
  }
  c.dimension = in.dimension();
  switch (in.algorithm()) {
    case v1::ALGORITHM_UNSPECIFIED:
    case v1::CLASSIC:
      c.algorithm = Algorithm::kClassic;
      break;
    case v1::MARGIN:
      c.algorithm = Algorithm::kMargin;
      break;
    case v1::AVERAGED:
      c.algorithm = Algorithm::kAveraged;
      break;
    case v1::VOTED:
      c.algorithm = Algorithm::kVoted;
      break;
    case v1::KERNEL:
      c.algorithm = Algorithm::kKernel;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("config: algorithm ", static_cast<int>(in.algorithm()),
                       " is unknown"));
  }
  if (in.has_eta()) c.eta = in.eta();
  if (in.has_bias()) c.bias = in.bias();
  if (in.has_bias_constant()) c.bias_constant = in.bias_constant();
  if (in.has_normalize()) c.normalize = in.normalize();
  if (in.has_gamma()) c.gamma = in.gamma();
  c.comparator.assign(in.comparator().begin(), in.comparator().end());
  switch (in.kernel().type()) {
    case v1::KERNEL_TYPE_UNSPECIFIED:
    case v1::LINEAR:
      c.kernel.type = KernelType::kLinear;
      break;
    case v1::POLYNOMIAL:
      c.kernel.type = KernelType::kPolynomial;
      break;
    case v1::RBF:
      c.kernel.type = KernelType::kRbf;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("config: kernel.type ",
                       static_cast<int>(in.kernel().type()), " is unknown"));
  }
  if (in.kernel().degree() != 0) {
    c.kernel.degree = in.kernel().degree() > 1000
                          ? 1000
                          : static_cast<int>(in.kernel().degree());
  }
  if (in.kernel().has_c0()) c.kernel.c0 = in.kernel().c0();
  if (in.kernel().has_sigma()) c.kernel.sigma = in.kernel().sigma();
  if (in.kernel_budget() != 0) c.kernel_budget = in.kernel_budget();
  if (in.max_voted_vectors() != 0) c.max_voted_vectors = in.max_voted_vectors();
  c.hash_bits = in.hash_bits();
  c.idle_expiry_seconds = in.idle_expiry_seconds();
  c.interactions.assign(in.interactions().begin(), in.interactions().end());
  c.feature_names.assign(in.feature_names().begin(), in.feature_names().end());
  if (static_cast<size_t>(in.classes_size()) > kMaxClasses) {
    // Before copying them: a request may hold very many.
    return absl::InvalidArgumentError(
        absl::StrCat("config: classes has ", in.classes_size(),
                     " names; a multiclass model has 2..", kMaxClasses));
  }
  c.classes.assign(in.classes().begin(), in.classes().end());
  if (!c.feature_names.empty() && c.hash_bits == 0 && c.dimension == 0 &&
      c.feature_names.size() <= kMaxListedNames) {
    c.dimension = static_cast<uint32_t>(c.feature_names.size());
    if (c.dimension > max_dimension) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: ", c.dimension,
                       " feature names are over the server's "
                       "dimension limit ",
                       max_dimension));
    }
  }
  if (c.hash_bits != 0 && c.hash_bits <= kMaxHashBits && c.dimension == 0) {
    c.dimension = uint32_t{1} << c.hash_bits;
    if (c.dimension > max_dimension) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: hash_bits ", c.hash_bits, " makes dimension ", c.dimension,
          ", over the server's limit ", max_dimension));
    }
  }
  if (in.comparator_indices_size() > 0 && c.dimension > 0 &&
      c.weight_count() <= kMaxMulticlassWeights) {
    // (A dimension of 0 is refused below, and so are more weights than a
    // multiclass model may have, before any are spread.)
    PERCEPTRON_ASSIGN_OR_RETURN(c.comparator, SpreadComparator(in, c));
  }
  if (absl::Status s = ValidateConfig(c); !s.ok()) return s;
  return c;
}

v1::ModelConfig ConfigToProto(const ModelConfig& in) {
  v1::ModelConfig out;
  out.set_dimension(in.dimension);
  static constexpr v1::Algorithm kAlgorithms[] = {
      v1::CLASSIC, v1::MARGIN, v1::AVERAGED, v1::VOTED, v1::KERNEL};
  out.set_algorithm(kAlgorithms[static_cast<int>(in.algorithm)]);
  out.set_eta(in.eta);
  out.set_bias(in.bias);
  out.set_bias_constant(in.bias_constant);
  out.set_normalize(in.normalize);
  if (in.gamma) out.set_gamma(*in.gamma);
  if (IsWide(in.weight_dimension()) && !in.comparator.empty()) {
    // Its non-zeros, at their weight coordinates (a vector of d values a
    // class has a 0 for the bias coordinate).
    const uint64_t given = in.comparator.size() / in.weight_vectors();
    for (uint64_t j = 0; j < in.comparator.size(); ++j) {
      if (in.comparator[j] == 0) continue;
      out.add_comparator_indices(
          static_cast<uint32_t>(j / given * in.weight_dimension() + j % given));
      out.add_comparator(in.comparator[j]);
    }
  } else {
    out.mutable_comparator()->Add(in.comparator.begin(), in.comparator.end());
  }
  static constexpr v1::KernelType kKernels[] = {v1::LINEAR, v1::POLYNOMIAL,
                                                v1::RBF};
  out.mutable_kernel()->set_type(kKernels[static_cast<int>(in.kernel.type)]);
  out.mutable_kernel()->set_degree(in.kernel.degree);
  out.mutable_kernel()->set_c0(in.kernel.c0);
  out.mutable_kernel()->set_sigma(in.kernel.sigma);
  out.set_kernel_budget(in.kernel_budget);
  out.set_max_voted_vectors(in.max_voted_vectors);
  out.set_hash_bits(in.hash_bits);
  out.mutable_interactions()->Add(in.interactions.begin(),
                                  in.interactions.end());
  out.mutable_feature_names()->Add(in.feature_names.begin(),
                                   in.feature_names.end());
  out.mutable_classes()->Add(in.classes.begin(), in.classes.end());
  out.set_idle_expiry_seconds(in.idle_expiry_seconds);
  return out;
}

absl::StatusOr<int> LabelFromProto(int32_t label, const std::string& class_name,
                                   const ModelConfig& config) {
  if (class_name.empty()) return label;
  if (!config.multiclass()) {
    return absl::InvalidArgumentError(
        absl::StrCat("label: class ", Quoted(class_name),
                     " given to a binary model (labels -1 or +1)"));
  }
  for (size_t r = 0; r < config.classes.size(); ++r) {
    if (config.classes[r] == class_name) return static_cast<int>(r);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "label: ", Quoted(class_name), " is not one of the model's ",
      config.classes.size(), " classes (", ClassList(config.classes), ")"));
}

std::string ClassList(const std::vector<std::string>& classes) {
  std::string out;
  for (size_t r = 0; r < classes.size() && r < 10; ++r) {
    absl::StrAppend(&out, r == 0 ? "" : ", ", classes[r]);
  }
  if (classes.size() > 10) absl::StrAppend(&out, ", ...");
  return out;
}

absl::StatusOr<FeatureView> FeaturesFromProto(const v1::Features& in) {
  switch (in.kind_case()) {
    case v1::Features::kDense:
      return FeatureView::Dense(absl::MakeConstSpan(
          in.dense().values().data(), in.dense().values().size()));
    case v1::Features::kSparse:
      return FeatureView::Sparse(
          absl::MakeConstSpan(in.sparse().indices().data(),
                              in.sparse().indices().size()),
          absl::MakeConstSpan(in.sparse().values().data(),
                              in.sparse().values().size()));
    case v1::Features::kNamed:
      return absl::InvalidArgumentError(
          "features: named features need a model created with hash_bits or "
          "feature_names");
    default:
      return absl::InvalidArgumentError(
          "features: none of dense, sparse and named is set");
  }
}

absl::StatusOr<FeatureView> FeaturesFromProto(const v1::Features& in,
                                              const FeatureHasher* hasher,
                                              Features* storage,
                                              NamedScratch* scratch) {
  if (scratch != nullptr) scratch->named = false;
  if (in.kind_case() != v1::Features::kNamed) return FeaturesFromProto(in);
  if (hasher == nullptr) return FeaturesFromProto(in);
  const auto& named = in.named().features();
  if (static_cast<size_t>(named.size()) > kMaxNamedFeatures) {
    return absl::InvalidArgumentError(
        absl::StrCat("the example has ", named.size(),
                     " named features, over the limit of ", kMaxNamedFeatures));
  }
  thread_local NamedScratch local;
  NamedScratch& s = scratch != nullptr ? *scratch : local;
  std::vector<NamedFeature>& features = s.features;
  features.resize(named.size());
  for (int i = 0; i < named.size(); ++i) {
    const v1::NamedFeature& f = named[i];
    NamedFeature& out = features[i];
    out = NamedFeature();
    out.space = f.space();
    out.name = f.name();
    if (f.value_case() == v1::NamedFeature::kCategory) {
      out.categorical = true;
      out.category = f.category();
    } else if (f.value_case() == v1::NamedFeature::kNumber) {
      out.value = f.number();
    }
  }
  PERCEPTRON_RETURN_IF_ERROR(hasher->Hash(
      features, storage,
      scratch != nullptr && !hasher->listed() ? &s.trace : nullptr));
  if (scratch != nullptr) scratch->named = !hasher->listed();
  return storage->view();
}

absl::Status ColumnStrings(const v1::Columns& c,
                           std::vector<absl::string_view>* out) {
  out->clear();
  if (c.text_lengths().empty() && c.text().empty()) {
    out->reserve(c.strings().size());
    for (const std::string& s : c.strings()) out->push_back(s);
    return absl::OkStatus();
  }
  if (!c.strings().empty()) {
    return absl::InvalidArgumentError(
        "columns: the strings come as strings or as text, not both");
  }
  const absl::string_view text = c.text();
  uint64_t total = 0;
  for (const uint32_t length : c.text_lengths()) total += length;
  if (total != text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("columns: text_lengths add up to ", total,
                     " bytes; the text is ", text.size()));
  }
  // The whole text is UTF-8 and each string begins a character (not a
  // continuation byte, 10xxxxxx): then each string is whole characters.
  if (!google::protobuf::internal::IsStructurallyValidUTF8(
          text.data(), static_cast<int>(text.size()))) {
    return absl::InvalidArgumentError("columns: the text is not valid UTF-8");
  }
  out->reserve(c.text_lengths().size());
  size_t begin = 0;
  for (int i = 0; i < c.text_lengths().size(); ++i) {
    if (begin < text.size() && (text[begin] & 0xC0) == 0x80) {
      return absl::InvalidArgumentError(absl::StrCat(
          "columns: string ", i,
          " of the text begins inside a UTF-8 character (byte ", begin, ")"));
    }
    out->push_back(text.substr(begin, c.text_lengths(i)));
    begin += c.text_lengths(i);
  }
  return absl::OkStatus();
}

void StatsToProto(const Stats& in, v1::ModelStats* out) {
  out->set_examples(in.counters.examples);
  out->set_mistakes(in.counters.mistakes);
  out->set_updates(in.counters.updates);
  out->set_predictions(in.counters.predictions);
  out->set_pending(in.pending);
  out->set_expired(in.counters.expired);
  out->set_td_available(in.bound.td_available);
  if (in.bound.td_available) out->set_td_gamma(in.bound.td_gamma);
  out->set_bound_available(in.bound.bound_available);
  if (in.bound.bound_available) out->set_bound(in.bound.bound);
  out->set_radius(in.bound.radius);
  if (in.certificate) {
    CertificateToProto(*in.certificate, out->mutable_certificate());
  }
}

v1::Certificate::State PhaseToProto(CertificatePhase phase) {
  switch (phase) {
    case CertificatePhase::kOff:
      return v1::Certificate::OFF;
    case CertificatePhase::kKeeping:
      return v1::Certificate::KEEPING;
    case CertificatePhase::kFreezing:
      return v1::Certificate::FREEZING;
    case CertificatePhase::kFrozen:
      return v1::Certificate::FROZEN;
  }
  return v1::Certificate::STATE_UNSPECIFIED;
}

absl::StatusOr<CertificatePhase> PhaseFromProto(v1::Certificate::State state) {
  switch (state) {
    case v1::Certificate::OFF:
      return CertificatePhase::kOff;
    case v1::Certificate::KEEPING:
      return CertificatePhase::kKeeping;
    case v1::Certificate::FREEZING:
      return CertificatePhase::kFreezing;
    case v1::Certificate::FROZEN:
      return CertificatePhase::kFrozen;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("certificate: unknown state ", state));
  }
}

void CertificateToProto(const CertificateReport& in, v1::Certificate* out) {
  out->set_state(PhaseToProto(in.phase));
  out->set_reason(in.reason);
  out->set_available(in.available);
  out->set_upper(in.upper);
  out->set_lower(in.lower);
  out->set_gamma(in.gamma);
  out->set_td_gamma(in.td);
  out->set_examples(in.examples);
  out->set_solved(in.solved);
  out->set_frozen_at(in.frozen_at);
  out->set_converged(in.converged);
  out->set_kept(in.kept);
  out->set_kept_rows(in.kept_rows);
  out->set_margin(in.margin);
  out->set_margin_bound_available(in.margin_bound_available);
  if (in.margin_bound_available) out->set_margin_bound(in.margin_bound);
}

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

absl::Status ForItem(int index, const absl::Status& s) {
  return absl::Status(s.code(),
                      absl::StrCat("item ", index, ": ", s.message()));
}

void ErrorToProto(const absl::Status& s, v1::ItemError* out) {
  out->set_code(static_cast<int>(s.code()));
  out->set_message(std::string(s.message()));
}

}  // namespace perceptron::server
