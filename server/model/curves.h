// A model's recent-mistake window and learning curve (history.h) as stored:
// whole in snapshots and export blobs (CurvesState), as each batch's change in
// log records (CurvesDelta). Restored or replayed, they are bit for bit what
// status reported before.
#ifndef PERCEPTRON_SERVER_MODEL_CURVES_H_
#define PERCEPTRON_SERVER_MODEL_CURVES_H_

#include "absl/status/status.h"
#include "perceptron/v1/state.pb.h"
#include "server/model/history.h"

namespace perceptron::server {

// A point of the learning curve into a message with the same fields: the
// wire's v1::HistoryPoint (GetHistory) or the store's v1::HistoryPointState.
template <typename PointMessage>
void PointToProto(const HistoryPoint& p, PointMessage* out) {
  out->set_examples(p.examples);
  out->set_mistakes(p.mistakes);
  out->set_updates(p.updates);
  if (p.has_bound()) out->set_bound(p.bound);
  if (p.has_td_gamma()) out->set_td_gamma(p.td_gamma);
  if (p.has_certificate()) {
    out->set_certificate_upper(p.certificate_upper);
    out->set_certificate_lower(p.certificate_lower);
  }
}

void CurvesToProto(const RecentWindow& recent, const History& history,
                   v1::CurvesState* out);

// Sets `recent` and `history` from `in`; an empty message gives empty ones.
// INVALID_ARGUMENT (both unchanged) for a state they could not have reached.
absl::Status CurvesFromProto(const v1::CurvesState& in, RecentWindow* recent,
                             History* history);

void CurvesDeltaToProto(const CurvesJournal& journal, v1::CurvesDelta* out);

// INVALID_ARGUMENT if `delta` is malformed; checked before anything applies.
absl::Status CheckCurvesDelta(const v1::CurvesDelta& delta);

// Replays a checked delta.
void ApplyCurvesDelta(const v1::CurvesDelta& delta, RecentWindow* recent,
                      History* history);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MODEL_CURVES_H_
