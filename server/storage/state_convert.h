// Conversion of core's ModelState and Journal to and from their stored form
// (state.proto).
#ifndef PERCEPTRON_SERVER_STORAGE_STATE_CONVERT_H_
#define PERCEPTRON_SERVER_STORAGE_STATE_CONVERT_H_

#include "absl/status/statusor.h"
#include "core/model.h"
#include "perceptron/v1/state.pb.h"

namespace perceptron::server {

namespace v1 = ::perceptron::v1;

// `compact` (the store's snapshots): the certificate's candidates that are
// multiples of an earlier one, bit for bit, are given by that one and the
// scale; export blobs give every value, as older servers read. A journal's
// are always so given (JournalToProto: the store's log records).
void StateToProto(const ModelState& in, v1::ModelState* out,
                  bool compact = false);
// INVALID_ARGUMENT if the message cannot describe a state (core validates the
// rest when the model is rebuilt).
absl::StatusOr<ModelState> StateFromProto(const v1::ModelState& in,
                                          uint32_t max_dimension);

void JournalToProto(const Journal& in, v1::Journal* out);
// The certificate's kept rows (Journal::certificate_rows, ...). `compact`:
// a dense row's indices (0, 1, ..., n-1) are left out and marked in `dense`
// (the store's rows); export blobs give every index, as older servers read.
void KeptRowsToProto(const KeptRows& in, v1::KeptRowsState* out,
                     bool compact = false);
// Appends the rows of `in` to `out`; INVALID_ARGUMENT (some may be appended)
// if they are malformed. Their indices and values are checked by the tracker
// that takes them (CertificateTracker::Restore).
absl::Status KeptRowsFromProto(const v1::KeptRowsState& in, KeptRows* out);
absl::StatusOr<Journal> JournalFromProto(const v1::Journal& in);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_STORAGE_STATE_CONVERT_H_
