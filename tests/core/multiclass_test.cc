// The multiclass perceptron (docs/design.md section 2.8) against references
// written here from the design, its bound as a property over random streams,
// and its state through export, journals, delayed reveals and Train.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/candidate_sums.h"
#include "core/certificate_tracker.h"
#include "core/model.h"
#include "core/multiclass_certificate.h"
#include "core/multiclass_learner.h"
#include "gtest/gtest.h"
#include "tests/core/streams.h"

namespace perceptron {
namespace {

using testing::Augmented;
using testing::NaiveDot;

struct ClassStream {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  // The k unit-norm class vectors the labels come from, one after another
  // (weight dimension entries each), scaled together to Frobenius norm 1.
  std::vector<double> separator;
};

struct ClassSpec {
  int classes = 3;
  uint32_t dimension = 4;
  size_t length = 300;
  bool bias = true;
  bool normalize = true;
  // Integer features in -4..4: with normalize off every sum is exact, so a
  // reference in any order agrees bit for bit.
  bool integers = false;
  // Examples whose best class wins by less than this are redrawn (before
  // noise; 0: none).
  double margin = 0;
  double noise = 0;  // probability a label is replaced by a random class
  uint64_t seed = 1;
};

ModelConfig ClassConfig(const ClassSpec& spec) {
  ModelConfig c;
  c.dimension = spec.dimension;
  c.bias = spec.bias;
  c.normalize = spec.normalize;
  for (int r = 0; r < spec.classes; ++r)
    c.classes.push_back("c" + std::to_string(r));
  return c;
}

ClassStream MakeClassStream(const ClassSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  std::uniform_int_distribution<int> small(-4, 4);
  const ModelConfig c = ClassConfig(spec);
  const size_t dim = c.weight_dimension();
  ClassStream s;
  s.separator.resize(dim * spec.classes);
  double n2 = 0;
  for (double& v : s.separator) v = normal(rng), n2 += v * v;
  for (double& v : s.separator) v /= std::sqrt(n2);
  int tries = 0;
  while (s.x.size() < spec.length && ++tries < 100000) {
    std::vector<double> x(spec.dimension);
    for (double& v : x) v = spec.integers ? small(rng) : normal(rng);
    const std::vector<double> xa = Augmented(x, c);
    std::vector<double> scores(spec.classes);
    for (int r = 0; r < spec.classes; ++r) {
      scores[r] =
          NaiveDot(std::vector<double>(s.separator.begin() + r * dim,
                                       s.separator.begin() + (r + 1) * dim),
                   xa);
    }
    const Decision d = Decide(scores);
    if (spec.margin > 0 && d.margin < spec.margin) continue;
    int y = d.label;
    if (unit(rng) < spec.noise) y = static_cast<int>(unit(rng) * spec.classes);
    s.x.push_back(std::move(x));
    s.y.push_back(y);
  }
  return s;
}

// The classic rule of docs/design.md section 2.8, naively.
struct NaiveMulticlass {
  int k;
  size_t dim;
  double eta;
  std::vector<std::vector<double>> w;
  NaiveMulticlass(int k, size_t dim, double eta)
      : k(k), dim(dim), eta(eta), w(k, std::vector<double>(dim, 0.0)) {}
  std::vector<double> Scores(const std::vector<double>& xa) const {
    std::vector<double> s(k);
    for (int r = 0; r < k; ++r) s[r] = NaiveDot(w[r], xa);
    return s;
  }
  // Returns whether it updated.
  bool Learn(const std::vector<double>& xa, int y) {
    const std::vector<double> s = Scores(xa);
    int r = -1;
    for (int c = 0; c < k; ++c) {
      if (c != y && (r < 0 || s[c] > s[r])) r = c;
    }
    // A zero x^ (no bias, no normalization) changes nothing: no update.
    bool zero = true;
    for (double v : xa) zero = zero && v == 0;
    if (s[y] > s[r] || zero) return false;
    for (size_t i = 0; i < dim; ++i) {
      w[y][i] += eta * xa[i];
      w[r][i] -= eta * xa[i];
    }
    return true;
  }
};

// The argmax (lowest index among ties) and whether y is strictly above every
// other class, from the design's words.
int NaiveArgmax(const std::vector<double>& s) {
  int best = 0;
  for (size_t r = 1; r < s.size(); ++r) {
    if (s[r] > s[best]) best = static_cast<int>(r);
  }
  return best;
}
bool NaiveMistake(const std::vector<double>& s, int y) {
  for (size_t r = 0; r < s.size(); ++r) {
    if (static_cast<int>(r) != y && s[y] <= s[r]) return true;
  }
  return false;
}

ClassSpec RandomSpec(int n) {
  ClassSpec spec;
  spec.classes = 2 + n % 19;  // 2..20
  spec.dimension = 1 + n % 9;
  spec.bias = n % 3 != 0;
  spec.normalize = n % 2 == 0;
  // Exact sums need integers without normalization; continuous features
  // need two or more of them, or every normalized x^ is +-1 (up to a
  // rounding the reference need not share) and classes tie all the time.
  spec.integers = !spec.normalize && n % 4 != 3;
  if (!spec.integers && spec.dimension == 1) spec.dimension = 2;
  spec.margin = n % 5 == 0 ? 0.02 : 0;
  spec.noise = (n % 5 == 0) ? 0 : 0.05 * (n % 4);
  spec.length = 30 + (37 * n) % 200;
  spec.seed = 1000 + n;
  return spec;
}

TEST(MulticlassTest, DecideTakesTheLowestIndexAmongTies) {
  EXPECT_EQ(Decide(std::vector<double>{0, 0, 0}), (Decision{0, 0}));
  EXPECT_EQ(Decide(std::vector<double>{1, 3, 3}), (Decision{1, 0}));
  EXPECT_EQ(Decide(std::vector<double>{1, 3, 2}), (Decision{1, 1}));
  EXPECT_EQ(Decide(std::vector<double>{5, -1}), (Decision{0, 6}));
  EXPECT_TRUE(MulticlassMistake(Decision{1, 0}, 1));  // won on a tie
  EXPECT_TRUE(MulticlassMistake(Decision{1, 2}, 0));
  EXPECT_FALSE(MulticlassMistake(Decision{1, 2}, 1));
}

TEST(MulticlassTest, ClassicLearnsAsTheRuleOfTheDesign) {
  uint64_t exact = 0, updates = 0;
  for (int n = 0; n < 200; ++n) {
    const ClassSpec spec = RandomSpec(n);
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    c.eta = n % 3 == 0 ? 1.0 : 0.5;
    auto model = *Model::Create(c);
    NaiveMulticlass naive(spec.classes, c.weight_dimension(), c.eta);
    // With integer features and no normalization every sum is an exact
    // integer (or half-integer): the two agree bit for bit.
    const bool bits = spec.integers && !spec.normalize;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      const std::vector<double> scores = naive.Scores(xa);
      const Decision d = Decide(scores);
      const Outcome o = *model->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      const bool updated = naive.Learn(xa, s.y[t]);
      if (!bits && d.margin < 1e-9) continue;  // a near tie: either way
      ASSERT_EQ(o.predicted, NaiveArgmax(scores)) << n << " t " << t;
      ASSERT_EQ(o.mistake, NaiveMistake(scores, s.y[t])) << n << " t " << t;
      ASSERT_EQ(o.updated, updated) << n << " t " << t;
      if (bits) {
        ASSERT_EQ(o.score, d.margin) << n << " t " << t;
      } else {
        ASSERT_NEAR(o.score, d.margin, 1e-9) << n << " t " << t;
      }
    }
    const absl::Span<const double> w = model->weights();
    ASSERT_EQ(w.size(), spec.classes * c.weight_dimension());
    for (int r = 0; r < spec.classes; ++r) {
      for (size_t i = 0; i < c.weight_dimension(); ++i) {
        const double got = w[r * c.weight_dimension() + i];
        if (bits) {
          ASSERT_EQ(got, naive.w[r][i]) << n;
        } else {
          ASSERT_NEAR(got, naive.w[r][i], 1e-9 * (1 + std::abs(got))) << n;
        }
      }
    }
    exact += bits;
    updates += model->counters().updates;
  }
  EXPECT_GT(exact, 40u);
  EXPECT_GT(updates, 2000u);
}

TEST(MulticlassTest, TwoClassesMakeTheBinaryMistakesWithEtaDoubled) {
  for (int n = 0; n < 50; ++n) {
    ClassSpec spec = RandomSpec(n);
    spec.classes = 2;
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    c.eta = 0.75;
    auto multi = *Model::Create(c);
    ModelConfig b = c;
    b.classes.clear();
    b.eta = 2 * c.eta;
    auto binary = *Model::Create(b);
    for (size_t t = 0; t < s.x.size(); ++t) {
      const int y = s.y[t] == 0 ? 1 : -1;  // class 0 is +1
      const Outcome m = *multi->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      const Outcome o = *binary->Learn(FeatureView::Dense(s.x[t]), y);
      ASSERT_EQ(m.mistake, o.mistake) << n << " t " << t;
      ASSERT_EQ(m.updated, o.updated) << n << " t " << t;
    }
    // w_0 = -w_1 and the binary w = w_0 - w_1 = 2 w_0, bit for bit.
    const size_t dim = c.weight_dimension();
    for (size_t i = 0; i < dim; ++i) {
      ASSERT_EQ(multi->weights()[i], -multi->weights()[dim + i]);
      ASSERT_EQ(binary->weights()[i], 2 * multi->weights()[i]);
    }
    EXPECT_EQ(multi->counters(), binary->counters());
  }
}

TEST(MulticlassTest, AveragedPredictsWithTheAverageOfW) {
  uint64_t compared = 0;
  for (int n = 0; n < 60; ++n) {
    const ClassSpec spec = RandomSpec(n);
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    c.algorithm = Algorithm::kAveraged;
    auto model = *Model::Create(c);
    auto classic = *Model::Create(ClassConfig(spec));
    NaiveMulticlass naive(spec.classes, c.weight_dimension(), 1.0);
    NaiveMulticlass sum(spec.classes, c.weight_dimension(), 1.0);
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      std::vector<double> avg = sum.Scores(xa);
      for (double& v : avg) v = t == 0 ? 0 : v / static_cast<double>(t);
      const std::vector<double> got =
          *model->Scores(FeatureView::Dense(s.x[t]));
      for (int r = 0; r < spec.classes; ++r) {
        ASSERT_NEAR(got[r], avg[r], 1e-9 * (1 + std::abs(avg[r])));
      }
      const Outcome o = *model->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      if (Decide(avg).margin > 1e-9) {
        ASSERT_EQ(o.predicted, NaiveArgmax(avg)) << n << " t " << t;
        ++compared;
      }
      // It learns as classic.
      ASSERT_EQ(o.updated,
                classic->Learn(FeatureView::Dense(s.x[t]), s.y[t])->updated);
      naive.Learn(xa, s.y[t]);
      for (int r = 0; r < spec.classes; ++r) {
        for (size_t i = 0; i < naive.dim; ++i) sum.w[r][i] += naive.w[r][i];
      }
    }
    for (size_t i = 0; i < model->weights().size(); ++i)
      ASSERT_EQ(model->weights()[i], classic->weights()[i]);
  }
  EXPECT_GT(compared, 3000u);
}

