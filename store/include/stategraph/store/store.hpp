// SPDX-License-Identifier: MIT
#pragma once

// The long-term memory store: JSON documents under hierarchical namespaces, shared across
// conversation threads (LangGraph's BaseStore; docs/store.md).

#include <stategraph/core/error.hpp>
#include <stategraph/core/json_optional.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace sg {

namespace errc {
inline constexpr std::string_view kInvalidNamespace = "store.invalid_namespace";
inline constexpr std::string_view kInvalidFilter = "store.invalid_filter";
inline constexpr std::string_view kStoreCorrupt = "store.corrupt";
inline constexpr std::string_view kStoreIo = "store.io";
inline constexpr std::string_view kStoreLocked = "store.locked";
}  // namespace errc

/// A namespace: a path of labels, like ("users", "u-1", "memories").
using Namespace = std::vector<std::string>;

/// A namespace that breaks the rules (validate_namespace). Names the offending label.
class InvalidNamespaceError : public Error {
 public:
  explicit InvalidNamespaceError(const std::string& message)
      : Error(errc::kInvalidNamespace, message) {}
};

/// Store errors other than bad arguments: I/O, corruption, a locked database.
class StoreError : public Error {
 public:
  StoreError(std::string_view code, const std::string& message) : Error(code, message) {}
};

/// Throws InvalidNamespaceError unless `ns` is non-empty, has no empty label, no label with "."
/// or a zero byte, and does not start with the reserved label "langgraph".
void validate_namespace(const Namespace& ns);

/// "a.b.c" for {"a", "b", "c"} (the CLI's form). Thread-safe.
[[nodiscard]] std::string join_namespace(const Namespace& ns);
/// {"a", "b", "c"} for "a.b.c"; "" gives {}. Does not validate.
[[nodiscard]] Namespace split_namespace(std::string_view text);

using StoreClock = std::chrono::system_clock;

/// A stored document.
struct Item {
  Namespace ns{};
  std::string key{};
  nlohmann::json value = nlohmann::json::object();
  StoreClock::time_point created_at{};
  StoreClock::time_point updated_at{};

  friend bool operator==(const Item&, const Item&) = default;
};

/// A search hit: the item and its similarity score (none for a filter-only search).
struct SearchItem {
  Item item{};
  std::optional<double> score{};
};

/// The item's JSON form: {namespace: [...], key, value, created_at, updated_at (ISO-8601 UTC)},
/// plus score for a search hit.
[[nodiscard]] nlohmann::json to_json(const Item& item);
[[nodiscard]] nlohmann::json to_json(const SearchItem& hit);
/// ISO-8601 UTC with microseconds ("2026-11-22T03:04:05.123456+00:00").
[[nodiscard]] std::string iso_time(StoreClock::time_point t);

/// Operations of Store::batch (LangGraph's GetOp, PutOp, SearchOp, ListNamespacesOp).
struct GetOp {
  Namespace ns{};
  std::string key{};
  /// Extend the item's TTL (default: the store's TtlConfig::refresh_on_read).
  std::optional<bool> refresh_ttl{};
};

struct PutOp {
  Namespace ns{};
  std::string key{};
  /// The new value (a JSON object), or nullopt to delete.
  std::optional<nlohmann::json> value{};
  /// Minutes until the item expires (default: TtlConfig::default_ttl; none: never).
  std::optional<double> ttl_minutes{};
  /// JSON paths to embed for semantic search (default: IndexConfig::fields; empty: none).
  std::optional<std::vector<std::string>> index{};
};

struct SearchOp {
  Namespace prefix{};  ///< {} searches everything
  /// Match on JSON paths of the value: {"a.b": 1, "n": {"$gt": 2}, "tags": {"$in": [..]}}.
  nlohmann::json filter{};
  /// Rank by similarity to this text (needs an IndexConfig); items without vectors come last.
  std::optional<std::string> query{};
  std::size_t limit = 10;
  std::size_t offset = 0;
  std::optional<bool> refresh_ttl{};
};

/// A prefix or suffix of namespaces; "*" matches any one label.
struct MatchCondition {
  enum class Kind : std::uint8_t { prefix, suffix };
  Kind kind = Kind::prefix;
  Namespace path{};
};

struct ListNamespacesOp {
  std::vector<MatchCondition> match{};
  std::optional<std::size_t> max_depth{};
  std::size_t limit = 100;
  std::size_t offset = 0;
};

using StoreOp = std::variant<GetOp, PutOp, SearchOp, ListNamespacesOp>;
/// GetOp -> optional<Item>; PutOp -> monostate; SearchOp -> hits; ListNamespacesOp -> namespaces.
using StoreResult = std::variant<std::monostate, std::optional<Item>, std::vector<SearchItem>,
                                 std::vector<Namespace>>;

/// Time-to-live settings of a store.
struct TtlConfig {
  /// Minutes until a put item expires when the put gives no ttl (none: never).
  std::optional<double> default_ttl{};
  /// Reads (get, search) extend an item's TTL by default.
  bool refresh_on_read = true;
  /// The clock for timestamps and expiry (default: the system clock); tests use a fake one.
  std::function<StoreClock::time_point()> clock{};
};

