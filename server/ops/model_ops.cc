#include "server/ops/model_ops.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "google/protobuf/repeated_field.h"
#include "server/model/convert.h"

namespace perceptron::server {
namespace {

// OK if a call may change the model: it is not deleted, nor being moved to
// another shard (SetMoving), and the store writes (Persistence::Writable).
absl::Status Changeable(const ModelEntry& entry, const Persistence& persistence)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  if (entry.deleted) return entry.GoneStatus();
  PERCEPTRON_RETURN_IF_ERROR(persistence.Writable());
  if (entry.moving) {
    return absl::UnavailableError(
        absl::StrCat("model ", entry.id,
                     " is being moved to another shard; nothing was applied: "
                     "retry in a moment"));
  }
  return absl::OkStatus();
}

// Changeable, and the model may learn: a kernel model stores its mistakes only
// while the models' memory has room (Model::StoreRoom).
absl::Status Learnable(const ModelEntry& entry, const Persistence& persistence)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  PERCEPTRON_RETURN_IF_ERROR(Changeable(entry, persistence));
  return entry.model->StoreRoom();
}

// The end of a batch that may have changed the model. Under entry.mu, Finish
// records the time and the statistics after the batch and stages its log
// record; once the lock is released, Announce wakes the certificate's
// refresher if the batch left it rows to solve, tells watchers, and hands
// over the commit to await.
class BatchEnd {
 public:
  void Finish(ModelEntry& entry, Persistence& persistence, bool changed,
              absl::Time now, v1::ModelStats* stats)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
    changed_ = changed;
    if (changed) entry.updated_at = now;
    StatsToProto(entry.model->stats(/*with_weight_norm=*/false), stats);
    if (changed) commit_ = persistence.Stage(entry);
    due_ = changed && entry.CertificateDue();
  }
  CommitHandle Announce(ModelEntry& entry) {
    if (due_) entry.WakeCertificate();
    if (changed_) {
      entry.CountLearned();
      entry.NotifyChanged();
    }
    return std::move(commit_);
  }

 private:
  bool changed_ = false;
  bool due_ = false;
  CommitHandle commit_;
};

int64_t NowNanos() { return absl::ToUnixNanos(absl::Now()); }

void OutcomeToProto(const Outcome& o, uint64_t prediction_id,
                    v1::Outcome* out) {
  out->set_prediction_id(prediction_id);
  out->set_label(o.predicted);
  out->set_score(o.score);
  out->set_mistake(o.mistake);
  out->set_updated(o.updated);
}

// What the server does with the answer to a labeled example learned (a
// reveal or a labeled row, one by one or in a batch): the entry counts its
// mistake.
void CountLearned(ModelEntry& entry, const absl::StatusOr<Outcome>& o)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  if (o.ok()) entry.Observe(o->mistake);
}

// Reveals a prediction (a reveal item).
absl::StatusOr<Outcome> RevealOne(ModelEntry& entry, uint64_t prediction_id,
                                  int label)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  absl::StatusOr<Outcome> o = entry.model->Reveal(prediction_id, label);
  CountLearned(entry, o);
  return o;
}

// Predicts then learns (a labeled item).
absl::StatusOr<Outcome> LearnOne(ModelEntry& entry, const FeatureView& x,
                                 int label)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  absl::StatusOr<Outcome> o = entry.model->Learn(x, label);
  CountLearned(entry, o);
  return o;
}

// Model::Prefetch for sparse features.
void Prefetch(const Model& model, const v1::Features& f) {
  if (!f.has_sparse()) return;
  absl::StatusOr<FeatureView> x = FeaturesFromProto(f);
  if (x.ok()) model.Prefetch(*x);
}

// An example's features, taken from its Learn item ahead of its turn
// (ApplyLearnItems): what FeaturesFromProto gave (by name, hashed into the
// buffers given), and what it left for the model's name table.
struct ItemFeatures {
  absl::StatusOr<FeatureView> x;
  const NamedScratch* names;
};

