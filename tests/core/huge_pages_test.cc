#include "core/huge_pages.h"

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

// Large vectors (whose whole 2 MiB pages are advised and dropped) and small
// ones (left alone) hold exactly the values asked for, also where the
// allocator hands back memory that was written before.
TEST(HugePagesTest, VectorsHoldTheirValuesWhateverTheirSize) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 19,
                   (size_t{3} << 20) + 7}) {
    {
      // Memory written and freed, which the next allocation may reuse.
      std::vector<double> used(n, -3.5);
      ASSERT_EQ(used.size(), n);
    }
    const std::vector<double> v = HugeVector<double>(n, 0.25);
    ASSERT_EQ(v.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 0.25) << n << " " << i;
    const std::vector<double> zeros = HugeVector<double>(n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(zeros[i], 0.0) << n << " " << i;
  }
}

TEST(HugePagesTest, OnHugePagesKeepsEveryValue) {
  std::mt19937_64 rng(3);
  for (size_t n : {size_t{10}, size_t{1} << 20}) {
    std::vector<uint64_t> v(n);
    for (uint64_t& e : v) e = rng();
    const std::vector<uint64_t> moved = OnHugePages(v);
    EXPECT_EQ(moved, v) << n;
  }
}

TEST(HugePagesTest, OnlyWholeHugePagesInsideTheRangeAreAdvised) {
  EXPECT_FALSE(AdviseHugePages(nullptr, kHugeArrayBytes));
  std::vector<char> small(kHugePageBytes);  // no whole aligned page inside
  EXPECT_FALSE(AdviseHugePages(small.data() + 1, kHugePageBytes - 1));
}

// A hash table on the allocator: large tables (advised) find every key.
TEST(HugePagesTest, AHashTableOnTheAllocatorFindsEveryKey) {
  absl::flat_hash_map<uint32_t, uint32_t, absl::Hash<uint32_t>,
                      std::equal_to<uint32_t>,
                      HugePageAllocator<std::pair<const uint32_t, uint32_t>>>
      table;
  constexpr uint32_t kKeys = 1u << 20;  // 8 MiB of slots and more
  for (uint32_t i = 0; i < kKeys; ++i) table.emplace(i * 2u, i);
  ASSERT_EQ(table.size(), kKeys);
  for (uint32_t i = 0; i < kKeys; ++i) {
    const auto it = table.find(i * 2u);
    ASSERT_NE(it, table.end()) << i;
    ASSERT_EQ(it->second, i);
  }
  EXPECT_EQ(table.find(1), table.end());
}

}  // namespace
}  // namespace perceptron
