// Durability end to end: a clean restart keeps every model and its pending
// predictions; export then import on a second server gives the same predictions
// and status; a bad blob or an incompatible data directory is refused.
#include <zlib.h>

#include <fstream>
#include <limits>
#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "leveldb/db.h"
#include "perceptron/v1/state.pb.h"
#include "server/storage/export.h"
#include "tests/e2e/server_process.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using client::Example;
using ::testing::HasSubstr;
using testing::RunCommand;
using testing::ServerProcess;

std::vector<Example> Examples(int n, uint32_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<Example> out(n);
  for (Example& e : out) {
    double s = 0;
    for (uint32_t i = 0; i < d; ++i)
      s += (i % 2 ? 1 : -1) * e.values.emplace_back(normal(rng));
    e.label = s > 0 ? 1 : -1;
  }
  return out;
}

void Stream(client::Client& c, const std::string& id,
            const std::vector<Example>& xs) {
  std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(id, {});
  for (const Example& e : xs) ASSERT_TRUE(s->AddLabeled(e).ok());
  ASSERT_TRUE(s->Finish().ok());
}

std::string Weights(client::Client& c, const std::string& id) {
  absl::StatusOr<v1::Weights> w = c.GetWeights(id);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? w->SerializeAsString() : "";
}

TEST(DurabilityTest, ACleanRestartKeepsModelsAndPendingPredictions) {
  const testing::ScopedDir scoped("restart");
  const std::string& dir = scoped.path();
  std::string weights, stats;
  std::vector<uint64_t> pending;
  {
    auto server = *ServerProcess::Start({}, dir);
    auto c = server->Connect();
    v1::ModelConfig config;
    config.set_dimension(10);
    config.set_algorithm(v1::AVERAGED);
    config.set_gamma(0.1);
    config.add_comparator(1);
    config.add_comparator(-1);
    for (int i = 2; i < 10; ++i) config.add_comparator(i % 2 ? 1 : -1);
    ASSERT_TRUE(c->CreateModel("kept", config).ok());
    Stream(*c, "kept", Examples(5000, 10, 1));
    client::SessionOptions so;
    so.on_response = [&](const v1::LearnResponse& r) {
      for (const auto& item : r.results())
        pending.push_back(item.prediction().prediction_id());
    };
    std::unique_ptr<client::LearnSession> s = c->OpenLearnSession("kept", so);
    for (const Example& e : Examples(10, 10, 2))
      ASSERT_TRUE(s->AddExample(e).ok());
    ASSERT_TRUE(s->Finish().ok());
    weights = Weights(*c, "kept");
    stats = testing::StatsBits(c->GetStatus("kept")->stats());
    EXPECT_EQ(server->Stop(SIGTERM), 0);
  }
  auto server = *ServerProcess::Start({}, dir);
  auto c = server->Connect();
  EXPECT_EQ(Weights(*c, "kept"), weights);
  EXPECT_EQ(testing::StatsBits(c->GetStatus("kept")->stats()), stats);
  ASSERT_EQ(pending.size(), 10u);
  std::vector<std::pair<uint64_t, int>> labels;
  for (uint64_t id : pending) labels.emplace_back(id, 1);
  absl::StatusOr<v1::RevealResponse> r = c->Reveal("kept", labels);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::ItemResult& item : r->results()) {
    EXPECT_TRUE(item.has_outcome()) << item.error().message();
  }
  EXPECT_EQ(c->GetStatus("kept")->stats().pending(), 0u);
}

