// The certificate over the wire (docs/design.md section 2.7): every model
// created with no comparator reports the theorem's bound, computed in the
// background; it brackets the best bound computed here independently, its
// comparator (GetCertificate) gives the same bound when set as a model's
// comparator, it freezes on a stream ten times longer than the model may keep
// and stays valid, and it says when it is off and why.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/certificate.h"
#include "core/kernel_certificate.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "perceptron/v1/state.pb.h"
#include "server/storage/export.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using client::Example;
using testing::ServerProcess;

std::unique_ptr<ServerProcess> StartServer(
    const std::vector<std::string>& flags) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(flags);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// A noisy linearly separable stream: y = sign(x . s) with 5% flipped.
std::vector<Example> Stream(uint32_t d, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<Example> out(n);
  for (Example& e : out) {
    double s = 0;
    for (uint32_t i = 0; i < d; ++i) {
      e.values.push_back(normal(rng));
      s += (i % 3 == 0 ? 1.0 : -0.5) * e.values.back();
    }
    e.label = (s > 0) == (rng() % 20 != 0) ? 1 : -1;
  }
  return out;
}

v1::ModelStats Learn(client::Client& c, const std::string& id,
                     const std::vector<Example>& data) {
  std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(id, {});
  for (const Example& e : data) EXPECT_TRUE(s->AddLabeled(e).ok());
  absl::StatusOr<client::SessionSummary> summary = s->Finish();
  EXPECT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->item_errors, 0u) << summary->first_error;
  return summary->stats;
}

// Watches `id` until `done` holds for its certificate (the refresher runs in
// the background); the status that satisfied it.
v1::ModelStatus WaitFor(
    client::Client& c, const std::string& id,
    const std::function<bool(const v1::Certificate&)>& done) {
  v1::ModelStatus last;
  const absl::Status s = c.Watch(
      id, absl::Milliseconds(20),
      [&](const v1::ModelStatus& st) {
        last = st;
        return !done(st.stats().certificate());
      },
      absl::Minutes(5));
  EXPECT_TRUE(s.ok()) << s << "; last: " << last.DebugString();
  return last;
}

// The bound a core model with comparator (u, gamma) reports over `data`.
double BoundOf(const v1::ModelConfig& proto_config,
               const std::vector<Example>& data, const std::vector<double>& u,
               double gamma) {
  ModelConfig config;
  config.dimension = proto_config.dimension();
  config.comparator = u;
  config.gamma = gamma;
  auto model = *Model::Create(config);
  for (const Example& e : data) {
    EXPECT_TRUE(model->Learn(FeatureView::Dense(e.values), *e.label).ok());
  }
  return model->stats().bound.bound;
}

TEST(CertificateE2eTest, EveryModelReportsTheBoundWithNoComparatorGiven) {
  auto server = StartServer({"--durability=none"});
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  v1::ModelConfig config;
  config.set_dimension(20);
  ASSERT_TRUE(c->CreateModel("m", config).ok());
  const std::vector<Example> data = Stream(20, 5000, 1);
  const v1::ModelStats learned = Learn(*c, "m", data);
  EXPECT_FALSE(learned.bound_available());  // no comparator given

  const v1::ModelStatus st = WaitFor(*c, "m", [&](const v1::Certificate& x) {
    return x.available() && x.converged() && x.solved() == data.size();
  });
  const v1::Certificate& cert = st.stats().certificate();
  EXPECT_EQ(cert.state(), v1::Certificate::KEEPING);
  EXPECT_EQ(cert.examples(), data.size());
  EXPECT_LE(cert.lower(), cert.upper());
  EXPECT_LE(cert.upper() - cert.lower(), 1e-3 * cert.upper());
  EXPECT_LE(static_cast<double>(st.stats().updates()), cert.upper());

  // An independent solve here brackets the same B*.
  ModelConfig core_config;
  core_config.dimension = 20;
  const Preparer preparer(core_config);
  CertificateSolver solver(21);
  for (const Example& e : data) {
    solver.Add(*preparer.Prepare(FeatureView::Dense(e.values)), *e.label);
  }
  const Certificate mine = solver.Solve(1.0, {});
  EXPECT_LE(mine.lower, cert.upper() * (1 + 1e-12));
  EXPECT_LE(cert.lower(), mine.upper * (1 + 1e-12));

  // Its comparator, set as a new model's, gives that model the same bound.
  absl::StatusOr<v1::CertificateResponse> full = c->GetCertificate("m");
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->comparator_size(), 21);
  const std::vector<double> u(full->comparator().begin(),
                              full->comparator().end());
  EXPECT_NEAR(BoundOf(config, data, u, full->certificate().gamma()),
              full->certificate().upper(), 1e-9 * full->certificate().upper());
  std::cout << "5000 examples d=20: updates " << st.stats().updates() << ", U "
            << cert.upper() << ", L " << cert.lower() << ", gamma "
            << cert.gamma() << "; solved here: U " << mine.upper << ", L "
            << mine.lower << "\n";
}

