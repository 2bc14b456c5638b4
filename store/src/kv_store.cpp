// The store over an ordered key-value space.
//
//   key    LABEL1\0LABEL2\0...\0KEY     (labels are non-empty and have no zero byte, so the
//                                         first empty label ends the namespace)
//   value  "SG", format version, 's', CRC-32 of the payload, CBOR payload
//          {v: value, c: created_at, u: updated_at, e: expires_at | null, t: ttl minutes | null}
//          (times in microseconds since the epoch)
//
// A namespace prefix is the key range [enc(prefix), enc(prefix) with its last \0 -> \1).
#include <stategraph/core/detail/record.hpp>
#include <stategraph/store/kv_store.hpp>

#include <fmt/format.h>
// hnswlib 0.6.2 (Debian 12) prefetches one entry past a neighbour list in its SSE search path
// (hnswalg.h, searchBaseLayer: *(datal + j + 1)); the read is harmless in practice but
// AddressSanitizer reports it, so sanitized builds use hnswlib's portable path.
#if defined(__SANITIZE_ADDRESS__) && !defined(NO_MANUAL_VECTORIZATION)
#define NO_MANUAL_VECTORIZATION
#endif
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <shared_mutex>
#include <unordered_map>

namespace sg {
namespace {

using detail::prefix_end;
using nlohmann::json;

detail::KvOp put_op(std::uint8_t space, std::string key, std::string value) {
  return {detail::KvOp::Kind::put, space, std::move(key), std::move(value)};
}

detail::KvOp erase_op(std::uint8_t space, std::string key) {
  return {detail::KvOp::Kind::erase, space, std::move(key), {}};
}

constexpr std::uint8_t kFormatVersion = 1;
constexpr char kItemRecord = 's';
constexpr char kVectorRecord = 'x';

std::int64_t micros_of(StoreClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

StoreClock::time_point from_micros(std::int64_t micros) {
  return StoreClock::time_point(
      std::chrono::duration_cast<StoreClock::duration>(std::chrono::microseconds(micros)));
}

std::string encode_namespace(const Namespace& ns) {
  std::string out;
  for (const auto& label : ns) {
    out += label;
    out.push_back('\0');
  }
  return out;
}

std::string item_key(const Namespace& ns, const std::string& key) {
  std::string out = encode_namespace(ns);
  out.push_back('\0');
  out += key;
  return out;
}

/// The namespace and item key of a stored key; false if it is not one.
bool decode_key(std::string_view stored, Namespace& ns, std::string& key) {
  ns.clear();
  std::size_t pos = 0;
  while (pos < stored.size() && stored[pos] != '\0') {
    const std::size_t end = stored.find('\0', pos);
    if (end == std::string_view::npos) return false;
    ns.emplace_back(stored.substr(pos, end - pos));
    pos = end + 1;
  }
  if (pos >= stored.size() || ns.empty()) return false;
  key.assign(stored.substr(pos + 1));
  return true;
}

/// A stored item with its TTL bookkeeping.
struct Record {
  Item item;
  std::optional<std::int64_t> expires_at;
  std::optional<double> ttl_minutes;

  [[nodiscard]] bool expired(std::int64_t now) const { return expires_at && *expires_at <= now; }
};

[[noreturn]] void corrupt(const Namespace& ns, const std::string& key, const std::string& why) {
  throw StoreError(errc::kStoreCorrupt, fmt::format("corrupt store item '{}' in namespace '{}': {}",
                                                    key, join_namespace(ns), why));
}

std::string seal(char kind, const std::string& payload) {
  std::string out = detail::record_header(kFormatVersion, kind);
  out += payload;
  detail::seal_record(out);
  return out;
}

std::string_view unseal(std::string_view data, char kind, const Namespace& ns,
                        const std::string& key) {
  const auto record = detail::open_record(data);
  if (!record) corrupt(ns, key, "not a store record");
  if (record->version != kFormatVersion) {
    corrupt(ns, key,
            fmt::format("unknown format version {} (this build reads version {})",
                        static_cast<int>(record->version), kFormatVersion));
  }
  if (record->kind != kind)
    corrupt(ns, key, fmt::format("record kind '{}', expected '{}'", record->kind, kind));
  if (!record->intact) corrupt(ns, key, "checksum mismatch");
  return record->payload;
}

std::string encode_record(const Record& r) {
  const json payload = {{"v", r.item.value},
                        {"c", micros_of(r.item.created_at)},
                        {"u", micros_of(r.item.updated_at)},
                        {"e", r.expires_at ? json(*r.expires_at) : json()},
                        {"t", r.ttl_minutes ? json(*r.ttl_minutes) : json()}};
  std::string body;
  json::to_cbor(payload, body);
  return seal(kItemRecord, body);
}

Record decode_record(std::string_view data, Namespace ns, std::string key) {
  const std::string_view body = unseal(data, kItemRecord, ns, key);
  Record r;
  try {
    const json p = json::from_cbor(body);
    r.item.value = p.at("v");
    r.item.created_at = from_micros(p.at("c").get<std::int64_t>());
    r.item.updated_at = from_micros(p.at("u").get<std::int64_t>());
    if (!p.at("e").is_null()) r.expires_at = p.at("e").get<std::int64_t>();
    if (!p.at("t").is_null()) r.ttl_minutes = p.at("t").get<double>();
  } catch (const json::exception& e) {
    corrupt(ns, key, e.what());
  }
  r.item.ns = std::move(ns);
  r.item.key = std::move(key);
  return r;
}

/// Vectors: u32 count, u32 dims, then count * dims little-endian floats (this machine's order).
std::string encode_vectors(const std::vector<std::vector<float>>& vectors) {
  const auto count = static_cast<std::uint32_t>(vectors.size());
  const auto dims = static_cast<std::uint32_t>(vectors.empty() ? 0 : vectors.front().size());
  std::string body(8 + std::size_t{count} * dims * sizeof(float), '\0');
  std::memcpy(body.data(), &count, 4);
  std::memcpy(body.data() + 4, &dims, 4);
  std::size_t at = 8;
  for (const auto& v : vectors) {
    std::memcpy(body.data() + at, v.data(), v.size() * sizeof(float));
    at += v.size() * sizeof(float);
  }
  return seal(kVectorRecord, body);
}

std::vector<std::vector<float>> decode_vectors(std::string_view data, const Namespace& ns,
                                               const std::string& key) {
  const std::string_view body = unseal(data, kVectorRecord, ns, key);
  std::uint32_t count = 0;
  std::uint32_t dims = 0;
  if (body.size() < 8) corrupt(ns, key, "short vector record");
  std::memcpy(&count, body.data(), 4);
  std::memcpy(&dims, body.data() + 4, 4);
  if (body.size() != 8 + std::size_t{count} * dims * sizeof(float))
    corrupt(ns, key, "vector record size");
  std::vector<std::vector<float>> out(count, std::vector<float>(dims));
  for (std::uint32_t i = 0; i < count; ++i)
    std::memcpy(out[i].data(), body.data() + 8 + std::size_t{i} * dims * sizeof(float),
                dims * sizeof(float));
  return out;
}

double best_score(const std::vector<std::vector<float>>& vectors, const std::vector<float>& q) {
  double best = -2;
  for (const auto& v : vectors) {
    double dot = 0;
    for (std::size_t i = 0; i < v.size() && i < q.size(); ++i)
      dot += static_cast<double>(v[i]) * q[i];
    best = std::max(best, dot);
  }
  return best;
}

void normalize(std::vector<float>& v) {
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm <= 0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(norm));
  for (float& x : v) x *= inv;
}

std::int64_t ttl_micros(double minutes) {
  return static_cast<std::int64_t>(minutes * 60.0 * 1e6);
}

/// The upper bound of the key range of a namespace prefix ("" when unbounded).
bool matches_path(const Namespace& ns, const Namespace& path, bool suffix) {
  if (path.size() > ns.size()) return false;
  const std::size_t offset = suffix ? ns.size() - path.size() : 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != "*" && path[i] != ns[offset + i]) return false;
  }
  return true;
}

}  // namespace

