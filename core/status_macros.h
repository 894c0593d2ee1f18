// Small helpers for code that returns absl::Status or absl::StatusOr<T>.
//
// The Debian Abseil (20220623) has no status macros of its own, so the project
// keeps these two:
//
//   absl::Status Load(...) {
//     PERCEPTRON_RETURN_IF_ERROR(Check(...));
//     PERCEPTRON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
//                                 Model::Create(config));
//     ...
//   }
#ifndef PERCEPTRON_CORE_STATUS_MACROS_H_
#define PERCEPTRON_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function with the status of `expr` if it is not
// OK.
#define PERCEPTRON_RETURN_IF_ERROR(expr)                     \
  do {                                                       \
    const ::absl::Status perceptron_status_ = (expr);        \
    if (!perceptron_status_.ok()) return perceptron_status_; \
  } while (0)

#define PERCEPTRON_STATUS_CONCAT_INNER_(a, b) a##b
#define PERCEPTRON_STATUS_CONCAT_(a, b) PERCEPTRON_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise moves the value into `lhs`, which may be a declaration.
#define PERCEPTRON_ASSIGN_OR_RETURN(lhs, rexpr) \
  PERCEPTRON_ASSIGN_OR_RETURN_IMPL_(            \
      PERCEPTRON_STATUS_CONCAT_(perceptron_statusor_, __LINE__), lhs, rexpr)

#define PERCEPTRON_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                      \
  if (!statusor.ok()) return statusor.status();                 \
  lhs = std::move(statusor).value()

#endif  // PERCEPTRON_CORE_STATUS_MACROS_H_
