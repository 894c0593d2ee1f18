#include "core/journal.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace perceptron {

absl::Status CheckDelta(absl::string_view what, const VectorDelta& d,
                        size_t size) {
  if (d.full ? d.values.size() != size : d.indices.size() != d.values.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "journal: ", what, " has ", d.values.size(), " values for ",
        d.full ? absl::StrCat("a vector of ", size)
               : absl::StrCat(d.indices.size(), " indices")));
  }
  for (uint32_t i : d.indices) {
    if (i >= size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "journal: ", what, " index ", i, " is out of range for ", size));
    }
  }
  for (double v : d.values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("journal: ", what, " has value ", v));
    }
  }
  return absl::OkStatus();
}

void ApplyDelta(const VectorDelta& d, std::vector<double>* v) {
  if (d.full) {
    *v = d.values;
    return;
  }
  for (size_t k = 0; k < d.indices.size(); ++k)
    (*v)[d.indices[k]] = d.values[k];
}

void DirtyTracker::Enable(size_t size) {
  enabled_ = true;
  all_ = false;
  size_ = size;
  flags_ = {};
  list_.clear();
}

void DirtyTracker::Disable() {
  enabled_ = false;
  all_ = false;
  size_ = 0;
  flags_ = {};
  list_ = {};
}

VectorDelta DirtyTracker::Take(const std::vector<double>& v) {
  VectorDelta d;
  if (!enabled_) return d;
  if (all_) {
    d.full = true;
    d.values = v;
  } else {
    d.indices = list_;
    d.values.reserve(list_.size());
    for (uint32_t i : list_) d.values.push_back(v[i]);
  }
  for (uint32_t i : list_) flags_[i] = 0;
  list_.clear();
  all_ = false;
  return d;
}

}  // namespace perceptron
