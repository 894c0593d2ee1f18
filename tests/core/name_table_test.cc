// The names a hashing model keeps per slot (core/name_table.h): what is kept,
// collisions, the limit, and the state and journal that carry it.
#include "core/name_table.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/byte_budget.h"
#include "core/feature_hash.h"
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Hashes `x` with `hasher` and records it in `table`; the hashed vector out.
Features RecordOne(const FeatureHasher& hasher,
                   const std::vector<NamedFeature>& x, NameTable* table) {
  Features out;
  HashTrace trace;
  EXPECT_TRUE(hasher.Hash(x, &out, &trace).ok());
  table->Record(x, trace);
  return out;
}

TEST(NameTableTest, KeepsEachSlotsNamesAsVwAuditWritesThem) {
  FeatureHasher hasher(18, {"ab"});
  NameTable table(18, kDefaultNameTableBytes);
  std::vector<NamedFeature> x = {
      {.space = "a", .name = "age", .value = 2},
      {.space = "b", .name = "city", .category = "paris", .categorical = true},
      {.name = "plain"},
  };
  const Features f = RecordOne(hasher, x, &table);
  // Three names and their one interaction a^age * b^city=paris.
  ASSERT_EQ(f.indices.size(), 4u);
  EXPECT_EQ(table.names(), 4u);
  const uint32_t mask = (1u << 18) - 1;
  const uint32_t a = VwHashString("a", 0), b = VwHashString("b", 0);
  const uint32_t age = VwHashString("age", a);
  const uint32_t paris = VwHashString("paris", VwHashString("city", b));
  EXPECT_THAT(table.NamesOf(age & mask), ElementsAre("a^age"));
  EXPECT_THAT(table.NamesOf(paris & mask), ElementsAre("b^city=paris"));
  EXPECT_THAT(table.NamesOf(VwHashString("plain", 0) & mask),
              ElementsAre("plain"));
  const uint32_t pair = ((age & mask) * 16777619u) ^ (paris & mask);
  EXPECT_THAT(table.NamesOf(pair & mask), ElementsAre("a^age*b^city=paris"));
  EXPECT_EQ(table.collided_slots(), 0u);
  EXPECT_EQ(table.tag_bytes(), size_t{2} << 18);
  // The same example again keeps nothing new.
  RecordOne(hasher, x, &table);
  EXPECT_EQ(table.names(), 4u);
}

TEST(NameTableTest, FindsCollisionsAsTheSlotsOfTheNamesSay) {
  // 300 names on 64 slots: most slots get several. The expected table is
  // computed from each name's hash alone; a name whose 8-bit tag equals one
  // of its slot's first two tags is not told apart (the table's documented
  // blind spot), so the expectation leaves those out too.
  constexpr uint32_t kBits = 6;
  FeatureHasher hasher(kBits, {});
  NameTable table(kBits, kDefaultNameTableBytes);
  std::map<uint32_t, std::vector<std::string>> expected;
  std::map<uint32_t, std::vector<uint32_t>> tags;
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) words.push_back(absl::StrCat("word", i));
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < words.size(); i += 3) {
      std::vector<NamedFeature> x;
      for (size_t k = i; k < i + 3 && k < words.size(); ++k) {
        x.push_back({.space = "t", .name = words[k]});
      }
      RecordOne(hasher, x, &table);
    }
  }
  const uint32_t seed = VwHashString("t", 0);
  size_t collided = 0, kept = 0, blind = 0;
  for (const std::string& w : words) {
    const uint32_t h = VwHashString(w, seed);
    const uint32_t slot = h & 63;
    const uint32_t tag = (h >> 24) == 0 ? 1 : h >> 24;
    std::vector<uint32_t>& t = tags[slot];
    if (std::find(t.begin(), t.end(), tag) != t.end()) {
      ++blind;
      continue;
    }
    if (t.size() < 2) t.push_back(tag);
    expected[slot].push_back("t^" + w);
  }
  for (const auto& [slot, names] : expected) {
    std::vector<std::string> got;
    for (absl::string_view n : table.NamesOf(slot)) got.emplace_back(n);
    EXPECT_EQ(got, names) << "slot " << slot;
    kept += names.size();
    if (names.size() > 1) ++collided;
  }
  EXPECT_EQ(table.names(), kept);
  EXPECT_EQ(table.collided_slots(), collided);
  EXPECT_GT(collided, 50u);
  EXPECT_LT(blind, 10u);
}

