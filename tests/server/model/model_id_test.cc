#include "server/model/model_id.h"

#include <string>
#include <vector>

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

TEST(ModelIdTest, RejectsIdsOfDotsOnlyAndAcceptsDotsBesideOtherCharacters) {
  for (const std::string& id :
       std::vector<std::string>{".", "..", "...", std::string(128, '.')}) {
    EXPECT_THAT(std::string(ValidateModelId(id).message()),
                ::testing::HasSubstr("only dots"))
        << id;
  }
  for (const std::string& id :
       std::vector<std::string>{".a", "a.", "..-", "_..", "-", "_", "a",
                                ".." + std::string(126, '_')}) {
    EXPECT_TRUE(ValidateModelId(id).ok()) << id;
  }
}

}  // namespace
}  // namespace perceptron::server
