// Hashing named features (core/feature_hash.h) against MurmurHash3's published
// test vectors and against tests/support/vw_hash.py, an implementation of
// Vowpal Wabbit's text-format hashing written apart from core/.
#include "core/feature_hash.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/quoted.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MurmurHash3Test, PublishedVectors) {
  using namespace std::string_literals;
  EXPECT_EQ(MurmurHash3X86_32("", 0), 0u);
  EXPECT_EQ(MurmurHash3X86_32("", 1), 0x514e28b7u);
  EXPECT_EQ(MurmurHash3X86_32("", 0xffffffffu), 0x81f16f39u);
  EXPECT_EQ(MurmurHash3X86_32("\0\0\0\0"s, 0), 0x2362f9deu);
  EXPECT_EQ(MurmurHash3X86_32("aaaa", 0x9747b28cu), 0x5a97808au);
  EXPECT_EQ(MurmurHash3X86_32("abc", 0x9747b28cu), 0xc84a62ddu);
  EXPECT_EQ(MurmurHash3X86_32("Hello, world!", 0x9747b28cu), 0x24884cbau);
  EXPECT_EQ(MurmurHash3X86_32("The quick brown fox jumps over the lazy dog",
                              0x9747b28cu),
            0x2fa826cdu);
  EXPECT_EQ(MurmurHash3X86_32("hello", 0), 0x248bfa47u);
  EXPECT_EQ(MurmurHash3X86_32("Hello, world!", 1234), 0xfaf6cdb3u);
}

TEST(VwHashStringTest, NumbersTrimmingAndText) {
  EXPECT_EQ(VwHashString("123", 0), 123u);
  EXPECT_EQ(VwHashString("123", 1000), 1123u);
  EXPECT_EQ(VwHashString("  42\t", 0), 42u);
  EXPECT_EQ(VwHashString("007", 0), 7u);
  // Digits wrap modulo 2^32, as the low bits of VW's 64-bit sum do.
  EXPECT_EQ(VwHashString("4294967296", 0), 0u);
  EXPECT_EQ(VwHashString("4294967295", 1), 0u);
  // Not all digits: hashed, trimmed first.
  EXPECT_EQ(VwHashString("12a", 5), MurmurHash3X86_32("12a", 5));
  EXPECT_EQ(VwHashString(" x ", 9), MurmurHash3X86_32("x", 9));
  EXPECT_EQ(VwHashString("-1", 0), MurmurHash3X86_32("-1", 0));
  // UTF-8's bytes are not whitespace.
  EXPECT_EQ(VwHashString("\xc3\xa9", 0), MurmurHash3X86_32("\xc3\xa9", 0));
}

struct Row {
  const char* space;
  const char* name;
  uint32_t slot24;
  uint32_t slot18;
};

// From tests/support/vw_hash.py (slot(namespace, name, bits)).
constexpr Row kTable[] = {
    {"", "a", 2451890u, 92594u},
    {"", "b", 14581251u, 163331u},
    {"", "hello", 9173575u, 260679u},
    {"", "0", 0u, 0u},
    {"", "7", 7u, 7u},
    {"", "123", 123u, 123u},
    {"", "4294967296", 0u, 0u},
    {"", " padded ", 3920912u, 250896u},
    {"", "x y", 2148747u, 51595u},
    {"", "caf\xc3\xa9", 1838856u, 3848u},
    {"", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 10777239u, 29335u},
    {"a", "a", 3536792u, 128920u},
    {"a", "hello", 737859u, 213571u},
    {"a", "123", 2452013u, 92717u},
    {"user", "age", 12868623u, 23567u},
    {"user", "city", 3251049u, 105321u},
    {"user", "42", 9714999u, 15671u},
    {"123", "x", 5913124u, 145956u},
    {"123", "7", 130u, 130u},
    {"text", "the", 15906373u, 177733u},
    {"text", "quick", 12261802u, 203178u},
    {"text", "brown", 8190541u, 64077u},
    {"text", "fox", 9573279u, 136095u},
    {"\xc3\x9cn\xc3\xaf", "name", 257881u, 257881u},
    {"ns", "-1", 6727516u, 173916u},
    {"ns", "1.5", 10539314u, 53554u},
    {"w", "Constant", 10035936u, 74464u},
};