TEST(NameTableTest, StopsAtItsLimitAndCountsTheSlotsLeftUnnamed) {
  FeatureHasher hasher(20, {});
  const size_t limit = 10 * NameTable::NameBytes(std::string("t^w10").size());
  NameTable table(20, limit);
  std::set<uint32_t> slots;
  for (int i = 10; i < 40; ++i) {
    const Features f = RecordOne(
        hasher, {{.space = "t", .name = absl::StrCat("w", i)}}, &table);
    slots.insert(f.indices[0]);
  }
  ASSERT_EQ(slots.size(), 30u);  // no collision among these at 2^20
  EXPECT_EQ(table.names(), 10u);
  EXPECT_LE(table.name_bytes(), limit);
  EXPECT_EQ(table.unnamed_slots(), 20u);
  // Seen again, they are neither kept nor counted twice.
  for (int i = 10; i < 40; ++i) {
    RecordOne(hasher, {{.space = "t", .name = absl::StrCat("w", i)}}, &table);
  }
  EXPECT_EQ(table.names(), 10u);
  EXPECT_EQ(table.unnamed_slots(), 20u);
  EXPECT_THAT(table.NamesOf(VwHashString("w10", VwHashString("t", 0)) &
                            ((1u << 20) - 1)),
              ElementsAre("t^w10"));
  EXPECT_THAT(table.NamesOf(VwHashString("w39", VwHashString("t", 0)) &
                            ((1u << 20) - 1)),
              IsEmpty());
}

TEST(NameTableTest, ALimitOfZeroKeepsNothingAndAllocatesNothing) {
  FeatureHasher hasher(20, {});
  NameTable table(20, 0);
  RecordOne(hasher, {{.name = "a"}, {.name = "b"}}, &table);
  EXPECT_EQ(table.names(), 0u);
  EXPECT_EQ(table.tag_bytes(), 0u);
  EXPECT_EQ(table.unnamed_slots(), 0u);
}

TEST(NameTableTest, StateAndJournalCarryTheTable) {
  FeatureHasher hasher(8, {"tt"});
  NameTable table(8, kDefaultNameTableBytes);
  NameTable replica(8, kDefaultNameTableBytes);
  table.StartJournal();
  for (int i = 0; i < 50; ++i) {
    RecordOne(hasher,
              {{.space = "t", .name = absl::StrCat("w", i % 17), .value = 2},
               {.space = "t", .name = absl::StrCat("v", i % 5)}},
              &table);
    if (i % 7 == 0) {
      ASSERT_TRUE(replica.Apply(table.TakeAdded()).ok());
    }
  }
  ASSERT_TRUE(replica.Apply(table.TakeAdded()).ok());
  EXPECT_EQ(replica.State(), table.State());
  EXPECT_EQ(replica.collided_slots(), table.collided_slots());
  // A journal applied twice (a replay over a snapshot that has it) adds
  // nothing.
  NameTableState all = table.State();
  ASSERT_TRUE(replica.Apply(all).ok());
  EXPECT_EQ(replica.State(), table.State());

  NameTable restored(8, kDefaultNameTableBytes);
  ASSERT_TRUE(restored.Restore(table.State()).ok());
  EXPECT_EQ(restored.State(), table.State());
  // Recording goes on from a restored table without repeating a name.
  for (NameTable* t : {&table, &restored}) {
    RecordOne(hasher,
              {{.space = "t", .name = "w3", .value = 2},
               {.space = "t", .name = "new"}},
              t);
  }
  EXPECT_EQ(restored.State(), table.State());
}

TEST(NameTableTest, RefusesAStateThatDoesNotFit) {
  NameTable table(8, kDefaultNameTableBytes);
  const NameTableState before = table.State();
  EXPECT_THAT(
      table.Restore({.names = {{.slot = 5, .hash = 0x1234, .name = "x"}}})
          .message(),
      HasSubstr("not on its hash's slot"));
  EXPECT_THAT(
      table.Restore({.names = {{.slot = 0x34, .hash = 0x1234, .name = ""}}})
          .message(),
      HasSubstr("0 bytes"));
  EXPECT_THAT(
      table
          .Apply({.names = {{.slot = 0x34, .hash = 0x1234, .name = "x"},
                            {.slot = 0x34, .hash = 0x1234, .name = "y"}}})
          .message(),
      HasSubstr("repeats"));
  EXPECT_EQ(table.State(), before);
}