// The features of `item`, an example or a labeled example, into `storage`
// and `names`; nullopt for any other item.
std::optional<ItemFeatures> FeaturesOf(const Model& model,
                                       const v1::LearnItem& item,
                                       Features* storage, NamedScratch* names) {
  const v1::Features* f = item.has_labeled()   ? &item.labeled().features()
                          : item.has_example() ? &item.example()
                                               : nullptr;
  if (f == nullptr) return std::nullopt;
  return ItemFeatures{FeaturesFromProto(*f, model.hasher(), storage, names),
                      names};
}

// Applies one Learn item, whose features (for an example or a labeled
// example) FeaturesOf took. On success fills `result` and returns true if
// the model changed.
absl::StatusOr<bool> ApplyItem(ModelEntry& entry, const v1::LearnItem& item,
                               const std::optional<ItemFeatures>& features,
                               int64_t now, v1::ItemResult* result)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  switch (item.kind_case()) {
    case v1::LearnItem::kExample: {
      const absl::StatusOr<FeatureView>& x = features->x;
      if (!x.ok()) return x.status();
      absl::StatusOr<Issued> issued = entry.model->Issue(*x, now);
      if (!issued.ok()) return issued.status();
      features->names->RecordIn(entry.model->names());
      v1::PredictionResult* p = result->mutable_prediction();
      p->set_prediction_id(issued->prediction_id);
      p->set_label(issued->label);
      p->set_score(issued->score);
      return true;
    }
    case v1::LearnItem::kReveal: {
      absl::StatusOr<int> label =
          LabelFromProto(item.reveal().label(), item.reveal().class_name(),
                         entry.model->config());
      if (!label.ok()) return label.status();
      absl::StatusOr<Outcome> o =
          RevealOne(entry, item.reveal().prediction_id(), *label);
      if (!o.ok()) return o.status();
      OutcomeToProto(*o, item.reveal().prediction_id(),
                     result->mutable_outcome());
      return true;
    }
    case v1::LearnItem::kLabeled: {
      const absl::StatusOr<FeatureView>& x = features->x;
      if (!x.ok()) return x.status();
      absl::StatusOr<int> label =
          LabelFromProto(item.labeled().label(), item.labeled().class_name(),
                         entry.model->config());
      if (!label.ok()) return label.status();
      absl::StatusOr<Outcome> o = LearnOne(entry, *x, *label);
      if (!o.ok()) return o.status();
      features->names->RecordIn(entry.model->names());
      OutcomeToProto(*o, 0, result->mutable_outcome());
      return true;
    }
    default:
      return absl::InvalidArgumentError(
          "the item is empty: set example, reveal or labeled");
  }
}