// Everything status reports is state: the recent-mistake window and the
// learning curve are the same after a restart (replayed from the log alone,
// and from snapshots) and after an export and import.
TEST(DurabilityTest, TheRecentWindowAndTheCurveSurviveRestartsAndImports) {
  for (const char* every : {"--snapshot_every=100000", "--snapshot_every=7"}) {
    SCOPED_TRACE(every);
    const testing::ScopedDir scoped("curves");
    std::string history, rate, blob;
    {
      auto server = *ServerProcess::Start({every}, scoped.path());
      auto c = server->Connect();
      v1::ModelConfig config;
      config.set_dimension(6);
      ASSERT_TRUE(c->CreateModel("c", config).ok());
      Stream(*c, "c", Examples(3000, 6, 9));
      ASSERT_TRUE(c->ResetModel("c").ok());  // a reset is replayed too
      Stream(*c, "c", Examples(1700, 6, 10));
      // The curve's last point carries the certificate now: read once the
      // refresher has nothing left to install (a converged solution over
      // every example).
      ASSERT_TRUE(c->Watch(
                       "c", absl::Milliseconds(20),
                       [](const v1::ModelStatus& st) {
                         const v1::Certificate& x = st.stats().certificate();
                         return !(x.available() && x.converged() &&
                                  x.solved() == st.stats().examples());
                       },
                       absl::Minutes(5))
                      .ok());
      history = c->GetHistory("c")->SerializeAsString();
      rate = absl::StrCat(c->GetStatus("c")->recent_mistake_rate());
      blob = *c->ExportModel("c");
      EXPECT_EQ(server->Stop(SIGTERM), 0);
    }
    auto server = *ServerProcess::Start({every}, scoped.path());
    auto c = server->Connect();
    EXPECT_GT(c->GetHistory("c")->points_size(), 100);
    EXPECT_EQ(c->GetHistory("c")->SerializeAsString(), history);
    EXPECT_EQ(absl::StrCat(c->GetStatus("c")->recent_mistake_rate()), rate);
    ASSERT_TRUE(c->ImportModel(blob, "copy").ok());
    v1::History copied = *c->GetHistory("copy");
    copied.set_model_id("c");
    EXPECT_EQ(copied.SerializeAsString(), history);
    EXPECT_EQ(absl::StrCat(c->GetStatus("copy")->recent_mistake_rate()), rate);
  }
}

TEST(DurabilityTest,
     ExportThenImportOnASecondServerGivesTheSamePredictionsAndStatus) {
  auto a = *ServerProcess::Start();
  auto b = *ServerProcess::Start();
  auto ca = a->Connect(), cb = b->Connect();
  v1::ModelConfig config;
  config.set_dimension(8);
  config.set_algorithm(v1::VOTED);
  ASSERT_TRUE(ca->CreateModel("src", config).ok());
  Stream(*ca, "src", Examples(3000, 8, 3));
  const testing::ScopedDir scoped("export");
  const std::string file = scoped.path() + "/src.model";
  const std::string cli =
      std::string(PERCEPTRON_CLI_PATH) + " --timeout=15m --server=";
  testing::CommandResult r =
      RunCommand(cli + a->target() + " export src " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(cli + b->target() + " import " + file + " --as=copy");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("imported copy (voted, d=8)"));

  const std::vector<Example> probe = Examples(200, 8, 4);
  absl::StatusOr<v1::PredictResponse> pa = ca->Predict("src", probe);
  absl::StatusOr<v1::PredictResponse> pb = cb->Predict("copy", probe);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(pa->SerializeAsString(), pb->SerializeAsString());
  v1::ModelStatus sa = *ca->GetStatus("src"), sb = *cb->GetStatus("copy");
  EXPECT_EQ(testing::StatsBits(sa.stats()), testing::StatsBits(sb.stats()));
  EXPECT_EQ(sa.voted_vectors(), sb.voted_vectors());
  // Both continue identically.
  const std::vector<Example> more = Examples(500, 8, 5);
  Stream(*ca, "src", more);
  Stream(*cb, "copy", more);
  EXPECT_EQ(Weights(*ca, "src"), Weights(*cb, "copy"));
  // The import survives a restart of the second server.
  EXPECT_EQ(cb->ImportModel(*ca->ExportModel("src"), "copy").status().code(),
            absl::StatusCode::kAlreadyExists);
}