TEST(NameTableTest, AModelJournalsItsNamesAndRestoresThem) {
  ModelConfig config;
  config.hash_bits = 10;
  config.dimension = 1u << 10;
  config.interactions = {"ab"};
  ASSERT_TRUE(ValidateConfig(config).ok());
  auto model = *Model::Create(config);
  auto replica = *Model::Create(config);
  model->SetJournaling(true);
  ASSERT_NE(model->names(), nullptr);
  for (int i = 0; i < 40; ++i) {
    // The features borrow their strings: these outlive them.
    const std::string word = absl::StrCat("w", i % 13);
    const std::string category = absl::StrCat("c", i % 3);
    std::vector<NamedFeature> x(2);
    x[0].space = "a";
    x[0].name = word;
    x[1].space = "b";
    x[1].name = "k";
    x[1].category = category;
    x[1].categorical = true;
    Features f;
    HashTrace trace;
    ASSERT_TRUE(model->hasher()->Hash(x, &f, &trace).ok());
    ASSERT_TRUE(model->Learn(f.view(), i % 2 == 0 ? 1 : -1).ok());
    model->names()->Record(x, trace);
    if (i % 9 == 0) {
      ASSERT_TRUE(replica->ApplyJournal(model->TakeJournal()).ok());
    }
  }
  ASSERT_TRUE(replica->ApplyJournal(model->TakeJournal()).ok());
  EXPECT_EQ(replica->ExportState(), model->ExportState());
  EXPECT_EQ(model->ExportState().names.names.size(), 13u + 3 + 13 * 3);
  auto restored = *Model::FromState(model->ExportState());
  EXPECT_EQ(restored->ExportState(), model->ExportState());
  // Reset keeps the names: they describe the slots, not what was learned.
  model->Reset();
  EXPECT_EQ(model->names()->names(), 13u + 3 + 13 * 3);
  // A model that hashes nothing takes no names.
  ModelConfig plain;
  plain.dimension = 4;
  ModelState s = (*Model::Create(plain))->ExportState();
  s.names.names.push_back({.slot = 1, .hash = 1, .name = "x"});
  EXPECT_THAT(Model::FromState(s).status().message(),
              HasSubstr("names for a model that hashes none"));
}

// Tables sharing a budget keep no more names together than it allows: a name
// past it is not kept (its slot counted unnamed), a table destroyed gives its
// bytes back, and a restored table's names are counted whether or not they
// fit.
TEST(NameTableTest, TablesSharingABudgetKeepNoMoreThanIt) {
  FeatureHasher hasher(18, {});
  const size_t one = NameTable::NameBytes(std::string("t^w0").size());
  auto budget = std::make_shared<ByteBudget>(3 * one, "names are taken");
  auto a = std::make_unique<NameTable>(18, kDefaultNameTableBytes);
  NameTable b(18, kDefaultNameTableBytes);
  RecordOne(hasher, {{.space = "t", .name = "w0"}}, a.get());  // before
  a->set_budget(budget);
  b.set_budget(budget);
  EXPECT_EQ(budget->used(), one);
  RecordOne(hasher, {{.space = "t", .name = "w1"}}, a.get());
  RecordOne(hasher,
            {{.space = "t", .name = "w2"}, {.space = "t", .name = "w3"}}, &b);
  EXPECT_EQ(a->names(), 2u);
  EXPECT_EQ(b.names(), 1u);
  EXPECT_EQ(b.unnamed_slots(), 1u);
  EXPECT_EQ(budget->used(), 3 * one);
  const NameTableState kept = a->State();
  a.reset();
  EXPECT_EQ(budget->used(), one);
  RecordOne(hasher, {{.space = "t", .name = "w4"}}, &b);
  EXPECT_EQ(b.names(), 2u);
  EXPECT_EQ(budget->used(), 2 * one);
  // A restore counts what it brings, past the limit too, and gives back
  // what it replaces.
  ASSERT_TRUE(b.Restore(kept).ok());
  EXPECT_EQ(b.names(), 2u);
  EXPECT_EQ(budget->used(), 2 * one);
  NameTable c(18, kDefaultNameTableBytes);
  c.set_budget(budget);
  NameTableState three = kept;
  three.names.push_back(b.State().names[0]);
  three.names.back().hash ^= 1u << 31;  // another name on the same slot
  three.names.back().name = "t^other";
  ASSERT_TRUE(c.Restore(three).ok());
  EXPECT_GT(budget->used(), 3 * one);
  b.set_budget(nullptr);
  EXPECT_EQ(budget->used(), c.name_bytes());
}

}  // namespace
}  // namespace perceptron
