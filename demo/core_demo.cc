// perceptron_core_demo: the core library on two streams, printing cumulative
// mistakes beside the theory's bound as the model learns.
//   1. A synthetic stream, separable by a known unit vector u with margin
//   gamma, with label noise;
//      u is the model's comparator, so TD_gamma and the bound are live.
//   2. scikit-learn's breast_cancer.csv (Debian's python3-sklearn): one
//   prequential pass, then
//      cyclic training; its comparator is the weight vector that the cyclic
//      training ends with.
// Usage: perceptron_core_demo [--examples N] [--csv PATH]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/model.h"

namespace perceptron {
namespace {

constexpr char kDefaultCsv[] =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";

void PrintHeader() {
  std::printf("  %9s %9s %9s %12s %12s %10s\n", "examples", "mistakes",
              "updates", "TD_gamma", "bound", "upd/bound");
}

void PrintRow(const Model& model) {
  const Stats s = model.stats();
  if (s.bound.bound_available) {
    std::printf("  %9llu %9llu %9llu %12.3f %12.1f %10.4f\n",
                static_cast<unsigned long long>(s.counters.examples),
                static_cast<unsigned long long>(s.counters.mistakes),
                static_cast<unsigned long long>(s.counters.updates),
                s.bound.td_gamma, s.bound.bound,
                s.counters.updates / s.bound.bound);
  } else {
    std::printf("  %9llu %9llu %9llu %12s %12s %10s\n",
                static_cast<unsigned long long>(s.counters.examples),
                static_cast<unsigned long long>(s.counters.mistakes),
                static_cast<unsigned long long>(s.counters.updates), "n/a",
                "n/a", "");
  }
}

int Synthetic(size_t n) {
  constexpr uint32_t kDim = 20;
  constexpr double kGamma = 0.05, kNoise = 0.02;
  std::mt19937_64 rng(2026);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  std::vector<double> u(kDim + 1);
  double n2 = 0;
  for (double& v : u) {
    v = normal(rng);
    n2 += v * v;
  }
  for (double& v : u) v /= std::sqrt(n2);

  ModelConfig config;
  config.dimension = kDim;
  config.gamma = kGamma;
  config.comparator = u;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  std::printf(
      "Synthetic stream: d=%u, bias and normalization on, separable by u with "
      "margin "
      "%.2f, %.0f%% of labels flipped; comparator u, gamma %.2f\n",
      kDim, kGamma, kNoise * 100, kGamma);
  PrintHeader();
  std::vector<double> x(kDim);
  for (size_t t = 1; t <= n; ++t) {
    double m;
    do {               // draw until u separates x^ with margin gamma
      double xn2 = 1;  // the bias constant
      m = u[kDim];
      for (uint32_t i = 0; i < kDim; ++i) {
        x[i] = normal(rng);
        xn2 += x[i] * x[i];
        m += u[i] * x[i];
      }
      m /= std::sqrt(xn2);
    } while (std::abs(m) < kGamma);
    const int y = (m > 0) == (unit(rng) >= kNoise) ? 1 : -1;
    if (!(*model)->Learn(FeatureView::Dense(x), y).ok()) return 1;
    if (t % (n / 10) == 0 || t == 100 || t == 1000) PrintRow(**model);
  }
  return 0;
}

bool ReadCsv(const std::string& path, std::vector<std::vector<double>>* x,
             std::vector<int>* y) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);  // header: n_samples,n_features,class names
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ','))
      row.push_back(std::strtod(cell.c_str(), nullptr));
    if (row.size() < 2) continue;
    y->push_back(row.back() == 1 ? 1 : -1);  // 1 = benign is the positive class
    row.pop_back();
    x->push_back(std::move(row));
  }
  return !x->empty();
}

int BreastCancer(const std::string& path) {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  if (!ReadCsv(path, &x, &y)) {
    std::fprintf(
        stderr,
        "cannot read %s (install python3-sklearn, or pass --csv PATH)\n",
        path.c_str());
    return 1;
  }
  const uint32_t d = x[0].size();
  ModelConfig config;
  config.dimension = d;
  std::vector<LabeledExample> data;
  for (size_t t = 0; t < x.size(); ++t)
    data.push_back({FeatureView::Dense(x[t]), y[t]});

  // A comparator: where cyclic training ends.
  auto fit = *Model::Create(config);
  TrainOptions options;
  options.max_epochs = 200;
  const TrainResult fitted = *fit->Train(data, options);
  config.comparator.assign(fit->weights().begin(), fit->weights().end());
  config.gamma = 0.01;

  std::printf("\n%s: %zu examples, %u features; bias and normalization on\n",
              path.c_str(), x.size(), d);
  std::printf(
      "Comparator u: the weights after %u passes of cyclic training (%s, %llu "
      "updates); gamma %.2f\n",
      fitted.epochs, fitted.converged ? "separated" : "not separated",
      static_cast<unsigned long long>(fitted.updates), *config.gamma);
  auto model = *Model::Create(config);
  PrintHeader();
  for (size_t t = 0; t < x.size(); ++t) {
    if (!model->Learn(data[t].x, data[t].label).ok()) return 1;
    if ((t + 1) % 100 == 0 || t + 1 == x.size()) PrintRow(*model);
  }
  options.max_epochs = 20;
  const TrainResult more = *model->Train(data, options);
  std::printf("Then %u passes of cyclic training: %llu more updates, %s\n",
              more.epochs, static_cast<unsigned long long>(more.updates),
              more.converged ? "separated" : "not separated");
  PrintRow(*model);
  return 0;
}

}  // namespace
}  // namespace perceptron

int main(int argc, char** argv) {
  size_t n = 100000;
  std::string csv = perceptron::kDefaultCsv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--examples" && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--csv" && i + 1 < argc) {
      csv = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--examples N] [--csv PATH]\n", argv[0]);
      return 2;
    }
  }
  if (n < 10) n = 10;
  if (int rc = perceptron::Synthetic(n); rc != 0) return rc;
  return perceptron::BreastCancer(csv);
}
