#include "server/model_id.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

TEST(ModelIdTest, AcceptsTheAllowedCharactersUpTo128) {
  EXPECT_TRUE(ValidateModelId("spam-v2.prod_1").ok());
  EXPECT_TRUE(ValidateModelId(std::string(128, 'a')).ok());
}

TEST(ModelIdTest, RejectsEmptyLongAndOtherCharacters) {
  EXPECT_EQ(ValidateModelId("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ValidateModelId(std::string(129, 'a')).message()),
              ::testing::HasSubstr("129 characters; at most 128"));
  EXPECT_THAT(std::string(ValidateModelId("a/b").message()),
              ::testing::HasSubstr("character 0x2f at position 1"));
  EXPECT_FALSE(ValidateModelId("caf\xc3\xa9").ok());
}

}  // namespace
}  // namespace perceptron::server
