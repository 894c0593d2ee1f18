#include "client/rebalance.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perceptron::client {
namespace {

struct Shard {
  std::string target;
  std::unique_ptr<Client> client;
};

// A move whose copy is made, waiting for the live proxy to switch.
struct Copied {
  ModelMove move;
  size_t from = 0;  // shard indexes
  size_t to = 0;
};

absl::Status Named(const absl::Status& s, absl::string_view what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

class Rebalancer {
 public:
  explicit Rebalancer(const RebalanceOptions& options) : options_(options) {}

  absl::StatusOr<RebalanceReport> Run();

 private:
  void Say(absl::string_view line) const {
    if (options_.on_progress) options_.on_progress(line);
  }
  // A client of `target`; with `own_connection`, on a connection of its own.
  std::unique_ptr<Client> Connect(const std::string& target,
                                  bool own_connection = false) const {
    ClientOptions o = options_.client;
    o.target = target;
    o.own_connection = own_connection;
    return Client::Connect(o);
  }
  // Marks, exports, imports and verifies; on failure puts the model back
  // and says why in report_.left.
  bool Copy(const std::string& model, size_t from, size_t to, Copied* out);
  // Lifts the mark on the old shard (and deletes the new copy, if `copied`).
  void PutBack(const std::string& model, size_t from, size_t to, bool copied,
               absl::string_view why);

  const RebalanceOptions& options_;
  std::vector<Shard> shards_;
  RebalanceReport report_;
};

absl::StatusOr<RebalanceReport> Rebalancer::Run() {
  const absl::Time start = absl::Now();
  if (options_.shards.empty() || options_.next.empty()) {
    return absl::InvalidArgumentError(
        "a rebalance needs the shards and the proxy that routes by them");
  }
  // Each shard's instance id, to know which one the proxy routes an id to.
  absl::flat_hash_map<std::string, size_t> by_id;
  for (const std::string& target : options_.shards) {
    Shard s{target, Connect(target)};
    absl::StatusOr<std::string> id = s.client->ServerId();
    if (!id.ok()) return Named(id.status(), absl::StrCat("shard ", target));
    if (!by_id.emplace(*id, shards_.size()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("shards ", shards_[by_id[*id]].target, " and ", target,
                       " are the same server"));
    }
    shards_.push_back(std::move(s));
  }
  // Where every model is, and where the proxy says it belongs.
  std::map<std::string, std::vector<size_t>> holders;
  for (size_t i = 0; i < shards_.size(); ++i) {
    absl::StatusOr<std::vector<v1::Model>> models =
        shards_[i].client->ListModels();
    if (!models.ok()) {
      return Named(models.status(), absl::StrCat("shard ", shards_[i].target));
    }
    for (const v1::Model& m : *models) holders[m.model_id()].push_back(i);
  }
  report_.models = holders.size();
  std::unique_ptr<Client> next = Connect(options_.next);
  std::vector<std::tuple<std::string, size_t, size_t>> plan;
  for (const auto& [model, on] : holders) {
    absl::StatusOr<std::string> owner_id = next->ServerFor(model);
    if (!owner_id.ok()) {
      return Named(owner_id.status(),
                   absl::StrCat("the proxy ", options_.next, ", for ", model));
    }
    auto owner = by_id.find(*owner_id);
    if (owner == by_id.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the proxy ", options_.next, " routes ", model,
                       " to a server not among the shards given"));
    }
    if (on.size() > 1) {
      std::vector<std::string> where;
      for (size_t i : on) where.push_back(shards_[i].target);
      report_.left.push_back(absl::StrCat(
          model, ": on ", on.size(), " shards (", absl::StrJoin(where, ", "),
          "; its owner is ", shards_[owner->second].target,
          "): left as it is, compare the copies and delete all but one"));
      continue;
    }
    if (on[0] != owner->second) plan.emplace_back(model, on[0], owner->second);
  }
  Say(absl::StrCat(report_.models, " models on ", shards_.size(), " shards; ",
                   plan.size(), " to move"));

  std::vector<Copied> copied;
  for (const auto& [model, from, to] : plan) {
    Copied c;
    if (Copy(model, from, to, &c)) copied.push_back(std::move(c));
  }
  report_.copying = absl::Now() - start;

