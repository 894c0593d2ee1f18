// The CLI's commands, one function each: the arguments after the command's
// name in, the exit status out (0 success, 1 failure, 2 usage).
#ifndef PERCEPTRON_CLIENT_CLI_COMMANDS_H_
#define PERCEPTRON_CLIENT_CLI_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/common.h"

namespace perceptron::client::cli {

// models.cc
int Create(const Args& args);
int List(const Args& args);
int Get(const Args& args);
int Delete(const Args& args);
int Reset(const Args& args);
int Weights(const Args& args);
int Health(const Args& args);
int RebalanceCommand(const Args& args);
// A model configuration from the create flags (also for train --create, whose
// file gives `classes` where --classes does not).
absl::StatusOr<v1::ModelConfig> ConfigFromFlags(
    uint32_t dimension, const std::vector<std::string>& classes = {});

// data.cc
int Train(const Args& args);
int Fit(const Args& args);
int Predict(const Args& args);
int Reveal(const Args& args);
int Generate(const Args& args);

// inspect.cc
int Status(const Args& args);
int CertificateCommand(const Args& args);
int Watch(const Args& args);
int Plot(const Args& args);

// transfer.cc
int Export(const Args& args);
int Import(const Args& args);

}  // namespace perceptron::client::cli

#endif  // PERCEPTRON_CLIENT_CLI_COMMANDS_H_