// The rows of `c`: how many, and row i as features. OK once the arrays'
// lengths agree with each other and with `dimension`.
class ColumnRows {
 public:
  static absl::StatusOr<ColumnRows> Of(const v1::Columns& c, uint32_t dimension,
                                       const FeatureHasher* hasher) {
    ColumnRows r(c, dimension);
    if (!c.strings().empty() || !c.text_lengths().empty() ||
        !c.text().empty() || !c.named_names().empty()) {
      PERCEPTRON_RETURN_IF_ERROR(r.CheckNamed(hasher));
    } else if (!c.indices().empty() && !c.fixed_indices().empty()) {
      return absl::InvalidArgumentError(
          "columns: the indices come as fixed_indices or as indices, not both");
    }
    if (!c.fixed_indices().empty()) r.indices_ = &c.fixed_indices();
    const google::protobuf::RepeatedField<uint32_t>& indices = *r.indices_;
    const bool sparse =
        !c.row_ends().empty() || !indices.empty() || !c.values().empty();
    if (sparse && (!c.dense().empty() || c.dense_rows() > 0)) {
      return absl::InvalidArgumentError(
          "columns: rows are dense or sparse (row_ends, indices, values), not "
          "both");
    }
    if (r.named_) {
      // Checked by CheckNamed.
    } else if (sparse) {
      r.sparse_ = true;
      r.rows_ = c.row_ends().size();
      PERCEPTRON_ASSIGN_OR_RETURN(const uint32_t previous, r.CheckRowEnds());
      if (indices.size() != c.values().size() ||
          static_cast<uint64_t>(indices.size()) != previous) {
        return absl::InvalidArgumentError(
            absl::StrCat("columns: ", indices.size(), " indices and ",
                         c.values().size(), " values; the last row ends at ",
                         previous, " (all three must agree)"));
      }
    } else {
      if (static_cast<uint64_t>(c.dense().size()) !=
          uint64_t{c.dense_rows()} * dimension) {
        return absl::InvalidArgumentError(absl::StrCat(
            "columns: ", c.dense().size(), " dense values are not dense_rows (",
            c.dense_rows(), ") rows of the model's dimension ", dimension));
      }
      r.rows_ = c.dense_rows();
    }
    if (!c.labels().empty() &&
        static_cast<size_t>(c.labels().size()) != r.rows_) {
      return absl::InvalidArgumentError(
          absl::StrCat("columns: ", c.labels().size(), " labels for ", r.rows_,
                       " rows (one per row, or none)"));
    }
    if (c.reveal_ids().size() != c.reveal_labels().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("columns: ", c.reveal_ids().size(), " reveal_ids and ",
                       c.reveal_labels().size(), " reveal_labels"));
    }
    return r;
  }

  size_t rows() const { return rows_; }
  bool dense() const { return !sparse_ && !named_; }
  bool named() const { return named_; }
  // Row i of named rows, hashed by the model's hasher into `storage`, with
  // what its NameTable records in `scratch`; a bad feature is the row's
  // error.
  absl::StatusOr<FeatureView> NamedRow(size_t i, const FeatureHasher& hasher,
                                       Features* storage,
                                       NamedScratch* scratch) const {
    const uint32_t begin = i == 0 ? 0 : c_->row_ends(i - 1);
    const uint32_t end = c_->row_ends(i);
    const std::vector<absl::string_view>& strings = strings_;
    std::vector<NamedFeature>& x = scratch->features;
    x.resize(end - begin);
    for (uint32_t j = begin; j < end; ++j) {
      NamedFeature& f = x[j - begin];
      f = NamedFeature();
      f.name = strings[c_->named_names(j)];
      if (!c_->named_spaces().empty()) {
        f.space = strings[c_->named_spaces(j)];
      }
      if (!c_->named_categories().empty() && c_->named_categories(j) > 0) {
        f.categorical = true;
        f.category = strings[c_->named_categories(j) - 1];
      } else if (!c_->named_values().empty()) {
        f.value = c_->named_values(j);
      }
    }
    scratch->named = false;
    PERCEPTRON_RETURN_IF_ERROR(
        hasher.Hash(x, storage, hasher.listed() ? nullptr : &scratch->trace));
    scratch->named = !hasher.listed();
    return storage->view();
  }
  FeatureView row(size_t i) const {
    if (!sparse_) {
      return FeatureView::Dense(
          absl::MakeConstSpan(c_->dense().data() + i * dimension_, dimension_));
    }
    const uint32_t begin = i == 0 ? 0 : c_->row_ends(i - 1);
    const uint32_t end = c_->row_ends(i);
    return FeatureView::Sparse(
        absl::MakeConstSpan(indices_->data() + begin, end - begin),
        absl::MakeConstSpan(c_->values().data() + begin, end - begin));
  }

 private:
  ColumnRows(const v1::Columns& c, uint32_t dimension)
      : c_(&c), indices_(&c.indices()), dimension_(dimension) {}

  // OK if row_ends does not decrease; its last value (0 for no rows).
  absl::StatusOr<uint32_t> CheckRowEnds() const {
    uint32_t previous = 0;
    for (int i = 0; i < c_->row_ends().size(); ++i) {
      if (c_->row_ends(i) < previous) {
        return absl::InvalidArgumentError(
            absl::StrCat("columns: row_ends[", i, "] = ", c_->row_ends(i),
                         " is below row_ends[", i - 1, "] = ", previous));
      }
      previous = c_->row_ends(i);
    }
    return previous;
  }

  // Named rows: for a model that takes names, no other kind of row, arrays
  // of the features' count, references inside the table.
  absl::Status CheckNamed(const FeatureHasher* hasher) {
    const v1::Columns& c = *c_;
    if (hasher == nullptr) {
      return absl::InvalidArgumentError(
          "columns: rows by name for a model that takes none (create it with "
          "hash_bits or feature_names)");
    }
    if (!c.dense().empty() || c.dense_rows() > 0 || !c.indices().empty() ||
        !c.fixed_indices().empty() || !c.values().empty()) {
      return absl::InvalidArgumentError(
          "columns: rows are by name (strings, named_*), dense or sparse, not "
          "more than one");
    }
    PERCEPTRON_ASSIGN_OR_RETURN(const uint32_t features, CheckRowEnds());
    const int n = c.named_names().size();
    if (static_cast<uint32_t>(n) != features) {
      return absl::InvalidArgumentError(absl::StrCat(
          "columns: ", n, " named_names; the last row ends at ", features));
    }
    auto same = [n](const auto& a, absl::string_view what) {
      return a.empty() || a.size() == n
                 ? absl::OkStatus()
                 : absl::InvalidArgumentError(
                       absl::StrCat("columns: ", a.size(), " ", what, " for ",
                                    n, " named_names (one each, or none)"));
    };
    PERCEPTRON_RETURN_IF_ERROR(same(c.named_spaces(), "named_spaces"));
    PERCEPTRON_RETURN_IF_ERROR(same(c.named_values(), "named_values"));
    PERCEPTRON_RETURN_IF_ERROR(same(c.named_categories(), "named_categories"));
    PERCEPTRON_RETURN_IF_ERROR(ColumnStrings(c, &strings_));
    const uint32_t table = strings_.size();
    auto within = [table](const auto& refs, uint32_t offset,
                          absl::string_view what) {
      for (int j = 0; j < refs.size(); ++j) {
        if (refs[j] - offset >= table && !(offset == 1 && refs[j] == 0)) {
          return absl::InvalidArgumentError(
              absl::StrCat("columns: ", what, "[", j, "] = ", refs[j],
                           " is outside the ", table, " strings"));
        }
      }
      return absl::OkStatus();
    };
    PERCEPTRON_RETURN_IF_ERROR(within(c.named_names(), 0, "named_names"));
    PERCEPTRON_RETURN_IF_ERROR(within(c.named_spaces(), 0, "named_spaces"));
    PERCEPTRON_RETURN_IF_ERROR(
        within(c.named_categories(), 1, "named_categories"));
    named_ = true;
    rows_ = c.row_ends().size();
    return absl::OkStatus();
  }
  const v1::Columns* c_;
  // c's indices or fixed_indices, whichever it carries.
  const google::protobuf::RepeatedField<uint32_t>* indices_;
  uint32_t dimension_;
  bool sparse_ = false;
  bool named_ = false;
  size_t rows_ = 0;
  // The table of rows by name (strings or text), as views into c.
  std::vector<absl::string_view> strings_;
};

