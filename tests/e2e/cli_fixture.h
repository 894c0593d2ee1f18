// What the CLI's end-to-end tests share: a real perceptrond per test, the
// CLI's command line for it, and the core library's model to compare with.
#ifndef PERCEPTRON_TESTS_E2E_CLI_FIXTURE_H_
#define PERCEPTRON_TESTS_E2E_CLI_FIXTURE_H_

#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/data_reader.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace perceptron::testing {

inline std::string Cli(const ServerProcess& server, const std::string& args) {
  return absl::StrCat(PERCEPTRON_CLI_PATH, " --server=", server.target(),
                      " --progress=no ", args);
}

// The core library's model after learning `data` once per epoch, in file order.
inline std::unique_ptr<Model> CoreRun(const client::Dataset& data,
                                      const ModelConfig& config, int epochs) {
  auto model = *Model::Create(config);
  for (int e = 0; e < epochs; ++e) {
    for (const client::Example& x : data.examples) {
      const FeatureView v = x.sparse ? FeatureView::Sparse(x.indices, x.values)
                                     : FeatureView::Dense(x.values);
      EXPECT_TRUE(model->Learn(v, *x.label).ok());
    }
  }
  return model;
}

inline void ExpectSameModel(client::Client& client, const std::string& id,
                            const Model& core) {
  absl::StatusOr<v1::ModelStatus> st = client.GetStatus(id);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->stats().examples(), core.counters().examples);
  EXPECT_EQ(st->stats().mistakes(), core.counters().mistakes);
  EXPECT_EQ(st->stats().updates(), core.counters().updates);
  absl::StatusOr<v1::Weights> w = client.GetWeights(id);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(static_cast<size_t>(w->values_size()), core.weights().size());
  EXPECT_EQ(std::memcmp(w->values().data(), core.weights().data(),
                        core.weights().size() * sizeof(double)),
            0)
      << "weights differ from the core library's, bit for bit";
}

// The model's status once its certificate is solved over every example and
// converged (it then stays as it is); a failure if that takes minutes.
inline v1::ModelStatus SolvedStatus(client::Client& client,
                                    const std::string& id) {
  v1::ModelStatus last;
  EXPECT_TRUE(client
                  .Watch(
                      id, absl::Milliseconds(20),
                      [&](const v1::ModelStatus& x) {
                        last = x;
                        const v1::Certificate& c = x.stats().certificate();
                        return !(c.available() && c.converged() &&
                                 c.solved() == x.stats().examples());
                      },
                      absl::Minutes(5))
                  .ok());
  return last;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = server_->Connect();
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
};

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_E2E_CLI_FIXTURE_H_
