// Who may do what (docs/design.md section 9): bearer tokens from a file, each
// with a role and, optionally, the model-id prefixes it is limited to.
//
//   # tokens file: TOKEN ROLE [PREFIX ...]      roles: read, learn, admin
//   3f9c2a...  admin
//   77ab01...  learn  team-a-  shared-
//   c0ffee...  read
//
//   read:  GetModel, ListModels, GetStatus, WatchStatus, Predict, GetWeights,
//          GetWeightsChunks
//   learn: also Learn, Reveal, Train
//   admin: also CreateModel, DeleteModel, ResetModel, ImportModel, ExportModel,
//          ImportModelChunks, ExportModelChunks
//
// Calls carry "authorization: Bearer TOKEN". No token or an unknown one:
// UNAUTHENTICATED; a known token whose role or prefixes do not cover the call:
// PERMISSION_DENIED. Messages never contain a token. Thread-compatible;
// immutable after Load.
#ifndef PERCEPTRON_SERVER_AUTH_AUTH_H_
#define PERCEPTRON_SERVER_AUTH_AUTH_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perceptron::server {

enum class Role { kRead = 0, kLearn = 1, kAdmin = 2 };

class Authorizer {
 public:
  // Parses a tokens file. INVALID_ARGUMENT naming the line (never the token)
  // for a bad line.
  static absl::StatusOr<std::unique_ptr<Authorizer>> Load(
      const std::string& path);
  static absl::StatusOr<std::unique_ptr<Authorizer>> Parse(
      absl::string_view text, absl::string_view name);

  // OK if the call's metadata carries a token whose role is at least `needed`
  // and, if `model_id` is not empty, whose prefixes (if any) cover it.
  absl::Status Check(const std::multimap<std::string, std::string>& metadata,
                     Role needed, absl::string_view model_id) const;
  // The same for a call's raw "authorization" values (as gRPC gives them).
  absl::Status CheckHeader(absl::string_view authorization, Role needed,
                           absl::string_view model_id) const;

  // Whether the token may see `model_id` at all (for filtering ListModels).
  bool Covers(absl::string_view authorization,
              absl::string_view model_id) const;

 private:
  struct Grant {
    Role role;
    std::vector<std::string> prefixes;  // empty: every model
  };
  const Grant* Find(absl::string_view authorization) const;
  static bool PrefixOk(const Grant& g, absl::string_view model_id);

  absl::flat_hash_map<std::string, Grant> grants_;
};

absl::string_view RoleName(Role r);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_AUTH_AUTH_H_