// LearnRequest.if_examples: OK if not given or the model has learned from
// exactly that many labeled examples.
absl::Status CheckExamples(const ModelEntry& entry,
                           std::optional<uint64_t> if_examples)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  if (!if_examples) return absl::OkStatus();
  const uint64_t examples = entry.model->counters().examples;
  if (examples == *if_examples) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("model ", entry.id, " has learned from ", examples,
                   " labeled examples, not ", *if_examples,
                   " (if_examples): nothing of this batch was applied"));
}

void SetBit(std::string* bits, size_t k) {
  (*bits)[k / 8] = static_cast<char>((*bits)[k / 8] | (1 << (k % 8)));
}

}  // namespace

absl::Status ApplyLearnItems(
    ModelEntry& entry, Persistence& persistence,
    const google::protobuf::RepeatedPtrField<v1::LearnItem>& items,
    google::protobuf::RepeatedPtrField<v1::ItemResult>* results,
    v1::ModelStats* stats, CommitHandle* commit_out,
    std::optional<uint64_t> if_examples) {
  bool changed = false;
  BatchEnd end;
  {
    absl::MutexLock lock(&entry.mu);
    PERCEPTRON_RETURN_IF_ERROR(Learnable(entry, persistence));
    if (absl::Status s = CheckExamples(entry, if_examples); !s.ok()) return s;
    const int64_t now = NowNanos();
    results->Reserve(items.size());
    // Each item's features are taken (by name, hashed) one ahead of the item
    // learned, as rows by name are (ApplyLearnColumns), so that the next
    // item's weights and its names' tags (NameTable::Prefetch) are fetched
    // meanwhile: two buffers, item i in i % 2.
    thread_local Features named[2];
    thread_local NamedScratch scratch[2];
    std::optional<ItemFeatures> next;
    if (!items.empty()) {
      next = FeaturesOf(*entry.model, items[0], &named[0], &scratch[0]);
    }
    for (int i = 0; i < items.size(); ++i) {
      const std::optional<ItemFeatures> features = std::move(next);
      next.reset();
      if (i + 1 < items.size()) {
        next = FeaturesOf(*entry.model, items[i + 1], &named[(i + 1) % 2],
                          &scratch[(i + 1) % 2]);
        if (next && next->x.ok()) {
          entry.model->Prefetch(*next->x);
          next->names->PrefetchIn(entry.model->names());
        }
      }
      v1::ItemResult* result = results->Add();
      absl::StatusOr<bool> applied =
          ApplyItem(entry, items[i], features, now, result);
      if (!applied.ok()) {
        result->Clear();
        ErrorToProto(ForItem(i, applied.status()), result->mutable_error());
      } else {
        changed |= *applied;
      }
    }
    end.Finish(entry, persistence, changed, absl::FromUnixNanos(now), stats);
  }
  *commit_out = end.Announce(entry);
  return absl::OkStatus();
}