/// The vectors of indexed items, in memory, and an HNSW index once there are many.
struct KvStore::Vectors {
  std::shared_mutex mu;
  std::unordered_map<std::string, std::vector<std::vector<float>>> by_key;  // item key -> vectors
  std::size_t count = 0;                                                    // vectors in by_key
  // The approximate index (built when count exceeds IndexConfig::exact_limit).
  std::unique_ptr<hnswlib::InnerProductSpace> space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw;
  std::vector<std::string> label_key;                                       // label -> item key
  std::unordered_map<std::string, std::vector<hnswlib::labeltype>> labels;  // item key -> labels
  std::size_t live_labels = 0;

  void add_to_hnsw(const std::string& key, const std::vector<std::vector<float>>& vectors) {
    for (const auto& v : vectors) {
      const auto label = static_cast<hnswlib::labeltype>(label_key.size());
      if (label >= hnsw->max_elements_) hnsw->resizeIndex(std::max<std::size_t>(1024, label * 2));
      hnsw->addPoint(v.data(), label);
      label_key.push_back(key);
      labels[key].push_back(label);
      ++live_labels;
    }
  }
  void remove_from_hnsw(const std::string& key) {
    auto it = labels.find(key);
    if (it == labels.end()) return;
    for (auto label : it->second) {
      hnsw->markDelete(label);
      --live_labels;
    }
    labels.erase(it);
  }
  /// Replaces the vectors of `key` (none: removes). Caller holds `mu` exclusively.
  void set(const std::string& key, std::vector<std::vector<float>> vectors) {
    if (auto it = by_key.find(key); it != by_key.end()) {
      count -= it->second.size();
      by_key.erase(it);
    }
    if (hnsw) remove_from_hnsw(key);
    if (vectors.empty()) return;
    if (hnsw) add_to_hnsw(key, vectors);
    count += vectors.size();
    by_key.emplace(key, std::move(vectors));
  }
  void build_hnsw(std::size_t dims) {
    space = std::make_unique<hnswlib::InnerProductSpace>(dims);
    hnsw = std::make_unique<hnswlib::HierarchicalNSW<float>>(
        space.get(), std::max<std::size_t>(1024, count * 2), 16, 200);
    label_key.clear();
    labels.clear();
    live_labels = 0;
    for (const auto& [key, vectors] : by_key) add_to_hnsw(key, vectors);
  }
};