TEST(MulticlassTest, VotedVotesWithTheExamplesEachWSurvived) {
  uint64_t compared = 0;
  for (int n = 0; n < 40; ++n) {
    ClassSpec spec = RandomSpec(n);
    spec.normalize = false;
    spec.integers = true;
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    c.algorithm = Algorithm::kVoted;
    auto model = *Model::Create(c);
    NaiveMulticlass naive(spec.classes, c.weight_dimension(), 1.0);
    // Past W's and the examples each survived.
    std::vector<std::pair<std::vector<std::vector<double>>, uint64_t>> past;
    uint64_t survived = 0;
    for (size_t t = 0; t < s.x.size(); ++t) {
      const std::vector<double> xa = Augmented(s.x[t], c);
      std::vector<double> votes(spec.classes, 0.0);
      votes[NaiveArgmax(naive.Scores(xa))] += survived;
      for (const auto& [w, c_k] : past) {
        NaiveMulticlass p = naive;
        p.w = w;
        votes[NaiveArgmax(p.Scores(xa))] += c_k;
      }
      const Outcome o = *model->Learn(FeatureView::Dense(s.x[t]), s.y[t]);
      const std::vector<std::vector<double>> before = naive.w;
      const bool updated = naive.Learn(xa, s.y[t]);
      if (updated) {
        if (survived > 0) past.emplace_back(before, survived);
        survived = 0;
      } else {
        ++survived;
      }
      ASSERT_EQ(o.updated, updated) << n << " t " << t;
      // Exact sums (integers, no normalization): the votes agree exactly.
      ASSERT_EQ(o.predicted, NaiveArgmax(votes)) << n << " t " << t;
      ASSERT_EQ(o.score, Decide(votes).margin) << n << " t " << t;
      compared += o.score > 0;
    }
    EXPECT_EQ(model->stats().figures.voted_vectors, past.size() + 1);
  }
  EXPECT_GT(compared, 3000u);
}

