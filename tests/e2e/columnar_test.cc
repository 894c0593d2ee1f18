// Columnar Learn batches (docs/design.md section 4) against the per-item path:
// the same batches, sent both ways to two models of one server, give the same
// answers bit for bit (scores, labels, mistakes, updates, prediction ids,
// every error's code and message) and the same state; arrays of inconsistent
// lengths end the stream and change nothing. The client library's sessions
// send columns where a batch allows and answer the same as with items.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using testing::ServerProcess;

using Stream = grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>;

// One batch, as the per-item path's items and as columns.
struct Batch {
  v1::LearnRequest items;
  v1::LearnRequest columns;
};

struct Row {
  std::vector<uint32_t> indices;  // empty: dense
  std::vector<double> values;
};

// A batch of `reveals` (prediction id, label), then `rows`, labeled with
// `labels` if given; sparse rows' indices as Columns.fixed_indices, or as
// Columns.indices (varints) if not `fixed_indices`.
Batch MakeBatch(const std::vector<std::pair<uint64_t, int>>& reveals,
                const std::vector<Row>& rows, const std::vector<int>& labels,
                bool sparse, bool fixed_indices = true) {
  Batch b;
  v1::Columns* c = b.columns.mutable_columns();
  for (auto [id, label] : reveals) {
    v1::RevealItem* r = b.items.add_items()->mutable_reveal();
    r->set_prediction_id(id);
    r->set_label(label);
    c->add_reveal_ids(id);
    c->add_reveal_labels(label);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    v1::LearnItem* item = b.items.add_items();
    v1::Features* f = labels.empty()
                          ? item->mutable_example()
                          : item->mutable_labeled()->mutable_features();
    if (!labels.empty()) {
      item->mutable_labeled()->set_label(labels[i]);
      c->add_labels(labels[i]);
    }
    if (sparse) {
      f->mutable_sparse()->mutable_indices()->Add(rows[i].indices.begin(),
                                                  rows[i].indices.end());
      f->mutable_sparse()->mutable_values()->Add(rows[i].values.begin(),
                                                 rows[i].values.end());
      (fixed_indices ? c->mutable_fixed_indices() : c->mutable_indices())
          ->Add(rows[i].indices.begin(), rows[i].indices.end());
      c->mutable_values()->Add(rows[i].values.begin(), rows[i].values.end());
      c->add_row_ends(c->values_size());
    } else {
      f->mutable_dense()->mutable_values()->Add(rows[i].values.begin(),
                                                rows[i].values.end());
      c->mutable_dense()->Add(rows[i].values.begin(), rows[i].values.end());
      c->set_dense_rows(c->dense_rows() + 1);
    }
  }
  return b;
}

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

bool Bit(const std::string& bits, size_t k) {
  return k / 8 < bits.size() && (bits[k / 8] >> (k % 8) & 1);
}

// The stats without the certificate (refreshed in the background, at its own
// moments for each model).
std::string StatsBytes(v1::ModelStats s) {
  s.clear_certificate();
  return s.SerializeAsString();
}

// Checks that `columnar` answers as `items` did, item by item.
void ExpectSameAnswers(const v1::LearnResponse& items,
                       const v1::LearnResponse& columnar, size_t batch) {
  const v1::ColumnResults& c = columnar.columns();
  ASSERT_EQ(columnar.results_size(), 0);
  ASSERT_EQ(c.scores_size(), items.results_size()) << "batch " << batch;
  ASSERT_EQ(c.labels_size(), items.results_size());
  size_t errors = 0, issued = 0;
  for (int k = 0; k < items.results_size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch << " item " << k);
    const v1::ItemResult& r = items.results(k);
    if (r.has_error()) {
      ASSERT_LT(errors, static_cast<size_t>(c.errors_size()));
      const v1::ColumnError& e = c.errors(errors++);
      EXPECT_EQ(e.item(), static_cast<uint32_t>(k));
      EXPECT_EQ(e.error().code(), r.error().code());
      EXPECT_EQ(e.error().message(), r.error().message());
      EXPECT_EQ(c.scores(k), 0);
      EXPECT_EQ(c.labels(k), 0);
      EXPECT_FALSE(Bit(c.mistakes(), k) || Bit(c.updates(), k));
    } else if (r.has_outcome()) {
      EXPECT_EQ(Bits(c.scores(k)), Bits(r.outcome().score()));
      EXPECT_EQ(c.labels(k), r.outcome().label());
      EXPECT_EQ(Bit(c.mistakes(), k), r.outcome().mistake());
      EXPECT_EQ(Bit(c.updates(), k), r.outcome().updated());
    } else {
      ASSERT_TRUE(r.has_prediction());
      EXPECT_EQ(c.first_prediction_id() + issued++,
                r.prediction().prediction_id());
      EXPECT_EQ(Bits(c.scores(k)), Bits(r.prediction().score()));
      EXPECT_EQ(c.labels(k), r.prediction().label());
      EXPECT_FALSE(Bit(c.mistakes(), k) || Bit(c.updates(), k));
    }
  }
  EXPECT_EQ(errors, static_cast<size_t>(c.errors_size()));
  if (issued == 0) {
    EXPECT_EQ(c.first_prediction_id(), 0u);
  }
  EXPECT_EQ(StatsBytes(items.stats()), StatsBytes(columnar.stats()));
}

