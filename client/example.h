// An example as the client library sends it: dense or sparse features, or
// features by name (for a model with hash_bits), and, when known, a label.
#ifndef PERCEPTRON_CLIENT_EXAMPLE_H_
#define PERCEPTRON_CLIENT_EXAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "perceptron/v1/perceptron.pb.h"

namespace perceptron::client {

namespace v1 = ::perceptron::v1;

struct Example {
  // Dense: one value per coordinate. Sparse: the values of `indices`.
  std::vector<double> values;
  std::vector<uint32_t> indices;
  bool sparse = false;
  // Not empty, or `by_name`: the example is these features by name (values
  // and indices are then unused); by_name with none is an example of no
  // feature for a model that takes names (a VW line "-1 |", a JSON line with
  // "features": {}). Cleared as protobuf clears them: the messages (and
  // their strings' memory) are kept for the next example's (AddNamed).
  google::protobuf::RepeatedPtrField<v1::NamedFeature> named;
  bool by_name = false;
  // -1 or +1 when known; a multiclass model's class index.
  std::optional<int> label;
  // The label as the file wrote it, when read with ReadOptions::raw_labels.
  std::string raw_label;

  // An example of nothing, as Example() is, keeping the memory its vectors
  // hold for the next one read into it. Every field above is reset here.
  void Clear() {
    values.clear();
    indices.clear();
    sparse = false;
    named.Clear();
    by_name = false;
    label.reset();
    raw_label.clear();
  }

  // A feature by name appended to `named`, empty: one Clear() kept where
  // there is one (its strings, set again, reuse their memory).
  v1::NamedFeature& AddNamed() { return *named.Add(); }
};

// Whether `e` is features by name (possibly none).
inline bool IsNamed(const Example& e) { return e.by_name || !e.named.empty(); }

// The one place the client converts its types to the wire's.
void FeaturesToProto(const Example& e, v1::Features* out);

// About the bytes `e`'s features take in a request: 8 a value, 4 an index,
// a named feature's strings and 12 more. For sizing batches.
size_t RequestBytes(const Example& e);

// The bytes of features at which the client library's batches end whatever
// their count (SessionOptions::max_batch_bytes, perceptron predict's
// requests): rows of many coordinates go a few a request, well within the
// message limit (64 MiB, ClientOptions::max_message_bytes); narrow ones are
// not held back by it (64 rows of d = 1000 are 512 KB).
inline constexpr size_t kBatchBytes = 4 << 20;

// Columns of rows by name (Columns.text, text_lengths and named_*): each
// batch's strings in a table, one run of bytes, referenced by index.
class NamedColumns {
 public:
  NamedColumns() = default;
  // The table's hash and equality read the batch through `this`.
  NamedColumns(const NamedColumns&) = delete;
  NamedColumns& operator=(const NamedColumns&) = delete;

  // Appends one row's features to `c` (row_ends included). named_spaces,
  // named_values and named_categories are written only once a row needs
  // them (a namespace, a value other than 1, a categorical value), filled in
  // for the rows before. A `c` with no text_lengths begins a batch.
  void Append(const google::protobuf::RepeatedPtrField<v1::NamedFeature>& x,
              v1::Columns* c);
  // The table of `c` (Columns.strings, or Columns.text cut by text_lengths)
  // as views into it, for Row.
  static std::vector<absl::string_view> Strings(const v1::Columns& c);
  // Row i of `c` as NamedFeatures, the features Append was given; `strings`
  // is Strings(c).
  static void Row(const v1::Columns& c,
                  const std::vector<absl::string_view>& strings, int i,
                  v1::NamedFeatures* out);
  // For the next batch.
  void Clear();

 private:
  uint32_t Ref(absl::string_view s);
  // A string of the table: its index, or the string itself (lookups).
  absl::string_view View(uint32_t i) const {
    return absl::string_view(c_->text())
        .substr(starts_[i], c_->text_lengths(i));
  }
  absl::string_view View(absl::string_view s) const { return s; }
  struct Hash {
    using is_transparent = void;
    const NamedColumns* o;
    template <typename T>
    size_t operator()(const T& key) const {
      return absl::Hash<absl::string_view>()(o->View(key));
    }
  };
  struct Eq {
    using is_transparent = void;
    const NamedColumns* o;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return o->View(a) == o->View(b);
    }
  };
  // The batch being written, and where each string of its text begins.
  v1::Columns* c_ = nullptr;
  std::vector<uint32_t> starts_;
  // Each string of the batch by its index in c_'s table.
  absl::flat_hash_set<uint32_t, Hash, Eq> table_{0, Hash{this}, Eq{this}};
};

}  // namespace perceptron::client

#endif  // PERCEPTRON_CLIENT_EXAMPLE_H_