TEST(MulticlassTest, UpdatesStayWithinTheBoundOverRandomStreams) {
  uint64_t checked = 0, streams_with_mistakes = 0;
  for (int n = 0; n < 1000; ++n) {
    const ClassSpec spec = RandomSpec(n);
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    // The generating comparator, and for odd n a random one.
    std::vector<double> u = s.separator;
    if (n % 2 == 1) {
      std::mt19937_64 rng(n);
      std::normal_distribution<double> normal;
      for (double& v : u) v = normal(rng);
    }
    c.comparator = u;
    c.gamma = 0.01 + 0.2 * ((n * 7) % 10) / 10.0;
    c.algorithm = n % 3 == 0
                      ? Algorithm::kClassic
                      : (n % 3 == 1 ? Algorithm::kAveraged : Algorithm::kVoted);
    auto model = *Model::Create(c);
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      const Stats st = model->stats(false);
      ASSERT_TRUE(st.bound.bound_available);
      ASSERT_LE(static_cast<double>(st.counters.updates),
                st.bound.bound * (1 + 1e-12))
          << "stream " << n << " t " << t;
      ++checked;
    }
    streams_with_mistakes += model->counters().mistakes > 1;
    // The bound's terms as the design states them.
    const Stats st = model->stats(false);
    const double g = *c.gamma, R = st.bound.radius;
    EXPECT_DOUBLE_EQ(st.bound.bound,
                     2 * (R / g) * (R / g) + 2 * st.bound.td_gamma / g);
  }
  EXPECT_GT(checked, 100000u);
  EXPECT_GT(streams_with_mistakes, 900u);
}