KvStore::KvStore(std::unique_ptr<detail::KvBackend> backend, TtlConfig ttl,
                 std::optional<IndexConfig> index)
    : kv_(std::move(backend)),
      ttl_(std::move(ttl)),
      index_(std::move(index)),
      vectors_(std::make_unique<Vectors>()) {
  if (!index_) return;
  if (!index_->embeddings) throw Error(errc::kInvalidArgument, "IndexConfig needs embeddings");
  if (index_->dims != 0 && index_->dims != index_->embeddings->dims()) {
    throw Error(errc::kInvalidArgument,
                fmt::format("IndexConfig dims {} but the embeddings make {}", index_->dims,
                            index_->embeddings->dims()));
  }
  kv_->scan(detail::Space::vectors, {}, {}, false, [&](std::string_view k, std::string_view v) {
    Namespace ns;
    std::string key;
    if (!decode_key(k, ns, key)) return true;
    auto vectors = decode_vectors(v, ns, key);
    vectors_->count += vectors.size();
    vectors_->by_key.emplace(std::string(k), std::move(vectors));
    return true;
  });
}

std::int64_t KvStore::now_micros() const {
  return micros_of(ttl_.clock ? ttl_.clock() : StoreClock::now());
}

KvStore::~KvStore() {
  stop_sweeper();
}

std::vector<StoreResult> KvStore::batch(std::vector<StoreOp> ops) {
  std::vector<StoreResult> out;
  out.reserve(ops.size());
  for (auto& op : ops) {
    std::visit(
        [&](auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, GetOp>) {
            out.emplace_back(do_get(o));
          } else if constexpr (std::is_same_v<T, PutOp>) {
            do_put(o);
            out.emplace_back(std::monostate{});
          } else if constexpr (std::is_same_v<T, SearchOp>) {
            out.emplace_back(do_search(o));
          } else {
            out.emplace_back(do_list(o));
          }
        },
        op);
  }
  return out;
}

