// ExportModel / ImportModel: a model's whole state as a portable, versioned
// blob (ExportedModel in state.proto) with a CRC-32 over all of it.
#ifndef PERCEPTRON_SERVER_STORAGE_EXPORT_H_
#define PERCEPTRON_SERVER_STORAGE_EXPORT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "perceptron/v1/state.pb.h"
#include "server/model/registry.h"

namespace perceptron::server {

// The blob format version this server writes; it reads this one, 2 (the same
// but that no vector is given by its non-zeros, SparseDoubles) and 1 (whose
// checksum covers only the state).
inline constexpr uint32_t kExportFormatVersion = 3;

// The largest blob: protobuf reads and writes messages below 2 GiB.
inline constexpr size_t kMaxBlobBytes = (size_t{1} << 31) - 1;

// Format 2's checksum: CRC-32 of every field but itself.
uint32_t BlobCrc(const v1::ExportedModel& blob);

// The model's blob, with the examples its certificate keeps if the blob
// with them takes at most `max_bytes` (an import without them is frozen:
// CertificateTracker::Restore). FAILED_PRECONDITION if even without them it
// would take more than kMaxBlobBytes.
absl::StatusOr<std::string> ExportBlob(ModelEntry& entry,
                                       size_t max_bytes = kMaxBlobBytes);

// A new entry (not yet in any registry) from `blob`, under `id` or, if empty,
// the blob's id; its certificate keeps the examples the blob carries. It is
// created now, or when the blob's model was if `keep_created_at` (a model
// moved to another shard is the same model).
// INVALID_ARGUMENT for a blob that does not parse, fails its checksum, or holds
// a state that does not fit its config; FAILED_PRECONDITION for an unknown
// format version.
absl::StatusOr<std::shared_ptr<ModelEntry>> ImportBlob(
    const std::string& blob, const std::string& id, uint32_t max_dimension,
    bool keep_created_at = false);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_EXPORT_H_