struct Case {
  std::string name;
  uint32_t dimension;
  bool sparse;
  v1::Algorithm algorithm;
  bool bias, normalize;
};

TEST(ColumnarTest, ColumnsAndItemsGiveTheSameAnswersAndState) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--durability=none"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::PerceptronService::NewStub(grpc::CreateChannel(
      (*server)->target(), grpc::InsecureChannelCredentials()));
  std::mt19937_64 rng(17);
  std::normal_distribution<double> normal;
  for (const Case& kase : {Case{"dense", 7, false, v1::CLASSIC, true, true},
                           Case{"sparse", 50, true, v1::AVERAGED, true, false},
                           Case{"margin", 5, false, v1::MARGIN, false, true},
                           Case{"kernel", 4, false, v1::KERNEL, true, true}}) {
    SCOPED_TRACE(kase.name);
    for (const char* suffix : {"-items", "-columns"}) {
      v1::CreateModelRequest create;
      create.set_model_id(kase.name + suffix);
      v1::ModelConfig* config = create.mutable_config();
      config->set_dimension(kase.dimension);
      config->set_algorithm(kase.algorithm);
      config->set_bias(kase.bias);
      config->set_normalize(kase.normalize);
      if (kase.algorithm == v1::MARGIN) config->set_gamma(0.1);
      if (kase.algorithm == v1::KERNEL) {
        config->mutable_kernel()->set_type(v1::RBF);
        config->mutable_kernel()->set_sigma(1.5);
      }
      grpc::ClientContext context;
      v1::Model model;
      ASSERT_TRUE(stub->CreateModel(&context, create, &model).ok());
    }
    grpc::ClientContext items_context, columns_context;
    std::unique_ptr<Stream> items = stub->Learn(&items_context);
    std::unique_ptr<Stream> columns = stub->Learn(&columns_context);
    std::vector<uint64_t> issued;  // ids not yet revealed
    int seen[4] = {};  // errors, predictions, reveal outcomes, row outcomes
    for (size_t batch = 0; batch < 60; ++batch) {
      // Reveals: mostly of issued ids, some unknown or repeated, bad labels.
      std::vector<std::pair<uint64_t, int>> reveals;
      const size_t n_reveals = batch % 3 == 2 ? rng() % 12 : 0;
      for (size_t k = 0; k < n_reveals; ++k) {
        uint64_t id = 1000000 + rng() % 10;  // unknown
        if (!issued.empty() && rng() % 5 != 0) {
          const size_t at = rng() % issued.size();
          id = issued[at];
          if (rng() % 4 != 0) issued.erase(issued.begin() + at);  // else twice
        }
        reveals.push_back({id, rng() % 20 == 0 ? 0 : (rng() % 2 ? 1 : -1)});
      }
      std::vector<Row> rows(rng() % 40);
      std::vector<int> labels;
      const bool labeled = batch % 3 != 1;
      for (size_t i = 0; i < rows.size(); ++i) {
        Row& row = rows[i];
        for (uint32_t j = 0; j < kase.dimension; ++j) {
          if (kase.sparse && rng() % 8 != 0) continue;
          if (kase.sparse) row.indices.push_back(j);
          row.values.push_back(normal(rng));
        }
        // Bad rows: a NaN, an index out of range, a duplicate index, a bad
        // label.
        const uint64_t bad = rng() % 40;
        if (bad == 0 && !row.values.empty()) row.values[0] = std::nan("");
        if (bad == 1 && kase.sparse) {
          row.indices.push_back(kase.dimension + 3);
          row.values.push_back(1);
        }
        if (bad == 2 && kase.sparse && !row.indices.empty()) {
          row.indices.push_back(row.indices[0]);
          row.values.push_back(1);
        }
        double s = 0;
        for (double v : row.values) s += v;
        if (labeled) labels.push_back(bad == 3 ? 2 : (s > 0 ? 1 : -1));
      }
      // The sparse rows' indices as fixed32 and as varints, by turns.
      Batch b = MakeBatch(reveals, rows, labels, kase.sparse,
                          /*fixed_indices=*/batch % 2 == 0);
      if (batch == 0) {
        b.items.set_model_id(kase.name + "-items");
        b.columns.set_model_id(kase.name + "-columns");
      }
      v1::LearnResponse by_items, by_columns;
      ASSERT_TRUE(items->Write(b.items) && items->Read(&by_items));
      ASSERT_TRUE(columns->Write(b.columns) && columns->Read(&by_columns));
      ExpectSameAnswers(by_items, by_columns, batch);
      for (int k = 0; k < by_items.results_size(); ++k) {
        const v1::ItemResult& r = by_items.results(k);
        if (r.has_prediction())
          issued.push_back(r.prediction().prediction_id());
        seen[r.has_error()                     ? 0
             : r.has_prediction()              ? 1
             : k < static_cast<int>(n_reveals) ? 2
                                               : 3]++;
      }
    }
    items->WritesDone();
    columns->WritesDone();
    EXPECT_TRUE(items->Finish().ok());
    EXPECT_TRUE(columns->Finish().ok());
    // The same state: weights bit for bit, and every figure of the status.
    std::string weights[2], stats[2];
    for (int m = 0; m < 2; ++m) {
      const std::string id = kase.name + (m == 0 ? "-items" : "-columns");
      grpc::ClientContext wc, sc;
      v1::GetWeightsRequest wr;
      wr.set_model_id(id);
      v1::Weights w;
      if (kase.algorithm != v1::KERNEL) {
        ASSERT_TRUE(stub->GetWeights(&wc, wr, &w).ok());
        weights[m] =
            std::string(reinterpret_cast<const char*>(w.values().data()),
                        w.values_size() * sizeof(double));
      }
      v1::GetStatusRequest sr;
      sr.set_model_id(id);
      v1::ModelStatus st;
      ASSERT_TRUE(stub->GetStatus(&sc, sr, &st).ok());
      stats[m] = StatsBytes(st.stats());
      EXPECT_GT(st.stats().examples(), 0u);
    }
    EXPECT_EQ(weights[0], weights[1]);
    EXPECT_EQ(stats[0], stats[1]);
    // Every kind of answer was compared.
    for (int kind = 0; kind < 4; ++kind) EXPECT_GT(seen[kind], 10) << kind;
  }
}

