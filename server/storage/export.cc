#include "server/storage/export.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"
#include "perceptron/v1/state.pb.h"
#include "server/model/curves.h"
#include "server/model/model_id.h"
#include "server/storage/crc.h"
#include "server/storage/state_convert.h"

namespace perceptron::server {
namespace {

using google::protobuf::util::TimeUtil;

}  // namespace

uint32_t BlobCrc(const v1::ExportedModel& blob) {
  // Each field with its length, so no two blobs give the same bytes.
  return Crc32(absl::StrCat(
      blob.format_version(), "|", blob.model_id().size(), ":", blob.model_id(),
      "|", blob.created_at().seconds(), ".", blob.created_at().nanos(), "|",
      blob.producer().size(), ":", blob.producer(), "|", blob.state()));
}

absl::StatusOr<std::string> ExportBlob(ModelEntry& entry, size_t max_bytes) {
  v1::ExportedModel out;
  v1::ModelState state;
  {
    // The solver's rows too: it is between two refreshes.
    absl::MutexLock solver_lock(&entry.solver_mu);
    absl::MutexLock lock(&entry.mu);
    if (entry.deleted) return entry.GoneStatus();
    StateToProto(entry.model->ExportState(), &state);
    CurvesToProto(entry.recent, entry.history, state.mutable_curves());
    if (std::optional<KeptRows> rows = entry.CertificateRows()) {
      KeptRowsToProto(*rows, state.mutable_certificate_rows());
    }
  }
  // The blob's other fields and framing take well under 4 KiB.
  if (const size_t room = std::min(max_bytes, kMaxBlobBytes);
      room < 4096 || state.ByteSizeLong() > room - 4096) {
    state.clear_certificate_rows();
  }
  if (const size_t bytes = state.ByteSizeLong(); bytes > kMaxBlobBytes - 4096) {
    return absl::FailedPreconditionError(
        absl::StrCat("the model's state is ", bytes,
                     " bytes; an export holds at most ", kMaxBlobBytes - 4096));
  }
  out.set_format_version(kExportFormatVersion);
  out.set_model_id(entry.id);
  *out.mutable_created_at() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(entry.created_at));
  out.set_state(state.SerializeAsString());
  out.set_producer("perceptrond 0.1.0");
  out.set_crc32(BlobCrc(out));
  return out.SerializeAsString();
}

absl::StatusOr<std::shared_ptr<ModelEntry>> ImportBlob(const std::string& blob,
                                                       const std::string& id,
                                                       uint32_t max_dimension,
                                                       bool keep_created_at) {
  v1::ExportedModel in;
  if (blob.empty() || !in.ParseFromString(blob)) {
    return absl::InvalidArgumentError(
        "import: the blob is not an exported model");
  }
  if (in.format_version() < 1 || in.format_version() > kExportFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "import: the blob has format version ", in.format_version(),
        "; this server reads versions 1 to ", kExportFormatVersion));
  }
  if (in.format_version() == 1 ? Crc32(in.state()) != in.state_crc32()
                               : BlobCrc(in) != in.crc32()) {
    return absl::InvalidArgumentError(
        "import: the blob fails its checksum (damaged)");
  }
  v1::ModelState state;
  if (!state.ParseFromString(in.state())) {
    return absl::InvalidArgumentError(
        "import: the blob's state does not parse");
  }
  absl::StatusOr<ModelState> s = StateFromProto(state, max_dimension);
  if (!s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("import: ", s.status().message()));
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::FromState(*std::move(s));
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("import: ", model.status().message()));
  }
  RecentWindow recent(kRecentWindow);
  History history;
  if (absl::Status c = CurvesFromProto(state.curves(), &recent, &history);
      !c.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("import: ", c.message()));
  }
  if (state.has_certificate_rows()) {
    KeptRows rows;
    if (absl::Status r = KeptRowsFromProto(state.certificate_rows(), &rows);
        !r.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("import: ", r.message()));
    }
    // Rows that are not the certificate's (too few, too many, out of range)
    // leave it frozen, saying so: the model is never refused for them.
    (*model)->AttachCertificateRows(std::move(rows));
  }
  const std::string name = id.empty() ? in.model_id() : id;
  if (absl::Status v = ValidateModelId(name); !v.ok()) return v;
  // absl::Time saturates where a blob's timestamp is out of range.
  const absl::Time created_at =
      keep_created_at ? absl::FromUnixSeconds(in.created_at().seconds()) +
                            absl::Nanoseconds(in.created_at().nanos())
                      : absl::Now();
  auto entry =
      std::make_shared<ModelEntry>(name, *std::move(model), created_at);
  absl::MutexLock lock(&entry->mu);
  entry->recent = std::move(recent);
  entry->history = std::move(history);
  return entry;
}

}  // namespace perceptron::server