TEST(FeatureHasherTest, SlotsMatchTheIndependentTable) {
  const FeatureHasher h24(24, {}), h18(18, {});
  for (const Row& r : kTable) {
    NamedFeature f{.space = r.space, .name = r.name};
    EXPECT_EQ(h24.Slot(f), r.slot24) << r.space << "|" << r.name;
    EXPECT_EQ(h18.Slot(f), r.slot18) << r.space << "|" << r.name;
  }
  // A numeric namespace seeds with its number: 123 + 7.
  EXPECT_EQ(h18.Slot({.space = "123", .name = "7"}), 130u);
}

TEST(FeatureHasherTest, CategoricalChainsValueOnName) {
  const FeatureHasher h24(24, {}), h18(18, {});
  EXPECT_EQ(h24.Slot({.name = "color", .category = "red", .categorical = true}),
            8534783u);
  EXPECT_EQ(h18.Slot({.space = "shop",
                      .name = "color",
                      .category = "blue",
                      .categorical = true}),
            204550u);
}

TEST(FeatureHasherTest, InteractionsAsVwQuadratic) {
  // vw_hash.hash_example([("a","x",2),("a","y",1),("b","z",1),("b","w",.5)],
  //                      18, ["ab", "aa"]).
  const FeatureHasher h(18, {"ab", "aa"});
  std::vector<NamedFeature> x = {{.space = "a", .name = "x", .value = 2.0},
                                 {.space = "a", .name = "y", .value = 1.0},
                                 {.space = "b", .name = "z", .value = 1.0},
                                 {.space = "b", .name = "w", .value = 0.5}};
  Features out;
  ASSERT_TRUE(h.Hash(x, &out).ok());
  EXPECT_TRUE(out.sparse);
  EXPECT_THAT(out.indices,
              ElementsAre(1680u, 31047u, 42847u, 55432u, 80151u, 91061u,
                          114093u, 124687u, 171394u, 182048u));
  EXPECT_THAT(out.values,
              ElementsAre(4.0, 2.0, 1.0, 2.0, 2.0, 1.0, 0.5, 1.0, 1.0, 0.5));
  // Self-interaction of value-1 features: pairs i < j only.
  const FeatureHasher self(18, {"aa"});
  ASSERT_TRUE(
      self.Hash({{.space = "a", .name = "x"}, {.space = "a", .name = "y"}},
                &out)
          .ok());
  EXPECT_THAT(out.indices, ElementsAre(31047u, 42847u, 55432u));
}

TEST(FeatureHasherTest, RepeatedNamesAddAndZerosDrop) {
  const FeatureHasher h(18, {});
  Features out;
  ASSERT_TRUE(h.Hash({{.name = "a", .value = 1.5},
                      {.name = "b", .value = 0.0},
                      {.name = "a", .value = 2.0},
                      {.name = "c", .value = 3.0},
                      {.name = "c", .value = -3.0}},
                     &out)
                  .ok());
  EXPECT_THAT(out.indices, ElementsAre(92594u));
  EXPECT_THAT(out.values, ElementsAre(3.5));
  // Names given as their slots' numbers land on the same coordinates.
  Features by_number;
  ASSERT_TRUE(h.Hash({{.name = "92594", .value = 3.5}}, &by_number).ok());
  EXPECT_EQ(by_number, out);
}

