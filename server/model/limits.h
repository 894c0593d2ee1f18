// The server's limits (docs/design.md section 6). Set from flags in main.cc;
// see there for defaults.
#ifndef PERCEPTRON_SERVER_MODEL_LIMITS_H_
#define PERCEPTRON_SERVER_MODEL_LIMITS_H_

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace perceptron::server {

struct Limits {
  // Most models the server holds. Default: 100000.
  size_t max_models = 100000;
  // Largest input dimension d of a model. Default: 2^24.
  uint32_t max_dimension = 1u << 24;
  // Most items in one Learn request, Reveal request, Predict request or Train
  // request. Default: 10000.
  size_t max_batch_items = 10000;
  // Largest request message in bytes. Default: 64 MiB.
  size_t max_message_bytes = 64u << 20;
  // Most pending predictions per model. Default: 1000000.
  size_t max_pending = 1000000;
  // Most memory a model's pending predictions may hold, in bytes as counted by
  // Model::PendingBytes (their values and indices plus a fixed cost each).
  // Default: 256 MiB.
  size_t max_pending_bytes = 256u << 20;
  // Most memory every model's pending predictions may hold together, as
  // Model::PendingBytes counts; a prediction that would pass it is refused
  // (RESOURCE_EXHAUSTED). Default: 1 GiB.
  uint64_t pending_memory = 1u << 30;
  // A pending prediction not revealed within this long expires. Default: 1
  // hour.
  absl::Duration pending_ttl = absl::Hours(1);
  // Most passes a Train request may ask for. Default: 10000.
  uint32_t max_train_epochs = 10000;
  // The certificate (docs/design.md section 2.7): labeled examples each model
  // keeps for it, at most; 0 computes no certificate. Default: 100000.
  uint64_t certificate_examples = 100000;
  // The bytes they may take in one model, as CertificateTracker::RowBytes
  // counts. Default: 64 MiB.
  uint64_t certificate_model_bytes = 64u << 20;
  // The most bytes of names each hashing model keeps (core/name_table.h);
  // 0 keeps none.
  uint64_t name_table_bytes = 8u << 20;
  // The most bytes of names every hashing model keeps together (as
  // NameTable::NameBytes counts); past them none keeps new names. Default:
  // 1 GiB.
  uint64_t name_tables_memory = 1u << 30;
  // The bytes every model's kept examples may take together; a model that
  // would pass it freezes its certificate. Default: 1 GiB.
  uint64_t certificate_memory = 1u << 30;
  // The share of one core the background refresher may use (the flag's
  // default, main.cc, is 0.1).
  double certificate_cpu = 0.25;
  // The most bytes every model's weight vectors (as Registry::WeightBytes
  // counts them) and kernel models' stored mistakes may take together; a
  // model that would pass it is not created or imported, and a kernel model's
  // learning is refused once they are past it (RESOURCE_EXHAUSTED). 0: no
  // bound. Default: three quarters of the memory the server may use
  // (main.cc).
  uint64_t models_bytes = 0;
};

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_MODEL_LIMITS_H_
