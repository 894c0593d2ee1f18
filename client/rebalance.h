// Moving models between shards after shards are added or removed
// (docs/design.md section 10), with a proxy as the single source of truth of
// ownership: a model is where the proxy routes its id.
//
//   RebalanceOptions o;
//   o.shards = {"s0:50051", "s1:50051", "s2:50051", "s3:50051"};
//   o.next = "proxy:50052";  // routes by the new shard set
//   o.live = "proxy:50051";  // what clients use; switched to the new set
//                            // once Rebalance says the copies are made
//   absl::StatusOr<RebalanceReport> r = Rebalance(o);
//
// Each model held by a shard other than its owner under `next` is moved:
// marked moving on its old shard (from then on its changes are refused with
// UNAVAILABLE, so a client retries them, and none is lost), exported,
// imported into its owner marked moving too, verified (the owner's export
// equal byte for byte), and, once `live` routes its id to the owner, deleted
// from the old shard only if still marked (so never a copy that changed after
// it was made), and the mark on the new copy lifted. A model whose copy
// fails, or whose proxy does not switch within `switch_timeout`, is put back:
// the copy deleted, the mark lifted.
#ifndef PERCEPTRON_CLIENT_REBALANCE_H_
#define PERCEPTRON_CLIENT_REBALANCE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/client.h"

namespace perceptron::client {

struct RebalanceOptions {
  // Every shard that may hold models, old and new, host:port.
  std::vector<std::string> shards;
  // A proxy routing by the new set of shards: the owners.
  std::string next;
  // The proxy clients use. Old copies are deleted once it routes their ids to
  // the new owners. Empty: the same as `next`.
  std::string live;
  // How long to wait for `live` to route a moved model to its new owner.
  // Default: 10 minutes.
  absl::Duration switch_timeout = absl::Minutes(10);
  // Tokens, TLS and deadlines of every call (the target is ignored).
  ClientOptions client;
  // Called with a line of progress at each step. Optional.
  std::function<void(absl::string_view)> on_progress;
};

struct ModelMove {
  std::string model;
  std::string from;  // the shards' targets
  std::string to;
  size_t bytes = 0;  // the export's size
};

struct RebalanceReport {
  // Models found on the shards (a model on two counted once).
  size_t models = 0;
  std::vector<ModelMove> moved;
  // Models left as they were, each with why: on two shards, a copy that
  // failed and was put back, a proxy that did not switch in time, an old
  // copy not deleted.
  std::vector<std::string> left;
  // From the start until every copy was made, and in all.
  absl::Duration copying;
  absl::Duration total;
};

// INVALID_ARGUMENT or FAILED_PRECONDITION, nothing changed, if the shards or
// the proxy cannot be read or the proxy routes a model to a server not among
// `shards`; else the report (an error there changes only the model it names,
// which is put back and listed in `left`).
absl::StatusOr<RebalanceReport> Rebalance(const RebalanceOptions& options);

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_REBALANCE_H_