  // The old copies go once the live proxy routes their ids to the new owners.
  const std::string live_target =
      options_.live.empty() ? options_.next : options_.live;
  if (!copied.empty()) {
    Say(absl::StrCat("copied ", copied.size(), " models in ",
                     absl::FormatDuration(report_.copying), "; waiting up to ",
                     absl::FormatDuration(options_.switch_timeout), " for ",
                     live_target,
                     " to route them to their new shards (switch it now)"));
  }
  const absl::Time deadline = absl::Now() + options_.switch_timeout;
  absl::Duration pause = absl::Milliseconds(50);
  while (!copied.empty()) {
    // Asked on a new connection each round: nginx's old workers go on routing
    // the connections they hold by the old configuration after a reload, and
    // one connection kept for the whole wait may stay with them (shards_test's
    // rebalance waited out its 2 minutes in 2 runs of 30 beside a build).
    std::unique_ptr<Client> live =
        Connect(live_target, /*own_connection=*/true);
    std::vector<Copied> waiting;
    for (Copied& c : copied) {
      absl::StatusOr<std::string> at = live->ServerFor(c.move.model);
      if (!at.ok() || by_id.find(*at) == by_id.end() || by_id[*at] != c.to) {
        waiting.push_back(std::move(c));
        continue;
      }
      absl::Status gone =
          shards_[c.from].client->DeleteModel(c.move.model, /*if_moving=*/true);
      if (!gone.ok()) {
        report_.left.push_back(absl::StrCat(
            c.move.model, ": copied to ", c.move.to, " but its old copy on ",
            c.move.from, " was not deleted (", gone.ToString(),
            "); the copy stays marked moving: compare the two, delete one and "
            "lift the mark"));
        continue;
      }
      absl::StatusOr<v1::Model> lifted =
          shards_[c.to].client->SetMoving(c.move.model, false);
      if (!lifted.ok()) {
        report_.left.push_back(absl::StrCat(
            c.move.model, ": moved to ", c.move.to,
            " but its mark there could not be lifted (",
            lifted.status().ToString(), "); lift it with SetMoving"));
        continue;
      }
      Say(absl::StrCat("moved ", c.move.model, " from ", c.move.from, " to ",
                       c.move.to));
      report_.moved.push_back(std::move(c.move));
    }
    copied = std::move(waiting);
    if (copied.empty()) break;
    if (absl::Now() + pause > deadline) {
      for (const Copied& c : copied) {
        PutBack(c.move.model, c.from, c.to, /*copied=*/true,
                absl::StrCat(live_target, " did not route it to ", c.move.to,
                             " within ",
                             absl::FormatDuration(options_.switch_timeout)));
      }
      break;
    }
    absl::SleepFor(pause);  // a poll's pause
    pause = std::min(2 * pause, absl::Seconds(1));
  }
  report_.total = absl::Now() - start;
  return std::move(report_);
}

bool Rebalancer::Copy(const std::string& model, size_t from, size_t to,
                      Copied* out) {
  Client& source = *shards_[from].client;
  Client& target = *shards_[to].client;
  absl::StatusOr<v1::Model> marked = source.SetMoving(model, true);
  if (!marked.ok()) {
    report_.left.push_back(
        absl::StrCat(model, ": not moved (", marked.status().ToString(), ")"));
    return false;
  }
  absl::StatusOr<std::string> blob = source.ExportModel(model);
  if (!blob.ok()) {
    PutBack(model, from, to, false,
            absl::StrCat("export: ", blob.status().ToString()));
    return false;
  }
  // The copy arrives marked too: nothing changes it until the move ends.
  absl::StatusOr<v1::Model> imported =
      target.ImportModel(*blob, model, /*moving=*/true);
  if (!imported.ok()) {
    PutBack(model, from, to, false,
            absl::StrCat("import: ", imported.status().ToString()));
    return false;
  }
  absl::StatusOr<std::string> again = target.ExportModel(model);
  if (!again.ok() || *again != *blob) {
    PutBack(model, from, to, true,
            again.ok() ? "the copy's export differs from the original's"
                       : absl::StrCat("verify: ", again.status().ToString()));
    return false;
  }
  out->move = {model, shards_[from].target, shards_[to].target, blob->size()};
  out->from = from;
  out->to = to;
  Say(absl::StrCat("copied ", model, " from ", shards_[from].target, " to ",
                   shards_[to].target, " (", blob->size(), " bytes)"));
  return true;
}

void Rebalancer::PutBack(const std::string& model, size_t from, size_t to,
                         bool copied, absl::string_view why) {
  std::string undo;
  if (copied) {
    absl::Status s = shards_[to].client->DeleteModel(model, /*if_moving=*/true);
    if (!s.ok()) {
      absl::StrAppend(&undo, "; its copy on ", shards_[to].target,
                      " could not be deleted: ", s.ToString());
    }
  }
  absl::StatusOr<v1::Model> lifted =
      shards_[from].client->SetMoving(model, false);
  if (!lifted.ok()) {
    absl::StrAppend(&undo, "; its mark on ", shards_[from].target,
                    " could not be lifted: ", lifted.status().ToString());
  }
  report_.left.push_back(absl::StrCat(
      model, ": put back on ", shards_[from].target, " (", why, ")", undo));
  Say(report_.left.back());
}

}  // namespace

absl::StatusOr<RebalanceReport> Rebalance(const RebalanceOptions& options) {
  return Rebalancer(options).Run();
}

}  // namespace perceptron::client
