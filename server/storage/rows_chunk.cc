#include "server/storage/rows_chunk.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/config.h"
#include "server/storage/crc.h"

namespace perceptron::server {
namespace {

// Counts and labels are written byte by byte; indices and values are copied
// as they are in memory, which is their little-endian form here.
static_assert(std::endian::native == std::endian::little);

// Starts a chunk at the end of `out`; returns where it starts.
size_t BeginChunk(std::string* out) {
  const size_t at = out->size();
  out->resize(at + kChunkHeader);
  return at;
}
void EndChunk(std::string* out, size_t at, ChunkType type, uint64_t seq) {
  char* h = out->data() + at;
  PutLittle(h + 4, out->size() - at - kChunkHeader, 4);
  h[8] = static_cast<char>(type);
  PutLittle(h + 9, seq, 8);
  PutLittle(h, Crc32(absl::string_view(h + 4, out->size() - at - 4)), 4);
}
}  // namespace

void AppendChunk(std::string* out, ChunkType type, uint64_t seq,
                 absl::string_view payload) {
  const size_t at = BeginChunk(out);
  out->append(payload.data(), payload.size());
  EndChunk(out, at, type, seq);
}
void AppendRowsChunk(std::string* out, uint64_t seq, const KeptRows& rows) {
  const size_t n = rows.size();
  size_t indices = 0, values = 0;
  for (size_t t = 0; t < n; ++t) {
    const size_t k = rows.values(t).size();
    values += k;
    if (!rows.dense(t)) indices += k;
  }
  const size_t at = BeginChunk(out);
  const size_t start = out->size();
  out->resize(start + 4 + 6 * n + 4 * indices + 8 * values);
  char* w = out->data() + start;
  PutLittle(w, n, 4);
  char* label = w + 4;
  char* dense = label + n;
  char* count = dense + n;
  char* index = count + 4 * n;
  char* value = index + 4 * indices;
  for (size_t t = 0; t < n; ++t) {
    // -1 or +1, or a multiclass model's class 0..kMaxClasses-1.
    label[t] = static_cast<char>(rows.label(t));
    dense[t] = static_cast<char>(rows.dense(t) ? 1 : 0);
    const absl::Span<const double> v = rows.values(t);
    PutLittle(count + 4 * t, v.size(), 4);
    if (!rows.dense(t)) {
      std::memcpy(index, rows.indices(t).data(), 4 * v.size());
      index += 4 * v.size();
    }
    std::memcpy(value, v.data(), 8 * v.size());
    value += 8 * v.size();
  }
  EndChunk(out, at, kRowsChunk, seq);
}

namespace {
// Unsigned LEB128: 7 bits a byte, the low first, the high bit set on every
// byte but the last.
void PutVarint(std::string* out, uint32_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
// Reads a varint below 2^32 (5 bytes at most) from the front of `*p`.
bool GetVarint(absl::string_view* p, uint32_t* v) {
  uint64_t x = 0;
  for (int i = 0; i < 5; ++i) {
    if (p->empty()) return false;
    const auto b = static_cast<uint8_t>(p->front());
    p->remove_prefix(1);
    x |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      if (x > UINT32_MAX) return false;
      *v = static_cast<uint32_t>(x);
      return true;
    }
  }
  return false;
}

// A kRepeatRunsChunk of `pairs` (place, how many more), places ascending and
// distinct.
void AppendRuns(std::string* out, uint64_t seq,
                const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  struct Run {
    uint32_t start, length, more;
  };
  std::vector<Run> runs;
  for (const auto& [t, more] : pairs) {
    if (!runs.empty() && runs.back().more == more &&
        runs.back().start + runs.back().length == t) {
      ++runs.back().length;
    } else {
      runs.push_back({t, 1, more});
    }
  }
  const size_t at = BeginChunk(out);
  PutVarint(out, static_cast<uint32_t>(runs.size()));
  uint32_t end = 0;
  for (const Run& r : runs) {
    PutVarint(out, r.start - end);
    PutVarint(out, r.length);
    PutVarint(out, r.more);
    end = r.start + r.length;
  }
  EndChunk(out, at, kRepeatRunsChunk, seq);
}

bool ParsePairs(absl::string_view p, KeptRows* rows) {
  if (p.size() < 4) return false;
  const uint64_t m = GetLittle(p.data(), 4);
  if (p.size() != 4 + 8 * m) return false;
  for (uint64_t k = 0; k < m; ++k) {
    if (GetLittle(p.data() + 4 + 8 * k, 4) >= rows->size() ||
        GetLittle(p.data() + 8 + 8 * k, 4) == 0) {
      return false;
    }
  }
  for (uint64_t k = 0; k < m; ++k) {
    const uint64_t t = GetLittle(p.data() + 4 + 8 * k, 4);
    const auto more = static_cast<uint32_t>(GetLittle(p.data() + 8 + 8 * k, 4));
    if (!rows->AddCount(t, more)) return false;
  }
  return true;
}

bool ParseRuns(absl::string_view p, KeptRows* rows) {
  uint32_t m = 0;
  if (!GetVarint(&p, &m) || m > p.size() / 3) return false;
  struct Run {
    uint64_t start;
    uint32_t length, more;
  };
  std::vector<Run> runs(m);
  uint64_t end = 0;
  for (Run& r : runs) {
    uint32_t gap = 0;
    if (!GetVarint(&p, &gap) || !GetVarint(&p, &r.length) ||
        !GetVarint(&p, &r.more) || r.length == 0 || r.more == 0) {
      return false;
    }
    r.start = end + gap;
    end = r.start + r.length;
    if (end > rows->size()) return false;
    for (uint64_t t = r.start; t < end; ++t) {
      if (rows->count(t) > UINT32_MAX - r.more) return false;
    }
  }
  if (!p.empty()) return false;
  for (const Run& r : runs) {
    for (uint64_t t = r.start; t < r.start + r.length; ++t) {
      rows->AddCount(t, r.more);
    }
  }
  return true;
}
}  // namespace

void AppendRepeatsChunk(std::string* out, uint64_t seq,
                        const std::vector<uint32_t>& places) {
  std::vector<uint32_t> sorted = places;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  pairs.reserve(sorted.size());
  for (uint32_t t : sorted) {
    if (!pairs.empty() && pairs.back().first == t) {
      ++pairs.back().second;
    } else {
      pairs.emplace_back(t, 1);
    }
  }
  AppendRuns(out, seq, pairs);
}

void AppendCountsChunk(std::string* out, uint64_t seq, const KeptRows& rows) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (size_t t = 0; t < rows.size(); ++t) {
    if (rows.count(t) > 1) {
      pairs.emplace_back(static_cast<uint32_t>(t), rows.count(t) - 1);
    }
  }
  if (!pairs.empty()) AppendRuns(out, seq, pairs);
}