TEST(MulticlassTest, TdGammaIsTheMulticlassHingeOfTheUnitComparator) {
  const ClassSpec spec = RandomSpec(7);
  const ClassStream s = MakeClassStream(spec);
  ModelConfig c = ClassConfig(spec);
  // d values a class: each gets a 0 for the bias.
  std::vector<double> u;
  const size_t dim = c.weight_dimension();
  for (int r = 0; r < spec.classes; ++r) {
    for (size_t i = 0; i < spec.dimension; ++i)
      u.push_back(s.separator[r * dim + i] + 0.1);
  }
  c.comparator = u;
  c.gamma = 0.3;
  auto model = *Model::Create(c);
  double norm2 = 0;
  for (double v : u) norm2 += v * v;
  double td = 0;
  for (size_t t = 0; t < s.x.size(); ++t) {
    model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).IgnoreError();
    const std::vector<double> xa = Augmented(s.x[t], c);
    std::vector<double> sc(spec.classes);
    for (int r = 0; r < spec.classes; ++r) {
      double dot = 0;
      for (size_t i = 0; i < spec.dimension; ++i)
        dot += u[r * spec.dimension + i] / std::sqrt(norm2) * xa[i];
      sc[r] = dot;
    }
    double best = -INFINITY;
    for (int r = 0; r < spec.classes; ++r)
      if (r != s.y[t]) best = std::max(best, sc[r]);
    td += std::max(0.0, 0.3 - (sc[s.y[t]] - best));
  }
  EXPECT_NEAR(model->stats().bound.td_gamma, td, 1e-9 * td);
  EXPECT_GT(td, 1.0);
}

TEST(MulticlassTest, ALabelOutsideTheClassesChangesNothing) {
  ModelConfig c;
  c.dimension = 2;
  c.classes = {"a", "b", "c"};
  auto model = *Model::Create(c);
  ASSERT_TRUE(model->Learn(FeatureView::Dense({1.0, 2.0}), 2).ok());
  const ModelState before = model->ExportState();
  for (int bad : {3, -1, 1000}) {
    absl::StatusOr<Outcome> o =
        model->Learn(FeatureView::Dense({1.0, 2.0}), bad);
    ASSERT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(std::to_string(bad)),
              absl::string_view::npos)
        << o.status();
    EXPECT_NE(o.status().message().find("0..2"), absl::string_view::npos);
  }
  absl::StatusOr<Issued> issued =
      model->Issue(FeatureView::Dense({1.0, 2.0}), 0);
  ASSERT_TRUE(issued.ok());
  EXPECT_EQ(model->Reveal(issued->prediction_id, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->pending_count(), 1u);
  EXPECT_EQ(model->counters().examples, before.counters.examples);
}

