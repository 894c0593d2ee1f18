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
  // As columns (the default) and as items, into two models: the same figures.
  for (const char* how : {"", " --items"}) {
    SCOPED_TRACE(how);
    const std::string model = *how ? "py-items" : "py";
    const testing::CommandResult r = testing::RunCommand(
        absl::StrCat(PERCEPTRON_PYTHON, " ", PERCEPTRON_SOURCE_DIR,
                     "/client/python/perceptron_client.py --stubs ",
                     PERCEPTRON_PYTHON_STUBS, " --server ", (*server)->target(),
                     " --model ", model, " --create --no-normalize --batch 64",
                     how, " ", PERCEPTRON_BREAST_CANCER_CSV));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("streamed 569 examples (0 rejected)"));
    EXPECT_THAT(r.output, HasSubstr(*how ? "9 requests (0 as columns)"
                                         : "9 requests (9 as columns)"));
    // The same figures as the core library and scikit-learn (docs/design.md
    // section 2, 6).
    EXPECT_THAT(r.output,
                HasSubstr("examples 569\nmistakes 168\nupdates 168\n"));
    absl::StatusOr<v1::ModelStatus> st = (*server)->Connect()->GetStatus(model);
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_EQ(st->stats().updates(), 168u);
  }
  absl::StatusOr<v1::Weights> a = (*server)->Connect()->GetWeights("py");
  absl::StatusOr<v1::Weights> b = (*server)->Connect()->GetWeights("py-items");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
}

}  // namespace
}  // namespace perceptron
