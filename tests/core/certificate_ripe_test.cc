// When the certificate's rows are worth a solve (CertificateTracker::ripe):
// the first rows at once, then once the examples kept or seen again since the
// last Take are an eighth of those taken, or the places counted again reach
// kRipeRepeats, and a freeze at once.
#include <random>
#include <vector>

#include "core/certificate_tracker.h"
#include "core/config.h"
#include "core/prepare.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

class Stream {
 public:
  explicit Stream(size_t n) {
    std::mt19937_64 rng(3);
    std::normal_distribution<double> normal;
    for (size_t t = 0; t < n; ++t) {
      std::vector<double>& x = xs_.emplace_back(4);
      for (double& v : x) v = normal(rng);
    }
  }
  // Example t of the stream (the same bits each time it is asked for).
  void Observe(CertificateTracker* tracker, size_t t) const {
    tracker->Observe(*preparer_.Prepare(FeatureView::Dense(xs_[t])),
                     t % 2 ? 1 : -1);
  }

 private:
  static ModelConfig Config() {
    ModelConfig c;
    c.dimension = 4;
    return c;
  }
  const Preparer preparer_{Config()};
  std::vector<std::vector<double>> xs_;
};

TEST(CertificateRipeTest, SolvesAreSpacedByAnEighthOfTheExamplesTaken) {
  const Stream stream(200);
  CertificateTracker tracker(/*limit=*/1000, /*slack=*/100);
  EXPECT_FALSE(tracker.ripe());  // nothing kept
  stream.Observe(&tracker, 0);
  EXPECT_TRUE(tracker.ripe());  // nothing taken yet: any row
  for (size_t t = 1; t < 80; ++t) stream.Observe(&tracker, t);
  EXPECT_TRUE(tracker.ripe());
  ASSERT_EQ(tracker.Take().size(), 80u);
  EXPECT_FALSE(tracker.ripe());
  // New rows: ripe at 10 (10 * 8 >= 80), not at 9, though due from the first.
  for (size_t t = 80; t < 89; ++t) stream.Observe(&tracker, t);
  EXPECT_TRUE(tracker.due());
  EXPECT_FALSE(tracker.ripe());
  stream.Observe(&tracker, 89);
  EXPECT_TRUE(tracker.ripe());
  ASSERT_EQ(tracker.Take().size(), 10u);
  // Examples equal to rows taken count too: ripe at 12 (12 * 8 >= 90).
  for (size_t t = 0; t < 11; ++t) stream.Observe(&tracker, t);
  EXPECT_TRUE(tracker.due());
  EXPECT_FALSE(tracker.ripe());
  stream.Observe(&tracker, 11);
  EXPECT_TRUE(tracker.ripe());
  std::vector<uint32_t> repeats;
  EXPECT_EQ(tracker.Take(&repeats).size(), 0u);
  EXPECT_EQ(repeats.size(), 12u);
  EXPECT_FALSE(tracker.ripe());
}

TEST(CertificateRipeTest, ALongStreamOfRepeatsIsRipeAtAFixedCount) {
  // Four rows met again and again: once 2.4 M examples are taken, an eighth
  // of them would be 300,000 places waiting; ripe at kRipeRepeats instead.
  const Stream stream(4);
  CertificateTracker tracker(/*limit=*/1000, /*slack=*/100);
  constexpr size_t kTaken = 2400000;
  static_assert(CertificateTracker::kRipeRepeats * CertificateTracker::kRipe <
                kTaken);
  for (size_t t = 0; t < kTaken; ++t) stream.Observe(&tracker, t % 4);
  std::vector<uint32_t> repeats;
  ASSERT_EQ(tracker.Take(&repeats).size(), 4u);
  EXPECT_EQ(repeats.size(), 0u);  // none taken before: counted in the rows
  EXPECT_FALSE(tracker.ripe());
  for (size_t t = 0; t + 1 < CertificateTracker::kRipeRepeats; ++t)
    stream.Observe(&tracker, t % 4);
  EXPECT_TRUE(tracker.due());
  EXPECT_FALSE(tracker.ripe());
  stream.Observe(&tracker, 3);
  EXPECT_TRUE(tracker.ripe());
  EXPECT_EQ(tracker.Take(&repeats).size(), 0u);
  EXPECT_EQ(repeats.size(), CertificateTracker::kRipeRepeats);
  EXPECT_FALSE(tracker.ripe());
}

TEST(CertificateRipeTest, AFreezeIsRipeAtOnce) {
  const Stream stream(200);
  CertificateTracker tracker(/*limit=*/100, /*slack=*/50);
  for (size_t t = 0; t < 100; ++t) stream.Observe(&tracker, t);
  ASSERT_EQ(tracker.Take().size(), 100u);
  ASSERT_EQ(tracker.phase(), CertificatePhase::kFreezing);
  stream.Observe(&tracker, 100);  // one row of the tail: not an eighth
  EXPECT_TRUE(tracker.ripe());
}

}  // namespace
}  // namespace perceptron
