// The certificate's candidates in the store's stored form: a multiple of an
// earlier candidate, bit for bit, is given by that one and its scale, and
// read back to the same bits; export blobs give every value.
#include "server/storage/state_convert.h"

#include <cmath>
#include <random>

#include "absl/base/casts.h"
#include "core/candidate_sums.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

using ::testing::HasSubstr;

// Candidates as a refresher installs them: v and its multiples by
// kCandidateScales, and one that is a multiple of none.
CertificateState WithCandidates(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  v[n / 2] = 0.0;  // a zero coordinate stays a zero of each multiple
  CertificateState c;
  c.phase = CertificatePhase::kKeeping;
  for (double p : kCandidateScales) {
    std::vector<double> m(n);
    for (size_t i = 0; i < n; ++i) m[i] = p * v[i];
    c.candidates.push_back(std::move(m));
  }
  std::vector<double> other(n);
  for (double& x : other) x = normal(rng);
  c.candidates.push_back(std::move(other));
  c.sums.assign(c.candidates.size(), 1.5);
  return c;
}

std::vector<std::vector<uint64_t>> Bits(
    const std::vector<std::vector<double>>& vs) {
  std::vector<std::vector<uint64_t>> out;
  for (const std::vector<double>& v : vs) {
    std::vector<uint64_t>& b = out.emplace_back();
    for (double x : v) b.push_back(absl::bit_cast<uint64_t>(x));
  }
  return out;
}

Journal JournalWith(CertificateState c) {
  Journal j;
  j.certificate = std::move(c);
  return j;
}

TEST(StateConvertTest, ALogRecordGivesMultiplesByScaleAndReadsTheSameBits) {
  const CertificateState c = WithCandidates(1000, 1);
  v1::Journal stored;
  JournalToProto(JournalWith(c), &stored);
  const v1::CertificateState& sc = stored.certificate();
  ASSERT_EQ(sc.candidates_size(), 6);
  // The first is v itself, each scale after it a multiple of it, the last
  // given whole.
  EXPECT_EQ(sc.candidates(0).multiple_of(), 0u);
  EXPECT_EQ(sc.candidates(0).values_size(), 1000);
  for (int k = 1; k < 5; ++k) {
    EXPECT_EQ(sc.candidates(k).multiple_of(), 1u) << k;
    EXPECT_EQ(sc.candidates(k).scale(), kCandidateScales[k]) << k;
    EXPECT_EQ(sc.candidates(k).values_size(), 0) << k;
  }
  EXPECT_EQ(sc.candidates(5).multiple_of(), 0u);
  EXPECT_EQ(sc.candidates(5).values_size(), 1000);

  absl::StatusOr<Journal> back = JournalFromProto(stored);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->certificate.has_value());
  EXPECT_EQ(Bits(back->certificate->candidates), Bits(c.candidates));
}

TEST(StateConvertTest, ASnapshotIsCompactAndAnExportBlobGivesEveryValue) {
  ModelState state;
  state.config.dimension = 300;
  state.certificate = WithCandidates(300, 2);
  v1::ModelState snapshot, blob;
  StateToProto(state, &snapshot, /*compact=*/true);
  StateToProto(state, &blob);
  int given = 0;
  for (const v1::CandidateState& v : snapshot.certificate().candidates()) {
    given += v.multiple_of() == 0;
  }
  EXPECT_EQ(given, 2);
  for (const v1::CandidateState& v : blob.certificate().candidates()) {
    EXPECT_EQ(v.multiple_of(), 0u);
    EXPECT_EQ(v.values_size(), 300);
  }
  for (const v1::ModelState* m : {&snapshot, &blob}) {
    absl::StatusOr<ModelState> back = StateFromProto(*m, 1u << 24);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Bits(back->certificate->candidates),
              Bits(state.certificate->candidates));
  }
}

TEST(StateConvertTest, AMultipleEqualButNotBitForBitIsGivenWhole) {
  // -0.0 == 0.5 * 0.0, so the tracker scores it as a multiple; its stored form
  // keeps its own bits.
  CertificateState c = WithCandidates(50, 3);
  c.candidates[1][25] = -0.0;
  ASSERT_EQ(c.candidates[0][25], 0.0);
  v1::Journal stored;
  JournalToProto(JournalWith(c), &stored);
  EXPECT_EQ(stored.certificate().candidates(1).multiple_of(), 0u);
  EXPECT_EQ(stored.certificate().candidates(1).values_size(), 50);
  EXPECT_EQ(stored.certificate().candidates(2).multiple_of(), 1u);
  absl::StatusOr<Journal> back = JournalFromProto(stored);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(Bits(back->certificate->candidates), Bits(c.candidates));
}