TEST(MulticlassTest, ConfigurationsItRefuses) {
  ModelConfig c;
  c.dimension = 3;
  c.classes = {"only"};
  EXPECT_NE(ValidateConfig(c).message().find("2..64"), absl::string_view::npos);
  c.classes = {"a", "b", "a"};
  EXPECT_NE(ValidateConfig(c).message().find("\"a\" is repeated"),
            absl::string_view::npos);
  c.classes = {"a", ""};
  EXPECT_FALSE(ValidateConfig(c).ok());
  c.classes = {"a", "b"};
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.algorithm = Algorithm::kMargin;
  c.gamma = 0.1;
  EXPECT_NE(ValidateConfig(c).message().find("margin"),
            absl::string_view::npos);
  c.algorithm = Algorithm::kKernel;
  EXPECT_FALSE(ValidateConfig(c).ok());
  c.algorithm = Algorithm::kClassic;
  c.comparator = {1, 2, 3};  // d values for one class, not k of them
  EXPECT_NE(ValidateConfig(c).message().find("expected 6 or 8"),
            absl::string_view::npos)
      << ValidateConfig(c);
  c.comparator = {1, 2, 3, 4, 5, 6};
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.classes.assign(65, "x");
  for (int r = 0; r < 65; ++r) c.classes[r] = "c" + std::to_string(r);
  c.comparator.clear();
  EXPECT_FALSE(ValidateConfig(c).ok());
}

// A model's life with delayed reveals, a journal applied to a copy, and an
// exported state, each against a model that learned the same labels at once.
TEST(MulticlassTest, DelayedRevealsJournalsAndStatesEqualThePerItemPath) {
  for (Algorithm a :
       {Algorithm::kClassic, Algorithm::kAveraged, Algorithm::kVoted}) {
    ClassSpec spec = RandomSpec(12);
    spec.length = 400;
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    c.algorithm = a;
    auto direct = *Model::Create(c);
    auto delayed = *Model::Create(c);
    auto replica = *Model::Create(c);
    delayed->SetJournaling(true);
    uint64_t mistakes = 0;
    for (size_t t = 0; t < s.x.size(); t += 4) {
      // Issue four, reveal them in reverse: each judged on its issued
      // decision, learned on the W of its reveal.
      std::vector<uint64_t> ids;
      std::vector<Issued> issued;
      for (size_t j = t; j < std::min(t + 4, s.x.size()); ++j) {
        issued.push_back(*delayed->Issue(FeatureView::Dense(s.x[j]), 0));
      }
      for (size_t j = issued.size(); j-- > 0;) {
        const Outcome o = *delayed->Reveal(issued[j].prediction_id, s.y[t + j]);
        EXPECT_EQ(o.predicted, issued[j].label);
        EXPECT_EQ(o.score, issued[j].score);
        EXPECT_EQ(o.mistake,
                  MulticlassMistake(Decision{issued[j].label, issued[j].score},
                                    s.y[t + j]));
        mistakes += o.mistake;
        // The direct model learns the same labels in the same order.
        direct->Learn(FeatureView::Dense(s.x[t + j]), s.y[t + j]).IgnoreError();
      }
      ASSERT_TRUE(replica->ApplyJournal(delayed->TakeJournal()).ok());
    }
    // The weights follow the order of reveals alone.
    for (size_t i = 0; i < direct->weights().size(); ++i)
      ASSERT_EQ(direct->weights()[i], delayed->weights()[i]);
    EXPECT_EQ(delayed->counters().mistakes, mistakes);
    EXPECT_EQ(replica->ExportState(), delayed->ExportState());
    auto restored = *Model::FromState(delayed->ExportState());
    EXPECT_EQ(restored->ExportState(), delayed->ExportState());
    // The confusion matrix counts every example once, by (true, issued).
    uint64_t sum = 0, off_diagonal = 0;
    for (int y = 0; y < spec.classes; ++y) {
      for (int p = 0; p < spec.classes; ++p) {
        sum += delayed->confusion()[y * spec.classes + p];
        off_diagonal += y != p ? delayed->confusion()[y * spec.classes + p] : 0;
      }
    }
    EXPECT_EQ(sum, s.x.size());
    EXPECT_LE(off_diagonal, mistakes);
    // A state whose confusion matrix does not add up is refused.
    ModelState bad = delayed->ExportState();
    bad.confusion[0] += 1;
    EXPECT_FALSE(Model::FromState(bad).ok());
    bad.confusion.pop_back();
    EXPECT_FALSE(Model::FromState(bad).ok());
    // Reset clears the matrix.
    delayed->Reset();
    for (uint64_t v : delayed->confusion()) EXPECT_EQ(v, 0u);
  }
}

