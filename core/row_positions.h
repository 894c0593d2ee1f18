// The positions a wide certificate solver works over (docs/design.md section
// 2.7): the coordinates its kept rows use, numbered in the order they first
// appear. A solver's vectors then hold one value a position, not one a
// coordinate of the model, and a row's coordinates are replaced by their
// positions as it is kept.
//
//   perceptron::RowPositions positions(/*weight_dimension=*/1u << 20);
//   KeptRows at = positions.ToPositions(rows);  // numbers new coordinates
//   positions.coordinates()[p];                 // the coordinate at p
//   KeptRows again = positions.ToCoordinates(at);  // == rows
#ifndef PERCEPTRON_CORE_ROW_POSITIONS_H_
#define PERCEPTRON_CORE_ROW_POSITIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/kept_rows.h"

namespace perceptron {

class RowPositions {
 public:
  explicit RowPositions(uint32_t weight_dimension)
      : weight_dimension_(weight_dimension) {}

  // `rows` with each coordinate replaced by its position (a new one for a
  // coordinate met first), counts kept.
  KeptRows ToPositions(const KeptRows& rows);
  // `rows` at positions, at their coordinates again.
  KeptRows ToCoordinates(const KeptRows& rows) const;

  // The coordinate at each position.
  const std::vector<uint32_t>& coordinates() const { return coordinates_; }
  uint32_t size() const { return static_cast<uint32_t>(coordinates_.size()); }
  size_t bytes() const {
    return (coordinates_.capacity() + position_of_.capacity()) *
               sizeof(uint32_t) +
           positions_.capacity() * (sizeof(uint64_t) + 1);
  }

 private:
  uint32_t weight_dimension_;
  std::vector<uint32_t> coordinates_;  // position -> coordinate
  // Coordinate -> position: a table, until the coordinates in use are a
  // sixth of the weight dimension; then an array over every coordinate
  // (kNoPosition where none), which takes no more than the table it replaces
  // (4 bytes a coordinate of the model against 24 or so a coordinate in use)
  // and is read without probing.
  absl::flat_hash_map<uint32_t, uint32_t> positions_;
  std::vector<uint32_t> position_of_;
  static constexpr uint32_t kNoPosition = UINT32_MAX;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_ROW_POSITIONS_H_