// One thing a session is given: a labeled example, an example, or a reveal.
struct Op {
  enum Kind { kLabeled, kExample, kReveal } kind;
  client::Example e;
  uint64_t id = 0;
  int label = 0;
};

// Streams `ops` through a session on `model` in batches of `batch_size` and
// returns its summary and every answer, as items.
struct Streamed {
  client::SessionSummary summary;
  std::vector<v1::ItemResult> results;
};
Streamed StreamOps(client::Client& c, const std::string& model,
                   const std::vector<Op>& ops, bool columnar,
                   size_t batch_size = 16) {
  Streamed out;
  client::SessionOptions so;
  so.batch_size = batch_size;
  so.max_in_flight = 4;
  so.columnar = columnar;
  so.on_response = [&out](const v1::LearnResponse& r) {
    out.results.insert(out.results.end(), r.results().begin(),
                       r.results().end());
  };
  std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(model, so);
  for (const Op& op : ops) {
    const absl::Status added = op.kind == Op::kLabeled ? s->AddLabeled(op.e)
                               : op.kind == Op::kExample
                                   ? s->AddExample(op.e)
                                   : s->AddReveal(op.id, op.label);
    EXPECT_TRUE(added.ok()) << added;
  }
  absl::StatusOr<client::SessionSummary> summary = s->Finish();
  EXPECT_TRUE(summary.ok()) << summary.status();
  if (summary.ok()) out.summary = *summary;
  return out;
}

