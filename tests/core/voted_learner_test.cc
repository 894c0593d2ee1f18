// The voted perceptron against a naive reference that keeps every vector.
#include "core/voted_learner.h"

#include <deque>

#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::Augmented;
using testing::MakeStream;
using testing::NaiveDot;

// Freund & Schapire's voted perceptron as docs/design.md section 2, 3 states
// it: c_k is the number of examples w_k survived; at most `cap` past vectors
// are kept (the oldest dropped).
class NaiveVoted {
 public:
  NaiveVoted(size_t dim, size_t cap) : w_(dim, 0.0), cap_(cap) {}
  double Score(const std::vector<double>& x) const {
    double s = c_ * (NaiveDot(w_, x) >= 0 ? 1 : -1);
    for (const auto& [v, c] : past_) s += c * (NaiveDot(v, x) >= 0 ? 1 : -1);
    return s;
  }
  void Learn(const std::vector<double>& x, int y) {
    if (y * NaiveDot(w_, x) > 0) {
      ++c_;
      return;
    }
    if (c_ > 0) past_.emplace_back(w_, c_);
    if (past_.size() > cap_) past_.pop_front(), ++dropped_;
    for (size_t i = 0; i < x.size(); ++i) w_[i] += y * x[i];
    c_ = 0;
  }
  size_t stored() const { return past_.size() + 1; }
  size_t dropped() const { return dropped_; }

 private:
  std::vector<double> w_;
  double c_ = 0;
  std::deque<std::pair<std::vector<double>, double>> past_;
  size_t cap_;
  size_t dropped_ = 0;
};

TEST(VotedLearnerTest, PredictionsEqualTheNaiveVoteOnSmallStreams) {
  uint64_t compared = 0;
  for (int k = 0; k < 80; ++k) {
    testing::StreamSpec spec;
    spec.dimension = 2 + k % 5;
    spec.bias = k % 2 == 0;
    spec.normalize = k % 3 != 0;
    spec.margin = 0;
    spec.noise = 0.05 * (k % 5);
    spec.length = 60 + 3 * k;
    spec.seed = 700 + k;
    const testing::Stream s = MakeStream(spec);
    ModelConfig c = testing::StreamConfig(spec);
    c.algorithm = Algorithm::kVoted;
    c.max_voted_vectors =
        k % 2 == 0 ? 1000 : 4;  // half the streams run into the cap
    auto model = *Model::Create(c);
    NaiveVoted naive(c.weight_dimension(), c.max_voted_vectors);
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      const Prediction p = *model->Predict(FeatureView::Dense(s.x[t]));
      ASSERT_EQ(p.score, naive.Score(xa)) << "stream " << k << " t " << t;
      ++compared;
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      naive.Learn(xa, s.y[t]);
    }
    const Stats st = model->stats();
    EXPECT_EQ(st.figures.voted_vectors, naive.stored());
    EXPECT_EQ(st.figures.dropped, naive.dropped());
    EXPECT_LE(st.figures.voted_vectors, c.max_voted_vectors + 1);
  }
  EXPECT_GT(compared, 10000u);
}

TEST(VotedLearnerTest, SurvivalCountsWeightTheVote) {
  ModelConfig c;
  c.dimension = 1;
  c.bias = false;
  c.normalize = false;
  c.algorithm = Algorithm::kVoted;
  auto model = *Model::Create(c);
  const std::vector<double> pos = {1}, neg = {-1};
  // w = (1) survives 3 examples, then a flipped label sends it back to 0.
  ASSERT_TRUE(model->Learn(FeatureView::Dense(pos), 1)->updated);  // w = 1
  for (int i = 0; i < 3; ++i)
    ASSERT_FALSE(model->Learn(FeatureView::Dense(pos), 1)->updated);
  ASSERT_TRUE(
      model->Learn(FeatureView::Dense(pos), -1)->updated);  // w = 0, c(w=1) = 3
  // Current w = 0 has survived nothing: the vote is 3 * sign(1 * x).
  EXPECT_EQ(model->Predict(FeatureView::Dense(pos))->score, 3);
  EXPECT_EQ(model->Predict(FeatureView::Dense(neg))->score, -3);
  EXPECT_EQ(model->stats().figures.voted_vectors, 2u);
}

}  // namespace
}  // namespace perceptron
