// Counts a closed store's LevelDB keys, for the storage tests.
#ifndef PERCEPTRON_TESTS_SERVER_STORAGE_LEVELDB_KEYS_H_
#define PERCEPTRON_TESTS_SERVER_STORAGE_LEVELDB_KEYS_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "leveldb/db.h"

namespace perceptron::testing {

// Keys of `dir`'s LevelDB that start with `prefix` (the store closed).
inline int KeysWith(const std::string& dir, const std::string& prefix) {
  leveldb::DB* raw;
  EXPECT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &raw).ok());
  std::unique_ptr<leveldb::Iterator> it(
      raw->NewIterator(leveldb::ReadOptions()));
  int n = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    ++n;
  }
  it.reset();
  delete raw;
  return n;
}

}  // namespace perceptron::testing

#endif  // PERCEPTRON_TESTS_SERVER_STORAGE_LEVELDB_KEYS_H_