bool ParseRepeats(const Chunk& chunk, KeptRows* rows) {
  if (chunk.type == kRepeatsChunk) return ParsePairs(chunk.payload, rows);
  return chunk.type == kRepeatRunsChunk && ParseRuns(chunk.payload, rows);
}

std::string HeaderPayload(absl::string_view id, int64_t created_at) {
  return absl::StrCat(id, "\n", created_at);
}

bool ParseRows(absl::string_view p, KeptRows* rows) {
  if (p.size() < 4) return false;
  const uint64_t n = GetLittle(p.data(), 4);
  if (n > (p.size() - 4) / 6) return false;
  const char* label = p.data() + 4;
  const char* dense = label + n;
  const char* count = dense + n;
  uint64_t indices = 0, values = 0;
  for (uint64_t t = 0; t < n; ++t) {
    // Whether the labels fit the model is its certificate's check.
    if (label[t] < -1 || label[t] >= static_cast<int>(kMaxClasses) ||
        (dense[t] != 0 && dense[t] != 1))
      return false;
    const uint64_t k = GetLittle(count + 4 * t, 4);
    values += k;
    if (dense[t] == 0) indices += k;
  }
  if (4 + 6 * n + 4 * indices + 8 * values != p.size()) return false;
  const char* index = count + 4 * n;
  const char* value = index + 4 * indices;
  std::vector<uint32_t> ix;
  std::vector<double> vx;
  for (uint64_t t = 0; t < n; ++t) {
    const size_t k = GetLittle(count + 4 * t, 4);
    ix.resize(k);
    vx.resize(k);
    if (dense[t] == 1) {
      for (size_t i = 0; i < k; ++i) ix[i] = static_cast<uint32_t>(i);
    } else {
      std::memcpy(ix.data(), index, 4 * k);
      index += 4 * k;
    }
    std::memcpy(vx.data(), value, 8 * k);
    value += 8 * k;
    rows->Add(ix, vx, label[t]);
  }
  return true;
}

uint64_t ChunkPayloadLength(absl::string_view header) {
  return GetLittle(header.data() + 4, 4);
}

ChunkRead NextChunk(absl::string_view* bytes, Chunk* chunk) {
  if (bytes->empty()) return ChunkRead::kEnd;
  if (bytes->size() < kChunkHeader) return ChunkRead::kTorn;
  const uint64_t length = ChunkPayloadLength(*bytes);
  if (length > bytes->size() - kChunkHeader) return ChunkRead::kTorn;
  const absl::string_view whole = bytes->substr(0, kChunkHeader + length);
  if (GetLittle(whole.data(), 4) != Crc32(whole.substr(4))) {
    return ChunkRead::kCorrupt;
  }
  chunk->type = static_cast<uint8_t>(whole[8]);
  chunk->seq = GetLittle(whole.data() + 9, 8);
  chunk->payload = whole.substr(kChunkHeader);
  bytes->remove_prefix(whole.size());
  return ChunkRead::kChunk;
}

}  // namespace perceptron::server