absl::Status ApplyLearnColumns(ModelEntry& entry, Persistence& persistence,
                               const v1::Columns& columns, const Limits& limits,
                               v1::ColumnResults* results,
                               v1::ModelStats* stats, CommitHandle* commit_out,
                               std::optional<uint64_t> if_examples) {
  bool changed = false;
  BatchEnd end;
  {
    absl::MutexLock lock(&entry.mu);
    PERCEPTRON_RETURN_IF_ERROR(Learnable(entry, persistence));
    if (absl::Status s = CheckExamples(entry, if_examples); !s.ok()) return s;
    absl::StatusOr<ColumnRows> rows = ColumnRows::Of(
        columns, entry.model->config().dimension, entry.model->hasher());
    if (!rows.ok()) return rows.status();
    const size_t reveals = columns.reveal_ids().size();
    const size_t n = reveals + rows->rows();
    if (n > limits.max_batch_items) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a batch of ", n, " items is over the limit of ",
                       limits.max_batch_items, " (", reveals, " reveals, ",
                       rows->rows(), " rows)"));
    }
    const int64_t now = NowNanos();
    results->mutable_scores()->Resize(static_cast<int>(n), 0.0);
    results->mutable_labels()->Resize(static_cast<int>(n), 0);
    std::string mistakes((n + 7) / 8, '\0'), updates((n + 7) / 8, '\0');
    auto fail = [&](size_t k, const absl::Status& s) {
      v1::ColumnError* e = results->add_errors();
      e->set_item(static_cast<uint32_t>(k));
      ErrorToProto(ForItem(static_cast<int>(k), s), e->mutable_error());
    };
    auto outcome = [&](size_t k, const absl::StatusOr<Outcome>& o) {
      if (!o.ok()) return fail(k, o.status());
      results->set_scores(static_cast<int>(k), o->score);
      results->set_labels(static_cast<int>(k), o->predicted);
      if (o->mistake) SetBit(&mistakes, k);
      if (o->updated) SetBit(&updates, k);
      changed = true;
    };
    for (size_t k = 0; k < reveals; ++k) {
      outcome(
          k, RevealOne(entry, columns.reveal_ids(k), columns.reveal_labels(k)));
    }
    const bool labeled = !columns.labels().empty();
    // Dense labeled rows in one call, learned as one by one
    // (Model::LearnDense); the others (sparse rows, examples to predict) one
    // by one.
    const bool batched = labeled && rows->dense();
    if (batched) {
      PERCEPTRON_RETURN_IF_ERROR(entry.model->LearnDense(
          columns.dense(), columns.labels(),
          [&](size_t i, const absl::StatusOr<Outcome>& o)
              ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
                CountLearned(entry, o);
                outcome(reveals + i, o);
              }));
    }
    uint64_t next_id = 0;
    // Rows by name are hashed one ahead, so that the next row's weights are
    // fetched while this one learns: two buffers, row i in buffer i % 2.
    thread_local Features named[2];
    thread_local NamedScratch scratch[2];
    absl::StatusOr<FeatureView> ahead;
    if (rows->named() && rows->rows() > 0 && !batched) {
      ahead = rows->NamedRow(0, *entry.model->hasher(), &named[0], &scratch[0]);
    }
    for (size_t i = 0; !batched && i < rows->rows(); ++i) {
      const size_t k = reveals + i;
      FeatureView x;
      NamedScratch& names = scratch[i % 2];
      if (rows->named()) {
        const absl::StatusOr<FeatureView> hashed = std::move(ahead);
        if (i + 1 < rows->rows()) {
          ahead = rows->NamedRow(i + 1, *entry.model->hasher(),
                                 &named[(i + 1) % 2], &scratch[(i + 1) % 2]);
          if (ahead.ok()) {
            entry.model->Prefetch(*ahead);
            scratch[(i + 1) % 2].PrefetchIn(entry.model->names());
          }
        }
        if (!hashed.ok()) {
          fail(k, hashed.status());
          continue;
        }
        x = *hashed;
      } else {
        if (i + 1 < rows->rows()) entry.model->Prefetch(rows->row(i + 1));
        x = rows->row(i);
      }
      if (labeled) {
        const absl::StatusOr<Outcome> o = LearnOne(entry, x, columns.labels(i));
        if (o.ok() && rows->named()) names.RecordIn(entry.model->names());
        outcome(k, o);
        continue;
      }
      absl::StatusOr<Issued> issued = entry.model->Issue(x, now);
      if (!issued.ok()) {
        fail(k, issued.status());
        continue;
      }
      if (rows->named()) names.RecordIn(entry.model->names());
      if (next_id == 0) {
        results->set_first_prediction_id(issued->prediction_id);
      } else if (issued->prediction_id != next_id) {
        return absl::InternalError(absl::StrCat(
            "prediction ids were not consecutive: ", issued->prediction_id,
            " after ", next_id - 1));
      }
      next_id = issued->prediction_id + 1;
      results->set_scores(static_cast<int>(k), issued->score);
      results->set_labels(static_cast<int>(k), issued->label);
      changed = true;
    }
    results->set_mistakes(std::move(mistakes));
    results->set_updates(std::move(updates));
    end.Finish(entry, persistence, changed, absl::FromUnixNanos(now), stats);
  }
  *commit_out = end.Announce(entry);
  return absl::OkStatus();
}

