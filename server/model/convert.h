// Conversion between the wire types (perceptron.v1) and core's types: the one
// place it happens in the server.
#ifndef PERCEPTRON_SERVER_MODEL_CONVERT_H_
#define PERCEPTRON_SERVER_MODEL_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model.h"
#include "grpcpp/support/status.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

// The core config for a wire config, with defaults applied. INVALID_ARGUMENT
// for unknown enum values or a dimension over `max_dimension`; core's
// ValidateConfig does the rest.
absl::StatusOr<ModelConfig> ConfigFromProto(const v1::ModelConfig& in,
                                            uint32_t max_dimension);

// The wire config with every default filled in.
v1::ModelConfig ConfigToProto(const ModelConfig& in);

// The model's label for a wire label: `label` itself, or, given a
// `class_name`, that class's index in a multiclass model. INVALID_ARGUMENT if
// the name is not one of its classes or the model is binary. The label itself
// is checked by the model.
absl::StatusOr<int> LabelFromProto(int32_t label, const std::string& class_name,
                                   const ModelConfig& config);
// The first ten class names, joined by ", " (and ", ..." after them).
std::string ClassList(const std::vector<std::string>& classes);

// A view into `in`'s arrays (no copy); valid while `in` lives. INVALID_ARGUMENT
// if neither dense nor sparse is set (named features need the overload below).
absl::StatusOr<FeatureView> FeaturesFromProto(const v1::Features& in);

// What hashing named features leaves for the model's NameTable: the features
// (views into the request) and where each coordinate came from. `named` says
// whether the last FeaturesFromProto given it hashed names.
struct NamedScratch {
  std::vector<NamedFeature> features;
  HashTrace trace;
  bool named = false;
  // Records the names in `table` (if any) once the model has taken the
  // example.
  void RecordIn(NameTable* table) const {
    if (named && table != nullptr) table->Record(features, trace);
  }
  // Asks for what RecordIn will read (NameTable::Prefetch).
  void PrefetchIn(const NameTable* table) const {
    if (named && table != nullptr) table->Prefetch(trace);
  }
};

// As above, and named features hashed by `hasher` (a model's; null when it
// takes none: then INVALID_ARGUMENT) into `*storage`, which the view then
// borrows. Errors name the feature (core/feature_hash.h). With `scratch`, it
// keeps what the model's NameTable records.
absl::StatusOr<FeatureView> FeaturesFromProto(const v1::Features& in,
                                              const FeatureHasher* hasher,
                                              Features* storage,
                                              NamedScratch* scratch = nullptr);

// The table of a batch by name, Columns.strings or Columns.text cut by
// Columns.text_lengths, as views into `c` in `out`. INVALID_ARGUMENT if both
// carry strings, the lengths do not add up to the text's, or a string is not
// whole UTF-8 characters.
absl::Status ColumnStrings(const v1::Columns& c,
                           std::vector<absl::string_view>* out);

void StatsToProto(const Stats& in, v1::ModelStats* out);
void CertificateToProto(const CertificateReport& in, v1::Certificate* out);
v1::Certificate::State PhaseToProto(CertificatePhase phase);
// INVALID_ARGUMENT for STATE_UNSPECIFIED or a state this server does not know.
absl::StatusOr<CertificatePhase> PhaseFromProto(v1::Certificate::State state);

// absl and gRPC share the canonical codes.
grpc::Status ToGrpc(const absl::Status& s);

// `s` with "item N: " before its message.
absl::Status ForItem(int index, const absl::Status& s);

void ErrorToProto(const absl::Status& s, v1::ItemError* out);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MODEL_CONVERT_H_
