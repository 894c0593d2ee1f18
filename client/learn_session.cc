#include "client/learn_session.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client/client.h"

namespace perceptron::client {

LearnSession::LearnSession(v1::PerceptronService::Stub* stub,
                           std::string model_id, SessionOptions options,
                           uint32_t dimension, const std::string& token)
    : model_id_(std::move(model_id)),
      options_(std::move(options)),
      dimension_(options_.columnar ? dimension : 0),
      as_items_(dimension_ == 0) {
  if (!token.empty() && IsHeaderValue(token)) {
    context_.AddMetadata("authorization", "Bearer " + token);
  }
  if (IsHeaderValue(model_id_)) context_.AddMetadata(kModelHeader, model_id_);
  stream_ = stub->Learn(&context_);
  reader_ = std::thread([this] { ReadLoop(); });
}

LearnSession::~LearnSession() {
  if (!finished_) {
    context_.TryCancel();
    Finish().IgnoreError();
  }
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
        summary_.items += c.scores_size();
        if (summary_.item_errors == 0 && c.errors_size() > 0)
          summary_.first_error = c.errors(0).error().message();
        summary_.item_errors += c.errors_size();
      } else {
        summary_.items += response.results_size();
        for (const v1::ItemResult& r : response.results()) {
          if (r.has_error()) {
            if (summary_.item_errors++ == 0)
              summary_.first_error = r.error().message();
          }
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

absl::Status LearnSession::Flush() {
  if (count_ == 0 && named_) return absl::OkStatus();
  if (finished_)
    return absl::FailedPreconditionError("the session is finished");
  if (!named_) {
    request_.set_model_id(model_id_);
    if (options_.if_examples) request_.set_if_examples(*options_.if_examples);
    named_ = true;
  }
  Sent sent;
  sent.columnar = request_.has_columns();
  if (sent.columnar) {
    sent.labeled = labeled_;
    if (options_.on_response) {
      const auto& ids = request_.columns().reveal_ids();
      sent.reveal_ids.assign(ids.begin(), ids.end());
    }
  }
  {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_ < options_.max_in_flight || reader_done_;
    };
    mu_.Await(absl::Condition(&room));
    if (reader_done_)
      return absl::AbortedError("the stream has ended; Finish tells why");
    ++in_flight_;
    sent_.push_back(std::move(sent));
  }
  if (!stream_->Write(request_)) {
    return absl::AbortedError("the stream has ended; Finish tells why");
  }
  request_.Clear();
  names_.Clear();
  count_ = 0;
  as_items_ = dimension_ == 0;
  rows_ = Rows::kNone;
  labeled_ = false;
  return absl::OkStatus();
}

absl::Status LearnSession::Queued() {
  if (++count_ >= options_.batch_size) return Flush();
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
      NamedColumns::Row(c, i, f->mutable_named());
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
  AddRow(e, /*labeled=*/true);
  return Queued();
}

absl::Status LearnSession::AddExample(const Example& e) {
  AddRow(e, /*labeled=*/false);
  return Queued();
}

absl::Status LearnSession::AddReveal(uint64_t prediction_id, int label) {
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

absl::StatusOr<SessionSummary> LearnSession::Finish() {
  if (finished_)
    return absl::FailedPreconditionError("the session is already finished");
  absl::Status flushed = count_ > 0 || !named_ ? Flush() : absl::OkStatus();
  finished_ = true;
  stream_->WritesDone();
  reader_.join();
  const grpc::Status s = stream_->Finish();
  if (!s.ok()) return FromGrpc(s);
  absl::MutexLock lock(&mu_);
  // Every request of a stream that ends OK is answered, and it ends after the
  // last one is sent; one cut short on the way (a proxy's) is a broken
  // stream, as retry_for treats one. Flush fails only when the stream had
  // ended before its request could be sent.
  if (in_flight_ > 0 || !flushed.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the Learn stream ended without an error but with ",
                     in_flight_, " of its requests unanswered",
                     flushed.ok() ? "" : " and the last one not sent"));
  }
  return summary_;
}

}  // namespace perceptron::client