TEST(FeatureHasherTest, SumsEachSlotInOrderWhateverTheCount) {
  // Every count the hasher sorts differently (through sorting networks up to
  // 64 terms, std::sort past them), 6 bits so that slots repeat: each slot's
  // sum is its features' values added in the order given, as a map from
  // Slot() adds them. Values of very different sizes make the order show.
  const FeatureHasher h(6, {});
  std::mt19937 rng(7);
  const double sizes[] = {1e16, 1.0, -1e16, 0.25, 3.0};
  for (size_t n = 0; n <= 140; ++n) {
    std::vector<std::string> names(n);
    std::vector<NamedFeature> x(n);
    std::map<uint32_t, double> expected;
    for (size_t i = 0; i < n; ++i) {
      names[i] = absl::StrCat("f", rng() % 200);
      x[i] = {.space = i % 2 ? "s" : "",
              .name = names[i],
              .value = sizes[rng() % 5]};
      expected[h.Slot(x[i])] += x[i].value;
    }
    Features out;
    ASSERT_TRUE(h.Hash(x, &out).ok()) << n;
    std::vector<uint32_t> indices;
    std::vector<double> values;
    for (const auto& [slot, sum] : expected) {
      if (sum == 0.0) continue;
      indices.push_back(slot);
      values.push_back(sum);
    }
    EXPECT_EQ(out.indices, indices) << n << " features";
    EXPECT_EQ(out.values, values) << n << " features";
  }
}

TEST(FeatureHasherTest, NamespacesTakenInTurnHashAsAlone) {
  // More namespaces than the hasher remembers from one feature to the next,
  // in turn and back again, with the default one among them: each feature
  // lands where it lands alone.
  const FeatureHasher h(18, {});
  const std::vector<std::string> spaces = {"a",    "bb",   "",  "title",
                                           "body", "meta", "7", "a"};
  std::vector<std::string> names;
  for (size_t n = 0; n < 3 * spaces.size(); ++n) {
    names.push_back("w" + std::to_string(n));
  }
  std::vector<NamedFeature> x;
  size_t n = 0;
  std::map<uint32_t, double> expected;
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < spaces.size(); ++k, ++n) {
      const size_t s = round == 1 ? spaces.size() - 1 - k : k;
      const NamedFeature f{.space = spaces[s],
                           .name = names[n],
                           .value = 1.0 + static_cast<double>(n)};
      x.push_back(f);
      Features alone;
      ASSERT_TRUE(h.Hash({f}, &alone).ok());
      ASSERT_EQ(alone.indices.size(), 1u);
      expected[alone.indices[0]] += alone.values[0];
    }
  }
  Features out;
  ASSERT_TRUE(h.Hash(x, &out).ok());
  std::vector<uint32_t> indices;
  std::vector<double> values;
  for (const auto& [slot, value] : expected) {
    indices.push_back(slot);
    values.push_back(value);
  }
  EXPECT_EQ(out.indices, indices);
  EXPECT_EQ(out.values, values);
}

TEST(FeatureHasherTest, RefusesBadFeaturesNamingThem) {
  const FeatureHasher h(18, {});
  Features out;
  absl::Status s = h.Hash({{.name = "ok"}, {.name = ""}}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("feature 1: the name is empty"));
  const std::string long_name(kMaxNameBytes + 1, 'x');
  s = h.Hash({{.name = long_name}}, &out);
  EXPECT_THAT(s.message(), HasSubstr("over the limit of 1024"));
  s = h.Hash({{.name = "v", .value = std::nan("")}}, &out);
  EXPECT_THAT(s.message(), HasSubstr("feature 0 (v): value nan is not finite"));
  s = h.Hash({{.name = "v", .value = std::numeric_limits<double>::infinity()}},
             &out);
  EXPECT_THAT(s.message(), HasSubstr("not finite"));
  s = h.Hash({{.name = "c", .categorical = true}}, &out);
  EXPECT_THAT(s.message(), HasSubstr("categorical value is empty"));
  std::vector<NamedFeature> many(kMaxNamedFeatures + 1, {.name = "n"});
  s = h.Hash(many, &out);
  EXPECT_THAT(s.message(), HasSubstr("over the limit of 10000"));
}