TEST(StateConvertTest, AMalformedMultipleIsRefused) {
  const CertificateState c = WithCandidates(20, 4);
  v1::Journal good;
  JournalToProto(JournalWith(c), &good);
  const auto refused = [&](auto edit) {
    v1::Journal j = good;
    edit(j.mutable_certificate());
    absl::StatusOr<Journal> back = JournalFromProto(j);
    EXPECT_FALSE(back.ok());
    EXPECT_THAT(back.status().message(),
                HasSubstr("not a positive multiple of an earlier one"));
  };
  refused([](v1::CertificateState* s) {
    s->mutable_candidates(1)->set_multiple_of(2);  // itself
  });
  refused([](v1::CertificateState* s) {
    s->mutable_candidates(0)->set_multiple_of(1);  // none before it
    s->mutable_candidates(0)->clear_values();
  });
  refused(
      [](v1::CertificateState* s) { s->mutable_candidates(2)->set_scale(0); });
  refused([](v1::CertificateState* s) {
    s->mutable_candidates(2)->set_scale(NAN);
  });
  refused([](v1::CertificateState* s) {
    s->mutable_candidates(3)->add_values(1.0);  // values and a multiple
  });
}

// A wide model's learner (names hashed into 2^20 coordinates, a few used)
// with `used` non-zero coordinates in each vector, one of them -0.0.
ModelState Wide(size_t used) {
  ModelState state;
  state.config.dimension = 1u << 20;
  state.config.hash_bits = 20;
  const size_t n = state.config.weight_count();
  auto vector = [n, used](double scale) {
    std::vector<double> v(n, 0.0);
    for (size_t k = 0; k < used; ++k) v[(k * 7919 + 3) % n] = scale * (k + 1);
    v[n - 1] = -0.0;  // the bias's coordinate: not zero's bits
    return v;
  };
  state.learner.weights = vector(0.5);
  state.learner.average_accumulator = vector(-2.0);
  state.learner.voted = {{vector(1.0), 3}, {vector(3.0), 1}};
  return state;
}

std::vector<std::vector<double>> Vectors(const LearnerState& l) {
  std::vector<std::vector<double>> out = {l.weights, l.average_accumulator};
  for (const VotedVector& v : l.voted) out.push_back(v.weights);
  return out;
}

TEST(StateConvertTest,
     AWideModelsVectorsGoByTheirNonZerosAndComeBackBitForBit) {
  const ModelState state = Wide(100);
  for (const bool compact : {true, false}) {  // a snapshot, an export blob
    v1::ModelState stored;
    StateToProto(state, &stored, compact);
    const v1::LearnerState& l = stored.learner();
    EXPECT_EQ(l.weights_size(), 0);
    EXPECT_EQ(l.sparse_weights().size(), (1u << 20) + 1);
    EXPECT_EQ(l.sparse_weights().indices_size(), 101);  // -0.0 included
    EXPECT_EQ(l.sparse_average_accumulator().values_size(), 101);
    ASSERT_EQ(l.voted_size(), 2);
    EXPECT_EQ(l.voted(1).sparse_weights().values_size(), 101);
    EXPECT_EQ(l.voted(1).survived(), 1u);
    // Four vectors of 2^20 doubles in under 6 KB.
    EXPECT_LT(stored.ByteSizeLong(), 6000u);
    absl::StatusOr<ModelState> back = StateFromProto(stored, 1u << 24);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Bits(Vectors(back->learner)), Bits(Vectors(state.learner)));
    EXPECT_EQ(back->learner.voted[0].survived, 3u);
  }
  // Where most coordinates are used, the vectors stay whole.
  ModelState dense;
  dense.config.dimension = 20;
  dense.learner.weights.assign(21, 0.25);
  dense.learner.weights[4] = 0.0;
  v1::ModelState stored;
  StateToProto(dense, &stored);
  EXPECT_EQ(stored.learner().weights_size(), 21);
  EXPECT_FALSE(stored.learner().has_sparse_weights());
  absl::StatusOr<ModelState> back = StateFromProto(stored, 1u << 24);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(Bits({back->learner.weights}), Bits({dense.learner.weights}));
}

TEST(StateConvertTest, AMalformedVectorByItsNonZerosIsRefused) {
  v1::ModelState good;
  StateToProto(Wide(10), &good);
  const auto refused = [&](auto edit, absl::string_view says) {
    v1::ModelState m = good;
    edit(m.mutable_learner());
    absl::StatusOr<ModelState> back = StateFromProto(m, 1u << 24);
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(back.status().message(), HasSubstr(says));
  };
  refused([](v1::LearnerState* l) { l->add_weights(1.0); },
          "the weights: given both whole and by its non-zeros");
  refused(
      [](v1::LearnerState* l) {
        l->mutable_sparse_weights()->set_size((1u << 20) + 2);
      },
      "the weights: 1048578 coordinates, over the model's 1048577");
  refused(
      [](v1::LearnerState* l) {
        l->mutable_sparse_average_accumulator()->add_values(1.0);
      },
      "the average's sums: 11 indices and 12 values");
  refused(
      [](v1::LearnerState* l) {
        l->mutable_sparse_weights()->set_indices(1, 3);  // not above index 0
      },
      "the weights: index 3 is past the size 1048577 or not above the one "
      "before it");
  refused(
      [](v1::LearnerState* l) {
        auto* v = l->mutable_voted(0)->mutable_sparse_weights();
        v->set_indices(v->indices_size() - 1, 1u << 21);
      },
      "a voted vector: index 2097152 is past the size");
}

}  // namespace
}  // namespace perceptron::server
