// A temporary directory for a test, removed with the object.
#ifndef PERCEPTRON_TESTS_SCOPED_DIR_H_
#define PERCEPTRON_TESTS_SCOPED_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace perceptron::testing {

class ScopedDir {
 public:
  explicit ScopedDir(const std::string& name) {
    path_ = ::testing::TempDir() + "/" + name + "-XXXXXX";
    EXPECT_NE(mkdtemp(path_.data()), nullptr);
  }
  ~ScopedDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_SCOPED_DIR_H_