std::optional<Item> KvStore::do_get(const GetOp& op) {
  validate_namespace(op.ns);
  const std::string key = item_key(op.ns, op.key);
  const bool refresh = op.refresh_ttl.value_or(ttl_.refresh_on_read);
  std::unique_lock lock(write_mu_, std::defer_lock);
  if (refresh) lock.lock();  // a refresh writes back what it read
  auto stored = kv_->get(detail::Space::items, key);
  if (!stored) return std::nullopt;
  Record r = decode_record(*stored, op.ns, op.key);
  const std::int64_t now = now_micros();
  if (r.expired(now)) return std::nullopt;
  if (refresh && r.ttl_minutes) {
    r.expires_at = now + ttl_micros(*r.ttl_minutes);
    kv_->write({put_op(detail::Space::items, key, encode_record(r))});
  }
  return std::move(r.item);
}

std::vector<std::vector<float>> KvStore::embed_item(const PutOp& op) {
  if (!index_ || !op.value) return {};
  const auto& fields = op.index ? *op.index : index_->fields;
  std::vector<std::string> texts;
  for (const auto& path : fields) {
    auto found = texts_at_path(*op.value, path);
    std::move(found.begin(), found.end(), std::back_inserter(texts));
  }
  if (texts.empty()) return {};
  auto vectors = index_->embeddings->embed(texts);
  const std::size_t dims = index_->embeddings->dims();
  for (auto& v : vectors) {
    if (v.size() != dims) {
      throw Error(errc::kInvalidArgument,
                  fmt::format("the embeddings returned {} floats, expected {}", v.size(), dims));
    }
    normalize(v);
  }
  return vectors;
}

void KvStore::do_put(const PutOp& op) {
  validate_namespace(op.ns);
  const std::string key = item_key(op.ns, op.key);
  if (!op.value) {
    std::lock_guard lock(write_mu_);
    kv_->write({erase_op(detail::Space::items, key), erase_op(detail::Space::vectors, key)});
    std::unique_lock vlock(vectors_->mu);
    vectors_->set(key, {});
    return;
  }
  if (!op.value->is_object()) {
    throw Error(
        errc::kInvalidArgument,
        fmt::format("store value for key '{}' in namespace '{}' must be a JSON object, got {}",
                    op.key, join_namespace(op.ns), op.value->type_name()));
  }
  const std::optional<double> ttl = op.ttl_minutes ? op.ttl_minutes : ttl_.default_ttl;
  if (ttl && !(*ttl > 0)) {
    throw Error(errc::kInvalidArgument, fmt::format("ttl must be positive minutes, got {}", *ttl));
  }
  auto vectors = embed_item(op);  // before any write: a failing embedder changes nothing
  std::lock_guard lock(write_mu_);
  const std::int64_t now = now_micros();
  Record r;
  r.item.ns = op.ns;
  r.item.key = op.key;
  r.item.value = *op.value;
  r.item.created_at = r.item.updated_at = from_micros(now);
  if (auto stored = kv_->get(detail::Space::items, key)) {
    const Record old = decode_record(*stored, op.ns, op.key);
    if (!old.expired(now)) r.item.created_at = old.item.created_at;
  }
  r.ttl_minutes = ttl;
  if (ttl) r.expires_at = now + ttl_micros(*ttl);
  std::vector<detail::KvOp> writes{put_op(detail::Space::items, key, encode_record(r))};
  if (index_) {
    writes.push_back(vectors.empty()
                         ? erase_op(detail::Space::vectors, key)
                         : put_op(detail::Space::vectors, key, encode_vectors(vectors)));
  }
  kv_->write(writes);
  if (index_) {
    std::unique_lock vlock(vectors_->mu);
    vectors_->set(key, std::move(vectors));
  }
}

