// Kill -9 at random moments loses nothing acknowledged (docs/design.md section
// 5): a real perceptrond in sync mode (and in async mode, which answers once
// the operating system has a batch), one client stream per model recording
// what was acknowledged, SIGKILL after a random number of answered batches,
// restart on the same data directory, and each model must equal, bit for bit, a
// core model that received the acknowledged items in order plus at most the
// items still in flight. Predictions issued before a kill are revealed after
// it. Beside four binary models of numbers, a multiclass model and a model of
// features by name (hashed into few slots, so that its name table meets
// collisions) go through the same kills.
#include <signal.h>

#include <algorithm>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/feature_hash.h"
#include "core/model.h"
#include "core/name_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "perceptron/v1/state.pb.h"
#include "server/storage/state_convert.h"
#include "tests/core/state_bits.h"
#include "tests/e2e/server_process.h"

namespace perceptron {
namespace {

using client::Example;

struct Item {
  enum Kind { kLabeled, kExample, kReveal } kind = kLabeled;
  Example x;
  int label = 1;
  uint64_t prediction_id = 0;  // kReveal
};

// One model, its client's record of items, and a generator of new items.
struct Stream {
  std::string id;
  v1::ModelConfig config;
  ModelConfig core_config;
  bool sparse = false;
  bool named = false;       // features by name (core_config.hash_bits set)
  std::vector<Item> items;  // every item the client has queued, in order
  size_t acked = 0;         // items answered by the server
  std::mt19937_64 rng;
  uint64_t revealed_after_kill = 0;

  // The ids of predictions issued and not revealed among items[0..n).
  std::vector<uint64_t> OpenIds(size_t n) const {
    std::vector<uint64_t> open;
    uint64_t next = 1;
    for (size_t i = 0; i < n; ++i) {
      if (items[i].kind == Item::kExample) open.push_back(next++);
      if (items[i].kind == Item::kReveal)
        std::erase(open, items[i].prediction_id);
    }
    return open;
  }

  Item Next(std::vector<uint64_t>* open) {
    std::normal_distribution<double> normal;
    Item it;
    const int r = rng() % 10;
    if (r < 2 && !open->empty()) {
      it.kind = Item::kReveal;
      const size_t k = rng() % open->size();
      it.prediction_id = (*open)[k];
      open->erase(open->begin() + k);
      it.label = RandomLabel();
      return it;
    }
    it.kind = r < 4 ? Item::kExample : Item::kLabeled;
    const uint32_t d = core_config.dimension;
    const uint32_t k = core_config.weight_vectors();
    // Class c's score: the coordinates i with i % 3 == c count for it (a
    // binary model's label is the sign of class 0's score less the others').
    double s = 0;
    std::vector<double> by_class(3, 0.0);
    if (named) {
      // Words in namespace "a" with values, a categorical "color" in "b", and
      // now and then a number in the default namespace; the words' parity
      // says which way they push.
      const int words = 1 + rng() % 4;
      for (int w = 0; w < words; ++w) {
        v1::NamedFeature& f = it.x.AddNamed();
        const int word = rng() % 40;
        f.set_space("a");
        f.set_name(absl::StrCat("w", word));
        f.set_number(normal(rng));
        s += (word % 2 == 0 ? 1 : -1) * f.number();
      }
      v1::NamedFeature& color = it.x.AddNamed();
      const int c = rng() % 5;
      color.set_space("b");
      color.set_name("color");
      color.set_category(absl::StrCat("c", c));
      s += c < 2 ? 0.5 : -0.5;
      if (rng() % 3 == 0) {
        v1::NamedFeature& n = it.x.AddNamed();
        n.set_name("17");  // a numeric name, hashed as VW hashes those
        n.set_number(normal(rng));
        s += n.number();
      }
    } else if (sparse) {
      it.x.sparse = true;
      for (uint32_t i = 0; i < d; ++i) {
        if (rng() % 8 == 0) {
          it.x.indices.push_back(i);
          it.x.values.push_back(normal(rng));
          s += (i % 3 == 0 ? 1 : -1) * it.x.values.back();
        }
      }
    } else {
      for (uint32_t i = 0; i < d; ++i) {
        it.x.values.push_back(normal(rng));
        s += (i % 3 == 0 ? 1 : -1) * it.x.values.back();
        by_class[i % 3] += it.x.values.back();
      }
    }
    if (k > 1) {
      it.label = rng() % 10 == 0
                     ? RandomLabel()
                     : static_cast<int>(std::max_element(by_class.begin(),
                                                         by_class.begin() + k) -
                                        by_class.begin());
    } else {
      it.label = (s >= 0) == (rng() % 10 != 0) ? 1 : -1;
    }
    if (it.kind == Item::kLabeled) it.x.label = it.label;
    return it;
  }

