#include "server/storage/rows_chunk.h"

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/kept_rows.h"
#include "gtest/gtest.h"
#include "server/storage/rows_format.h"

namespace perceptron::server {
namespace {

uint64_t Little(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  }
  return v;
}

// Dense rows (indices 0..k-1, kept as values alone), sparse ones and an empty
// one, both labels.
KeptRows SomeRows() {
  KeptRows rows;
  rows.Add(std::vector<uint32_t>{0, 1, 2}, std::vector<double>{0.5, -1, 2}, +1);
  rows.Add(std::vector<uint32_t>{4, 9}, std::vector<double>{1e-300, 3}, -1);
  rows.Add(std::vector<uint32_t>{}, std::vector<double>{}, +1);
  rows.Add(std::vector<uint32_t>{0, 1}, std::vector<double>{-0.0, 7}, -1);
  return rows;
}

// A file's worth: header, rows at record 3, cleared at 4, rows at 5.
std::string SomeFile() {
  std::string bytes;
  AppendChunk(&bytes, kHeaderChunk, 0, HeaderPayload("spam", 1234567890));
  AppendRowsChunk(&bytes, 3, SomeRows());
  AppendChunk(&bytes, kClearedChunk, 4, "");
  AppendRowsChunk(&bytes, 5, KeptRows());
  return bytes;
}

TEST(RowsChunkTest, ReadsBackWhatWasWritten) {
  const std::string bytes = SomeFile();
  absl::string_view rest = bytes;
  Chunk chunk;
  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  EXPECT_EQ(chunk.type, kHeaderChunk);
  EXPECT_EQ(chunk.seq, 0u);
  EXPECT_EQ(chunk.payload, "spam\n1234567890");

  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  EXPECT_EQ(chunk.type, kRowsChunk);
  EXPECT_EQ(chunk.seq, 3u);
  KeptRows rows;
  ASSERT_TRUE(ParseRows(chunk.payload, &rows));
  EXPECT_TRUE(rows == SomeRows());
  EXPECT_TRUE(rows.dense(0));
  EXPECT_FALSE(rows.dense(1));

  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  EXPECT_EQ(chunk.type, kClearedChunk);
  EXPECT_EQ(chunk.seq, 4u);
  EXPECT_TRUE(chunk.payload.empty());

  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  EXPECT_EQ(chunk.type, kRowsChunk);
  EXPECT_EQ(chunk.seq, 5u);
  KeptRows none;
  ASSERT_TRUE(ParseRows(chunk.payload, &none));
  EXPECT_EQ(none.size(), 0u);

  EXPECT_EQ(NextChunk(&rest, &chunk), ChunkRead::kEnd);
}

TEST(RowsChunkTest, AMulticlassModelsClassesReadBack) {
  KeptRows rows;
  rows.Add(std::vector<uint32_t>{0, 1}, std::vector<double>{0.5, 1}, 0);
  rows.Add(std::vector<uint32_t>{3}, std::vector<double>{2}, 63);
  rows.Add(std::vector<uint32_t>{0, 1}, std::vector<double>{1, 1}, 7);
  std::string bytes;
  AppendRowsChunk(&bytes, 1, rows);
  KeptRows back;
  ASSERT_TRUE(ParseRows(absl::string_view(bytes).substr(kChunkHeader), &back));
  EXPECT_TRUE(back == rows);
  EXPECT_EQ(back.label(0), 0);
  EXPECT_EQ(back.label(1), 63);
  EXPECT_EQ(back.label(2), 7);
}

// The layout docs/formats.md gives: CRC-32 (zlib's) of everything after it,
// length, type, seq, then the payload; a rows payload with dense rows'
// indices left out.
TEST(RowsChunkTest, LaysOutBytesAsDocumented) {
  std::string bytes;
  KeptRows rows;
  rows.Add(std::vector<uint32_t>{0, 1}, std::vector<double>{1, 2}, -1);
  rows.Add(std::vector<uint32_t>{7}, std::vector<double>{3}, +1);
  AppendRowsChunk(&bytes, 0x0102030405060708ull, rows);

  ASSERT_GE(bytes.size(), kChunkHeader);
  const std::string after = bytes.substr(4);
  EXPECT_EQ(Little(bytes, 0, 4),
            crc32(0, reinterpret_cast<const Bytef*>(after.data()),
                  static_cast<uInt>(after.size())));
  EXPECT_EQ(Little(bytes, 4, 4), bytes.size() - kChunkHeader);
  EXPECT_EQ(static_cast<uint8_t>(bytes[8]), kRowsChunk);
  EXPECT_EQ(Little(bytes, 9, 8), 0x0102030405060708ull);

  const size_t p = kChunkHeader;
  EXPECT_EQ(Little(bytes, p, 4), 2u);                // n
  EXPECT_EQ(static_cast<int8_t>(bytes[p + 4]), -1);  // labels
  EXPECT_EQ(static_cast<int8_t>(bytes[p + 5]), 1);
  EXPECT_EQ(bytes[p + 6], 1);              // dense
  EXPECT_EQ(bytes[p + 7], 0);              // sparse
  EXPECT_EQ(Little(bytes, p + 8, 4), 2u);  // counts
  EXPECT_EQ(Little(bytes, p + 12, 4), 1u);
  EXPECT_EQ(Little(bytes, p + 16, 4), 7u);  // the sparse index
  EXPECT_EQ(bytes.size(), p + 20 + 3 * 8);  // three values
}

TEST(RowsChunkTest, EveryCutThroughAChunkIsTorn) {
  const std::string bytes = SomeFile();
  absl::string_view whole = bytes;
  Chunk chunk;
  ASSERT_EQ(NextChunk(&whole, &chunk), ChunkRead::kChunk);
  const size_t first = bytes.size() - whole.size();
  ASSERT_EQ(NextChunk(&whole, &chunk), ChunkRead::kChunk);
  const size_t second = bytes.size() - whole.size();
  for (size_t cut = first + 1; cut < second; ++cut) {
    absl::string_view rest =
        absl::string_view(bytes).substr(first, cut - first);
    const absl::string_view before = rest;
    EXPECT_EQ(NextChunk(&rest, &chunk), ChunkRead::kTorn) << "cut at " << cut;
    EXPECT_EQ(rest, before) << "a failed read moved on";
  }
}

TEST(RowsChunkTest, NoChangedByteIsTakenForAChunk) {
  const std::string bytes = SomeFile();
  Chunk chunk;
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (const uint8_t flip : {0x01, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ flip);
      absl::string_view rest = damaged;
      // The chunks before the damaged one read; the damaged one never does.
      size_t start = 0;
      ChunkRead read;
      while ((read = NextChunk(&rest, &chunk)) == ChunkRead::kChunk) {
        const size_t end = damaged.size() - rest.size();
        ASSERT_FALSE(start <= at && at < end)
            << "byte " << at << " ^ " << int{flip} << " passed its check";
        start = end;
      }
      EXPECT_TRUE(read == ChunkRead::kCorrupt || read == ChunkRead::kTorn)
          << "byte " << at;
    }
  }
}