absl::Status ApplyReveals(
    ModelEntry& entry, Persistence& persistence,
    const google::protobuf::RepeatedPtrField<v1::RevealItem>& items,
    google::protobuf::RepeatedPtrField<v1::ItemResult>* results,
    v1::ModelStats* stats) {
  bool changed = false;
  BatchEnd end;
  {
    absl::MutexLock lock(&entry.mu);
    PERCEPTRON_RETURN_IF_ERROR(Learnable(entry, persistence));
    for (int i = 0; i < items.size(); ++i) {
      v1::ItemResult* result = results->Add();
      absl::StatusOr<int> label = LabelFromProto(
          items[i].label(), items[i].class_name(), entry.model->config());
      absl::StatusOr<Outcome> o =
          label.ok() ? entry.model->Reveal(items[i].prediction_id(), *label)
                     : label.status();
      if (!o.ok()) {
        ErrorToProto(ForItem(i, o.status()), result->mutable_error());
        continue;
      }
      entry.Observe(o->mistake);
      OutcomeToProto(*o, items[i].prediction_id(), result->mutable_outcome());
      changed = true;
    }
    end.Finish(entry, persistence, changed, absl::Now(), stats);
  }
  CommitHandle commit = end.Announce(entry);
  return AwaitCommit(commit);
}