// Batches of dense rows (the server's columnar path) against the same rows
// learned one at a time: outcomes, errors and states equal, bit for bit.
TEST(MulticlassTest, DenseBatchesLearnAsRowsOneAtATime) {
  for (int n = 0; n < 40; ++n) {
    const ClassSpec spec = RandomSpec(n);
    const ClassStream s = MakeClassStream(spec);
    ModelConfig c = ClassConfig(spec);
    c.algorithm = n % 3 == 0
                      ? Algorithm::kClassic
                      : (n % 3 == 1 ? Algorithm::kAveraged : Algorithm::kVoted);
    auto rows = *Model::Create(c);
    auto batch = *Model::Create(c);
    std::vector<double> values;
    std::vector<int> labels = s.y;
    for (const std::vector<double>& x : s.x)
      values.insert(values.end(), x.begin(), x.end());
    // A label outside the classes, a NaN and (for a model that normalizes)
    // a zero row: each refused alone.
    labels[3] = spec.classes;
    values[5 * spec.dimension] = std::nan("");
    if (spec.normalize && !spec.bias) {
      std::fill_n(values.begin() + 7 * spec.dimension, spec.dimension, 0.0);
    }
    std::vector<absl::StatusOr<Outcome>> one, many;
    for (size_t t = 0; t < labels.size(); ++t) {
      one.push_back(
          rows->Learn(FeatureView::Dense(absl::MakeConstSpan(
                          values.data() + t * spec.dimension, spec.dimension)),
                      labels[t]));
    }
    for (size_t at = 0; at < labels.size(); at += 13) {
      const size_t m = std::min<size_t>(13, labels.size() - at);
      ASSERT_TRUE(
          batch
              ->LearnDense(absl::MakeConstSpan(values).subspan(
                               at * spec.dimension, m * spec.dimension),
                           absl::MakeConstSpan(labels).subspan(at, m),
                           [&](size_t, const absl::StatusOr<Outcome>& r) {
                             many.push_back(r);
                           })
              .ok());
    }
    ASSERT_EQ(one.size(), many.size());
    for (size_t t = 0; t < one.size(); ++t) {
      ASSERT_EQ(one[t].status(), many[t].status()) << n << " t " << t;
      if (!one[t].ok()) continue;
      EXPECT_EQ(one[t]->score, many[t]->score);
      EXPECT_EQ(one[t]->predicted, many[t]->predicted);
      EXPECT_EQ(one[t]->mistake, many[t]->mistake);
      EXPECT_EQ(one[t]->updated, many[t]->updated);
    }
    EXPECT_FALSE(one[3].ok());
    EXPECT_FALSE(one[5].ok());
    EXPECT_EQ(rows->ExportState(), batch->ExportState());
  }
}

TEST(MulticlassTest, TrainCyclesToSeparationAndRefusesABadLabelWhole) {
  ClassSpec spec;
  spec.classes = 4;
  spec.dimension = 3;
  spec.margin = 0.05;
  spec.length = 200;
  spec.seed = 5;
  const ClassStream s = MakeClassStream(spec);
  auto model = *Model::Create(ClassConfig(spec));
  std::vector<LabeledExample> data;
  for (size_t t = 0; t < s.x.size(); ++t)
    data.push_back({FeatureView::Dense(s.x[t]), s.y[t]});
  TrainOptions options;
  options.max_epochs = 1000;
  const TrainResult r = *model->Train(data, options);
  EXPECT_TRUE(r.converged);
  EXPECT_GT(r.epochs, 1u);
  for (const LabeledExample& e : data) {
    EXPECT_EQ(model->Predict(e.x)->label, e.label);
  }
  const ModelState before = model->ExportState();
  data[17].label = 4;
  absl::StatusOr<TrainResult> bad = model->Train(data, options);
  EXPECT_NE(bad.status().message().find("example 17"), absl::string_view::npos)
      << bad.status();
  EXPECT_EQ(model->ExportState(), before);
}

