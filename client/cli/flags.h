// The CLI's flags (defined in flags.cc, which --help lists).
#ifndef PERCEPTRON_CLIENT_CLI_FLAGS_H_
#define PERCEPTRON_CLIENT_CLI_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/time/time.h"

ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(std::vector<std::string>, shards);
ABSL_DECLARE_FLAG(std::string, live);
ABSL_DECLARE_FLAG(absl::Duration, switch_timeout);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(absl::Duration, connect_timeout);
ABSL_DECLARE_FLAG(absl::Duration, timeout);
ABSL_DECLARE_FLAG(std::string, token_file);
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(uint32_t, dim);
ABSL_DECLARE_FLAG(std::string, algorithm);
ABSL_DECLARE_FLAG(double, eta);
ABSL_DECLARE_FLAG(bool, bias);
ABSL_DECLARE_FLAG(double, bias_constant);
ABSL_DECLARE_FLAG(bool, normalize);
ABSL_DECLARE_FLAG(double, gamma);
ABSL_DECLARE_FLAG(std::string, comparator_file);
ABSL_DECLARE_FLAG(std::string, kernel);
ABSL_DECLARE_FLAG(uint32_t, degree);
ABSL_DECLARE_FLAG(double, c0);
ABSL_DECLARE_FLAG(double, sigma);
ABSL_DECLARE_FLAG(uint64_t, budget);
ABSL_DECLARE_FLAG(bool, skip_rejected);
ABSL_DECLARE_FLAG(absl::Duration, retry_for);
ABSL_DECLARE_FLAG(uint64_t, max_voted);
ABSL_DECLARE_FLAG(uint32_t, hash_bits);
ABSL_DECLARE_FLAG(std::string, feature_names_file);
ABSL_DECLARE_FLAG(uint32_t, top);
ABSL_DECLARE_FLAG(std::vector<std::string>, interactions);
ABSL_DECLARE_FLAG(std::vector<std::string>, classes);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(std::string, positive);
ABSL_DECLARE_FLAG(int, index_base);
ABSL_DECLARE_FLAG(std::string, label_column);
ABSL_DECLARE_FLAG(absl::Duration, idle_expiry);
ABSL_DECLARE_FLAG(bool, create);
ABSL_DECLARE_FLAG(uint32_t, epochs);
ABSL_DECLARE_FLAG(uint32_t, max_epochs);
ABSL_DECLARE_FLAG(uint32_t, batch);
ABSL_DECLARE_FLAG(uint32_t, in_flight);
ABSL_DECLARE_FLAG(bool, columnar);
ABSL_DECLARE_FLAG(std::string, progress);
ABSL_DECLARE_FLAG(bool, issue);
ABSL_DECLARE_FLAG(absl::Duration, interval);
ABSL_DECLARE_FLAG(uint64_t, count);
ABSL_DECLARE_FLAG(std::string, as);
ABSL_DECLARE_FLAG(double, margin);
ABSL_DECLARE_FLAG(double, noise);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(bool, log_scale);
ABSL_DECLARE_FLAG(std::string, separator_out);

namespace perceptron::client::cli {

// --batch when not given (at most the server's max_batch_items): train,
// predict --issue and reveal keep requests in flight; plain predict waits for
// each answer, so it sends larger ones.
inline constexpr uint32_t kDefaultBatch = 64;
inline constexpr uint32_t kDefaultPredictBatch = 1024;

// The flags a model's configuration is read from: create's, and train's and
// fit's with --create (create's help lists them; a model that exists says
// which of them it did not apply).
const std::vector<const char*>& ModelConfigFlags();

}  // namespace perceptron::client::cli

#endif  // PERCEPTRON_CLIENT_CLI_FLAGS_H_