// Every model the default limits let one create can be read and exported: a
// model of the largest dimension (2^24) has weights of 128 MiB, twice
// --max_message_bytes, and so has its blob once most of them are used; they
// travel in chunks.
TEST(DurabilityTest, AModelOfTheLargestDimensionIsReadExportedAndImported) {
  // Memory only: what is measured is the messages, not the disk.
  auto a = *ServerProcess::Start({"--durability=none"});
  auto b = *ServerProcess::Start({"--durability=none"});
  // 128 MiB in one call takes minutes under ThreadSanitizer on a busy
  // machine: deadlines far beyond the default minute.
  auto connect = [](const ServerProcess& s) {
    client::ClientOptions o;
    o.target = s.target();
    o.connect_timeout = absl::Seconds(10);
    o.timeout = absl::Minutes(15);
    return client::Client::Connect(o);
  };
  auto ca = connect(*a), cb = connect(*b);
  constexpr uint32_t kD = 1u << 24;
  v1::ModelConfig config;
  config.set_dimension(kD);
  config.set_normalize(false);
  ASSERT_TRUE(ca->CreateModel("big", config).ok());
  Example x;
  x.sparse = true;
  x.indices = {0, kD / 2, kD - 1};
  x.values = {1, 2, 3};
  x.label = 1;
  {
    std::unique_ptr<client::LearnSession> s =
        ca->OpenLearnSession("big", client::SessionOptions());
    ASSERT_TRUE(s->AddLabeled(x).ok());
    ASSERT_TRUE(s->Finish().ok());
  }
  absl::StatusOr<v1::Weights> w = ca->GetWeights("big");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->values_size(), static_cast<int>(kD) + 1);
  EXPECT_EQ(w->values(kD / 2), 2.0);
  EXPECT_EQ(w->values(kD), 1.0);  // the bias weight
  // A blob gives a vector by its non-zeros where that is smaller, so with
  // three weights this one fits a message. Weights on nearly every
  // coordinate make it whole: 16 examples of 2^20 coordinates each, their
  // labels alternating so that each (but the one over the weight of 3 at
  // kD - 1) is a mistake.
  {
    client::SessionOptions one;  // an example a request: 12 MiB each
    one.batch_size = 1;
    std::unique_ptr<client::LearnSession> s = ca->OpenLearnSession("big", one);
    for (uint32_t k = 0; k < 16; ++k) {
      Example wide;
      wide.sparse = true;
      wide.label = k % 2 == 0 ? -1 : 1;
      for (uint32_t i = k << 20; i < (k + 1) << 20; ++i) {
        wide.indices.push_back(i);
        wide.values.push_back(1.0);
      }
      ASSERT_TRUE(s->AddLabeled(wide).ok());
    }
    const absl::StatusOr<client::SessionSummary> done = s->Finish();
    ASSERT_TRUE(done.ok()) << done.status();
  }
  w = ca->GetWeights("big");
  ASSERT_TRUE(w.ok()) << w.status();
  int used = 0;
  for (double v : w->values()) used += v != 0.0;
  EXPECT_GT(used, static_cast<int>(kD / 4 * 3));

  // The single-message forms say what to use instead.
  auto stub = v1::PerceptronService::NewStub(ca->channel());
  {
    grpc::ClientContext context;
    v1::ExportModelRequest request;
    request.set_model_id("big");
    v1::ExportModelResponse response;
    const grpc::Status s = stub->ExportModel(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(s.error_message(), HasSubstr("ExportModelChunks"));
  }

  // The command line exports and imports it.
  const testing::ScopedDir scoped("big");
  const std::string file = scoped.path() + "/big.model";
  const std::string cli =
      std::string(PERCEPTRON_CLI_PATH) + " --timeout=15m --server=";
  testing::CommandResult r =
      RunCommand(cli + a->target() + " export big " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(cli + b->target() + " import " + file + " --as=copy");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  absl::StatusOr<v1::Weights> copied = cb->GetWeights("copy");
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->SerializeAsString(), w->SerializeAsString());
  EXPECT_EQ(testing::StatsBits(cb->GetStatus("copy")->stats()),
            testing::StatsBits(ca->GetStatus("big")->stats()));

  // A configuration whose export could not be carried is refused when created.
  config.set_algorithm(v1::VOTED);
  absl::Status s = ca->CreateModel("voted", config).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("lower max_voted_vectors or the dimension"));
  // A wide comparator counts as its non-zeros, as an export carries it: voted
  // with 12 past vectors and the current one (1.745 GB) and a comparator of
  // 2 non-zeros fits, where counted dense (1.879 GB) it would not.
  config.set_max_voted_vectors(12);
  config.set_gamma(0.5);
  config.add_comparator_indices(0);
  config.add_comparator(1);
  config.add_comparator_indices(kD - 1);
  config.add_comparator(-1);
  s = ca->CreateModel("compared", config).status();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(ca->DeleteModel("compared").ok());
  config.clear_max_voted_vectors();
  config.clear_gamma();
  config.clear_comparator_indices();
  config.clear_comparator();
  // The k vectors of a multiclass model count: averaged, 7 classes of 2^24 + 1
  // weights keep 14 such vectors, 1.879 GB.
  config.set_algorithm(v1::AVERAGED);
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g"}) {
    config.add_classes(name);
  }
  s = ca->CreateModel("classes", config).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("this averaged model of dimension 16777216 keeps up to "
                        "2 vectors of 7 classes x 16777217 weights, 1.879 GB"));
  // So is a pending limit no export could carry.
  r = RunCommand(std::string(PERCEPTROND_PATH) +
                 " --port=0 --http_port=-1 --durability=none"
                 " --max_pending_bytes=2147483648");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--max_pending_bytes must be at most 1 GiB"));
}