namespace {

// One example's prediction (x's error, if it is one) and, when `all`, its k
// class scores appended to *scores.
absl::StatusOr<Prediction> PredictOne(
    const Model& model, const absl::StatusOr<FeatureView>& x, bool all,
    google::protobuf::RepeatedField<double>* scores) {
  if (!x.ok()) return x.status();
  absl::StatusOr<Prediction> p = model.Predict(*x);
  if (!p.ok() || !all) return p;
  absl::StatusOr<std::vector<double>> k = model.Scores(*x);
  if (!k.ok()) return k.status();
  scores->Add(k->begin(), k->end());
  return p;
}

// PredictAll for a request of columns: every row, or INVALID_ARGUMENT naming
// the first bad one (its index among the rows), nothing answered.
absl::Status PredictRows(ModelEntry& entry, const v1::PredictRequest& request,
                         size_t limit, v1::PredictColumns* out)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  const v1::Columns& columns = request.columns();
  if (!columns.labels().empty() || !columns.reveal_ids().empty() ||
      !columns.reveal_labels().empty()) {
    return absl::InvalidArgumentError(
        "columns to predict carry rows only, no labels or reveals (those are "
        "Learn's)");
  }
  absl::StatusOr<ColumnRows> rows = ColumnRows::Of(
      columns, entry.model->config().dimension, entry.model->hasher());
  if (!rows.ok()) return rows.status();
  if (rows->rows() > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        rows->rows(), " rows in one request is over the limit of ", limit));
  }
  const bool all = request.all_scores() && entry.model->config().multiclass();
  const int n = static_cast<int>(rows->rows());
  out->mutable_scores()->Reserve(n);
  out->mutable_labels()->Reserve(n);
  Features named;
  NamedScratch scratch;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<FeatureView> x =
        rows->named()
            ? rows->NamedRow(i, *entry.model->hasher(), &named, &scratch)
            : rows->row(i);
    if (x.ok() && !rows->named() && i + 1 < n) {
      entry.model->Prefetch(rows->row(i + 1));
    }
    absl::StatusOr<Prediction> p =
        PredictOne(*entry.model, x, all, out->mutable_class_scores());
    if (!p.ok()) {
      out->Clear();
      return ForItem(i, p.status());
    }
    out->add_labels(p->label);
    out->add_scores(p->score);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PredictAll(ModelEntry& entry, const v1::PredictRequest& request,
                        size_t limit, v1::PredictResponse* response) {
  absl::MutexLock lock(&entry.mu);
  if (entry.deleted) return entry.GoneStatus();
  if (request.has_columns()) {
    if (request.examples_size() > 0) {
      return absl::InvalidArgumentError(
          "a request carries examples or columns, not both");
    }
    return PredictRows(entry, request, limit, response->mutable_columns());
  }
  const bool all = request.all_scores() && entry.model->config().multiclass();
  for (int i = 0; i < request.examples_size(); ++i) {
    if (i + 1 < request.examples_size()) {
      Prefetch(*entry.model, request.examples(i + 1));
    }
    Features named;
    absl::StatusOr<FeatureView> x =
        FeaturesFromProto(request.examples(i), entry.model->hasher(), &named);
    v1::Prediction* out = response->add_predictions();
    absl::StatusOr<Prediction> p =
        PredictOne(*entry.model, x, all, out->mutable_scores());
    if (!p.ok()) {
      response->Clear();
      return ForItem(i, p.status());
    }
    out->set_label(p->label);
    out->set_score(p->score);
  }
  return absl::OkStatus();
}

