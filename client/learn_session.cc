#include "client/learn_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/client.h"

namespace perceptron::client {

bool ResumableLearnEnd(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kFailedPrecondition:
      return true;
    default:
      return false;
  }
}

LearnSession::LearnSession(Client* client, std::string model_id,
                           SessionOptions options, uint32_t dimension)
    : client_(client),
      model_id_(std::move(model_id)),
      options_(std::move(options)),
      dimension_(options_.columnar ? dimension : 0),
      as_items_(dimension_ == 0) {
  if (!retrying()) {
    Open(*client_, options_.if_examples);
    return;
  }
  // Where the examples the model holds start to be this session's.
  if (options_.if_examples) {
    base_ = *options_.if_examples;
  } else {
    absl::StatusOr<uint64_t> held = HeldExamples(*client_, absl::OkStatus());
    if (!held.ok()) {
      ended_ = held.status();
      return;
    }
    base_ = *held;
  }
  Open(*client_, base_);
}

LearnSession::~LearnSession() {
  if (stream_ == nullptr || stream_ended_) return;
  context_->TryCancel();
  stream_->WritesDone();
  reader_.join();
  stream_->Finish().IgnoreError();
}

void LearnSession::Open(Client& via, std::optional<uint64_t> if_examples) {
  // A stream before it has ended (its reader joined, its status read): it
  // goes before its context.
  stream_.reset();
  context_ = std::make_unique<grpc::ClientContext>();
  via.AddToken(context_.get());
  if (IsHeaderValue(model_id_)) context_->AddMetadata(kModelHeader, model_id_);
  {
    absl::MutexLock lock(&mu_);
    in_flight_ = 0;
    sent_.clear();
    reader_done_ = false;
  }
  if_examples_ = if_examples;
  named_ = false;
  stream_ended_ = false;
  stream_ = via.stub_->Learn(context_.get());
  reader_ = std::thread([this] { ReadLoop(); });
}

namespace {

bool Bit(const std::string& bits, int k) {
  return static_cast<size_t>(k / 8) < bits.size() &&
         (bits[k / 8] >> (k % 8) & 1);
}

}  // namespace

void LearnSession::Expand(const Sent& sent, v1::LearnResponse* r) const {
  v1::ColumnResults c = std::move(*r->mutable_columns());
  r->clear_columns();
  const int n = c.scores_size();
  const int reveals = static_cast<int>(sent.reveal_ids.size());
  uint64_t next_id = c.first_prediction_id();
  int e = 0;
  r->mutable_results()->Reserve(n);
  for (int k = 0; k < n; ++k) {
    v1::ItemResult* item = r->add_results();
    if (e < c.errors_size() && c.errors(e).item() == static_cast<uint32_t>(k)) {
      *item->mutable_error() =
          std::move(*c.mutable_errors(e++)->mutable_error());
      continue;
    }
    if (k >= reveals && !sent.labeled) {
      v1::PredictionResult* p = item->mutable_prediction();
      p->set_prediction_id(next_id++);
      p->set_label(c.labels(k));
      p->set_score(c.scores(k));
      continue;
    }
    v1::Outcome* o = item->mutable_outcome();
    if (k < reveals) o->set_prediction_id(sent.reveal_ids[k]);
    o->set_label(c.labels(k));
    o->set_score(c.scores(k));
    o->set_mistake(Bit(c.mistakes(), k));
    o->set_updated(Bit(c.updates(), k));
  }
}

void LearnSession::ReadLoop() {
  v1::LearnResponse response;
  while (stream_->Read(&response)) {
    Sent sent;
    {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      if (!sent_.empty()) {
        sent = std::move(sent_.front());
        sent_.pop_front();
      }
      ++summary_.requests;
      if (response.has_columns()) {
        ++summary_.columnar_requests;
        const v1::ColumnResults& c = response.columns();
        if (summary_.item_errors == 0 && c.errors_size() > 0) {
          summary_.first_error = c.errors(0).error().message();
          Refused(summary_.items + summary_.unanswered + c.errors(0).item(),
                  c.errors(0).error());
        }
        summary_.items += c.scores_size();
        summary_.item_errors += c.errors_size();
      } else {
        for (const v1::ItemResult& r : response.results()) {
          if (r.has_error() && summary_.item_errors++ == 0) {
            summary_.first_error = r.error().message();
            Refused(summary_.items + summary_.unanswered, r.error());
          }
          ++summary_.items;
        }
      }
      summary_.stats = response.stats();
    }
    if (options_.on_response) {
      if (response.has_columns()) Expand(sent, &response);
      options_.on_response(response);
    }
  }
  absl::MutexLock lock(&mu_);
  reader_done_ = true;
}

