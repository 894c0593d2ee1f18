#include "server/model/curves.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace perceptron::server {
namespace {

HistoryPoint PointFromProto(const v1::HistoryPointState& in) {
  HistoryPoint p;
  p.examples = in.examples();
  p.mistakes = in.mistakes();
  p.updates = in.updates();
  if (in.has_bound()) p.bound = in.bound();
  if (in.has_td_gamma()) p.td_gamma = in.td_gamma();
  if (in.has_certificate_upper()) {
    p.certificate_upper = in.certificate_upper();
    p.certificate_lower = in.certificate_lower();
  }
  return p;
}

bool PointIsValid(const v1::HistoryPointState& p) {
  // NaN stands for "absent" in memory, so a stored NaN is refused.
  return (!p.has_bound() || std::isfinite(p.bound())) &&
         (!p.has_td_gamma() || std::isfinite(p.td_gamma())) &&
         p.has_certificate_upper() == p.has_certificate_lower() &&
         (!p.has_certificate_upper() ||
          (std::isfinite(p.certificate_upper()) &&
           std::isfinite(p.certificate_lower()))) &&
         p.mistakes() <= p.examples() && p.updates() <= p.examples();
}

}  // namespace

void CurvesToProto(const RecentWindow& recent, const History& history,
                   v1::CurvesState* out) {
  v1::RecentWindowState* r = out->mutable_recent();
  r->set_size(static_cast<uint32_t>(recent.size()));
  r->mutable_bits()->Add(recent.bits().begin(), recent.bits().end());
  r->set_next(static_cast<uint32_t>(recent.next()));
  r->set_count(static_cast<uint32_t>(recent.count()));
  v1::HistoryState* h = out->mutable_history();
  for (const HistoryPoint& p : history.points()) {
    PointToProto(p, h->add_points());
  }
  h->set_stride(history.stride());
  h->set_next(history.next());
}

absl::Status CurvesFromProto(const v1::CurvesState& in, RecentWindow* recent,
                             History* history) {
  RecentWindow r(recent->size());
  History h(history->capacity());
  if (in.has_recent()) {
    const v1::RecentWindowState& s = in.recent();
    if (s.size() != recent->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("curves: a recent window of ", s.size(),
                       " examples; this server keeps ", recent->size()));
    }
    if (!r.Restore(std::vector<uint64_t>(s.bits().begin(), s.bits().end()),
                   s.next(), s.count())) {
      return absl::InvalidArgumentError(
          "curves: the recent window is not one a model can hold");
    }
  }
  if (in.has_history()) {
    const v1::HistoryState& s = in.history();
    std::vector<HistoryPoint> points;
    for (const v1::HistoryPointState& p : s.points()) {
      if (!PointIsValid(p)) {
        return absl::InvalidArgumentError(
            "curves: a history point is not finite or not consistent");
      }
      points.push_back(PointFromProto(p));
    }
    if (!h.Restore(points, s.stride(), s.next())) {
      return absl::InvalidArgumentError(
          "curves: the history is not one a model can hold");
    }
  }
  *recent = std::move(r);
  *history = std::move(h);
  return absl::OkStatus();
}

void CurvesDeltaToProto(const CurvesJournal& journal, v1::CurvesDelta* out) {
  out->set_cleared(journal.cleared);
  out->set_labeled(static_cast<uint32_t>(journal.mistakes.size()));
  for (size_t i = 0; i < journal.mistakes.size(); i += 64) {
    uint64_t word = 0;
    for (size_t b = 0; b < 64 && i + b < journal.mistakes.size(); ++b) {
      word |= static_cast<uint64_t>(journal.mistakes[i + b]) << b;
    }
    out->add_mistake_bits(word);
  }
  for (const HistoryPoint& p : journal.points) {
    PointToProto(p, out->add_points_added());
  }
}

absl::Status CheckCurvesDelta(const v1::CurvesDelta& delta) {
  if (static_cast<uint64_t>(delta.mistake_bits_size()) !=
      (uint64_t{delta.labeled()} + 63) / 64) {
    return absl::InvalidArgumentError(
        "curves: the mistake bits do not match the labeled count");
  }
  for (int i = 1; i < delta.points_added_size(); ++i) {
    if (delta.points_added(i).examples() <
        delta.points_added(i - 1).examples()) {
      return absl::InvalidArgumentError("curves: history points go backwards");
    }
  }
  for (const v1::HistoryPointState& p : delta.points_added()) {
    if (!PointIsValid(p)) {
      return absl::InvalidArgumentError(
          "curves: a history point is not finite or not consistent");
    }
  }
  return absl::OkStatus();
}

void ApplyCurvesDelta(const v1::CurvesDelta& delta, RecentWindow* recent,
                      History* history) {
  if (delta.cleared()) {
    recent->Clear();
    history->Clear();
  }
  for (uint32_t i = 0; i < delta.labeled(); ++i) {
    recent->Add((delta.mistake_bits(i / 64) >> (i % 64)) & 1);
  }
  for (const v1::HistoryPointState& p : delta.points_added()) {
    history->Add(PointFromProto(p));
  }
}

}  // namespace perceptron::server