  // -1 or +1, or a multiclass model's class index.
  int RandomLabel() {
    const uint32_t k = core_config.weight_vectors();
    return k > 1 ? static_cast<int>(rng() % k) : rng() % 2 ? 1 : -1;
  }
};

FeatureView View(const Example& e) {
  return e.sparse ? FeatureView::Sparse(e.indices, e.values)
                  : FeatureView::Dense(e.values);
}

// An example by name as the core's features: the wire's meaning of each
// field (a category, or a number), written out here rather than taken from
// the server's conversion. The views borrow `e`'s strings.
std::vector<NamedFeature> CoreNamed(const Example& e) {
  std::vector<NamedFeature> out;
  for (const v1::NamedFeature& f : e.named) {
    NamedFeature& g = out.emplace_back();
    g.space = f.space();
    g.name = f.name();
    if (f.value_case() == v1::NamedFeature::kCategory) {
      g.categorical = true;
      g.category = f.category();
    } else {
      g.value = f.number();
    }
  }
  return out;
}

// What the server does with an item: features by name hashed, the example
// taken, then its names recorded in the model's table.
absl::Status Apply(Model& m, const Item& it) {
  if (it.kind != Item::kReveal && IsNamed(it.x)) {
    const std::vector<NamedFeature> x = CoreNamed(it.x);
    Features f;
    HashTrace trace;
    if (absl::Status s = m.hasher()->Hash(x, &f, &trace); !s.ok()) return s;
    absl::Status s = it.kind == Item::kLabeled
                         ? m.Learn(f.view(), it.label).status()
                         : m.Issue(f.view(), 0).status();
    if (s.ok()) m.names()->Record(x, trace);
    return s;
  }
  switch (it.kind) {
    case Item::kLabeled:
      return m.Learn(View(it.x), it.label).status();
    case Item::kExample:
      return m.Issue(View(it.x), 0).status();
    case Item::kReveal:
      return m.Reveal(it.prediction_id, it.label).status();
  }
  return absl::InternalError("?");
}

// The state's bits with the server's issue times zeroed (the reference issues
// at time 0) and without the certificate (the server's background refresher
// solves at moments of its own; certificate_e2e_test checks it over a kill).
std::string Bits(ModelState s) {
  for (PendingPrediction& p : s.pending) p.issued_at = 0;
  s.certificate.reset();
  return testing::StateBits(s);
}

// The server's state of `id`, through ExportModel.
absl::StatusOr<ModelState> ServerState(client::Client& c,
                                       const std::string& id) {
  absl::StatusOr<std::string> blob = c.ExportModel(id);
  if (!blob.ok()) return blob.status();
  v1::ExportedModel exported;
  v1::ModelState state;
  if (!exported.ParseFromString(*blob) ||
      !state.ParseFromString(exported.state())) {
    return absl::InternalError("unparsable export");
  }
  return server::StateFromProto(state, 1 << 24);
}

// Finds the prefix of `s.items`, at least the acknowledged ones, that the
// server holds; truncates the items to it. False (with a failure) if there is
// none.
bool Reconcile(Stream& s, const ModelState& server_state,
               size_t* in_flight_applied) {
  auto reference = *Model::Create(s.core_config);
  for (size_t i = 0; i < s.acked; ++i) {
    absl::Status a = Apply(*reference, s.items[i]);
    EXPECT_TRUE(a.ok()) << s.id << " item " << i << ": " << a;
  }
  const std::string target = Bits(server_state);
  for (size_t k = s.acked;; ++k) {
    if (Bits(reference->ExportState()) == target) {
      *in_flight_applied = k - s.acked;
      s.items.resize(k);
      s.acked = k;
      return true;
    }
    if (k == s.items.size()) break;
    EXPECT_TRUE(Apply(*reference, s.items[k]).ok());
  }
  ADD_FAILURE() << s.id << ": the server's state matches no prefix from the "
                << s.acked << " acknowledged items to the " << s.items.size()
                << " queued ones";
  return false;
}

// A durability mode and how many kills it gets: `sync` answers once the disk
// has a batch, `async` once the operating system has it (docs/design.md
// section 5); a kill of the process loses neither.
struct Mode {
  const char* durability;
  int kills;
};

void PrintTo(const Mode& m, std::ostream* os) { *os << m.durability; }

class CrashTest : public ::testing::TestWithParam<Mode> {};

TEST_P(CrashTest, KillNineAtRandomMomentsLosesNothingAcknowledged) {
  std::string dir = ::testing::TempDir() + "/crash-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::vector<std::string> flags = {
      absl::StrCat("--durability=", GetParam().durability),
      "--snapshot_every=3"};

  std::vector<Stream> streams(6);
  const char* names[] = {"classic", "averaged-sparse", "voted",
                         "kernel",  "multiclass",      "named"};
  for (int m = 0; m < 6; ++m) {
    Stream& s = streams[m];
    s.id = names[m];
    s.rng.seed(1000 + m);
    s.core_config.dimension = 12;
    s.config.set_dimension(12);
    if (m == 1) {
      s.core_config.algorithm = Algorithm::kAveraged;
      s.config.set_algorithm(v1::AVERAGED);
      s.sparse = true;
    } else if (m == 2) {
      s.core_config.algorithm = Algorithm::kVoted;
      s.config.set_algorithm(v1::VOTED);
      s.core_config.max_voted_vectors = 50;
      s.config.set_max_voted_vectors(50);
    } else if (m == 3) {
      s.core_config.algorithm = Algorithm::kKernel;
      s.config.set_algorithm(v1::KERNEL);
      s.core_config.kernel.type = KernelType::kRbf;
      s.config.mutable_kernel()->set_type(v1::RBF);
      s.core_config.kernel_budget = 200;
      s.config.set_kernel_budget(200);
    } else if (m == 4) {
      s.core_config.dimension = 6;
      s.config.set_dimension(6);
      for (const char* c : {"x", "y", "z"}) {
        s.core_config.classes.push_back(c);
        s.config.add_classes(c);
      }
    } else if (m == 5) {
      // 2^6 slots for about 46 names: several share a slot.
      s.named = true;
      s.core_config.hash_bits = 6;
      s.core_config.dimension = 64;
      s.config.set_hash_bits(6);
      s.config.set_dimension(0);
    }
  }

