// The names a hashing model has seen on each of its slots (docs/design.md
// section 2.9), so that its weights can be read back by name, and the slots
// where different names collided.
//
//   perceptron::NameTable names(/*bits=*/20, /*limit_bytes=*/8 << 20);
//   perceptron::HashTrace trace;
//   PERCEPTRON_RETURN_IF_ERROR(hasher.Hash(x, &out, &trace));
//   ... the model learns from `out` ...
//   names.Record(x, trace);
//   names.NamesOf(slot);  // {"ns^name", "ns^name=value", "a^x*b^y", ...}
//
// A name is written as Vowpal Wabbit's audit output writes it (FeatureKey;
// an interaction's two keys joined by '*'). Two names are the same here when
// their 32-bit hashes before masking agree.
//
// Cost: each slot has two tags, 8 bits of the hash of each of the first two
// names seen on it (2 bytes a slot: 2 MiB at 2^20 slots, allocated at the
// first name), read for every feature of every example recorded; only a
// feature whose 8 bits are neither of its slot's tags (a new slot, a second
// name on a slot, a third or later one) goes further, and only a third or
// later name looks the names up. So a name is told apart from the first two
// of its slot unless its 8 bits equal one of theirs (1 time in 255 for a
// second name, 2 in 255 for a later one).
//
// Bounded: names are kept, each for NameBytes of its name, until they would
// pass `limit_bytes`; after that none is added, the names kept stay, and the
// slots first seen after that are counted as unnamed. A limit of 0 keeps
// nothing and allocates nothing.
//
// Not thread-safe; a model's lock guards it.
#ifndef PERCEPTRON_CORE_NAME_TABLE_H_
#define PERCEPTRON_CORE_NAME_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/byte_budget.h"
#include "core/feature_hash.h"
#include "core/prefetch.h"

namespace perceptron {

// One name kept on one slot.
struct NamedSlot {
  uint32_t slot = 0;
  uint32_t hash = 0;  // the name's hash before masking; slot = hash & mask
  std::string name;
  friend bool operator==(const NamedSlot&, const NamedSlot&) = default;
};

// A table's names in the order kept, and its count of unnamed slots; also
// what a journal carries (the names kept since the last TakeAdded).
struct NameTableState {
  std::vector<NamedSlot> names;
  uint64_t unnamed_slots = 0;
  friend bool operator==(const NameTableState&,
                         const NameTableState&) = default;
};

// The longest name a table keeps: an interaction of two longest keys.
inline constexpr size_t kMaxTableNameBytes = 2 * (3 * kMaxNameBytes + 2) + 1;
// The default limit on a table's names.
inline constexpr size_t kDefaultNameTableBytes = size_t{8} << 20;

class NameTable {
 public:
  NameTable(uint32_t bits, size_t limit_bytes);
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // What one kept name counts against the limit: its bytes and its entry
  // (the name's record, its place in the slot index, its chain link).
  static size_t NameBytes(size_t name_size) { return 64 + name_size; }

  // Records the names of an example's coordinates: `x` and `trace` as a
  // successful FeatureHasher::Hash of this table's bits left them.
  void Record(absl::Span<const NamedFeature> x, const HashTrace& trace) {
    if (limit_bytes_ == 0) return;
    if (tags_.empty()) BuildTags();
    for (const HashTrace::Term& t : trace.terms) {
      const Tags tags = tags_[t.hash & mask_];
      const uint8_t tag = Tag(t.hash);
      if (tags.first != tag && tags.second != tag) Slow(x, t);
    }
  }

  // Asks for the tags Record will read for `trace` (a row's slots are at
  // random in a table of 2 bytes a slot, 2 MiB at 2^20: past the caches),
  // so that they come while the model learns the row before. Changes
  // nothing.
  void Prefetch(const HashTrace& trace) const {
    if (limit_bytes_ == 0 || tags_.empty()) return;
    for (const HashTrace::Term& t : trace.terms) {
      PrefetchLine(&tags_[t.hash & mask_]);
    }
  }