TEST(ColumnarTest, SessionsSendColumnsWhereABatchAllowsAndAnswerAsItems) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--durability=none"});
  ASSERT_TRUE(server.ok()) << server.status();
  client::ClientOptions options;
  options.target = (*server)->target();
  std::unique_ptr<client::Client> c = client::Client::Connect(options);
  constexpr uint32_t kDimension = 6;
  for (const char* id : {"items", "columns"}) {
    v1::ModelConfig config;
    config.set_dimension(kDimension);
    config.set_bias(true);
    ASSERT_TRUE(c->CreateModel(id, config).ok());
  }
  std::mt19937_64 rng(23);
  std::normal_distribution<double> normal;
  // Runs of one kind (so that many batches fit columns), some rows that
  // columns cannot hold (dense of another length, sparse with more indices
  // than values) or that the server refuses (a NaN, a bad label, an index
  // out of range), and reveals of ids the first round issued.
  auto round = [&](const std::vector<uint64_t>& issued) {
    std::vector<Op> ops;
    while (ops.size() < 600) {
      const int kind = static_cast<int>(rng() % (issued.empty() ? 2 : 3));
      const bool sparse = rng() % 3 == 0;
      const size_t run = 1 + rng() % 40;
      for (size_t i = 0; i < run; ++i) {
        Op op{static_cast<Op::Kind>(kind), {}, 0, 0};
        if (op.kind == Op::kReveal) {
          op.id = rng() % 8 == 0 ? 1000000 : issued[rng() % issued.size()];
          op.label = rng() % 2 ? 1 : -1;
          ops.push_back(op);
          continue;
        }
        op.e.sparse = sparse;
        for (uint32_t j = 0; j < kDimension; ++j) {
          if (sparse && rng() % 2 == 0) continue;
          if (sparse) op.e.indices.push_back(j);
          op.e.values.push_back(normal(rng));
        }
        const uint64_t odd = rng() % 30;
        if (odd == 0 && !sparse) op.e.values.push_back(1);  // length d + 1
        if (odd == 1 && sparse) op.e.indices.push_back(kDimension - 1);
        if (odd == 2 && !op.e.values.empty()) op.e.values[0] = std::nan("");
        if (odd == 3 && sparse) {
          op.e.indices.push_back(kDimension + 1);
          op.e.values.push_back(1);
        }
        double sum = 0;
        for (double v : op.e.values) sum += v;
        op.e.label = odd == 4 ? 0 : (sum > 0 ? 1 : -1);
        ops.push_back(op);
      }
    }
    return ops;
  };
  std::vector<uint64_t> issued;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(::testing::Message() << "round " << r);
    const std::vector<Op> ops = round(issued);
    const Streamed by_items = StreamOps(*c, "items", ops, /*columnar=*/false);
    const Streamed by_columns =
        StreamOps(*c, "columns", ops, /*columnar=*/true);
    ASSERT_EQ(by_items.results.size(), ops.size());
    ASSERT_EQ(by_columns.results.size(), ops.size());
    int kinds[4] = {};  // errors, predictions, reveal outcomes, row outcomes
    for (size_t k = 0; k < ops.size(); ++k) {
      const v1::ItemResult& a = by_items.results[k];
      // Doubles compared bit for bit, through their encoding.
      EXPECT_EQ(a.SerializeAsString(),
                by_columns.results[k].SerializeAsString())
          << "item " << k << ": " << a.ShortDebugString() << " against "
          << by_columns.results[k].ShortDebugString();
      if (a.has_prediction()) issued.push_back(a.prediction().prediction_id());
      kinds[a.has_error()                ? 0
            : a.has_prediction()         ? 1
            : ops[k].kind == Op::kReveal ? 2
                                         : 3]++;
    }
    // Batches end at the same items; most went as columns.
    EXPECT_EQ(by_items.summary.requests, by_columns.summary.requests);
    EXPECT_EQ(by_items.summary.item_errors, by_columns.summary.item_errors);
    EXPECT_EQ(by_items.summary.first_error, by_columns.summary.first_error);
    EXPECT_EQ(by_items.summary.columnar_requests, 0u);
    EXPECT_GT(by_columns.summary.columnar_requests,
              by_columns.summary.requests / 4);
    EXPECT_LT(by_columns.summary.columnar_requests,
              by_columns.summary.requests);
    EXPECT_EQ(StatsBytes(by_items.summary.stats),
              StatsBytes(by_columns.summary.stats));
    for (int kind = 0; kind < 4; ++kind) {
      if (r > 0 || kind != 2) {
        EXPECT_GT(kinds[kind], 5) << kind;
      }
    }
  }
  absl::StatusOr<v1::Weights> a = c->GetWeights("items");
  absl::StatusOr<v1::Weights> b = c->GetWeights("columns");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
}

