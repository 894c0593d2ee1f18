#include "server/model/history.h"

#include "gtest/gtest.h"
#include "server/model/curves.h"

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
  EXPECT_EQ(sizeof(HistoryPoint), 56u);
}

TEST(HistoryTest, BoundIsAbsentUnlessSet) {
  HistoryPoint p = At(5);
  EXPECT_FALSE(p.has_bound());
  EXPECT_FALSE(p.has_td_gamma());
  p.bound = 12.5;
  p.td_gamma = 0;
  EXPECT_TRUE(p.has_bound());
  EXPECT_TRUE(p.has_td_gamma());
  EXPECT_FALSE(p.has_certificate());
  p.certificate_upper = 30;
  p.certificate_lower = 29.5;
  EXPECT_TRUE(p.has_certificate());
}

// The certificate's U and L at each point are stored and read back bit for
// bit, in states and in log records; a point with one and not the other, or
// with a value that is not finite, is refused.
TEST(HistoryTest, TheCertificateAtEachPointIsStoredAndChecked) {
  History h(8);
  RecentWindow recent(4);
  CurvesJournal journal;
  for (uint64_t e = 1; e <= 40; ++e) {
    if (!h.Due(e)) continue;
    HistoryPoint p = At(e);
    if (e > 3) {
      p.certificate_upper = 100.0 / 3 + e;
      p.certificate_lower = 0.1 * e;
    }
    h.Add(p);
    journal.points.push_back(p);
  }
  v1::CurvesState state;
  CurvesToProto(recent, h, &state);
  History back(8);
  RecentWindow recent_back(4);
  ASSERT_TRUE(CurvesFromProto(state, &recent_back, &back).ok());
  ASSERT_EQ(back.points().size(), h.points().size());
  int with = 0;
  for (size_t i = 0; i < h.points().size(); ++i) {
    const HistoryPoint& a = h.points()[i];
    const HistoryPoint& b = back.points()[i];
    ASSERT_EQ(a.has_certificate(), b.has_certificate());
    if (!a.has_certificate()) continue;
    ++with;
    EXPECT_EQ(a.certificate_upper, b.certificate_upper);
    EXPECT_EQ(a.certificate_lower, b.certificate_lower);
  }
  EXPECT_GT(with, 0);
  v1::CurvesDelta delta;
  CurvesDeltaToProto(journal, &delta);
  ASSERT_TRUE(CheckCurvesDelta(delta).ok());
  EXPECT_EQ(delta.points_added(5).certificate_upper(),
            journal.points[5].certificate_upper);
  v1::CurvesDelta half = delta;
  half.mutable_points_added(5)->clear_certificate_lower();
  EXPECT_FALSE(CheckCurvesDelta(half).ok());
  v1::CurvesDelta infinite = delta;
  infinite.mutable_points_added(5)->set_certificate_upper(
      std::numeric_limits<double>::infinity());
  EXPECT_FALSE(CheckCurvesDelta(infinite).ok());
  v1::CurvesState bad = state;
  bad.mutable_history()->mutable_points(3)->clear_certificate_upper();
  EXPECT_FALSE(CurvesFromProto(bad, &recent_back, &back).ok());
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