std::optional<std::vector<std::pair<std::string, double>>> KvStore::approximate(
    const std::vector<float>& query, std::size_t want) {
  {
    std::shared_lock lock(vectors_->mu);
    if (vectors_->count <= index_->exact_limit) return std::nullopt;
  }
  std::unique_lock build(vectors_->mu);
  if (!vectors_->hnsw) vectors_->build_hnsw(index_->embeddings->dims());
  build.unlock();
  std::shared_lock lock(vectors_->mu);
  auto& v = *vectors_;
  const std::size_t k = std::min(want, v.live_labels);
  // hnswlib's ef is shared state: serialize searches on it.
  static std::mutex ef_mu;
  std::lock_guard ef_lock(ef_mu);
  v.hnsw->setEf(std::max<std::size_t>(k, 64));
  auto heap = v.hnsw->searchKnn(query.data(), k);
  std::vector<std::pair<std::string, double>> out;
  std::unordered_map<std::string, std::size_t> at;
  std::vector<std::pair<float, hnswlib::labeltype>> hits;
  while (!heap.empty()) {
    hits.push_back(heap.top());
    heap.pop();
  }
  for (auto it = hits.rbegin(); it != hits.rend(); ++it) {  // nearest first
    const std::string& key = v.label_key[it->second];
    const double score = 1.0 - static_cast<double>(it->first);
    if (auto seen = at.find(key); seen != at.end()) {
      out[seen->second].second = std::max(out[seen->second].second, score);
      continue;
    }
    at.emplace(key, out.size());
    out.emplace_back(key, score);
  }
  return out;
}

std::vector<SearchItem> KvStore::do_search(const SearchOp& op) {
  if (!op.prefix.empty()) validate_namespace(op.prefix);
  validate_filter(op.filter);
  if (op.query && !index_) {
    throw Error(errc::kInvalidArgument,
                "search with a query needs a store with an IndexConfig (semantic search)");
  }
  const bool refresh = op.refresh_ttl.value_or(ttl_.refresh_on_read);
  const std::string lower = encode_namespace(op.prefix);
  const std::int64_t now = now_micros();
  const std::size_t want = op.offset + op.limit;
  std::vector<float> query;
  if (op.query) {
    query = std::move(index_->embeddings->embed({*op.query}).at(0));
    normalize(query);
  }
  struct Hit {
    Record record;
    std::optional<double> score;
  };
  std::vector<Hit> found;
  bool complete = false;
  if (op.query) {
    // Approximate candidates, widened until a full page survives the prefix and filter.
    for (std::size_t k = want * 4 + 16;; k *= 4) {
      auto ranked = approximate(query, k);
      if (!ranked) break;  // small collection: exact search below
      found.clear();
      for (auto& [key, score] : *ranked) {
        if (key.compare(0, lower.size(), lower) != 0) continue;
        auto stored = kv_->get(detail::Space::items, key);
        if (!stored) continue;
        Namespace ns;
        std::string item;
        if (!decode_key(key, ns, item)) continue;
        Record r = decode_record(*stored, std::move(ns), std::move(item));
        if (r.expired(now) || !matches_filter(r.item.value, op.filter)) continue;
        found.push_back({std::move(r), score});
      }
      if (found.size() >= want) {
        complete = true;
        break;
      }
      std::shared_lock lock(vectors_->mu);
      if (k >= vectors_->live_labels) break;  // everything seen: exact search fills the rest
    }
  }
  if (!complete) {
    found.clear();
    std::shared_lock lock(vectors_->mu, std::defer_lock);
    if (op.query) lock.lock();
    kv_->scan(detail::Space::items, lower, prefix_end(lower), false,
              [&](std::string_view k, std::string_view v) {
                Namespace ns;
                std::string key;
                if (!decode_key(k, ns, key)) return true;
                Record r = decode_record(v, std::move(ns), std::move(key));
                if (r.expired(now)) return true;
                if (!matches_filter(r.item.value, op.filter)) return true;
                std::optional<double> score;
                if (op.query) {
                  auto it = vectors_->by_key.find(std::string(k));
                  if (it != vectors_->by_key.end()) score = best_score(it->second, query);
                }
                found.push_back({std::move(r), score});
                return true;
              });
  }
  // Best score first (items without vectors last), then most recently updated.
  std::stable_sort(found.begin(), found.end(), [](const Hit& a, const Hit& b) {
    if (a.score.has_value() != b.score.has_value()) return a.score.has_value();
    if (a.score && *a.score != *b.score) return *a.score > *b.score;
    return a.record.item.updated_at > b.record.item.updated_at;
  });
  std::vector<SearchItem> out;
  std::vector<detail::KvOp> refreshed;
  for (std::size_t i = op.offset; i < found.size() && out.size() < op.limit; ++i) {
    Record& r = found[i].record;
    if (refresh && r.ttl_minutes) {
      r.expires_at = now + ttl_micros(*r.ttl_minutes);
      refreshed.push_back(
          put_op(detail::Space::items, item_key(r.item.ns, r.item.key), encode_record(r)));
    }
    out.push_back(SearchItem{std::move(r.item), found[i].score});
  }
  if (!refreshed.empty()) {
    std::lock_guard lock(write_mu_);
    kv_->write(refreshed);
  }
  return out;
}