// The refresher's round for a multiclass model, done in place as the
// server's does: take the rows kept, solve over all of them, install the
// candidates with their multiclass hinge sums.
struct ClassRefresher {
  ClassRefresher(int classes, uint32_t weight_dimension)
      : classes(classes), solver(classes, weight_dimension) {}
  MulticlassCertificate Round(Model* model, int max_passes = 1000) {
    CertificateTracker* t = model->certificate();
    if (t->generation() != generation) {
      solver = MulticlassCertificateSolver(classes,
                                           model->config().weight_dimension());
      generation = t->generation();
    }
    std::vector<uint32_t> repeats;
    KeptRows rows = t->Take(&repeats);
    solver.Add(std::move(rows), repeats);
    CertificateOptions options;
    options.max_passes = max_passes;
    const MulticlassCertificate c =
        solver.Solve(model->stats(false).bound.radius, options);
    // The sums the solver gives, as the tracker would sum them itself.
    EXPECT_EQ(c.sums, ClassHingeSums(solver.rows(), c.candidates, classes));
    t->Install(c.candidates, c.sums, c.lower, c.converged, solver.size(),
               generation, KeptRows(), nullptr, &solver.rows());
    return c;
  }
  int classes;
  MulticlassCertificateSolver solver;
  uint64_t generation = 0;
};