bool LearnSession::Send() {
  // With retry_for every item is a labeled example, and each request names
  // the model and carries the count the model must hold before it: one lost
  // on the way (or sent twice) ends the stream with nothing of it applied,
  // and the stream is resumed, rather than the rest being learned out of
  // place.
  if (!named_ || retrying()) request_.set_model_id(model_id_);
  if ((!named_ || retrying()) && if_examples_) {
    request_.set_if_examples(*if_examples_);
  }
  named_ = true;
  if (retrying()) *if_examples_ += count_;
  Sent sent;
  sent.columnar = request_.has_columns();
  if (sent.columnar) {
    sent.labeled = labeled_;
    if (options_.on_response) {
      const auto& ids = request_.columns().reveal_ids();
      sent.reveal_ids.assign(ids.begin(), ids.end());
    }
  }
  uint64_t answered = 0;
  {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_ < options_.max_in_flight || reader_done_;
    };
    mu_.Await(absl::Condition(&room));
    if (reader_done_) return false;
    ++in_flight_;
    sent_.push_back(std::move(sent));
    answered = summary_.items + summary_.unanswered;
  }
  // The examples answered are kept no longer.
  for (; kept_first_ < answered && !kept_.empty(); ++kept_first_) {
    kept_.pop_front();
  }
  if (!stream_->Write(request_)) return false;
  ClearBatch();
  return true;
}

void LearnSession::ClearBatch() {
  request_.Clear();
  names_.Clear();
  count_ = 0;
  bytes_ = 0;
  as_items_ = dimension_ == 0;
  rows_ = Rows::kNone;
  labeled_ = false;
}

absl::Status LearnSession::Flush() {
  if (count_ == 0 && named_ && ended_.ok()) return absl::OkStatus();
  if (finished_)
    return absl::FailedPreconditionError("the session is finished");
  const absl::Status ended =
      absl::AbortedError("the stream has ended; Finish tells why");
  while (true) {
    if (!ended_.ok()) return ended;
    if (count_ == 0 && named_) return absl::OkStatus();
    if (Send()) return absl::OkStatus();
    if (!retrying()) return ended;
    ended_ = Resume(EndStream());
  }
}

bool LearnSession::Counted() {
  return ++count_ >= options_.batch_size || bytes_ >= options_.max_batch_bytes;
}

absl::Status LearnSession::Queued() {
  if (Counted()) return Flush();
  return absl::OkStatus();
}

bool LearnSession::Fits(Rows rows, bool labeled) const {
  if (rows_ == Rows::kNone) return true;
  return rows == rows_ && labeled == labeled_;
}

void LearnSession::ToItems() {
  as_items_ = true;
  if (!request_.has_columns()) return;
  const v1::Columns c = std::move(*request_.mutable_columns());
  request_.clear_columns();
  for (int k = 0; k < c.reveal_ids_size(); ++k) {
    v1::RevealItem* r = request_.add_items()->mutable_reveal();
    r->set_prediction_id(c.reveal_ids(k));
    r->set_label(c.reveal_labels(k));
  }
  const bool sparse = rows_ == Rows::kSparse;
  const bool named = rows_ == Rows::kNamed;
  const int rows =
      sparse || named ? c.row_ends_size() : static_cast<int>(c.dense_rows());
  const std::vector<absl::string_view> strings =
      named ? NamedColumns::Strings(c) : std::vector<absl::string_view>();
  for (int i = 0; i < rows; ++i) {
    v1::LearnItem* item = request_.add_items();
    v1::Features* f;
    if (labeled_) {
      item->mutable_labeled()->set_label(c.labels(i));
      f = item->mutable_labeled()->mutable_features();
    } else {
      f = item->mutable_example();
    }
    if (named) {
      NamedColumns::Row(c, strings, i, f->mutable_named());
    } else if (sparse) {
      const int begin = i == 0 ? 0 : static_cast<int>(c.row_ends(i - 1));
      const int end = static_cast<int>(c.row_ends(i));
      f->mutable_sparse()->mutable_indices()->Add(
          c.fixed_indices().begin() + begin, c.fixed_indices().begin() + end);
      f->mutable_sparse()->mutable_values()->Add(c.values().begin() + begin,
                                                 c.values().begin() + end);
    } else {
      const auto row = c.dense().begin() + int64_t{i} * dimension_;
      f->mutable_dense()->mutable_values()->Add(row, row + dimension_);
    }
  }
}

