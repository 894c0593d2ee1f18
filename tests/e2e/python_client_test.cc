// The example Python client (Debian's python3-grpcio) against a real
// perceptrond.
#include "core/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using ::testing::HasSubstr;

TEST(PythonClientTest, StreamsBreastCancerAndPrintsTheStatus) {
  absl::StatusOr<std::unique_ptr<testing::ServerProcess>> server =
      testing::ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const testing::CommandResult r = testing::RunCommand(absl::StrCat(
      PERCEPTRON_PYTHON, " ", PERCEPTRON_SOURCE_DIR,
      "/client/python/perceptron_client.py --stubs ", PERCEPTRON_PYTHON_STUBS,
      " --server ", (*server)->target(), " --model py --create --no-normalize ",
      PERCEPTRON_BREAST_CANCER_CSV));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("streamed 569 examples (0 rejected)"));
  // The same figures as the core library and scikit-learn (docs/design.md
  // section 2, 6).
  EXPECT_THAT(r.output, HasSubstr("examples 569\nmistakes 168\nupdates 168\n"));
  absl::StatusOr<v1::ModelStatus> st = (*server)->Connect()->GetStatus("py");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->stats().updates(), 168u);
}

}  // namespace
}  // namespace perceptron
