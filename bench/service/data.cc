#include "bench/service/data.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/example.h"
#include "core/certificate.h"
#include "core/feature_hash.h"
#include "core/model.h"
#include "core/prepare.h"
#include "echo.grpc.pb.h"

namespace perceptron::bench {

Data Generate(const Workload& w, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> u(w.dimension);
  for (double& v : u) v = normal(rng);
  if (w.classes > 0) {
    // k classes: each example's the highest of k random directions (dense
    // rows; 10% of labels replaced by a random class).
    std::vector<std::vector<double>> us(w.classes,
                                        std::vector<double>(w.dimension));
    for (auto& c : us) {
      for (double& v : c) v = normal(rng);
    }
    Data d;
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> val(w.dimension);
      for (double& v : val) v = normal(rng);
      int best = 0;
      double top = -1e300;
      for (uint32_t r = 0; r < w.classes; ++r) {
        double s = 0;
        for (uint32_t i = 0; i < w.dimension; ++i) s += us[r][i] * val[i];
        if (s > top) top = s, best = static_cast<int>(r);
      }
      if (rng() % 10 == 0) best = static_cast<int>(rng() % w.classes);
      d.values.push_back(std::move(val));
      d.indices.emplace_back();
      d.labels.push_back(best);
    }
    return d;
  }
  Data d;
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> val;
    std::vector<uint32_t> idx;
    double s = 0;
    if (w.nonzeros == 0) {
      for (uint32_t i = 0; i < w.dimension; ++i)
        s += u[i] * val.emplace_back(normal(rng));
    } else {
      while (idx.size() < w.nonzeros) {
        const uint32_t i = rng() % w.dimension;
        if (std::find(idx.begin(), idx.end(), i) == idx.end()) idx.push_back(i);
      }
      std::sort(idx.begin(), idx.end());
      for (uint32_t i : idx) s += u[i] * val.emplace_back(normal(rng));
    }
    d.values.push_back(std::move(val));
    d.indices.push_back(std::move(idx));
    d.labels.push_back((s >= 0) == (rng() % 10 != 0) ? 1 : -1);
  }
  return d;
}

std::vector<v1::LearnRequest> Requests(const Workload& w, const Data& d,
                                       const std::string& model) {
  std::vector<v1::LearnRequest> out(w.pool_batches);
  size_t t = 0;
  for (v1::LearnRequest& r : out) {
    r.set_model_id(model);
    for (int i = 0; i < w.batch; ++i, t = (t + 1) % d.labels.size()) {
      v1::LabeledExample* l = r.add_items()->mutable_labeled();
      l->set_label(d.labels[t]);
      if (w.nonzeros == 0) {
        l->mutable_features()->mutable_dense()->mutable_values()->Add(
            d.values[t].begin(), d.values[t].end());
      } else {
        v1::SparseVector* s = l->mutable_features()->mutable_sparse();
        s->mutable_indices()->Add(d.indices[t].begin(), d.indices[t].end());
        s->mutable_values()->Add(d.values[t].begin(), d.values[t].end());
      }
    }
  }
  return out;
}

std::vector<v1::LearnRequest> ColumnarRequests(const Workload& w, const Data& d,
                                               const std::string& model) {
  std::vector<v1::LearnRequest> out(w.pool_batches);
  size_t t = 0;
  for (v1::LearnRequest& r : out) {
    r.set_model_id(model);
    v1::Columns* c = r.mutable_columns();
    for (int i = 0; i < w.batch; ++i, t = (t + 1) % d.labels.size()) {
      c->add_labels(d.labels[t]);
      if (w.nonzeros == 0) {
        c->mutable_dense()->Add(d.values[t].begin(), d.values[t].end());
        c->set_dense_rows(c->dense_rows() + 1);
      } else {
        c->mutable_fixed_indices()->Add(d.indices[t].begin(),
                                        d.indices[t].end());
        c->mutable_values()->Add(d.values[t].begin(), d.values[t].end());
        c->add_row_ends(c->fixed_indices_size());
      }
    }
  }
  return out;
}

NamedData GenerateNamed(size_t n, uint64_t seed) {
  constexpr size_t kVocabulary = 100000;
  constexpr int kPerExample = 30;
  const char* const spaces[] = {"title", "body", "meta"};
  std::mt19937_64 rng(seed);
  std::vector<std::string> words;
  for (size_t i = 0; i < kVocabulary; ++i) {
    words.push_back(absl::StrCat("w", rng() % 1000000000));
  }
  NamedData d;
  for (size_t t = 0; t < n; ++t) {
    std::vector<v1::NamedFeature> x;
    int low = 0;
    for (int k = 0; k < kPerExample; ++k) {
      const size_t w = rng() % kVocabulary;
      low += w < kVocabulary / 2;
      v1::NamedFeature& f = x.emplace_back();
      f.set_space(spaces[k % 3]);
      f.set_name(words[w]);
    }
    d.features.push_back(std::move(x));
    d.labels.push_back((2 * low >= kPerExample) == (rng() % 10 != 0) ? 1 : -1);
  }
  return d;
}

std::vector<v1::LearnRequest> NamedRequests(const Workload& w,
                                            const NamedData& d,
                                            const std::string& model) {
  std::vector<v1::LearnRequest> out(w.pool_batches);
  size_t t = 0;
  for (v1::LearnRequest& r : out) {
    r.set_model_id(model);
    for (int i = 0; i < w.batch; ++i, t = (t + 1) % d.labels.size()) {
      v1::LabeledExample* l = r.add_items()->mutable_labeled();
      l->set_label(d.labels[t]);
      l->mutable_features()->mutable_named()->mutable_features()->Add(
          d.features[t].begin(), d.features[t].end());
    }
  }
  return out;
}

std::vector<v1::LearnRequest> NamedColumnarRequests(const Workload& w,
                                                    const NamedData& d,
                                                    const std::string& model) {
  std::vector<v1::LearnRequest> out(w.pool_batches);
  client::NamedColumns names;
  size_t t = 0;
  for (v1::LearnRequest& r : out) {
    r.set_model_id(model);
    names.Clear();
    v1::Columns* c = r.mutable_columns();
    for (int i = 0; i < w.batch; ++i, t = (t + 1) % d.labels.size()) {
      const google::protobuf::RepeatedPtrField<v1::NamedFeature> row(
          d.features[t].begin(), d.features[t].end());
      names.Append(row, c);
      c->add_labels(d.labels[t]);
    }
  }
  return out;
}

Data Hashed(const Workload& w, const NamedData& d) {
  const FeatureHasher hasher(w.hash_bits, {});
  Data out;
  for (size_t t = 0; t < d.labels.size(); ++t) {
    std::vector<NamedFeature> x;
    for (const v1::NamedFeature& f : d.features[t]) {
      NamedFeature& g = x.emplace_back();  // W5's features: a value of 1
      g.space = f.space();
      g.name = f.name();
    }
    Features h;
    if (!hasher.Hash(x, &h).ok()) std::exit(1);
    out.indices.push_back(std::move(h.indices));
    out.values.push_back(std::move(h.values));
    out.labels.push_back(d.labels[t]);
  }
  return out;
}

}  // namespace perceptron::bench