absl::Status TrainOn(ModelEntry& entry, Persistence& persistence,
                     const v1::TrainRequest& request, const Limits& limits,
                     v1::TrainResponse* response) {
  TrainOptions options;
  options.max_epochs = request.max_epochs() == 0 ? 100 : request.max_epochs();
  if (options.max_epochs > limits.max_train_epochs) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_epochs ", options.max_epochs,
                     " is over the server's limit ", limits.max_train_epochs));
  }
  // Named features are hashed here, outside the model's lock, with a copy of
  // its (immutable) hasher.
  std::optional<FeatureHasher> hasher;
  std::vector<std::string> classes;
  {
    absl::MutexLock lock(&entry.mu);
    if (entry.deleted) return entry.GoneStatus();
    if (entry.model->hasher() != nullptr) hasher = *entry.model->hasher();
    classes = entry.model->config().classes;
  }
  ModelConfig labels;  // the classes, for LabelFromProto
  labels.classes = std::move(classes);
  std::vector<Features> named(request.examples_size());
  std::vector<NamedScratch> names(request.examples_size());
  std::vector<LabeledExample> data;
  data.reserve(request.examples_size());
  for (int i = 0; i < request.examples_size(); ++i) {
    absl::StatusOr<FeatureView> x =
        FeaturesFromProto(request.examples(i).features(),
                          hasher ? &*hasher : nullptr, &named[i], &names[i]);
    if (!x.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, ": ", x.status().message()));
    absl::StatusOr<int> label = LabelFromProto(
        request.examples(i).label(), request.examples(i).class_name(), labels);
    if (!label.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, ": ", label.status().message()));
    data.push_back({*x, *label});
  }
  absl::StatusOr<TrainResult> r;
  BatchEnd end;
  {
    absl::MutexLock lock(&entry.mu);
    PERCEPTRON_RETURN_IF_ERROR(Learnable(entry, persistence));
    options.on_example = [&entry](uint32_t, size_t, const Outcome& o)
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
                               entry.Observe(o.mistake);
                             };
    r = entry.model->Train(data, options);
    if (!r.ok()) return r.status();
    for (const NamedScratch& n : names) n.RecordIn(entry.model->names());
    // A batch learned, as a Learn stream's; a call with no examples changes
    // nothing, and is neither stored nor announced.
    end.Finish(entry, persistence, /*changed=*/!data.empty(), absl::Now(),
               response->mutable_stats());
  }
  response->set_epochs(r->epochs);
  response->set_converged(r->converged);
  response->set_updates(r->updates);
  response->set_mistakes(r->mistakes);
  return AwaitCommit(end.Announce(entry));
}

absl::Status ResetEntry(ModelEntry& entry, Persistence& persistence) {
  CommitHandle commit;
  {
    absl::MutexLock lock(&entry.mu);
    PERCEPTRON_RETURN_IF_ERROR(Changeable(entry, persistence));
    entry.model->Reset();
    entry.ClearCurves();
    commit = persistence.Stage(entry);
    entry.updated_at = absl::Now();
  }
  entry.NotifyChanged();
  return AwaitCommit(commit);
}

void ExpirePending(ModelEntry& entry, Persistence& persistence,
                   absl::Duration ttl) {
  size_t expired = 0;
  CommitHandle commit;
  {
    absl::MutexLock lock(&entry.mu);
    if (entry.deleted || entry.moving || entry.model->pending_count() == 0 ||
        !persistence.Writable().ok()) {
      return;
    }
    expired = entry.model->ExpirePending(absl::ToUnixNanos(absl::Now() - ttl));
    if (expired > 0) commit = persistence.Stage(entry);
    if (expired > 0) entry.updated_at = absl::Now();
  }
  if (expired > 0) entry.NotifyChanged();
  AwaitCommit(commit)
      .IgnoreError();  // a store error fails every later commit too
}

}  // namespace perceptron::server