// `r` with its error's message, if any, without the "item N: " before it.
v1::ItemResult WithoutItemNumber(v1::ItemResult r) {
  if (!r.has_error()) return r;
  const std::string& m = r.error().message();
  const size_t colon = m.find(": ");
  if (absl::StartsWith(m, "item ") && colon != std::string::npos) {
    r.mutable_error()->set_message(m.substr(colon + 2));
  }
  return r;
}

// Rows by name go as columns of a string table (Columns.text, named_*):
// the same answers, weights and names as items, with namespaces, values,
// categorical values, interactions, refused rows and reveals mixed in. Both
// hash a row or item by name ahead of the one they learn; a third model
// given one item a request (none hashed ahead) answers the same.
TEST(ColumnarTest, SessionsSendNamedRowsAsColumnsAndAnswerAsItems) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--durability=none"});
  ASSERT_TRUE(server.ok()) << server.status();
  client::ClientOptions options;
  options.target = (*server)->target();
  std::unique_ptr<client::Client> c = client::Client::Connect(options);
  for (const char* id : {"items", "columns", "single"}) {
    v1::ModelConfig config;
    config.set_hash_bits(10);
    config.add_interactions("ab");
    ASSERT_TRUE(c->CreateModel(id, config).ok());
  }
  std::mt19937_64 rng(29);
  auto round = [&](const std::vector<uint64_t>& issued) {
    std::vector<Op> ops;
    while (ops.size() < 500) {
      const int kind = static_cast<int>(rng() % (issued.empty() ? 2 : 3));
      const size_t run = 1 + rng() % 30;
      for (size_t i = 0; i < run; ++i) {
        Op op{static_cast<Op::Kind>(kind), {}, 0, 0};
        if (op.kind == Op::kReveal) {
          op.id = rng() % 8 == 0 ? 1000000 : issued[rng() % issued.size()];
          op.label = rng() % 2 ? 1 : -1;
          ops.push_back(op);
          continue;
        }
        int score = 0;
        for (uint64_t k = 1 + rng() % 6; k > 0; --k) {
          v1::NamedFeature f;
          const uint64_t w = rng() % 60;
          switch (rng() % 4) {
            case 0:
              f.set_space("a");
              f.set_name(absl::StrCat("w", w));
              break;
            case 1:
              f.set_space("b");
              f.set_name(absl::StrCat("w", w));
              f.set_number(static_cast<double>(rng() % 5) - 2);
              break;
            case 2:
              f.set_name("colour");
              f.set_category(w % 2 ? "red" : "blue");
              break;
            default:
              f.set_name(absl::StrCat(w));  // a numeric name
          }
          score += w < 30 ? 1 : -1;
          *op.e.named.Add() = f;
        }
        const uint64_t odd = rng() % 40;
        if (odd == 0) op.e.named[0].set_name("");
        if (odd == 1) op.e.named[0].set_number(std::nan(""));
        op.e.label = odd == 2 ? 0 : (score >= 0 ? 1 : -1);
        ops.push_back(op);
      }
    }
    return ops;
  };
  std::vector<uint64_t> issued;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(::testing::Message() << "round " << r);
    const std::vector<Op> ops = round(issued);
    const Streamed by_items = StreamOps(*c, "items", ops, /*columnar=*/false);
    const Streamed by_columns =
        StreamOps(*c, "columns", ops, /*columnar=*/true);
    const Streamed one_by_one =
        StreamOps(*c, "single", ops, /*columnar=*/false, /*batch_size=*/1);
    ASSERT_EQ(by_items.results.size(), ops.size());
    ASSERT_EQ(by_columns.results.size(), ops.size());
    ASSERT_EQ(one_by_one.results.size(), ops.size());
    int errors = 0;
    for (size_t k = 0; k < ops.size(); ++k) {
      const v1::ItemResult& a = by_items.results[k];
      EXPECT_EQ(a.SerializeAsString(),
                by_columns.results[k].SerializeAsString())
          << "item " << k << ": " << a.ShortDebugString() << " against "
          << by_columns.results[k].ShortDebugString();
      // An error names the item by its place in its request: 0 there.
      EXPECT_EQ(WithoutItemNumber(a).SerializeAsString(),
                WithoutItemNumber(one_by_one.results[k]).SerializeAsString())
          << "item " << k << ": " << a.ShortDebugString() << " against "
          << one_by_one.results[k].ShortDebugString();
      if (a.has_prediction()) issued.push_back(a.prediction().prediction_id());
      errors += a.has_error();
    }
    EXPECT_GT(errors, 5);
    EXPECT_EQ(by_items.summary.columnar_requests, 0u);
    EXPECT_GT(by_columns.summary.columnar_requests,
              by_columns.summary.requests / 4);
  }
  absl::StatusOr<v1::Weights> a = c->GetWeights("items");
  absl::StatusOr<v1::Weights> b = c->GetWeights("columns");
  absl::StatusOr<v1::Weights> one = c->GetWeights("single");
  ASSERT_TRUE(a.ok() && b.ok() && one.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
  EXPECT_EQ(a->SerializeAsString(), one->SerializeAsString());
  absl::StatusOr<v1::Weights> top_a = c->GetWeights("items", 50);
  absl::StatusOr<v1::Weights> top_b = c->GetWeights("columns", 50);
  absl::StatusOr<v1::Weights> top_one = c->GetWeights("single", 50);
  ASSERT_TRUE(top_a.ok() && top_b.ok() && top_one.ok());
  EXPECT_EQ(top_a->SerializeAsString(), top_b->SerializeAsString());
  EXPECT_EQ(top_a->SerializeAsString(), top_one->SerializeAsString());
  EXPECT_GT(top_a->names().names(), 100u);
}