  // The names kept on `slot`, the first seen first.
  std::vector<absl::string_view> NamesOf(uint32_t slot) const;

  size_t names() const { return names_.size(); }
  // Slots with two or more names kept.
  uint64_t collided_slots() const { return collided_slots_; }
  // Slots first seen once the table was full.
  uint64_t unnamed_slots() const { return unnamed_slots_; }
  // The names' bytes (NameBytes each) and the tags'.
  size_t name_bytes() const { return name_bytes_.held(); }
  size_t tag_bytes() const { return tags_.size() * sizeof(Tags); }
  size_t limit_bytes() const { return limit_bytes_; }
  // A new limit; names already kept stay, even above it.
  void set_limit_bytes(size_t bytes) { limit_bytes_ = bytes; }
  // The memory for names this table shares with others (a server's
  // --name_tables_mb): a name that does not fit there is not kept either
  // (its slot is counted as unnamed); the names kept already are counted
  // there from now on, whether or not they fit. Null: none.
  void set_budget(std::shared_ptr<ByteBudget> budget);
  uint32_t bits() const { return bits_; }

  NameTableState State() const;
  // Replaces the table with `state`'s names. INVALID_ARGUMENT, nothing
  // changed, if a name does not fit (its slot is not its hash masked, it is
  // empty or too long, or its hash repeats).
  absl::Status Restore(NameTableState state);

  // The names kept since the last TakeAdded or StartJournal, and the count of
  // unnamed slots now.
  NameTableState TakeAdded();
  void StartJournal() { taken_ = names_.size(); }
  // Adds a TakeAdded's names (those not here yet) and takes its count.
  // INVALID_ARGUMENT, nothing changed, as Restore.
  absl::Status Apply(const NameTableState& added);
  // What Apply would answer, changing nothing.
  absl::Status CheckAdded(const NameTableState& added) const {
    return Check(added.names);
  }

 private:
  // A slot's tags; 0 is none yet.
  struct Tags {
    uint8_t first = 0;
    uint8_t second = 0;
  };
  static uint8_t Tag(uint32_t hash) {
    const uint8_t t = static_cast<uint8_t>(hash >> 24);
    return t == 0 ? 1 : t;
  }
  // Allocates the tags, set from the names kept.
  void BuildTags();
  // Sets the next free tag of `slot` to `tag`, if one is free.
  void SetTag(uint32_t slot, uint8_t tag) {
    Tags& t = tags_[slot];
    if (t.first == 0) {
      t.first = tag;
    } else if (t.second == 0) {
      t.second = tag;
    }
  }
  void Slow(absl::Span<const NamedFeature> x, const HashTrace::Term& t);
  // True if `hash` is kept on its slot.
  bool Kept(uint32_t hash) const;
  // Keeps a name, checked; `taken`: its bytes are in name_bytes_ already.
  void Add(NamedSlot n, bool taken = false);
  absl::Status Check(absl::Span<const NamedSlot> names) const;

  uint32_t bits_;
  uint32_t mask_;
  size_t limit_bytes_;
  std::vector<Tags> tags_;
  std::vector<NamedSlot> names_;
  // names_[i]'s next name on its slot, or kEnd.
  std::vector<uint32_t> next_;
  static constexpr uint32_t kEnd = ~uint32_t{0};
  // A slot's first and last names kept.
  absl::flat_hash_map<uint32_t, std::pair<uint32_t, uint32_t>> slots_;
  // The names' bytes, in the budget shared with other tables (if any).
  HeldBytes name_bytes_;
  uint64_t collided_slots_ = 0;
  uint64_t unnamed_slots_ = 0;
  size_t taken_ = 0;
};

}  // namespace perceptron

#endif  // PERCEPTRON_CORE_NAME_TABLE_H_