void LearnSession::AddRow(const Example& e, bool labeled) {
  bytes_ += RequestBytes(e);
  Rows rows = Rows::kNamed;
  if (!IsNamed(e)) {
    rows = Rows::kNone;  // not a row columns can hold
    if (!e.sparse && e.values.size() == dimension_) rows = Rows::kDense;
    if (e.sparse && e.values.size() == e.indices.size()) rows = Rows::kSparse;
  }
  if (!as_items_ && (rows == Rows::kNone || !Fits(rows, labeled))) ToItems();
  if (as_items_) {
    v1::LearnItem* item = request_.add_items();
    if (labeled) {
      FeaturesToProto(e, item->mutable_labeled()->mutable_features());
      item->mutable_labeled()->set_label(*e.label);
    } else {
      FeaturesToProto(e, item->mutable_example());
    }
    return;
  }
  rows_ = rows;
  labeled_ = labeled;
  v1::Columns* c = request_.mutable_columns();
  if (labeled) c->add_labels(*e.label);
  if (rows == Rows::kNamed) {
    names_.Append(e.named, c);
  } else if (rows == Rows::kDense) {
    c->mutable_dense()->Add(e.values.begin(), e.values.end());
    c->set_dense_rows(c->dense_rows() + 1);
  } else {
    c->mutable_fixed_indices()->Add(e.indices.begin(), e.indices.end());
    c->mutable_values()->Add(e.values.begin(), e.values.end());
    c->add_row_ends(static_cast<uint32_t>(c->fixed_indices_size()));
  }
}

absl::Status LearnSession::AddLabeled(const Example& e) {
  if (!e.label)
    return absl::InvalidArgumentError("AddLabeled: the example has no label");
  if (!ended_.ok())
    return absl::AbortedError("the stream has ended; Finish tells why");
  if (retrying()) {
    kept_.push_back(e);
    ++added_;
  }
  AddRow(e, /*labeled=*/true);
  return Queued();
}

namespace {

absl::Status LabeledOnly(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      what,
      ": a session with retry_for takes labeled examples only (AddLabeled): "
      "a prediction's id is the server's, and a stream that breaks is "
      "resumed after the examples the model holds"));
}

}  // namespace

absl::Status LearnSession::AddExample(const Example& e) {
  if (retrying()) return LabeledOnly("AddExample");
  AddRow(e, /*labeled=*/false);
  return Queued();
}

absl::Status LearnSession::AddReveal(uint64_t prediction_id, int label) {
  if (retrying()) return LabeledOnly("AddReveal");
  if (!as_items_ && rows_ != Rows::kNone) ToItems();
  if (as_items_) {
    v1::RevealItem* r = request_.add_items()->mutable_reveal();
    r->set_prediction_id(prediction_id);
    r->set_label(label);
  } else {
    v1::Columns* c = request_.mutable_columns();
    c->add_reveal_ids(prediction_id);
    c->add_reveal_labels(label);
  }
  return Queued();
}