TEST(ColumnarTest, ArraysOfInconsistentLengthsEndTheStreamAndChangeNothing) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--durability=none", "--max_batch_items=10"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::PerceptronService::NewStub(grpc::CreateChannel(
      (*server)->target(), grpc::InsecureChannelCredentials()));
  {
    v1::CreateModelRequest create;
    create.set_model_id("m");
    create.mutable_config()->set_dimension(3);
    grpc::ClientContext context;
    v1::Model model;
    ASSERT_TRUE(stub->CreateModel(&context, create, &model).ok());
  }
  struct Bad {
    std::string what;
    std::function<void(v1::LearnRequest*)> make;
    grpc::StatusCode code;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {"dense values not whole rows",
       [](v1::LearnRequest* r) {
         for (double v : {1.0, 2.0, 3.0, 4.0})
           r->mutable_columns()->add_dense(v);
         r->mutable_columns()->set_dense_rows(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "not dense_rows (1) rows"},
      {"rows of another length read as rows of d",
       [](v1::LearnRequest* r) {  // two rows of 3 values, said to be three
         for (double v : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0})
           r->mutable_columns()->add_dense(v);
         r->mutable_columns()->set_dense_rows(3);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "6 dense values"},
      {"labels for other rows",
       [](v1::LearnRequest* r) {
         for (double v : {1.0, 2.0, 3.0}) r->mutable_columns()->add_dense(v);
         r->mutable_columns()->set_dense_rows(1);
         r->mutable_columns()->add_labels(1);
         r->mutable_columns()->add_labels(-1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "2 labels for 1 rows"},
      {"row_ends going down",
       [](v1::LearnRequest* r) {
         v1::Columns* c = r->mutable_columns();
         c->add_row_ends(2);
         c->add_row_ends(1);
         c->add_indices(0);
         c->add_indices(1);
         c->add_values(1);
         c->add_values(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "row_ends[1] = 1"},
      {"indices past the last row",
       [](v1::LearnRequest* r) {
         v1::Columns* c = r->mutable_columns();
         c->add_row_ends(1);
         c->add_indices(0);
         c->add_indices(1);
         c->add_values(1);
         c->add_values(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "must agree"},
      {"fixed indices past the last row",
       [](v1::LearnRequest* r) {
         v1::Columns* c = r->mutable_columns();
         c->add_row_ends(1);
         c->add_fixed_indices(0);
         c->add_fixed_indices(1);
         c->add_values(1);
         c->add_values(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "2 indices and 2 values"},
      {"indices as varints and as fixed32",
       [](v1::LearnRequest* r) {
         v1::Columns* c = r->mutable_columns();
         c->add_row_ends(1);
         c->add_indices(0);
         c->add_fixed_indices(0);
         c->add_values(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       "fixed_indices or as indices, not both"},
      {"dense and sparse",
       [](v1::LearnRequest* r) {
         v1::Columns* c = r->mutable_columns();
         for (double v : {1.0, 2.0, 3.0}) c->add_dense(v);
         c->set_dense_rows(1);
         c->add_row_ends(0);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "not both"},
      {"reveal ids without labels",
       [](v1::LearnRequest* r) { r->mutable_columns()->add_reveal_ids(1); },
       grpc::StatusCode::INVALID_ARGUMENT, "reveal_labels"},
      {"items and columns",
       [](v1::LearnRequest* r) {
         for (double v : {1.0, 2.0, 3.0}) r->mutable_columns()->add_dense(v);
         r->mutable_columns()->set_dense_rows(1);
         r->add_items()->mutable_reveal()->set_prediction_id(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "items or columns"},
      {"over the batch limit",
       [](v1::LearnRequest* r) {
         for (int i = 0; i < 33; ++i) r->mutable_columns()->add_dense(1.0);
         r->mutable_columns()->set_dense_rows(11);
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "11 items"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    grpc::ClientContext context;
    std::unique_ptr<Stream> s = stub->Learn(&context);
    // A good batch first, then the bad one: the good one is answered.
    v1::LearnRequest good;
    good.set_model_id("m");
    for (double v : {1.0, -1.0, 0.5}) good.mutable_columns()->add_dense(v);
    good.mutable_columns()->set_dense_rows(1);
    good.mutable_columns()->add_labels(1);
    v1::LearnResponse r;
    ASSERT_TRUE(s->Write(good) && s->Read(&r));
    const uint64_t examples = r.stats().examples();
    v1::LearnRequest request;
    b.make(&request);
    s->Write(request);
    EXPECT_FALSE(s->Read(&r));
    const grpc::Status status = s->Finish();
    EXPECT_EQ(status.error_code(), b.code) << status.error_message();
    EXPECT_NE(status.error_message().find(b.says), std::string::npos)
        << status.error_message();
    grpc::ClientContext sc;
    v1::GetStatusRequest sr;
    sr.set_model_id("m");
    v1::ModelStatus st;
    ASSERT_TRUE(stub->GetStatus(&sc, sr, &st).ok());
    EXPECT_EQ(st.stats().examples(), examples);
    EXPECT_EQ(st.stats().predictions(), 0u);
  }
}

// Batches written ahead of their answers, long ones (hundreds of rows, whose
// successors the server reads while it applies them) among short ones (read
// after): every answer comes in order and equals the core library's, and the
// weights end bit for bit the same, with each durability mode.
TEST(ColumnarTest, BatchesInFlightAreAppliedAndAnsweredInOrder) {
  constexpr uint32_t kDimension = 300;
  constexpr size_t kBatches = 120;
  std::mt19937_64 rng(29);
  std::normal_distribution<double> normal;
  std::vector<Batch> batches;
  std::vector<std::vector<Row>> rows_of;
  std::vector<std::vector<int>> labels_of;
  for (size_t batch = 0; batch < kBatches; ++batch) {
    std::vector<Row> rows(rng() % 3 == 0 ? 300 + rng() % 200 : 1 + rng() % 3);
    std::vector<int> labels;
    for (Row& row : rows) {
      double s = 0;
      for (uint32_t j = 0; j < kDimension; ++j) {
        row.values.push_back(normal(rng));
        s += (j % 2 ? 1 : -1) * row.values.back();
      }
      labels.push_back(s + normal(rng) > 0 ? 1 : -1);
    }
    batches.push_back(MakeBatch({}, rows, labels, /*sparse=*/false));
    rows_of.push_back(std::move(rows));
    labels_of.push_back(std::move(labels));
  }
  for (const char* durability : {"none", "sync"}) {
    SCOPED_TRACE(durability);
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start({absl::StrCat("--durability=", durability)});
    ASSERT_TRUE(server.ok()) << server.status();
    auto stub = v1::PerceptronService::NewStub(grpc::CreateChannel(
        (*server)->target(), grpc::InsecureChannelCredentials()));
    {
      grpc::ClientContext context;
      v1::CreateModelRequest create;
      create.set_model_id("m");
      create.mutable_config()->set_dimension(kDimension);
      v1::Model model;
      ASSERT_TRUE(stub->CreateModel(&context, create, &model).ok());
    }
    ModelConfig config;
    config.dimension = kDimension;
    std::unique_ptr<Model> core = *Model::Create(config);
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream = stub->Learn(&context);
    // Every batch written at once (as columns or as items, by turns), while
    // the answers are read below.
    std::thread writer([&] {
      for (size_t batch = 0; batch < kBatches; ++batch) {
        v1::LearnRequest r =
            batch % 2 ? batches[batch].columns : batches[batch].items;
        if (batch == 0) r.set_model_id("m");
        if (!stream->Write(r)) break;
      }
      stream->WritesDone();
    });
    // A failure below stops reading, cancels the stream so that the writer
    // returns, and is reported once the writer has been joined.
    bool stopped = false;
    auto stop = [&](const std::string& why) {
      ADD_FAILURE() << why;
      stopped = true;
      context.TryCancel();
    };
    size_t answers = 0, compared = 0;
    v1::LearnResponse response;
    while (!stopped && stream->Read(&response)) {
      if (answers >= kBatches) {
        stop(absl::StrCat("more than ", kBatches, " answers"));
        break;
      }
      const size_t batch = answers++;
      const std::vector<Row>& rows = rows_of[batch];
      const bool columnar = batch % 2;
      const int answered =
          columnar ? response.columns().scores_size() : response.results_size();
      if (answered != static_cast<int>(rows.size())) {
        stop(absl::StrCat("batch ", batch, ": ", answered, " answers for ",
                          rows.size(), " rows"));
        break;
      }
      for (size_t i = 0; i < rows.size(); ++i) {
        absl::StatusOr<Outcome> o = core->Learn(
            FeatureView::Dense(rows[i].values), labels_of[batch][i]);
        if (!o.ok()) {
          stop(o.status().ToString());
          break;
        }
        const double score = columnar ? response.columns().scores(i)
                                      : response.results(i).outcome().score();
        const bool mistake = columnar ? Bit(response.columns().mistakes(), i)
                                      : response.results(i).outcome().mistake();
        EXPECT_EQ(Bits(score), Bits(o->score))
            << "batch " << batch << " row " << i;
        EXPECT_EQ(mistake, o->mistake) << "batch " << batch << " row " << i;
        ++compared;
      }
      if (stopped) break;
      EXPECT_EQ(response.stats().examples(), core->counters().examples);
    }
    writer.join();
    const grpc::Status finished = stream->Finish();
    if (stopped) continue;
    EXPECT_TRUE(finished.ok()) << finished.error_message();
    EXPECT_EQ(answers, kBatches);
    EXPECT_GT(core->counters().mistakes, 100u);
    grpc::ClientContext wc;
    v1::GetWeightsRequest wr;
    wr.set_model_id("m");
    v1::Weights w;
    ASSERT_TRUE(stub->GetWeights(&wc, wr, &w).ok());
    ASSERT_EQ(w.values_size(), static_cast<int>(core->weights().size()));
    for (int j = 0; j < w.values_size(); ++j)
      ASSERT_EQ(Bits(w.values(j)), Bits(core->weights()[j])) << j;
    EXPECT_GT(compared, 10000u);
  }
}

}  // namespace
}  // namespace perceptron