// The bound a model given (U, gamma) as its comparator reports over the first
// n examples of `s`.
double BoundOf(const ModelConfig& config, const ClassStream& s, size_t n,
               const std::vector<double>& u, double gamma) {
  ModelConfig with = config;
  with.comparator = u;
  with.gamma = gamma;
  auto check = *Model::Create(with);
  for (size_t t = 0; t < n; ++t) {
    EXPECT_TRUE(check->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  const BoundReport b = check->stats().bound;
  EXPECT_TRUE(b.bound_available);
  return b.bound;
}

// The certificate of a multiclass model (docs/design.md section 2.8), refreshed
// at random moments: at every example its U bounds the updates and is the
// bound of the comparator it names (checked by a model given that comparator),
// L stays below U, over 1,000 random streams with k from 2 to 20, separable
// and not, kept whole or frozen after a third.
TEST(MulticlassTest, TheCertificatesUBoundsTheUpdatesAtEveryRefresh) {
  int checks = 0, frozen = 0, refreshes = 0;
  for (int n = 0; n < 1000; ++n) {
    const ClassSpec spec = RandomSpec(n);
    const ClassStream s = MakeClassStream(spec);
    const ModelConfig config = ClassConfig(spec);
    auto model = *Model::Create(config);
    const uint64_t limit = n % 2 ? s.x.size() / 3 : s.x.size() + 1;
    model->EnableCertificate(limit, /*slack=*/limit);
    ClassRefresher refresher(spec.classes, config.weight_dimension());
    uint64_t state = static_cast<uint64_t>(n) + 1;
    for (size_t t = 0; t < s.x.size(); ++t) {
      ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      // As the server's refresher, at once when a freeze waits for it.
      if ((state >> 33) % 11 == 0 || t + 1 == s.x.size() ||
          model->certificate()->phase() == CertificatePhase::kFreezing) {
        refresher.Round(model.get());
        ++refreshes;
      }
      const double radius = model->stats(false).bound.radius;
      const CertificateReport r = model->certificate()->Report(radius);
      ASSERT_NE(r.phase, CertificatePhase::kOff) << r.reason;
      EXPECT_EQ(r.examples, t + 1);
      if (!r.available) continue;
      ASSERT_LE(r.lower, r.upper) << "stream " << n;
      ASSERT_LE(static_cast<double>(model->counters().updates),
                r.upper * (1 + 1e-9))
          << "stream " << n << " at " << t + 1;
      if (t % 41 == 0 || t + 1 == s.x.size()) {
        ++checks;
        ASSERT_EQ(r.u.size(), config.weight_dimension() * spec.classes);
        EXPECT_NEAR(BoundOf(config, s, t + 1, r.u, r.gamma), r.upper,
                    1e-9 * r.upper)
            << "stream " << n << " at " << t + 1;
      }
    }
    frozen +=
        model->certificate()->Report(1).phase == CertificatePhase::kFrozen;
  }
  EXPECT_GT(checks, 3000);
  EXPECT_GT(refreshes, 10000);
  EXPECT_GT(frozen, 400);
}

// The tracker's figures over a whole stream solved at once equal the solver's
// own (U = 2 R_K^2 P(W), L = 2 R_K^2 D(alpha)); and a state or its journals
// carry the certificate, its kept rows (classes and all) going on as before.
TEST(MulticlassTest, TheCertificateIsTheSolversAndCarriesOver) {
  ClassSpec spec = RandomSpec(31);
  spec.length = 500;
  const ClassStream s = MakeClassStream(spec);
  const ModelConfig config = ClassConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(1000, 1000);
  model->SetJournaling(true);
  model->TakeJournal();
  auto replica = *Model::FromState(model->ExportState());
  ClassRefresher refresher(spec.classes, config.weight_dimension());
  KeptRows journaled;
  for (size_t t = 0; t < 300; ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t % 50 == 49) {
      Journal j = model->TakeJournal();
      journaled.Append(j.certificate_rows);
      ASSERT_TRUE(replica->ApplyJournal(j).ok());
    }
  }
  MulticlassCertificate c;
  do {
    c = refresher.Round(model.get());
  } while (!c.converged);
  const double radius = model->stats(false).bound.radius;
  CertificateReport r = model->certificate()->Report(radius);
  ASSERT_TRUE(r.available);
  EXPECT_NEAR(r.upper, c.upper, 1e-9 * c.upper);
  EXPECT_NEAR(r.lower, c.lower, 1e-9 * c.upper);
  EXPECT_NEAR(r.gamma, c.gamma, 1e-12);
  EXPECT_GT(r.upper, 0);
  for (size_t t = 0; t < journaled.size(); ++t) {
    ASSERT_EQ(journaled.label(t), s.y[t]) << t;
  }
  const CertificateState was = model->ExportState().certificate.value();
  ASSERT_EQ(was.phase, CertificatePhase::kKeeping);
  ASSERT_EQ(was.candidates.at(0).size(),
            config.weight_dimension() * spec.classes);
  auto restored = *Model::FromState(model->ExportState());
  for (Model* m : {restored.get(), replica.get()}) {
    SCOPED_TRACE(m == replica.get() ? "journals" : "state");
    if (m == replica.get()) {
      ASSERT_TRUE(m->ApplyJournal(model->TakeJournal()).ok());
    }
    // Rows whose classes do not fit the model are not taken.
    KeptRows bad = journaled;
    bad.Clear();
    for (size_t t = 0; t < journaled.size(); ++t) {
      bad.Add(journaled.indices(t), journaled.values(t),
              t == 5 ? spec.classes : journaled.label(t));
    }
    EXPECT_FALSE(m->AttachCertificateRows(bad));
    ASSERT_TRUE(m->AttachCertificateRows(journaled));
    m->EnableCertificate(1000, 1000);
    EXPECT_EQ(m->ExportState().certificate.value(), was);
    EXPECT_TRUE(m->certificate()->Take() == journaled);
  }
  // Learning on, the restored model's certificate is the original's.
  for (size_t t = 300; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    ASSERT_TRUE(restored->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
  }
  EXPECT_EQ(restored->certificate()->Report(radius).upper,
            model->certificate()->Report(radius).upper);
}

// A multiclass stream cycling through 150 rows past a limit of 100: the
// copies of the rows before the limit count on them, those of the rows after
// it on theirs, the freeze comes converged over the rows before the limit,
// and U is its comparator's bound over the whole stream.
TEST(MulticlassTest, ACyclingStreamFreezesConvergedWithItsCopiesCounted) {
  ClassSpec spec;
  spec.classes = 4;
  spec.dimension = 5;
  spec.length = 150;
  spec.noise = 0.1;
  spec.seed = 77;
  const ClassStream once = MakeClassStream(spec);
  ClassStream s;
  for (int pass = 0; pass < 6; ++pass) {
    s.x.insert(s.x.end(), once.x.begin(), once.x.end());
    s.y.insert(s.y.end(), once.y.begin(), once.y.end());
  }
  const ModelConfig config = ClassConfig(spec);
  auto model = *Model::Create(config);
  model->EnableCertificate(/*limit=*/100, /*slack=*/100);
  ClassRefresher refresher(spec.classes, config.weight_dimension());
  for (size_t t = 0; t < s.x.size(); ++t) {
    ASSERT_TRUE(model->Learn(FeatureView::Dense(s.x[t]), s.y[t]).ok());
    if (t + 1 == 50) refresher.Round(model.get());
    for (int k = 0;
         t + 1 == 500 && k < 100 &&
         model->certificate()->phase() == CertificatePhase::kFreezing;
         ++k) {
      refresher.Round(model.get());
    }
  }
  const CertificateReport r =
      model->certificate()->Report(model->stats(false).bound.radius);
  ASSERT_EQ(r.phase, CertificatePhase::kFrozen);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.frozen_at, 350u);  // 50 rows seen 4 times, 50 seen 3 times
  EXPECT_LE(static_cast<double>(model->counters().updates), r.upper);
  EXPECT_NEAR(BoundOf(config, s, s.x.size(), r.u, r.gamma), r.upper,
              1e-9 * r.upper);
}

}  // namespace
}  // namespace perceptron
