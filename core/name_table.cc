#include "core/name_table.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace perceptron {

NameTable::NameTable(uint32_t bits, size_t limit_bytes)
    : bits_(bits),
      mask_(bits >= 32 ? ~uint32_t{0} : (uint32_t{1} << bits) - 1),
      limit_bytes_(limit_bytes) {}

void NameTable::set_budget(std::shared_ptr<ByteBudget> budget) {
  name_bytes_.set_budget(std::move(budget));
}

void NameTable::BuildTags() {
  tags_.assign(size_t{1} << bits_, Tags());
  for (const NamedSlot& n : names_) SetTag(n.slot, Tag(n.hash));
}

void NameTable::Slow(absl::Span<const NamedFeature> x,
                     const HashTrace::Term& t) {
  const uint32_t slot = t.hash & mask_;
  const Tags tags = tags_[slot];
  // A slot whose names are not kept: it was first seen when the table was
  // full.
  const bool unnamed = tags.first != 0 && !slots_.contains(slot);
  if (tags.first != 0 && tags.second != 0) {
    // A third or later name: looked up.
    if (unnamed || Kept(t.hash)) return;
  } else {
    SetTag(slot, Tag(t.hash));
    if (unnamed) return;
  }
  std::string name = FeatureKey(x[t.first]);
  if (t.second != HashTrace::kNone) {
    absl::StrAppend(&name, "*", FeatureKey(x[t.second]));
  }
  const size_t bytes = NameBytes(name.size());
  if (name_bytes_.held() + bytes > limit_bytes_ || !name_bytes_.TryAdd(bytes)) {
    if (tags.first == 0) ++unnamed_slots_;
    return;
  }
  Add({slot, t.hash, std::move(name)}, /*taken=*/true);
}

bool NameTable::Kept(uint32_t hash) const {
  const auto it = slots_.find(hash & mask_);
  if (it == slots_.end()) return false;
  for (uint32_t i = it->second.first; i != kEnd; i = next_[i]) {
    if (names_[i].hash == hash) return true;
  }
  return false;
}

void NameTable::Add(NamedSlot n, bool taken) {
  const uint32_t index = static_cast<uint32_t>(names_.size());
  const uint32_t slot = n.slot;
  const size_t bytes = NameBytes(n.name.size());
  if (!taken) name_bytes_.Add(bytes);
  // A name recorded has set its tag already; one from a journal sets it here.
  if (!tags_.empty()) {
    const Tags t = tags_[slot];
    const uint8_t tag = Tag(n.hash);
    if (t.first != tag && t.second != tag) SetTag(slot, tag);
  }
  names_.push_back(std::move(n));
  next_.push_back(kEnd);
  const auto [it, added] = slots_.try_emplace(slot, index, index);
  if (!added) {
    if (it->second.first == it->second.second) ++collided_slots_;
    next_[it->second.second] = index;
    it->second.second = index;
  }
}

std::vector<absl::string_view> NameTable::NamesOf(uint32_t slot) const {
  std::vector<absl::string_view> out;
  const auto it = slots_.find(slot);
  if (it == slots_.end()) return out;
  for (uint32_t i = it->second.first; i != kEnd; i = next_[i]) {
    out.push_back(names_[i].name);
  }
  return out;
}

NameTableState NameTable::State() const {
  return NameTableState{names_, unnamed_slots_};
}

absl::Status NameTable::Check(absl::Span<const NamedSlot> names) const {
  absl::flat_hash_set<uint32_t> hashes;
  for (size_t i = 0; i < names.size(); ++i) {
    const NamedSlot& n = names[i];
    if (n.slot != (n.hash & mask_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("names: name ", i, " is on slot ", n.slot,
                       ", not on its hash's slot ", n.hash & mask_));
    }
    if (n.name.empty() || n.name.size() > kMaxTableNameBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("names: name ", i, " has ", n.name.size(), " bytes"));
    }
    if (!hashes.insert(n.hash).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("names: name ", i, "'s hash ", n.hash, " repeats"));
    }
  }
  return absl::OkStatus();
}

absl::Status NameTable::Restore(NameTableState state) {
  if (absl::Status s = Check(state.names); !s.ok()) return s;
  // Emptied, then filled (checked: nothing below can fail).
  name_bytes_.Clear();
  tags_ = std::vector<Tags>();
  names_ = std::vector<NamedSlot>();
  next_ = std::vector<uint32_t>();
  slots_ = decltype(slots_)();
  collided_slots_ = 0;
  for (NamedSlot& n : state.names) Add(std::move(n));
  unnamed_slots_ = state.unnamed_slots;
  taken_ = names_.size();
  return absl::OkStatus();
}

NameTableState NameTable::TakeAdded() {
  NameTableState out;
  out.names.assign(names_.begin() + taken_, names_.end());
  out.unnamed_slots = unnamed_slots_;
  taken_ = names_.size();
  return out;
}

absl::Status NameTable::Apply(const NameTableState& added) {
  if (absl::Status s = Check(added.names); !s.ok()) return s;
  for (const NamedSlot& n : added.names) {
    if (!Kept(n.hash)) Add(n);
  }
  unnamed_slots_ = added.unnamed_slots;
  taken_ = names_.size();
  return absl::OkStatus();
}

}  // namespace perceptron
