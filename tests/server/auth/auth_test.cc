#include "server/auth/auth.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AuthTest, RolesAndPrefixes) {
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::Parse(
      "# comment\n"
      "aaaaaaaaaaaaaaaa admin\n"
      "llllllllllllllll learn  x-  y-   # two prefixes\n"
      "rrrrrrrrrrrrrrrr\tread\n",
      "tokens");
  ASSERT_TRUE(a.ok()) << a.status();
  const Authorizer& auth = **a;
  EXPECT_TRUE(
      auth.CheckHeader("Bearer aaaaaaaaaaaaaaaa", Role::kAdmin, "anything")
          .ok());
  EXPECT_TRUE(
      auth.CheckHeader("Bearer llllllllllllllll", Role::kLearn, "y-1").ok());
  EXPECT_EQ(
      auth.CheckHeader("Bearer llllllllllllllll", Role::kLearn, "z-1").code(),
      absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(
      auth.CheckHeader("Bearer llllllllllllllll", Role::kAdmin, "x-1").code(),
      absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(
      auth.CheckHeader("Bearer rrrrrrrrrrrrrrrr", Role::kRead, "").ok());
  EXPECT_EQ(auth.CheckHeader("rrrrrrrrrrrrrrrr", Role::kRead, "").code(),
            absl::StatusCode::kUnauthenticated);  // not "Bearer ..."
  EXPECT_EQ(auth.CheckHeader("", Role::kRead, "").code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth.Covers("Bearer llllllllllllllll", "x-2"));
  EXPECT_FALSE(auth.Covers("Bearer llllllllllllllll", "q"));
}

TEST(AuthTest, BadFilesAreRefusedWithoutShowingTokens) {
  const char* cases[][2] = {
      {"secret-secret-secret owner\n",
       "role \"owner\" is not read, learn or admin"},
      {"short admin\n", "shorter than 16 characters"},
      {"secret-secret-secret\n", "expected TOKEN ROLE"},
      {"secret-secret-secret read\nsecret-secret-secret admin\n",
       "listed twice"},
      {"# nothing\n", "no tokens"},
  };
  for (const auto& c : cases) {
    absl::Status s = Authorizer::Parse(c[0], "tokens").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c[1];
    EXPECT_THAT(std::string(s.message()), HasSubstr(c[1]));
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr("secret")));
  }
  EXPECT_EQ(Authorizer::Load("/nonexistent/tokens").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace perceptron::server
