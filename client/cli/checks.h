// The checks the data commands (train, fit, predict) make of a file's
// examples before anything is sent: each names the file and line.
#ifndef PERCEPTRON_CLIENT_CLI_CHECKS_H_
#define PERCEPTRON_CLIENT_CLI_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client.h"
#include "client/example.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::client::cli {

// Whether a model takes features by name (hashed or from its list).
bool ByName(const v1::ModelConfig& c);
// Whether `create` from the flags makes such a model.
bool ByNameFromFlags();

// train or fit --create of a model that exists: it is trained as it is, and
// the creation flags given other values than their defaults (--hash_bits,
// --classes, ...) are said, on standard error, not to apply.
void SayCreateFlagsUnused(const v1::Model& m);

// The examples a request to `model`: --batch if given and within the limit
// on items a request of the server that owns it (ServerStatus.max_batch_items,
// asked with the model's routing header, so that a shard proxy routes it),
// else INVALID_ARGUMENT naming both, before anything is read or sent; if not
// given, `fallback` (the command's default), or the server's limit where that
// is lower. A server that does not say its limits (or a status call that
// fails: the calls after it say why) is not checked.
absl::StatusOr<uint32_t> BatchForTheServer(Client& client,
                                           const std::string& model,
                                           uint32_t fallback);

// OK if fit's one Train request (of file `name`) is within the limits on
// items and bytes a request of the server that owns its model
// (ServerStatus.max_batch_items and max_message_bytes, asked as
// BatchForTheServer asks them; not checked where they are not said); else
// INVALID_ARGUMENT naming the limit, its flag, and train --epochs, which
// streams a file of any size.
absl::Status FitsOneRequest(Client& client, const std::string& name,
                            const v1::TrainRequest& request);

// What a file's examples are checked against before they are sent.
struct Shape {
  uint32_t dimension = 0;  // 0: not known yet (not checked)
  bool hashed = false;     // takes features by name
  // A model that normalizes without a bias cannot take a zero x.
  bool normalize = false;
  bool bias = true;
};
Shape ShapeOf(const v1::ModelConfig& c);
// The shape `create` from the flags makes, of dimension `dimension`.
Shape ShapeFromFlags(uint32_t dimension);

// OK if `e` fits a model of `shape`; else INVALID_ARGUMENT naming the file,
// line and index (as the file writes it): an index past the dimension, a
// width not the dimension, names for a model of vectors, a value that is
// not a finite number, or a zero x the model cannot normalize.
absl::Status FitsTheModel(const std::string& name, size_t line, int index_base,
                          const Example& e, const Shape& shape);

// A server's "item K: why" without its "item K: " (the place in a request,
// which the user did not make); other messages as they are.
absl::string_view WithoutItem(absl::string_view message);

// A server's "item K: why" for the K-th example of a request, as
// "FILE:LINE: why" given the request's examples' lines.
std::string AtLine(const std::string& name, absl::string_view message,
                   const std::vector<size_t>& lines);

}  // namespace perceptron::client::cli

#endif  // PERCEPTRON_CLIENT_CLI_CHECKS_H_
