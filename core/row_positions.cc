#include "core/row_positions.h"

#include "core/huge_pages.h"

namespace perceptron {

KeptRows RowPositions::ToPositions(const KeptRows& rows) {
  KeptRows out;
  std::vector<uint32_t> at;
  for (size_t t = 0; t < rows.size(); ++t) {
    // The table gives way to the array once the coordinates in use pass a
    // sixth of the model's (checked a row at a time).
    if (position_of_.empty() &&
        uint64_t{positions_.size()} * 6 >= weight_dimension_) {
      position_of_ = HugeVector<uint32_t>(weight_dimension_, kNoPosition);
      for (const auto& [i, p] : positions_) position_of_[i] = p;
      positions_ = {};
    }
    at.clear();
    for (uint32_t i : rows.indices(t)) {
      if (!position_of_.empty()) {
        uint32_t& p = position_of_[i];
        if (p == kNoPosition) {
          p = static_cast<uint32_t>(coordinates_.size());
          coordinates_.push_back(i);
        }
        at.push_back(p);
        continue;
      }
      const auto [it, added] =
          positions_.try_emplace(i, static_cast<uint32_t>(coordinates_.size()));
      if (added) coordinates_.push_back(i);
      at.push_back(it->second);
    }
    out.Add(at, rows.values(t), rows.label(t));
    out.AddCount(out.size() - 1, rows.count(t) - 1);
  }
  return out;
}

KeptRows RowPositions::ToCoordinates(const KeptRows& rows) const {
  KeptRows out;
  std::vector<uint32_t> at;
  for (size_t t = 0; t < rows.size(); ++t) {
    at.clear();
    for (uint32_t p : rows.indices(t)) at.push_back(coordinates_[p]);
    out.Add(at, rows.values(t), rows.label(t));
    out.AddCount(out.size() - 1, rows.count(t) - 1);
  }
  return out;
}

}  // namespace perceptron