/// Turns texts into vectors of dims() floats. Implementations must be thread-safe.
class Embeddings {
 public:
  virtual ~Embeddings() = default;
  [[nodiscard]] virtual std::size_t dims() const noexcept = 0;
  /// One vector per text. Throws on failure (the store operation fails, nothing is written).
  [[nodiscard]] virtual std::vector<std::vector<float>> embed(
      const std::vector<std::string>& texts) = 0;
};

/// A deterministic offline embedder: lower-cased words and character trigrams hashed into
/// `dims` signed buckets, L2-normalized. It captures lexical overlap (shared words and word
/// pieces), not meaning: use a model's embeddings for semantic similarity. Thread-safe.
class HashedNgramEmbeddings final : public Embeddings {
 public:
  explicit HashedNgramEmbeddings(std::size_t dims = 384);
  [[nodiscard]] std::size_t dims() const noexcept override { return dims_; }
  [[nodiscard]] std::vector<std::vector<float>> embed(
      const std::vector<std::string>& texts) override;

 private:
  std::size_t dims_;
};

/// Embeddings from a function (a model client, a test double). Thread-safe if `fn` is.
class FunctionEmbeddings final : public Embeddings {
 public:
  using Fn = std::function<std::vector<std::vector<float>>(const std::vector<std::string>&)>;
  FunctionEmbeddings(std::size_t dims, Fn fn) : dims_(dims), fn_(std::move(fn)) {}
  [[nodiscard]] std::size_t dims() const noexcept override { return dims_; }
  [[nodiscard]] std::vector<std::vector<float>> embed(
      const std::vector<std::string>& texts) override {
    return fn_(texts);
  }

 private:
  std::size_t dims_;
  Fn fn_;
};

/// Semantic search settings of a store.
struct IndexConfig {
  std::shared_ptr<Embeddings> embeddings{};
  /// JSON paths embedded by default: "$" (the whole value), "a.b", "arr[0]", "arr[-1]",
  /// "arr[*]" (each element its own vector), "a[*].b".
  std::vector<std::string> fields{"$"};
  /// Up to this many vectors, search is exact; above it an HNSW index answers (hnswlib).
  std::size_t exact_limit = 20000;
  /// The vector size; 0 takes the embeddings' dims(). A mismatch is an error at construction.
  std::size_t dims = 0;
};

/// The texts at a JSON path of `value` (strings as they are, other values as JSON); none when
/// the path is missing. Throws Error ("argument.invalid") for a malformed path.
[[nodiscard]] std::vector<std::string> texts_at_path(const nlohmann::json& value,
                                                     std::string_view path);

/// True when `value` matches `filter` (see SearchOp::filter): plain values and arrays compare by
/// equality, nested objects match recursively, operators $eq $ne $gt $gte $lt $lte $in $nin.
/// Numbers compare numerically, strings lexicographically; other types only by ($n)eq/($n)in.
/// Throws Error (code "store.invalid_filter") for an unknown operator or a malformed filter.
[[nodiscard]] bool matches_filter(const nlohmann::json& value, const nlohmann::json& filter);
/// Throws as matches_filter would for any value: an unknown operator, an operator mixed with
/// plain keys, $in/$nin without an array, a filter that is not an object (null is no filter).
void validate_filter(const nlohmann::json& filter);

/// The store interface. Every operation validates namespaces (InvalidNamespaceError) and throws
/// StoreError on I/O or corrupt data. Implementations are safe to use from many threads.
class Store {
 public:
  virtual ~Store() = default;

  /// Runs the operations in order; results in the same order.
  virtual std::vector<StoreResult> batch(std::vector<StoreOp> ops) = 0;

  /// Whether a search `query` ranks by similarity (the store has an IndexConfig). noexcept.
  [[nodiscard]] virtual bool semantic_search() const noexcept { return false; }

  /// Inserts or replaces the item (value must be a JSON object; else Error
  /// "argument.invalid"). created_at is kept on replace. `index`: the JSON paths to embed
  /// (default: the IndexConfig's fields; empty: not indexed).
  void put(const Namespace& ns, const std::string& key, nlohmann::json value,
           std::optional<double> ttl_minutes = std::nullopt,
           std::optional<std::vector<std::string>> index = std::nullopt);
  /// The item, or nullopt if absent or expired.
  [[nodiscard]] std::optional<Item> get(const Namespace& ns, const std::string& key,
                                        std::optional<bool> refresh_ttl = std::nullopt);
  /// Removes the item (absent: nothing happens).
  void remove(const Namespace& ns, const std::string& key);
  /// Items under `prefix` matching `filter`, most recently updated first, paged.
  [[nodiscard]] std::vector<SearchItem> search(SearchOp op);
  /// Distinct namespaces (truncated to max_depth), sorted, paged.
  [[nodiscard]] std::vector<Namespace> list_namespaces(ListNamespacesOp op = {});
};

}  // namespace sg
