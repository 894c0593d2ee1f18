// Runs a peer, an independent implementation the core is checked against
// (scikit-learn, liblinear, libsvm, cvxopt, in the scripts beside this file),
// and returns what it printed.
//
//   const std::string out = perceptron::testing::RunPeer(
//       std::string(PERCEPTRON_PYTHON) + " " + PERCEPTRON_SVC_SCRIPT);
//
// A peer that cannot be started or exits non-zero fails the test, with its
// output in the message.
#ifndef PERCEPTRON_TESTS_CORE_PEERS_PEER_H_
#define PERCEPTRON_TESTS_CORE_PEERS_PEER_H_

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace perceptron::testing {

inline std::string RunPeer(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  std::string out;
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << command << " failed:\n" << out;
  return out;
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_CORE_PEERS_PEER_H_
