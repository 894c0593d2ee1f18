// scikit-learn's breast_cancer.csv (Debian's python3-sklearn) as the core
// tests read it.
#ifndef PERCEPTRON_TESTS_CORE_BREAST_CANCER_H_
#define PERCEPTRON_TESTS_CORE_BREAST_CANCER_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perceptron::testing {

// sklearn's own CSV layout: a header "n_samples,n_features,names...", then rows
// of features and an integer target (0 malignant, 1 benign; sklearn's positive
// class is 1).
inline void ReadBreastCancer(const std::string& path,
                             std::vector<std::vector<double>>* x,
                             std::vector<int>* y) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ','))
      row.push_back(std::strtod(cell.c_str(), nullptr));
    y->push_back(row.back() == 1 ? 1 : -1);
    row.pop_back();
    x->push_back(std::move(row));
  }
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_CORE_BREAST_CANCER_H_