std::vector<Namespace> KvStore::do_list(const ListNamespacesOp& op) {
  // One scan step per namespace: after finding one, skip past its own items.
  std::string lower;
  std::string upper;
  for (const auto& m : op.match) {
    // A literal leading prefix narrows the scan.
    if (m.kind != MatchCondition::Kind::prefix) continue;
    Namespace literal;
    for (const auto& label : m.path) {
      if (label == "*") break;
      literal.push_back(label);
    }
    if (literal.size() > lower.size()) {
      lower = encode_namespace(literal);
      upper = prefix_end(lower);
    }
  }
  const std::int64_t now = now_micros();
  std::set<Namespace> seen;
  std::string from = lower;
  while (true) {
    std::optional<Namespace> next;
    std::string skip_to;
    kv_->scan(detail::Space::items, from, upper, false,
              [&](std::string_view k, std::string_view v) {
                Namespace ns;
                std::string key;
                if (!decode_key(k, ns, key)) return true;
                if (decode_record(v, ns, key).expired(now)) return true;  // look at the next item
                skip_to = encode_namespace(ns) + '\1';
                next = std::move(ns);
                return false;
              });
    if (!next) break;
    from = std::move(skip_to);
    bool ok = true;
    for (const auto& m : op.match)
      ok = ok && matches_path(*next, m.path, m.kind == MatchCondition::Kind::suffix);
    if (!ok) continue;
    if (op.max_depth && next->size() > *op.max_depth) next->resize(*op.max_depth);
    seen.insert(std::move(*next));
  }
  std::vector<Namespace> out;
  std::size_t index = 0;
  for (const auto& ns : seen) {
    if (index++ < op.offset) continue;
    if (out.size() >= op.limit) break;
    out.push_back(ns);
  }
  return out;
}

std::size_t KvStore::sweep_expired() {
  const std::int64_t now = now_micros();
  std::lock_guard lock(write_mu_);
  std::vector<detail::KvOp> erase;
  kv_->scan(detail::Space::items, {}, {}, false, [&](std::string_view k, std::string_view v) {
    Namespace ns;
    std::string key;
    if (decode_key(k, ns, key) && decode_record(v, std::move(ns), std::move(key)).expired(now)) {
      erase.push_back(erase_op(detail::Space::items, std::string(k)));
      erase.push_back(erase_op(detail::Space::vectors, std::string(k)));
    }
    return true;
  });
  if (!erase.empty()) {
    kv_->write(erase);
    std::unique_lock vlock(vectors_->mu);
    for (std::size_t i = 0; i < erase.size(); i += 2) vectors_->set(erase[i].key, {});
  }
  swept_ += erase.size() / 2;
  return erase.size() / 2;
}

void KvStore::start_sweeper(std::chrono::milliseconds interval) {
  std::lock_guard lock(sweeper_mu_);
  interval_ = interval;
  stop_ = false;
  if (sweeper_.joinable()) {
    sweeper_cv_.notify_all();
    return;
  }
  sweeper_ = std::thread([this] {
    std::unique_lock lk(sweeper_mu_);
    while (!stop_) {
      if (sweeper_cv_.wait_for(lk, interval_, [this] { return stop_; })) break;
      lk.unlock();
      try {
        (void)sweep_expired();
      } catch (...) {
        // A failed sweep is retried at the next interval; reads never return expired items.
      }
      lk.lock();
    }
  });
}

void KvStore::stop_sweeper() {
  {
    std::lock_guard lock(sweeper_mu_);
    stop_ = true;
  }
  sweeper_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

// ---------------------------------------------------------------------------------- memory

InMemoryStore::InMemoryStore(TtlConfig ttl, std::optional<IndexConfig> index)
    : KvStore(std::make_unique<detail::MemoryKv>(detail::Space::count), std::move(ttl),
              std::move(index)) {}

}  // namespace sg