TEST(CertificateE2eTest, AStreamTenTimesWhatIsKeptFreezesAndStaysValid) {
  auto server =
      StartServer({"--durability=none", "--certificate_examples=1000"});
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  v1::ModelConfig config;
  config.set_dimension(10);
  ASSERT_TRUE(c->CreateModel("long", config).ok());
  const std::vector<Example> data = Stream(10, 10000, 2);
  // The first 1,000, then wait for the freeze, then the rest: the freeze is
  // at exactly the limit, with the exact certificate over those examples.
  const std::vector<Example> first(data.begin(), data.begin() + 1000);
  Learn(*c, "long", first);
  const v1::ModelStatus frozen = WaitFor(*c, "long", [](const auto& x) {
    return x.state() == v1::Certificate::FROZEN;
  });
  EXPECT_EQ(frozen.stats().certificate().frozen_at(), 1000u);
  EXPECT_EQ(frozen.stats().certificate().solved(), 1000u);
  Learn(*c, "long", std::vector<Example>(data.begin() + 1000, data.end()));
  absl::StatusOr<v1::CertificateResponse> full = c->GetCertificate("long");
  ASSERT_TRUE(full.ok()) << full.status();
  const v1::Certificate& cert = full->certificate();
  EXPECT_EQ(cert.state(), v1::Certificate::FROZEN);
  EXPECT_EQ(cert.examples(), data.size());
  EXPECT_EQ(cert.frozen_at(), 1000u);
  absl::StatusOr<v1::ModelStatus> st = c->GetStatus("long");
  ASSERT_TRUE(st.ok());
  EXPECT_LE(static_cast<double>(st->stats().updates()), cert.upper());
  EXPECT_LE(cert.lower(), cert.upper());
  const std::vector<double> u(full->comparator().begin(),
                              full->comparator().end());
  EXPECT_NEAR(BoundOf(config, data, u, cert.gamma()), cert.upper(),
              1e-9 * cert.upper());
}

TEST(CertificateE2eTest, OffSaysWhy) {
  auto server = StartServer({"--durability=none"});
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  EXPECT_EQ(c->GetCertificate("nope").status().code(),
            absl::StatusCode::kNotFound);

  auto none = StartServer({"--durability=none", "--certificate_examples=0"});
  ASSERT_NE(none, nullptr);
  auto n = none->Connect();
  v1::ModelConfig kernel;
  kernel.set_dimension(3);
  kernel.set_algorithm(v1::KERNEL);
  ASSERT_TRUE(n->CreateModel("m", kernel).ok());
  absl::StatusOr<v1::CertificateResponse> off = n->GetCertificate("m");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->certificate().state(), v1::Certificate::OFF);
  EXPECT_NE(off->certificate().reason().find("--certificate_examples=0"),
            std::string::npos);
}