TEST(RowsChunkTest, PayloadsThatDoNotAddUpAreRefused) {
  std::string bytes;
  AppendRowsChunk(&bytes, 1, SomeRows());
  const std::string good = bytes.substr(kChunkHeader);
  KeptRows rows;
  ASSERT_TRUE(ParseRows(good, &rows));

  auto refused = [](std::string payload) {
    KeptRows r;
    return !ParseRows(payload, &r);
  };
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(refused(good.substr(0, 3)));  // no row count
  for (size_t n = 4; n < good.size(); ++n) {
    EXPECT_TRUE(refused(good.substr(0, n))) << "cut at " << n;
  }
  EXPECT_TRUE(refused(good + "x"));  // a byte too many
  std::string label = good;
  label[4] = 64;  // neither +1, -1 nor a class 0..63
  EXPECT_TRUE(refused(label));
  label[4] = -2;
  EXPECT_TRUE(refused(label));
  std::string mark = good;
  mark[4 + 4] = 3;  // a mark neither dense nor sparse
  EXPECT_TRUE(refused(mark));
  std::string count = good;
  count[4 + 8] = static_cast<char>(count[4 + 8] + 1);  // one value more
  EXPECT_TRUE(refused(count));
  std::string many = good;
  many[3] = 0x7f;  // far more rows than bytes
  EXPECT_TRUE(refused(many));
}

