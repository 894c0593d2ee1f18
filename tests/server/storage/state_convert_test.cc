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

}  // namespace
}  // namespace perceptron::server