  std::mt19937_64 rng(2026);
  int kills = 0;
  uint64_t acked_total = 0, in_flight_applied_total = 0,
           revealed_after_kill = 0;
  const int kRounds = GetParam().kills;
  for (int round = 0; round <= kRounds; ++round) {
    absl::StatusOr<std::unique_ptr<testing::ServerProcess>> server =
        testing::ServerProcess::Start(flags, dir);
    ASSERT_TRUE(server.ok()) << "round " << round << ": " << server.status();
    auto admin = (*server)->Connect();

    // Every model equals the acknowledged prefix (plus at most what was in
    // flight).
    for (Stream& s : streams) {
      if (round == 0) {
        ASSERT_TRUE(admin->CreateModel(s.id, s.config).ok());
        continue;
      }
      absl::StatusOr<ModelState> state = ServerState(*admin, s.id);
      ASSERT_TRUE(state.ok())
          << "round " << round << " " << s.id << ": " << state.status();
      size_t extra = 0;
      ASSERT_TRUE(Reconcile(s, *state, &extra)) << "round " << round;
      in_flight_applied_total += extra;
    }
    if (round == kRounds) break;

    // Stream until the killer fires after a random number of answered batches.
    absl::Mutex mu;
    int answered = 0;
    const int kill_after = 3 + rng() % 40;
    std::vector<std::thread> clients;
    for (Stream& s : streams) {
      clients.emplace_back([&, &s = s] {
        std::vector<uint64_t> open = s.OpenIds(s.items.size());
        const std::vector<uint64_t> before_kill = open;
        client::SessionOptions so;
        so.batch_size = 1 + s.rng() % 24;
        so.max_in_flight = 8;
        so.on_response = [&](const v1::LearnResponse& r) {
          for (const v1::ItemResult& res : r.results()) {
            EXPECT_FALSE(res.has_error())
                << s.id << ": " << res.error().message();
            const Item& it = s.items[s.acked];
            if (it.kind == Item::kReveal &&
                std::find(before_kill.begin(), before_kill.end(),
                          it.prediction_id) != before_kill.end() &&
                round > 0) {
              ++s.revealed_after_kill;  // issued before an earlier kill,
                                        // revealed now
            }
            ++s.acked;
          }
          absl::MutexLock lock(&mu);
          ++answered;
        };
        auto c = (*server)->Connect();
        std::unique_ptr<client::LearnSession> session =
            c->OpenLearnSession(s.id, so);
        // The session's reader reads items while this thread appends: no
        // reallocation may move them.
        s.items.reserve(s.items.size() + 20000);
        for (int i = 0; i < 20000; ++i) {
          s.items.push_back(s.Next(&open));
          const Item& it = s.items.back();
          absl::Status added =
              it.kind == Item::kLabeled ? session->AddLabeled(it.x)
              : it.kind == Item::kExample
                  ? session->AddExample(it.x)
                  : session->AddReveal(it.prediction_id, it.label);
          if (!added.ok()) break;
        }
        session->Finish()
            .IgnoreError();  // ends with UNAVAILABLE once the server is killed
      });
    }
    {
      absl::MutexLock lock(&mu);
      auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
        return answered >= kill_after;
      };
      if (!mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30))) {
        ADD_FAILURE() << "round " << round << ": only " << answered << " of "
                      << kill_after << " batches answered in 30 s";
      }
    }
    (*server)->Stop(SIGKILL);
    ++kills;
    for (std::thread& t : clients) t.join();
  }
  for (const Stream& s : streams) {
    acked_total += s.acked;
    revealed_after_kill += s.revealed_after_kill;
  }
  std::cout
      << "[ crash ] " << GetParam().durability << ": " << kills
      << " kills (SIGKILL), " << streams.size() << " models; " << acked_total
      << " items kept in the end, " << in_flight_applied_total
      << " unacknowledged in-flight items found applied; "
      << revealed_after_kill
      << " predictions revealed after the kill that followed their issue\n";
  EXPECT_EQ(kills, kRounds);
  EXPECT_GT(revealed_after_kill, 0u);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

INSTANTIATE_TEST_SUITE_P(Durability, CrashTest,
                         ::testing::Values(Mode{"sync", 25}, Mode{"async", 15}),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(info.param.durability);
                         });

}  // namespace
}  // namespace perceptron