// Counts go as runs of consecutive places and how many more examples each
// row of the run stands for, read back onto the rows; a place past the rows,
// a run or a count of 0, a count past 2^32 - 1 or bytes left over are
// refused, with no count raised.
TEST(RowsChunkTest, RepeatsRaiseTheCountsOfRowsBefore) {
  KeptRows rows;
  const std::vector<uint32_t> at = {0, 3};
  const std::vector<double> value = {1.5, -1};
  for (int t = 0; t < 3; ++t) rows.Add(at, value, t == 1 ? -1 : 1);
  rows.AddCount(1, 6);
  std::string bytes;
  AppendRowsChunk(&bytes, 7, rows);
  AppendCountsChunk(&bytes, 7, rows);
  AppendRepeatsChunk(&bytes, 8, {2, 0, 2});
  absl::string_view rest = bytes;
  Chunk chunk;
  KeptRows back;
  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  ASSERT_EQ(chunk.type, kRowsChunk);
  ASSERT_TRUE(ParseRows(chunk.payload, &back));
  EXPECT_EQ(back.examples(), 3u);
  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  ASSERT_EQ(chunk.type, kRepeatRunsChunk);
  // One run: 1 from place 0, of 1 row, 6 more.
  EXPECT_EQ(chunk.payload, absl::string_view("\1\1\1\6", 4));
  ASSERT_TRUE(ParseRepeats(chunk, &back));
  EXPECT_TRUE(back == rows);
  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  EXPECT_EQ(chunk.seq, 8u);
  // Place 0 once, then place 2 twice: two runs, the second 1 after the first.
  EXPECT_EQ(chunk.payload, absl::string_view("\2\0\1\1\1\1\2", 7));
  ASSERT_TRUE(ParseRepeats(chunk, &back));
  EXPECT_EQ(back.count(0), 2u);
  EXPECT_EQ(back.count(2), 3u);
  EXPECT_EQ(back.examples(), 12u);
  EXPECT_EQ(NextChunk(&rest, &chunk), ChunkRead::kEnd);

  KeptRows none = rows;
  auto runs = [&](absl::string_view payload) {
    return ParseRepeats({kRepeatRunsChunk, 1, payload}, &none);
  };
  EXPECT_FALSE(runs(absl::string_view("\1\3\1\1", 4))) << "no row 3";
  EXPECT_FALSE(runs(absl::string_view("\2\0\1\1\2\1\1", 7))) << "no row 3";
  EXPECT_FALSE(runs(absl::string_view("\1\0\4\1", 4))) << "rows 0..3";
  EXPECT_FALSE(runs(absl::string_view("\1\0\0\1", 4))) << "a run of 0";
  EXPECT_FALSE(runs(absl::string_view("\1\0\1\0", 4))) << "0 more";
  EXPECT_FALSE(runs(absl::string_view("\2\0\1\1", 4))) << "short";
  EXPECT_FALSE(runs(absl::string_view("\1\0\1\1\0", 5))) << "a byte left";
  EXPECT_FALSE(runs(absl::string_view("\1\0\1\x80", 4))) << "a torn varint";
  EXPECT_FALSE(runs(absl::string_view("\1\0\1\xff\xff\xff\xff\x10", 8)))
      << "above 2^32 - 1";
  EXPECT_FALSE(runs(absl::string_view("\1\0\3\xfa\xff\xff\xff\x0f", 8)))
      << "row 1 would stand for more than 2^32 - 1 examples";
  EXPECT_TRUE(none == rows);
  EXPECT_TRUE(runs(absl::string_view("\1\0\3\xf8\xff\xff\xff\x0f", 8)));
  EXPECT_EQ(none.count(1), UINT32_MAX);

  // A cycling stream's batch of 64 rows seen again is one run of 4 bytes.
  KeptRows many;
  for (int t = 0; t < 200; ++t) many.Add(at, value, 1);
  std::vector<uint32_t> cycle;
  for (uint32_t t = 100; t < 164; ++t) cycle.push_back(t);
  std::string one;
  AppendRepeatsChunk(&one, 9, cycle);
  EXPECT_EQ(one.size(), kChunkHeader + 4);  // \1 \x64 \x40 \1
  rest = one;
  ASSERT_EQ(NextChunk(&rest, &chunk), ChunkRead::kChunk);
  ASSERT_TRUE(ParseRepeats(chunk, &many));
  EXPECT_EQ(many.examples(), 264u);
  EXPECT_EQ(many.count(99), 1u);
  EXPECT_EQ(many.count(100), 2u);
  EXPECT_EQ(many.count(163), 2u);
  EXPECT_EQ(many.count(164), 1u);
}

// Pairs of a place and a count, as servers before the runs wrote them, are
// still read.
TEST(RowsChunkTest, RepeatsAsPairsAreStillRead) {
  KeptRows rows;
  const std::vector<uint32_t> at = {0, 3};
  const std::vector<double> value = {1.5, -1};
  for (int t = 0; t < 3; ++t) rows.Add(at, value, 1);
  KeptRows back = rows;
  // m = 3: (2, 1), (0, 1), (2, 1).
  ASSERT_TRUE(ParseRepeats(
      {kRepeatsChunk, 1,
       absl::string_view(
           "\3\0\0\0\2\0\0\0\1\0\0\0\0\0\0\0\1\0\0\0\2\0\0\0\1\0\0\0", 28)},
      &back));
  EXPECT_EQ(back.count(0), 2u);
  EXPECT_EQ(back.count(1), 1u);
  EXPECT_EQ(back.count(2), 3u);
  KeptRows none = rows;
  auto pairs = [&](absl::string_view payload) {
    return ParseRepeats({kRepeatsChunk, 1, payload}, &none);
  };
  EXPECT_FALSE(pairs(absl::string_view("\1\0\0\0\3\0\0\0\1\0\0\0", 12)))
      << "no row 3";
  EXPECT_FALSE(pairs(absl::string_view("\1\0\0\0\0\0\0\0\0\0\0\0", 12)))
      << "0 more";
  EXPECT_FALSE(pairs(absl::string_view("\2\0\0\0\0\0\0\0\1\0\0\0", 12)))
      << "short";
  EXPECT_TRUE(none == rows);
}

}  // namespace
}  // namespace perceptron::server