// The nice value in a /proc stat file ("pid (comm) state ppid ...": the
// 19th field, the 17th after the command's closing parenthesis); nullopt if
// it cannot be read.
std::optional<int> NiceOf(const std::string& stat_path) {
  std::ifstream in(stat_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string stat = text.str();
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  const std::vector<std::string> fields =
      absl::StrSplit(stat.substr(close + 2), ' ');
  int nice = 0;
  if (fields.size() < 17 || !absl::SimpleAtoi(fields[16], &nice))
    return std::nullopt;
  return nice;
}

// The nice values of the threads of process `pid` named `name`.
std::vector<int> NiceOfThreads(pid_t pid, const std::string& name) {
  std::vector<int> out;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    std::getline(comm, line);
    if (line != name) continue;
    std::optional<int> nice = NiceOf(task.path() / "stat");
    EXPECT_TRUE(nice.has_value()) << task.path();
    if (nice) out.push_back(*nice);
  }
  return out;
}

// The refresher solves on one thread, "certificate", ten steps nicer than
// the server (a core it shares with a thread serving requests goes to that
// thread first), from before the server takes requests; none without the
// certificate.
TEST(CertificateE2eTest, TheRefresherRunsNicerThanTheServer) {
  auto server = StartServer({"--durability=none"});
  ASSERT_NE(server, nullptr);
  const std::optional<int> base =
      NiceOf(absl::StrCat("/proc/", server->pid(), "/stat"));
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(NiceOfThreads(server->pid(), "certificate"),
            std::vector<int>{std::min(*base + 10, 19)});
  // The main thread, found the same way.
  EXPECT_FALSE(NiceOfThreads(server->pid(), "perceptrond").empty());

  auto none = StartServer({"--durability=none", "--certificate_examples=0"});
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(NiceOfThreads(none->pid(), "certificate").empty());
}

