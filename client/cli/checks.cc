#include "client/cli/checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/cli/common.h"
#include "client/cli/flags.h"

namespace perceptron::client::cli {

bool ByName(const v1::ModelConfig& c) {
  return c.hash_bits() != 0 || c.feature_names_size() > 0;
}

bool ByNameFromFlags() {
  return absl::GetFlag(FLAGS_hash_bits) != 0 ||
         !absl::GetFlag(FLAGS_feature_names_file).empty();
}

Shape ShapeOf(const v1::ModelConfig& c) {
  return {c.dimension(), ByName(c), c.normalize(), c.bias()};
}

Shape ShapeFromFlags(uint32_t dimension) {
  return {dimension, ByNameFromFlags(), absl::GetFlag(FLAGS_normalize),
          absl::GetFlag(FLAGS_bias)};
}

void SayCreateFlagsUnused(const v1::Model& m) {
  if (!absl::GetFlag(FLAGS_create)) return;
  std::vector<std::string> given;
  for (const char* name : ModelConfigFlags()) {
    const absl::CommandLineFlag* f = absl::FindCommandLineFlag(name);
    if (f != nullptr && f->CurrentValue() != f->DefaultValue()) {
      given.push_back(absl::StrCat("--", name));
    }
  }
  if (given.empty()) return;
  std::fprintf(stderr,
               "perceptron: %s exists (%s, %s) and is trained as it is: %s "
               "(for --create) not applied\n",
               m.model_id().c_str(), AlgorithmText(m.config().algorithm()),
               ShapeText(m.config()).c_str(),
               absl::StrJoin(given, ", ").c_str());
}

namespace {

// The limits a request to `model` is sized by, of the server that owns it
// (asked with the model's routing header, so that a shard proxy routes it);
// 0 where not said, and both 0 if the status call fails (the calls after it
// say why).
struct RequestLimits {
  uint64_t items = 0;
  uint64_t bytes = 0;
};

RequestLimits LimitsFor(Client& client, const std::string& model) {
  absl::StatusOr<v1::ServerStatus> status = client.GetServerStatus(model);
  if (!status.ok()) return {};
  return {status->max_batch_items(), status->max_message_bytes()};
}

}  // namespace

absl::StatusOr<uint32_t> BatchForTheServer(Client& client,
                                           const std::string& model,
                                           uint32_t fallback) {
  const uint64_t limit = LimitsFor(client, model).items;
  if (!FlagGiven("batch")) {
    return limit == 0
               ? fallback
               : static_cast<uint32_t>(std::min<uint64_t>(fallback, limit));
  }
  const uint64_t batch = absl::GetFlag(FLAGS_batch);
  if (limit == 0 || batch <= limit) return static_cast<uint32_t>(batch);
  return absl::InvalidArgumentError(absl::StrCat(
      "--batch=", batch, " is over the server's limit of ", limit,
      " items a request (perceptrond --max_batch_items): --batch=", limit,
      " or less"));
}

absl::Status FitsOneRequest(Client& client, const std::string& name,
                            const v1::TrainRequest& request) {
  const RequestLimits limits = LimitsFor(client, request.model_id());
  const char* const instead =
      "; fit sends the whole file in one request: train FILE --epochs=N "
      "streams a file of any size, a pass at a time";
  const uint64_t n = request.examples_size();
  if (limits.items > 0 && n > limits.items) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", n, " examples, over the server's limit of ", limits.items,
        " items a request (perceptrond --max_batch_items)", instead));
  }
  if (limits.bytes == 0) return absl::OkStatus();
  const uint64_t bytes = request.ByteSizeLong();
  if (bytes > limits.bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", n, " examples take ", bytes,
        " bytes as a request, over the server's limit of ", limits.bytes,
        " bytes a request (perceptrond --max_message_bytes)", instead));
  }
  return absl::OkStatus();
}

absl::Status FitsTheModel(const std::string& name, size_t line, int index_base,
                          const Example& e, const Shape& shape) {
  // Written only for an error (this runs for every example sent).
  const auto at = [&] { return absl::StrCat(name, ":", line, ": "); };
  bool zero = true;
  if (IsNamed(e)) {
    if (!shape.hashed) {
      return absl::InvalidArgumentError(absl::StrCat(
          at(),
          "the features are names, and the model takes vectors: create it "
          "with --hash_bits (e.g. 18) to hash names as Vowpal Wabbit does, or "
          "with --feature_names_file to list them"));
    }
    for (const v1::NamedFeature& f : e.named) {
      if (f.has_number() && !std::isfinite(f.number())) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(), "feature ", f.name(), "'s value ", f.number(),
                         " is not a finite number"));
      }
      zero = zero && f.has_number() && f.number() == 0;
    }
  } else {
    for (size_t k = 0; k < e.values.size(); ++k) {
      const double v = e.values[k];
      if (!std::isfinite(v)) {
        // A sparse row's feature by its index as the file writes it; a dense
        // row's by its place among the features, from 1.
        return absl::InvalidArgumentError(absl::StrCat(
            at(), "feature ",
            e.sparse ? absl::StrCat("index ", e.indices[k] + index_base)
                     : absl::StrCat(k + 1, " of ", e.values.size()),
            " has the value ", v, ", not a finite number"));
      }
      zero = zero && v == 0;
    }
  }
  if (zero && shape.normalize && !shape.bias) {
    return absl::InvalidArgumentError(absl::StrCat(
        at(),
        "every feature is 0, and the model normalizes without a bias: x / "
        "||x|| does not exist (give the model a bias, or leave the row out)"));
  }
  if (IsNamed(e) || shape.dimension == 0) return absl::OkStatus();
  if (e.sparse) {
    for (uint32_t i : e.indices) {
      if (i >= shape.dimension) {
        return absl::InvalidArgumentError(absl::StrCat(
            at(), "index ", i + index_base, " is past the model's dimension ",
            shape.dimension, " (indices ", index_base, " to ",
            shape.dimension - 1 + index_base, ")"));
      }
    }
  } else if (e.values.size() != shape.dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat(at(), e.values.size(),
                     " features; the model's dimension is ", shape.dimension));
  }
  return absl::OkStatus();
}

namespace {

// A server's "item K: why" as K and why; false for other messages.
bool SplitItem(absl::string_view message, size_t* item,
               absl::string_view* why) {
  absl::string_view rest = message;
  if (!absl::ConsumePrefix(&rest, "item ")) return false;
  const size_t colon = rest.find(": ");
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(rest.substr(0, colon), item)) {
    return false;
  }
  *why = rest.substr(colon + 2);
  return true;
}

}  // namespace

absl::string_view WithoutItem(absl::string_view message) {
  size_t item = 0;
  absl::string_view why;
  return SplitItem(message, &item, &why) ? why : message;
}

std::string AtLine(const std::string& name, absl::string_view message,
                   const std::vector<size_t>& lines) {
  size_t item = 0;
  absl::string_view why;
  if (SplitItem(message, &item, &why) && item < lines.size()) {
    return absl::StrCat(name, ":", lines[item], ": ", why);
  }
  return std::string(message);
}

}  // namespace perceptron::client::cli
