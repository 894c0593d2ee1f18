// Drives models into a store and recovers them, for the store's tests.
#ifndef PERCEPTRON_TESTS_SERVER_STORAGE_STORE_DRIVE_H_
#define PERCEPTRON_TESTS_SERVER_STORAGE_STORE_DRIVE_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/model.h"
#include "gtest/gtest.h"
#include "server/storage/store.h"
#include "tests/core/drivers.h"
#include "tests/core/state_bits.h"

namespace perceptron::server {

// Drives `model` and logs a record per window; returns the state after each
// record.
inline std::vector<std::string> Drive(Model& model, Store& store,
                                      const std::string& id, int records,
                                      uint64_t first_seq = 1,
                                      uint64_t seed = 3) {
  perceptron::testing::Driver driver(6, /*sparse=*/seed % 2 == 0, seed);
  std::vector<Issued> open;
  std::vector<std::string> states;
  for (int r = 0; r < records; ++r) {
    for (int i = 0; i < 5; ++i) driver.Step(model, &open);
    EXPECT_TRUE(store
                    .Append(id, absl::UnixEpoch(), first_seq + r,
                            model.TakeJournal(), true)
                    .ok());
    states.push_back(perceptron::testing::StateBits(model.ExportState()));
  }
  return states;
}

inline std::unique_ptr<Model> NewModel(const ModelConfig& c) {
  auto m = *Model::Create(c);
  m->SetJournaling(true);
  return m;
}

// Every model recovered; an error if any was set aside.
inline absl::StatusOr<std::vector<RecoveredModel>> RecoverAll(Store& store) {
  absl::StatusOr<Recovery> r = store.Recover(1 << 20);
  if (!r.ok()) return r.status();
  if (!r->set_aside.empty()) return r->set_aside[0].reason;
  return std::move(r->models);
}

// The rows files under `dir`/rows, by name, with their sizes.
inline std::map<std::string, uintmax_t> RowsFiles(const std::string& dir) {
  std::map<std::string, uintmax_t> out;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/rows"))
    out[e.path().filename().string()] = e.file_size();
  return out;
}

}  // namespace perceptron::server

#endif  // PERCEPTRON_TESTS_SERVER_STORAGE_STORE_DRIVE_H_