// A kernel model gets its certificate in the kernel's feature space: U bounds
// the kernel perceptron's updates, GetCertificate returns the comparator as
// an expansion over prepared examples whose bound, recomputed here from
// scratch, is U; a restart carries it on frozen, bit for bit.
TEST(CertificateE2eTest, AKernelModelHasItsCertificate) {
  auto server = StartServer({"--durability=sync"});
  ASSERT_NE(server, nullptr);
  auto c = server->Connect();
  v1::ModelConfig config;
  config.set_dimension(3);
  config.set_algorithm(v1::KERNEL);
  config.mutable_kernel()->set_type(v1::RBF);
  config.mutable_kernel()->set_sigma(1.0);
  ASSERT_TRUE(c->CreateModel("k", config).ok());
  // Outside a sphere or not: no hyperplane separates it.
  std::mt19937_64 rng(4);
  std::normal_distribution<double> normal;
  std::vector<Example> data(800);
  for (Example& e : data) {
    double sq = 0;
    for (int i = 0; i < 3; ++i) {
      e.values.push_back(normal(rng));
      sq += e.values.back() * e.values.back();
    }
    e.label = sq > 3 ? 1 : -1;
  }
  Learn(*c, "k", data);
  const v1::ModelStatus st = WaitFor(*c, "k", [&](const v1::Certificate& x) {
    return x.available() && x.converged() && x.solved() == data.size();
  });
  const v1::Certificate& cert = st.stats().certificate();
  EXPECT_EQ(cert.state(), v1::Certificate::KEEPING);
  EXPECT_EQ(st.dropped(), 0u);
  EXPECT_LE(cert.lower(), cert.upper());
  EXPECT_LE(cert.upper() - cert.lower(), 1e-3 * cert.upper());
  EXPECT_LE(static_cast<double>(st.stats().updates()), cert.upper());

  absl::StatusOr<v1::CertificateResponse> full = c->GetCertificate("k");
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->comparator_size(), 0);
  ASSERT_GT(full->expansion_size(), 0);
  ModelConfig core;
  core.dimension = 3;
  core.algorithm = Algorithm::kKernel;
  core.kernel.type = KernelType::kRbf;
  core.kernel.sigma = 1.0;
  const Preparer preparer(core);
  KeptRows rows, basis;
  for (const Example& e : data) {
    rows.Add(*preparer.Prepare(FeatureView::Dense(e.values)), *e.label);
  }
  std::vector<double> v;
  for (const v1::KernelTerm& t : full->expansion()) {
    basis.Add(std::vector<uint32_t>(t.indices().begin(), t.indices().end()),
              std::vector<double>(t.values().begin(), t.values().end()), 1);
    v.push_back(t.coefficient() / full->certificate().gamma());
  }
  KernelRows kernel(core.weight_dimension(), core.kernel);
  const double bound = KernelSquares(basis, &kernel, {v})[0] +
                       2 * KernelHingeSums(rows, basis, &kernel, {v})[0];
  EXPECT_NEAR(bound, full->certificate().upper(),
              1e-9 * full->certificate().upper());
  std::cout << "rbf kernel, 800 examples d=3: mistakes "
            << st.stats().mistakes() << ", updates " << st.stats().updates()
            << ", U " << cert.upper() << ", L " << cert.lower() << ", gamma "
            << cert.gamma() << ", " << full->expansion_size() << " terms\n";

  ASSERT_EQ(server->Stop(SIGTERM), 0);
  absl::StatusOr<std::unique_ptr<ServerProcess>> again =
      ServerProcess::Start({"--durability=sync"}, server->data_dir());
  ASSERT_TRUE(again.ok()) << again.status();
  auto c2 = (*again)->Connect();
  absl::StatusOr<v1::ModelStatus> back = c2->GetStatus("k");
  ASSERT_TRUE(back.ok()) << back.status();
  const v1::Certificate& carried = back->stats().certificate();
  // Its kept examples came back from the store: it goes on keeping.
  EXPECT_EQ(carried.state(), cert.state());
  EXPECT_EQ(carried.kept(), cert.kept());
  EXPECT_EQ(carried.solved(), cert.solved());
  EXPECT_EQ(carried.upper(), cert.upper());
  EXPECT_EQ(carried.lower(), cert.lower());
  EXPECT_EQ(carried.gamma(), cert.gamma());
  Learn(*c2, "k", data);
  absl::StatusOr<v1::ModelStatus> more = c2->GetStatus("k");
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(more->stats().certificate().examples(), 2 * data.size());
  EXPECT_LE(static_cast<double>(more->stats().updates()),
            more->stats().certificate().upper());
  // The same examples again count their rows again (kept once, each for
  // two examples), solved as such, and so they come back after a kill -9.
  const v1::ModelStatus twice = WaitFor(*c2, "k", [&](const auto& x) {
    return x.converged() && x.solved() == 2 * data.size();
  });
  const v1::Certificate& counted = twice.stats().certificate();
  EXPECT_EQ(counted.state(), v1::Certificate::KEEPING);
  EXPECT_EQ(counted.kept_rows(), data.size());
  EXPECT_EQ(counted.kept(), 2 * data.size());
  EXPECT_LE(static_cast<double>(twice.stats().updates()), counted.upper());
  ASSERT_EQ((*again)->Stop(SIGKILL), -1);
  again = ServerProcess::Start({"--durability=sync"}, server->data_dir());
  ASSERT_TRUE(again.ok()) << again.status();
  c2 = (*again)->Connect();
  back = c2->GetStatus("k");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->stats().certificate().kept_rows(), data.size());
  EXPECT_EQ(back->stats().certificate().kept(), 2 * data.size());
  // The solution itself is stored with the next batch: solved again, the
  // same optimum within the solver's gap.
  const v1::ModelStatus resolved = WaitFor(*c2, "k", [&](const auto& x) {
    return x.converged() && x.solved() == 2 * data.size();
  });
  EXPECT_NEAR(resolved.stats().certificate().upper(), counted.upper(),
              1e-3 * counted.upper());
  EXPECT_EQ(resolved.stats().certificate().kept_rows(), data.size());
  ASSERT_EQ((*again)->Stop(SIGTERM), 0);
}