TEST(DurabilityTest, BadBlobsAreRefusedAndNothingIsCreated) {
  auto server = *ServerProcess::Start();
  auto c = server->Connect();
  v1::ModelConfig config;
  config.set_dimension(3);
  ASSERT_TRUE(c->CreateModel("m", config).ok());
  const std::string blob = *c->ExportModel("m");

  absl::Status s = c->ImportModel("not a model", "x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  std::string flipped = blob;
  flipped[flipped.size() / 2] ^= 0x10;
  s = c->ImportModel(flipped, "x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;

  v1::ExportedModel future;
  ASSERT_TRUE(future.ParseFromString(blob));
  future.set_format_version(4);
  future.set_crc32(server::BlobCrc(future));
  s = c->ImportModel(future.SerializeAsString(), "x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("format version 4; this server reads versions 1 to 3"));

  // A state that does not fit its config: weights of the wrong length, with a
  // valid checksum.
  v1::ExportedModel wrong;
  ASSERT_TRUE(wrong.ParseFromString(blob));
  v1::ModelState state;
  ASSERT_TRUE(state.ParseFromString(wrong.state()));
  // A new model's weights are zeros: the blob gives them by their non-zeros
  // (none, of 4).
  ASSERT_EQ(state.learner().weights_size(), 0);
  ASSERT_EQ(state.learner().sparse_weights().size(), 4u);
  state.mutable_learner()->mutable_sparse_weights()->set_size(3);
  wrong.set_state(state.SerializeAsString());
  wrong.set_crc32(server::BlobCrc(wrong));
  s = c->ImportModel(wrong.SerializeAsString(), "x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("weights has 3 values; expected 4"));

  // Counters no real model can hold.
  v1::ExportedModel counted;
  ASSERT_TRUE(counted.ParseFromString(blob));
  ASSERT_TRUE(state.ParseFromString(counted.state()));
  state.mutable_counters()->set_mistakes(5);
  counted.set_state(state.SerializeAsString());
  counted.set_crc32(server::BlobCrc(counted));
  s = c->ImportModel(counted.SerializeAsString(), "x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("5 mistakes and 0 updates cannot come from 0 examples"));

  EXPECT_EQ(c->GetStatus("x").status().code(), absl::StatusCode::kNotFound);

  // A model at the last prediction id refuses to issue another instead of
  // wrapping to 0 (which means "labeled example" in an Outcome).
  v1::ExportedModel last;
  ASSERT_TRUE(last.ParseFromString(blob));
  ASSERT_TRUE(state.ParseFromString(last.state()));
  state.set_next_prediction_id(std::numeric_limits<uint64_t>::max());
  last.set_state(state.SerializeAsString());
  last.set_crc32(server::BlobCrc(last));
  ASSERT_TRUE(c->ImportModel(last.SerializeAsString(), "last").ok());
  {
    v1::LearnResponse response;
    client::SessionOptions so;
    so.batch_size = 1;
    so.on_response = [&](const v1::LearnResponse& r) { response = r; };
    std::unique_ptr<client::LearnSession> session =
        c->OpenLearnSession("last", so);
    Example x;
    x.values = {1, 2, 3};
    ASSERT_TRUE(session->AddExample(x).ok());
    ASSERT_TRUE(session->Finish().ok());
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).error().code(),
              static_cast<int>(absl::StatusCode::kResourceExhausted));
    EXPECT_THAT(response.results(0).error().message(),
                HasSubstr("every prediction id"));
  }
  EXPECT_EQ(c->GetStatus("last")->stats().predictions(), 0u);
  ASSERT_TRUE(c->DeleteModel("last").ok());

  // The checksum covers everything imported: no single flipped bit of the
  // blob imports (under the blob's own id or any other).
  ASSERT_TRUE(c->DeleteModel("m").ok());
  int refused = 0;
  for (size_t i = 0; i < blob.size(); ++i) {
    for (int bit : {0, 3, 7}) {
      std::string damaged = blob;
      damaged[i] ^= static_cast<char>(1 << bit);
      absl::StatusOr<v1::Model> imported = c->ImportModel(damaged, "");
      if (!imported.ok()) {
        ++refused;
        continue;
      }
      ADD_FAILURE() << "byte " << i << " bit " << bit << " imported as "
                    << imported->model_id();
      ASSERT_TRUE(c->DeleteModel(imported->model_id()).ok());
    }
  }
  EXPECT_EQ(refused, static_cast<int>(blob.size()) * 3);
  absl::StatusOr<std::vector<v1::Model>> list = c->ListModels();
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
  // A format 1 blob (checksum over the state) from an earlier server still
  // imports.
  v1::ExportedModel old_format;
  ASSERT_TRUE(old_format.ParseFromString(blob));
  old_format.set_format_version(1);
  old_format.clear_crc32();
  old_format.set_state_crc32(static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(old_format.state().data()),
            old_format.state().size())));
  EXPECT_TRUE(c->ImportModel(old_format.SerializeAsString(), "").ok());
  EXPECT_TRUE(c->GetStatus("m").ok());
  // So does a format 2 blob (whose vectors are whole).
  v1::ExportedModel format2;
  ASSERT_TRUE(format2.ParseFromString(blob));
  format2.set_format_version(2);
  v1::ModelState whole;
  ASSERT_TRUE(whole.ParseFromString(format2.state()));
  ASSERT_EQ(whole.learner().sparse_weights().size(), 4u);
  whole.mutable_learner()->clear_sparse_weights();
  whole.mutable_learner()->mutable_weights()->Resize(4, 0.0);
  format2.set_state(whole.SerializeAsString());
  format2.set_crc32(server::BlobCrc(format2));
  EXPECT_TRUE(c->ImportModel(format2.SerializeAsString(), "m2").ok());
  EXPECT_EQ(c->GetWeights("m2")->SerializeAsString(),
            c->GetWeights("m")->SerializeAsString());
}

TEST(DurabilityTest,
     TheServerRefusesAnIncompatibleDataDirectoryAndLeavesItAlone) {
  const testing::ScopedDir scoped("foreign");
  const std::string& dir = scoped.path();
  {
    leveldb::DB* raw;
    leveldb::Options o;
    o.create_if_missing = true;
    ASSERT_TRUE(leveldb::DB::Open(o, dir, &raw).ok());
    ASSERT_TRUE(
        raw->Put(leveldb::WriteOptions(), "meta/format", "perceptrond-store 9")
            .ok());
    delete raw;
  }
  testing::CommandResult r =
      RunCommand(std::string(PERCEPTROND_PATH) +
                 " --port=0 --http_port=-1 --data_dir=" + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("not starting: FAILED_PRECONDITION"));
  EXPECT_THAT(r.output, HasSubstr("perceptrond-store 9"));
  leveldb::DB* raw;
  ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
  std::string v;
  ASSERT_TRUE(raw->Get(leveldb::ReadOptions(), "meta/format", &v).ok());
  EXPECT_EQ(v, "perceptrond-store 9");
  delete raw;
}

TEST(DurabilityTest, AModelThatCannotBeRecoveredIsSetAsideAndEveryOtherServes) {
  const testing::ScopedDir scoped("set-aside");
  const std::string& dir = scoped.path();
  v1::ModelConfig config;
  config.set_dimension(6);
  std::map<std::string, std::string> weights;
  {
    auto server = *ServerProcess::Start({"--snapshot_every=1"}, dir);
    auto c = server->Connect();
    for (const char* id : {"alpha", "broken", "omega"}) {
      ASSERT_TRUE(c->CreateModel(id, config).ok());
      Stream(*c, id, Examples(300, 6, id[0]));
      weights[id] = Weights(*c, id);
    }
    EXPECT_EQ(server->Stop(SIGTERM), 0);
  }
  // Every snapshot of one model damaged on disk.
  std::vector<std::string> damaged;
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    std::unique_ptr<leveldb::Iterator> it(
        raw->NewIterator(leveldb::ReadOptions()));
    for (it->Seek("m/broken/s/");
         it->Valid() && it->key().starts_with("m/broken/s/"); it->Next()) {
      damaged.push_back(it->key().ToString());
    }
    it.reset();
    for (const std::string& key : damaged) {
      ASSERT_TRUE(raw->Put(leveldb::WriteOptions(), key, "damaged").ok());
    }
    delete raw;
  }
  ASSERT_FALSE(damaged.empty());
  auto server = *ServerProcess::Start({}, dir);
  EXPECT_THAT(server->StderrText(),
              HasSubstr("model broken set aside, its data kept untouched: "
                        "model broken: no valid snapshot"));
  auto c = server->Connect();
  // The others serve, as they were, and learn.
  for (const char* id : {"alpha", "omega"}) {
    EXPECT_EQ(Weights(*c, id), weights[id]);
    EXPECT_EQ(c->GetStatus(id)->stats().examples(), 300u);
  }
  Stream(*c, "alpha", Examples(10, 6, 9));
  EXPECT_EQ(c->GetStatus("alpha")->stats().examples(), 310u);
  // The one set aside answers DATA_LOSS with the reason; its id is not reused.
  absl::StatusOr<v1::ModelStatus> st = c->GetStatus("broken");
  EXPECT_EQ(st.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(st.status().message()),
              HasSubstr("set aside, its data kept untouched"));
  EXPECT_EQ(c->CreateModel("broken", config).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Metrics show it.
  const std::string metrics = testing::MetricsText(*server);
  EXPECT_THAT(metrics,
              HasSubstr("perceptron_model_set_aside{model=\"broken\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("perceptron_models 2"));
  EXPECT_EQ(server->Stop(SIGTERM), 0);
  // Its data is untouched.
  {
    leveldb::DB* raw;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
    for (const std::string& key : damaged) {
      std::string value;
      EXPECT_TRUE(raw->Get(leveldb::ReadOptions(), key, &value).ok());
      EXPECT_EQ(value, "damaged");
    }
    delete raw;
  }
  // DeleteModel discards it; the id is free again.
  server = *ServerProcess::Start({}, dir);
  c = server->Connect();
  EXPECT_TRUE(c->DeleteModel("broken").ok());
  EXPECT_EQ(c->GetStatus("broken").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(c->CreateModel("broken", config).ok());
  EXPECT_EQ(server->Stop(SIGTERM), 0);
  server = *ServerProcess::Start({}, dir);
  // (The stderr file holds every start; the last one's lines come last.)
  const std::string log = server->StderrText();
  const std::string last_start = log.substr(log.rfind("data directory"));
  EXPECT_THAT(last_start, HasSubstr("recovered 3 models"));
  EXPECT_THAT(last_start, ::testing::Not(HasSubstr("set aside")));
  EXPECT_EQ(server->Connect()->GetStatus("broken")->stats().examples(), 0u);
}

}  // namespace
}  // namespace perceptron
