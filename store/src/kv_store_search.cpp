// SPDX-License-Identifier: MIT
// KvStore: search (by filter, and semantic: exact or through the HNSW index of
// KvStore::Impl::Vectors) and list_namespaces. Layout and helpers: kv_store_format.hpp.
//
// The only file that includes hnswlib: its headers define non-inline globals. hnswlib 0.6.2
// (Debian 12) prefetches one entry past a neighbour list in its SSE search path (hnswalg.h,
// searchBaseLayer: *(datal + j + 1)); the read is harmless in practice but AddressSanitizer
// reports it, so sanitized builds use hnswlib's portable path.
#if defined(__SANITIZE_ADDRESS__) && !defined(NO_MANUAL_VECTORIZATION)
#define NO_MANUAL_VECTORIZATION
#endif
#include <hnswlib/hnswlib.h>

#include <set>
#include <type_traits>

#include "kv_store_impl.hpp"

namespace sg {

using namespace store_format;  // NOLINT: this module's own helpers

static_assert(std::is_same_v<hnswlib::labeltype, std::size_t>,
              "KvStore::Impl::Vectors keeps labels as std::size_t");

KvStore::Impl::Hnsw::Hnsw(std::size_t dims, std::size_t capacity)
    : space(std::make_unique<hnswlib::InnerProductSpace>(dims)),
      hnsw(std::make_unique<hnswlib::HierarchicalNSW<float>>(
          space.get(), std::max<std::size_t>(1024, capacity), 16, 200)) {}

KvStore::Impl::Hnsw::~Hnsw() = default;

void KvStore::Impl::Hnsw::add(const std::string& key,
                              const std::vector<std::vector<float>>& vectors) {
  for (const auto& v : vectors) {
    const auto label = static_cast<hnswlib::labeltype>(label_key.size());
    if (label >= hnsw->max_elements_) hnsw->resizeIndex(std::max<std::size_t>(1024, label * 2));
    hnsw->addPoint(v.data(), label);
    label_key.push_back(key);
    labels[key].push_back(label);
    ++live_labels;
  }
}

void KvStore::Impl::Hnsw::remove(const std::string& key) {
  auto it = labels.find(key);
  if (it == labels.end()) return;
  for (auto label : it->second) {
    hnsw->markDelete(label);
    --live_labels;
  }
  labels.erase(it);
}

KvStore::Impl::Vectors::Vectors() = default;

KvStore::Impl::Vectors::~Vectors() {
  stopping = true;
  const std::lock_guard lock(builder_mu);
  if (builder.joinable()) builder.join();
}

void KvStore::Impl::Vectors::clear() {
  by_key.clear();
  count = 0;
  index.reset();
  touched.clear();
  ++epoch;
}

void KvStore::Impl::Vectors::set(const std::string& key, std::vector<std::vector<float>> vectors) {
  if (auto it = by_key.find(key); it != by_key.end()) {
    count -= it->second.size();
    by_key.erase(it);
  }
  if (index) index->remove(key);
  if (building) touched.push_back(key);
  if (vectors.empty()) return;
  if (index) index->add(key, vectors);
  count += vectors.size();
  by_key.emplace(key, std::move(vectors));
}

bool KvStore::Impl::Vectors::start_build() {
  if (index || building) return false;
  building = true;
  touched.clear();
  return true;
}

void KvStore::Impl::Vectors::spawn(std::size_t dims) {
  std::uint64_t build_epoch = 0;
  {
    std::shared_lock lock(mu);
    build_epoch = epoch;
  }
  const std::lock_guard lock(builder_mu);
  // A previous build has ended (building was false when this one was marked).
  if (builder.joinable()) builder.join();
  builder = std::thread([this, dims, build_epoch] { build(dims, build_epoch); });
}

void KvStore::Impl::Vectors::build_in_background(std::size_t dims) {
  bool start = false;
  {
    std::unique_lock lock(mu);
    start = start_build();
  }
  if (start) spawn(dims);
}

void KvStore::Impl::Vectors::build(std::size_t dims, std::uint64_t build_epoch) {
  std::unique_ptr<Hnsw> fresh;
  try {
    std::vector<std::string> keys;
    {
      std::shared_lock lock(mu);
      keys.reserve(by_key.size());
      for (const auto& entry : by_key) keys.push_back(entry.first);
      fresh = std::make_unique<Hnsw>(dims, count * 2);
    }
    // Chunks of keys under a shared lock: searches and writes go on between them.
    constexpr std::size_t kChunk = 64;
    for (std::size_t at = 0; at < keys.size() && !stopping; at += kChunk) {
      std::shared_lock lock(mu);
      if (epoch != build_epoch) break;
      for (std::size_t i = at; i < std::min(keys.size(), at + kChunk); ++i) {
        if (auto it = by_key.find(keys[i]); it != by_key.end()) fresh->add(keys[i], it->second);
      }
    }
  } catch (...) {
    fresh.reset();  // out of memory: searches stay exact; the next search tries again
  }
  {
    std::unique_lock lock(mu);
    if (fresh && !stopping && epoch == build_epoch) {
      try {
        for (const auto& key : touched) {  // written since their chunk was read
          fresh->remove(key);
          if (auto it = by_key.find(key); it != by_key.end()) fresh->add(key, it->second);
        }
        index = std::move(fresh);
      } catch (...) {
        // As above: exact until the next build.
      }
    }
    touched.clear();
    building = false;  // from here on the thread does not take `mu` (see start_build)
  }
}

void KvStore::Impl::Vectors::wait_for_build() {
  for (;;) {
    {
      const std::lock_guard lock(builder_mu);
      if (builder.joinable()) builder.join();
    }
    {
      std::shared_lock lock(mu);
      if (!building) return;
    }
    std::this_thread::yield();  // marked, not spawned yet
  }
}

std::optional<std::vector<std::pair<std::string, double>>> KvStore::Impl::approximate(
    const std::vector<float>& query, std::size_t want) {
  {
    std::shared_lock lock(vectors_->mu);
    if (vectors_->count <= index_->exact_limit) return std::nullopt;
    if (!vectors_->index && vectors_->building) return std::nullopt;  // exact until it is in
  }
  {
    std::shared_lock lock(vectors_->mu);
    if (!vectors_->index) {
      lock.unlock();
      vectors_->build_in_background(index_->embeddings->dims());
      return std::nullopt;
    }
  }
  std::shared_lock lock(vectors_->mu);
  if (!vectors_->index) return std::nullopt;  // cleared meanwhile (another process's change)
  auto& v = *vectors_->index;
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

std::vector<SearchItem> KvStore::Impl::do_search(const SearchOp& op) {
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
    refresh_vectors();
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
      // Everything seen: exact search fills the rest.
      if (!vectors_->index || k >= vectors_->index->live_labels) break;
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

std::vector<Namespace> KvStore::Impl::do_list(const ListNamespacesOp& op) {
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

}  // namespace sg