// After a restart (SIGTERM, or kill -9 mid-stream) the certificate goes on
// keeping: its examples come back from the store with it. An export does not
// carry them: an import is frozen, saying so, rather than report a bound
// that covers only part of the stream; a reset starts it again.
TEST(CertificateE2eTest, ARestartCarriesTheCertificateOn) {
  for (const int signal : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(signal == SIGTERM ? "SIGTERM" : "SIGKILL");
    const std::vector<Example> data = Stream(5, 300, 3);
    auto server = StartServer({"--durability=sync"});
    ASSERT_NE(server, nullptr);
    auto c = server->Connect();
    v1::ModelConfig config;
    config.set_dimension(5);
    ASSERT_TRUE(c->CreateModel("r", config).ok());
    Learn(*c, "r", data);
    const v1::ModelStatus solved = WaitFor(*c, "r", [&](const auto& x) {
      return x.available() && x.solved() == data.size() && x.converged();
    });
    ASSERT_TRUE(solved.stats().certificate().available());
    if (signal == SIGKILL) {
      // A batch stored after the solution's record, then killed while a
      // stream is open and sending.
      Learn(*c, "r", std::vector<Example>(data.begin(), data.begin() + 3));
      std::unique_ptr<client::LearnSession> s = c->OpenLearnSession("r", {});
      for (const Example& e : data) {
        if (!s->AddLabeled(e).ok()) break;
      }
      ASSERT_EQ(server->Stop(SIGKILL), -1);
      s->Finish().IgnoreError();
    } else {
      ASSERT_EQ(server->Stop(SIGTERM), 0);
    }
    absl::StatusOr<std::unique_ptr<ServerProcess>> again =
        ServerProcess::Start({"--durability=sync"}, server->data_dir());
    ASSERT_TRUE(again.ok()) << again.status();
    auto c2 = (*again)->Connect();
    absl::StatusOr<v1::ModelStatus> st = c2->GetStatus("r");
    ASSERT_TRUE(st.ok()) << st.status();
    const v1::Certificate cert = st->stats().certificate();
    // Still keeping, over every example the store holds.
    EXPECT_EQ(cert.state(), v1::Certificate::KEEPING) << cert.DebugString();
    EXPECT_TRUE(cert.available());
    EXPECT_EQ(cert.examples(), st->stats().examples());
    EXPECT_EQ(cert.kept(), st->stats().examples());
    EXPECT_LE(static_cast<double>(st->stats().updates()), cert.upper());
    EXPECT_LE(cert.lower(), cert.upper());
    if (signal == SIGTERM) {
      // Nothing learned since the solution: the same figures, bit for bit.
      const v1::Certificate& was = solved.stats().certificate();
      EXPECT_EQ(st->stats().examples(), data.size());
      EXPECT_EQ(cert.upper(), was.upper());
      EXPECT_EQ(cert.lower(), was.lower());
      EXPECT_EQ(cert.gamma(), was.gamma());
      EXPECT_EQ(cert.td_gamma(), was.td_gamma());
      EXPECT_EQ(cert.solved(), was.solved());
      EXPECT_TRUE(cert.converged());
    } else {
      EXPECT_GE(st->stats().examples(), data.size() + 3);
    }
    // The refresher goes on from the examples restored: a solution over all.
    const uint64_t examples = st->stats().examples();
    WaitFor(*c2, "r", [&](const auto& x) {
      return x.solved() == examples && x.converged();
    });
    // An export carries the examples: its import goes on keeping, the same
    // figures bit for bit, and so does it over a restart (stored with it).
    absl::StatusOr<v1::ModelStatus> now = c2->GetStatus("r");
    ASSERT_TRUE(now.ok()) << now.status();
    const v1::Certificate& exact = now->stats().certificate();
    absl::StatusOr<std::string> blob = c2->ExportModel("r");
    ASSERT_TRUE(blob.ok()) << blob.status();
    v1::ExportedModel parsed;
    v1::ModelState state;
    ASSERT_TRUE(parsed.ParseFromString(*blob));
    ASSERT_TRUE(state.ParseFromString(parsed.state()));
    // Every example, as a row or as one more of an equal row's count.
    uint64_t carried_examples = 0;
    for (uint32_t n : state.certificate_rows().counts()) carried_examples += n;
    if (state.certificate_rows().counts_size() == 0) {
      carried_examples = state.certificate_rows().ends_size();
    }
    EXPECT_EQ(carried_examples, examples);
    ASSERT_TRUE(c2->ImportModel(*blob, "copy").ok());
    auto same_as_exact = [&](client::Client& c, const std::string& id) {
      absl::StatusOr<v1::ModelStatus> copy = c.GetStatus(id);
      ASSERT_TRUE(copy.ok()) << copy.status();
      const v1::Certificate& imported = copy->stats().certificate();
      EXPECT_EQ(imported.state(), v1::Certificate::KEEPING) << id;
      EXPECT_EQ(imported.kept(), examples);
      EXPECT_EQ(imported.upper(), exact.upper());
      EXPECT_EQ(imported.lower(), exact.lower());
      EXPECT_EQ(imported.solved(), exact.solved());
    };
    same_as_exact(*c2, "copy");
    // Rows that do not parse refuse the blob, nothing created; rows that
    // are not the certificate's (an index out of range), or none, leave the
    // import frozen where the stream ends, saying so (U still bounds it).
    auto with = [&](const v1::ModelState& changed) {
      v1::ExportedModel b = parsed;
      b.set_state(changed.SerializeAsString());
      b.set_crc32(server::BlobCrc(b));
      return b.SerializeAsString();
    };
    v1::ModelState bad = state;
    bad.mutable_certificate_rows()->mutable_labels()->push_back(1);
    absl::Status refused = c2->ImportModel(with(bad), "bad").status();
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
    EXPECT_EQ(c2->GetStatus("bad").status().code(),
              absl::StatusCode::kNotFound);
    v1::ModelState outside = state;
    outside.mutable_certificate_rows()->set_indices(0, 1000);
    v1::ModelState none = state;
    none.clear_certificate_rows();
    for (const auto& [id, changed] :
         {std::pair{"outside", outside}, std::pair{"none", none}}) {
      ASSERT_TRUE(c2->ImportModel(with(changed), id).ok()) << id;
      absl::StatusOr<v1::ModelStatus> frozen = c2->GetStatus(id);
      ASSERT_TRUE(frozen.ok()) << frozen.status();
      const v1::Certificate& f = frozen->stats().certificate();
      EXPECT_EQ(f.state(), v1::Certificate::FROZEN) << id;
      EXPECT_EQ(f.frozen_at(), examples);
      EXPECT_NE(f.reason().find("were not carried over"), std::string::npos)
          << f.reason();
      EXPECT_EQ(f.upper(), exact.upper());
    }
    ASSERT_EQ((*again)->Stop(SIGTERM), 0);
    again = ServerProcess::Start({"--durability=sync"}, server->data_dir());
    ASSERT_TRUE(again.ok()) << again.status();
    c2 = (*again)->Connect();
    same_as_exact(*c2, "copy");
    same_as_exact(*c2, "r");
    // Kept on over what comes after.
    Learn(*c2, "r", data);
    absl::StatusOr<v1::ModelStatus> more = c2->GetStatus("r");
    ASSERT_TRUE(more.ok()) << more.status();
    EXPECT_EQ(more->stats().certificate().state(), v1::Certificate::KEEPING);
    EXPECT_EQ(more->stats().certificate().examples(), more->stats().examples());
    EXPECT_LE(static_cast<double>(more->stats().updates()),
              more->stats().certificate().upper());
    // A reset starts keeping again.
    ASSERT_TRUE(c2->ResetModel("r").ok());
    Learn(*c2, "r", data);
    const v1::ModelStatus back = WaitFor(*c2, "r", [&](const auto& x) {
      return x.available() && x.solved() == data.size();
    });
    EXPECT_EQ(back.stats().certificate().state(), v1::Certificate::KEEPING);
    EXPECT_LE(static_cast<double>(back.stats().updates()),
              back.stats().certificate().upper());
    ASSERT_EQ((*again)->Stop(), 0);
  }
}

}  // namespace
}  // namespace perceptron