absl::Status LearnSession::EndStream() {
  reader_.join();
  stream_ended_ = true;
  const grpc::Status s = stream_->Finish();
  if (!s.ok()) return FromGrpc(s);
  absl::MutexLock lock(&mu_);
  // Every request of a stream that ends OK is answered, and it ends after the
  // last one is sent; one cut short on the way (a proxy's) is a broken
  // stream, as retry_for treats one.
  if (in_flight_ > 0 || count_ > 0 || !named_) {
    return absl::UnavailableError(absl::StrCat(
        "the Learn stream ended without an error but with ", in_flight_,
        " of its requests unanswered",
        count_ > 0 || !named_ ? " and the last one not sent" : ""));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> LearnSession::HeldExamples(Client& via,
                                                    const absl::Status& broke) {
  const absl::Time deadline = absl::Now() + options_.retry_for;
  absl::Duration pause = absl::Milliseconds(100);
  while (true) {
    absl::StatusOr<v1::ModelStatus> st = via.GetStatus(model_id_);
    if (st.ok()) return st->stats().examples();
    const bool resumable = ResumableLearnEnd(st.status().code());
    if (!resumable || absl::Now() + pause > deadline) {
      const std::string after = broke.ok()
                                    ? ""
                                    : absl::StrCat(" after the stream broke (",
                                                   broke.ToString(), ")");
      return absl::Status(
          st.status().code(),
          resumable ? absl::StrCat(model_id_, " did not answer within ",
                                   absl::FormatDuration(options_.retry_for),
                                   after, ": ", st.status().message())
                    : absl::StrCat("the status of ", model_id_, after, ": ",
                                   st.status().message()));
    }
    absl::SleepFor(pause);  // a retry's pause
    pause = std::min(2 * pause, absl::Seconds(2));
  }
}

absl::Status LearnSession::Resume(absl::Status broke) {
  while (true) {
    uint64_t answered = 0;
    {
      absl::MutexLock lock(&mu_);
      if (!rejected_.ok()) return rejected_;
      answered = summary_.items + summary_.unanswered;
    }
    if (!ResumableLearnEnd(broke.code())) return broke;
    if (options_.on_break) options_.on_break(broke, answered);
    // What follows goes on a new connection: a proxy reloaded with the
    // model's new shard may have left the old one with a worker that routes
    // by the old shard set. The ended stream goes first, then its context,
    // then the connection it used.
    stream_.reset();
    context_.reset();
    via_ = client_->Another();
    absl::StatusOr<uint64_t> now = HeldExamples(*via_, broke);
    if (!now.ok()) return now.status();
    if (*now < base_ + answered || *now > base_ + added_) {
      return absl::DataLossError(absl::StrCat(
          model_id_, " now holds ", *now,
          " labeled examples; this session began at ", base_, ", had ",
          answered, " answered and added ", added_,
          ": it lost answered examples (a server without durability?) or "
          "another client writes to it; not resuming after ",
          broke.ToString()));
    }
    const uint64_t held = *now - base_;
    if (held == opened_at_) {
      // No progress since the last stream opened (a model being moved
      // refuses every batch until its move ends).
      if (!stalled_since_) stalled_since_ = absl::Now();
      if (absl::Now() - *stalled_since_ + stalled_pause_ > options_.retry_for) {
        return absl::Status(
            broke.code(), absl::StrCat(model_id_, ": no progress for ",
                                       absl::FormatDuration(options_.retry_for),
                                       ": ", broke.message()));
      }
      absl::SleepFor(stalled_pause_);  // a retry's pause
      stalled_pause_ = std::min(2 * stalled_pause_, absl::Seconds(2));
    } else {
      stalled_since_.reset();
      stalled_pause_ = absl::Milliseconds(100);
    }
    {
      absl::MutexLock lock(&mu_);
      summary_.unanswered += held - answered;
      ++summary_.resumed;
    }
    if (options_.on_resume) options_.on_resume({broke, answered, held});
    for (; kept_first_ < held && !kept_.empty(); ++kept_first_) {
      kept_.pop_front();
    }
    opened_at_ = held;
    Open(*via_, base_ + held);
    // The examples the model does not hold, again; what does not fill a
    // batch stays in the one being built.
    ClearBatch();
    bool sent = true;
    // By place in the session: a batch sent drops the answered ones.
    for (uint64_t i = held; i < added_ && sent; ++i) {
      AddRow(kept_[i - kept_first_], /*labeled=*/true);
      if (Counted()) sent = Send();
    }
    if (sent) return absl::OkStatus();
    broke = EndStream();
  }
}

void LearnSession::Refused(uint64_t item, const v1::ItemError& error) {
  if (!retrying() || !rejected_.ok()) return;
  rejected_ = absl::Status(
      error.code() != 0 ? static_cast<absl::StatusCode>(error.code())
                        : absl::StatusCode::kInvalidArgument,
      absl::StrCat("example ", item, " of the session was refused (",
                   error.message(),
                   "): with retry_for, the session ends at the first"));
  context_->TryCancel();
}

absl::StatusOr<SessionSummary> LearnSession::Finish() {
  if (finished_)
    return absl::FailedPreconditionError("the session is already finished");
  while (true) {
    if (!ended_.ok()) break;
    if (count_ > 0 || !named_) Flush().IgnoreError();  // EndStream says why
    if (!ended_.ok()) break;
    stream_->WritesDone();
    const absl::Status end = EndStream();
    if (end.ok()) break;
    if (!retrying()) {
      ended_ = end;
      break;
    }
    ended_ = Resume(end);
  }
  finished_ = true;
  if (!ended_.ok()) return ended_;
  absl::MutexLock lock(&mu_);
  if (!rejected_.ok()) return rejected_;
  return summary_;
}

}  // namespace perceptron::client
