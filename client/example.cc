#include "client/example.h"

#include <string>

namespace perceptron::client {

void FeaturesToProto(const Example& e, v1::Features* out) {
  if (IsNamed(e)) {
    out->mutable_named()->mutable_features()->Add(e.named.begin(),
                                                  e.named.end());
  } else if (e.sparse) {
    v1::SparseVector* s = out->mutable_sparse();
    s->mutable_indices()->Add(e.indices.begin(), e.indices.end());
    s->mutable_values()->Add(e.values.begin(), e.values.end());
  } else {
    out->mutable_dense()->mutable_values()->Add(e.values.begin(),
                                                e.values.end());
  }
}

size_t RequestBytes(const Example& e) {
  size_t bytes = 8 * e.values.size() + 4 * e.indices.size();
  for (const v1::NamedFeature& f : e.named) {
    bytes += f.space().size() + f.name().size() + f.category().size() + 12;
  }
  return bytes;
}

std::vector<absl::string_view> NamedColumns::Strings(const v1::Columns& c) {
  std::vector<absl::string_view> out(c.strings().begin(), c.strings().end());
  size_t begin = 0;
  for (const uint32_t length : c.text_lengths()) {
    out.push_back(absl::string_view(c.text()).substr(begin, length));
    begin += length;
  }
  return out;
}

uint32_t NamedColumns::Ref(absl::string_view s) {
  // A new string is appended to the batch's text; the table keeps its index.
  return *table_.lazy_emplace(s, [&](const auto& make) {
    starts_.push_back(static_cast<uint32_t>(c_->text().size()));
    c_->mutable_text()->append(s.data(), s.size());
    c_->add_text_lengths(static_cast<uint32_t>(s.size()));
    make(static_cast<uint32_t>(starts_.size() - 1));
  });
}

void NamedColumns::Clear() {
  // A batch's table is as large as the last one's: made once, not grown
  // again batch by batch (clear gives a large table's memory back).
  const size_t size = table_.size();
  table_.clear();
  table_.reserve(size);
  starts_.clear();
}

void NamedColumns::Append(
    const google::protobuf::RepeatedPtrField<v1::NamedFeature>& x,
    v1::Columns* c) {
  if (c->text_lengths_size() == 0 && !starts_.empty()) Clear();
  c_ = c;
  // An optional column is in use once a feature needed it: then it has one
  // entry per feature before this one. `fill` and `value` are called only
  // for the entries written.
  auto add = [c](auto* column, bool needed, auto fill, auto value) {
    const int before = c->named_names_size() - 1;
    const bool in_use = before > 0 && column->size() == before;
    if (!in_use && needed) {
      while (column->size() < before) column->Add(fill());
    }
    if (in_use || needed) column->Add(value());
  };
  for (const v1::NamedFeature& f : x) {
    c->add_named_names(Ref(f.name()));
    add(
        c->mutable_named_spaces(), !f.space().empty(), [&] { return Ref(""); },
        [&] { return Ref(f.space()); });
    const bool categorical = f.value_case() == v1::NamedFeature::kCategory;
    const double value =
        f.value_case() == v1::NamedFeature::kNumber ? f.number() : 1.0;
    add(
        c->mutable_named_values(), value != 1.0, [] { return 1.0; },
        [&] { return value; });
    add(
        c->mutable_named_categories(), categorical, [] { return 0u; },
        [&] { return categorical ? Ref(f.category()) + 1 : 0u; });
  }
  c->add_row_ends(static_cast<uint32_t>(c->named_names_size()));
}

void NamedColumns::Row(const v1::Columns& c,
                       const std::vector<absl::string_view>& strings, int i,
                       v1::NamedFeatures* out) {
  const int begin = i == 0 ? 0 : static_cast<int>(c.row_ends(i - 1));
  const int end = static_cast<int>(c.row_ends(i));
  for (int j = begin; j < end; ++j) {
    v1::NamedFeature* f = out->add_features();
    f->set_name(std::string(strings[c.named_names(j)]));
    if (!c.named_spaces().empty()) {
      f->set_space(std::string(strings[c.named_spaces(j)]));
    }
    if (!c.named_categories().empty() && c.named_categories(j) > 0) {
      f->set_category(std::string(strings[c.named_categories(j) - 1]));
    } else if (!c.named_values().empty()) {
      f->set_number(c.named_values(j));
    } else {
      f->set_number(1.0);
    }
  }
}

}  // namespace perceptron::client