TEST(FeatureHasherTest, ValidatesItsConfiguration) {
  EXPECT_TRUE(ValidateHashing(0, {}).ok());
  EXPECT_TRUE(ValidateHashing(24, {"ab", "  "}).ok());
  EXPECT_THAT(ValidateHashing(25, {}).message(),
              HasSubstr("hash_bits 25 is over the limit of 24"));
  EXPECT_THAT(ValidateHashing(18, {"abc"}).message(),
              HasSubstr("not two namespace letters"));
  EXPECT_THAT(ValidateHashing(0, {"ab"}).message(),
              HasSubstr("interactions need hash_bits"));
  // A long one is shown in part: the whole would pass gRPC's limit on a
  // status's size, and the client would see that limit's error instead.
  const std::string long_pair(200000, 'q');
  const std::string message(ValidateHashing(18, {long_pair}).message());
  EXPECT_THAT(message, HasSubstr(absl::StrCat(
                           "interaction \"", std::string(kQuotedBytes, 'q'),
                           "...\" (200000 bytes) is not two namespace")));
  EXPECT_LT(message.size(), 300u);
}

TEST(QuotedTest, ShowsShortTextWholeAndLongTextInPart) {
  EXPECT_EQ(Quoted("city=paris"), "\"city=paris\"");
  EXPECT_EQ(Excerpt("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 as it is
  EXPECT_EQ(Quoted(""), "\"\"");
  // Control characters (a terminal's escape sequences) are written out.
  EXPECT_EQ(Quoted("a\tb\nc\x1b[31m\x7f"), "\"a\\tb\\nc\\x1b[31m\\x7f\"");
  const std::string exactly(kQuotedBytes, 'x');
  EXPECT_EQ(Quoted(exactly), "\"" + exactly + "\"");
  EXPECT_EQ(Quoted(exactly + "y"), "\"" + exactly + "...\" (65 bytes)");
  EXPECT_EQ(Excerpt(exactly + "y"), exactly + "... (65 bytes)");
  // Cut where a character starts: 63 bytes and a two-byte character that
  // would straddle the 64th are shown as the 63.
  const std::string before(kQuotedBytes - 1, 'x');
  EXPECT_EQ(Quoted(before + "\xc3\xa9zz"), "\"" + before + "...\" (67 bytes)");
  // A run of bytes that are not UTF-8 is cut at the limit all the same.
  const std::string odd(100, '\x80');
  EXPECT_EQ(Excerpt(odd).size(), kQuotedBytes - 3 + 15);
}

TEST(FeatureHasherTest, AListOfNamesMapsEachToItsPosition) {
  const FeatureHasher listed =
      FeatureHasher::Listed({"age", "user^id", "city=paris", "7"});
  EXPECT_EQ(listed.Slot({.name = "age"}), 0u);
  EXPECT_EQ(listed.Slot({.space = "user", .name = "id"}), 1u);
  EXPECT_EQ(
      listed.Slot({.name = "city", .category = "paris", .categorical = true}),
      2u);
  // Numbers are names like any other: no VW rule without hashing.
  EXPECT_EQ(listed.Slot({.name = "7"}), 3u);
  EXPECT_EQ(listed.Slot({.name = "height"}), FeatureHasher::kNoSlot);
  Features out;
  ASSERT_TRUE(listed
                  .Hash({{.name = "7", .value = 2.0},
                         {.name = "age", .value = 3.0},
                         {.name = "7", .value = 1.0}},
                        &out)
                  .ok());
  EXPECT_THAT(out.indices, ElementsAre(0u, 3u));
  EXPECT_THAT(out.values, ElementsAre(3.0, 3.0));
  EXPECT_THAT(listed.Hash({{.name = "age"}, {.space = "u", .name = "x"}}, &out)
                  .message(),
              HasSubstr("feature 1: \"u^x\" is not in the model's list"));
  EXPECT_TRUE(ValidateNames({"a", "b"}).ok());
  EXPECT_THAT(ValidateNames({"a", "", "b"}).message(),
              HasSubstr("feature name 1 is empty"));
  EXPECT_THAT(ValidateNames({"a", "b", "a"}).message(),
              HasSubstr("feature name 2 \"a\" repeats name 0"));
}

}  // namespace
}  // namespace perceptron
