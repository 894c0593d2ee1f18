#include "server/model/history.h"

#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

HistoryPoint At(uint64_t examples) {
  HistoryPoint p;
  p.examples = examples;
  p.mistakes = examples / 10;
  p.updates = examples / 10;
  return p;
}

// Feeds examples 1..n, adding a point whenever one is due, as a model does.
History Feed(uint64_t n, size_t capacity) {
  History h(capacity);
  for (uint64_t e = 1; e <= n; ++e) {
    if (h.Due(e)) h.Add(At(e));
  }
  return h;
}

TEST(HistoryTest, HoldsAtMostCapacityPointsEvenlySpacedOverTheWholeStream) {
  for (uint64_t n : {1u, 7u, 8u, 9u, 100u, 1000u, 123457u}) {
    SCOPED_TRACE(n);
    const History h = Feed(n, 8);
    const std::vector<HistoryPoint>& p = h.points();
    ASSERT_FALSE(p.empty());
    EXPECT_LT(p.size(), 8u);
    EXPECT_EQ(p.front().examples, 1u);
    // The last point is within one stride of the stream's end.
    EXPECT_GT(p.back().examples + h.stride(), n);
    for (size_t i = 1; i < p.size(); ++i) {
      EXPECT_EQ(p[i].examples - p[i - 1].examples, h.stride()) << i;
    }
  }
  // Thinning doubles the stride: 123457 examples in under 8 points.
  EXPECT_EQ(Feed(123457, 8).stride(), 32768u);
}

TEST(HistoryTest, MemoryGrowsWithThePointsHeldAndNoFurther) {
  History h;
  EXPECT_EQ(h.points().capacity(), 0u);  // nothing reserved for a new model
  for (uint64_t e = 1; e <= 1000000; ++e) {
    if (h.Due(e)) h.Add(At(e));
    ASSERT_LE(h.points().capacity(), kHistoryCapacity);
  }
  EXPECT_EQ(sizeof(HistoryPoint), 40u);
}

TEST(HistoryTest, BoundIsAbsentUnlessSet) {
  HistoryPoint p = At(5);
  EXPECT_FALSE(p.has_bound());
  EXPECT_FALSE(p.has_td_gamma());
  p.bound = 12.5;
  p.td_gamma = 0;
  EXPECT_TRUE(p.has_bound());
  EXPECT_TRUE(p.has_td_gamma());
}

TEST(HistoryTest, ClearStartsAgainWithTheSameCapacity) {
  History h = Feed(5000, 16);
  ASSERT_GT(h.stride(), 1u);
  h.Clear();
  EXPECT_TRUE(h.points().empty());
  EXPECT_EQ(h.stride(), 1u);
  EXPECT_EQ(h.capacity(), 16u);
  EXPECT_TRUE(h.Due(1));
}

}  // namespace
}  // namespace perceptron::server
