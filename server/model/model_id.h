// Model ids (docs/design.md section 4): 1-128 characters of [A-Za-z0-9._-], not
// only dots ("." and ".." are path segments in the HTTP API's URLs).
#ifndef PERCEPTRON_SERVER_MODEL_MODEL_ID_H_
#define PERCEPTRON_SERVER_MODEL_MODEL_ID_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace perceptron::server {

inline constexpr size_t kMaxModelIdLength = 128;

// OK if `id` is a valid model id, else INVALID_ARGUMENT naming the problem.
absl::Status ValidateModelId(absl::string_view id);

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MODEL_MODEL_ID_H_
