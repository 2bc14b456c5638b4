// SPDX-License-Identifier: MIT
// KvStore: reading and writing items, expiry sweeps (search and list_namespaces:
// kv_store_search.cpp). Layout and helpers: kv_store_format.hpp.
#include <stategraph/core/uuid.hpp>

#include <iterator>

#include "kv_store_impl.hpp"

namespace sg {

using namespace store_format;  // NOLINT: this module's own helpers

KvStore::Impl::Impl(std::unique_ptr<detail::KvBackend> backend, TtlConfig ttl,
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
  load_vectors();
  // Many vectors: the index is built in the background from now on (searches are exact until
  // it is in), so the first search after opening does not wait for it.
  if (vectors_->count > index_->exact_limit) {
    vectors_->build_in_background(index_->embeddings->dims());
  }
}

void KvStore::Impl::wait_for_index() {
  if (index_) vectors_->wait_for_build();
}

namespace {
constexpr std::string_view kVectorsGeneration = "vectors";
}  // namespace

void KvStore::Impl::load_vectors() {
  vectors_->clear();
  if (kv_->shared()) {  // read before the vectors: a change in between is seen next time
    generation_ = kv_->get(detail::Space::meta, kVectorsGeneration).value_or(std::string());
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

void KvStore::Impl::refresh_vectors() {
  if (!index_ || !kv_->shared()) return;
  const std::string stored =
      kv_->get(detail::Space::meta, kVectorsGeneration).value_or(std::string());
  std::unique_lock lock(vectors_->mu);
  if (stored != generation_) load_vectors();
}

void KvStore::Impl::write_vectors(std::vector<detail::KvOp> batch,
                                  const std::function<void(Vectors&)>& apply) {
  if (!kv_->shared()) {
    kv_->write(batch);
    std::unique_lock lock(vectors_->mu);
    apply(*vectors_);
    return;
  }
  std::string expected;
  {
    std::shared_lock lock(vectors_->mu);
    expected = generation_;
  }
  std::string next = new_uuid4();
  std::vector<detail::KvOp> guarded = batch;
  guarded.push_back(
      {detail::KvOp::Kind::expect, detail::Space::meta, std::string(kVectorsGeneration), expected});
  guarded.push_back(put_op(detail::Space::meta, std::string(kVectorsGeneration), next));
  try {
    kv_->write(guarded);
  } catch (const detail::KvConflict&) {
    // Another process changed the vectors since this one loaded them: write without the check,
    // and let the next search load them all (this write included).
    batch.push_back(put_op(detail::Space::meta, std::string(kVectorsGeneration), new_uuid4()));
    kv_->write(batch);
    std::unique_lock lock(vectors_->mu);
    generation_.clear();  // no stored generation is empty once one was written
    return;
  }
  std::unique_lock lock(vectors_->mu);
  if (generation_ == expected) {
    apply(*vectors_);
    generation_ = std::move(next);
  }  // else: reloaded meanwhile, with this write
}

std::int64_t KvStore::Impl::now_micros() const {
  return micros_of(ttl_.clock ? ttl_.clock() : StoreClock::now());
}

KvStore::Impl::~Impl() {
  stop_sweeper();
}

std::vector<StoreResult> KvStore::Impl::batch(std::vector<StoreOp> ops) {
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

std::optional<Item> KvStore::Impl::do_get(const GetOp& op) {
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

std::vector<std::vector<float>> KvStore::Impl::embed_item(const PutOp& op) {
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

void KvStore::Impl::do_put(const PutOp& op) {
  validate_namespace(op.ns);
  const std::string key = item_key(op.ns, op.key);
  if (!op.value) {
    std::lock_guard lock(write_mu_);
    std::vector<detail::KvOp> erase{erase_op(detail::Space::items, key)};
    if (!index_) {
      kv_->write(erase);
      return;
    }
    erase.push_back(erase_op(detail::Space::vectors, key));
    write_vectors(std::move(erase), [&](Vectors& v) { v.set(key, {}); });
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
  std::int64_t created_at = now;
  if (auto stored = kv_->get(detail::Space::items, key)) {
    const RecordTimes old = decode_record_times(*stored, op.ns, op.key);
    if (!old.expires_at || *old.expires_at > now) created_at = old.created_at;
  }
  std::optional<std::int64_t> expires_at;
  if (ttl) expires_at = now + ttl_micros(*ttl);
  std::vector<detail::KvOp> writes{put_op(
      detail::Space::items, key, encode_record(*op.value, created_at, now, expires_at, ttl))};
  if (!index_) {
    kv_->write(writes);
    return;
  }
  writes.push_back(vectors.empty() ? erase_op(detail::Space::vectors, key)
                                   : put_op(detail::Space::vectors, key, encode_vectors(vectors)));
  write_vectors(std::move(writes), [&](Vectors& v) { v.set(key, std::move(vectors)); });
}

std::size_t KvStore::Impl::sweep_expired() {
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
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < erase.size(); i += 2) keys.push_back(erase[i].key);
    if (index_) {
      write_vectors(erase, [&](Vectors& v) {
        for (const auto& k : keys) v.set(k, {});
      });
    } else {
      kv_->write(erase);
    }
  }
  swept_ += erase.size() / 2;
  return erase.size() / 2;
}

void KvStore::Impl::start_sweeper(std::chrono::milliseconds interval) {
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

void KvStore::Impl::stop_sweeper() {
  {
    std::lock_guard lock(sweeper_mu_);
    stop_ = true;
  }
  sweeper_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

// ------------------------------------------------------------------ the public class forwards

KvStore::KvStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvStore::KvStore(std::unique_ptr<detail::KvBackend> kv, TtlConfig ttl,
                 std::optional<IndexConfig> index)
    : impl_(std::make_unique<Impl>(std::move(kv), std::move(ttl), std::move(index))) {}
KvStore::~KvStore() = default;

std::vector<StoreResult> KvStore::batch(std::vector<StoreOp> ops) {
  for (const StoreOp& op : ops) {
    std::size_t kind = op.index();  // get, put, search, list_namespaces
    if (const auto* put = std::get_if<PutOp>(&op); put != nullptr && !put->value) kind = 4;
    constexpr std::size_t kSlot[] = {0, 1, 3, 4, 2};  // into get, put, delete, search, list
    impl_->op_counts[kSlot[kind]].fetch_add(1, std::memory_order_relaxed);
  }
  return impl_->batch(std::move(ops));
}

KvStore::OperationCounts KvStore::operation_counts() const noexcept {
  const auto& c = impl_->op_counts;
  return {c[0].load(std::memory_order_relaxed), c[1].load(std::memory_order_relaxed),
          c[2].load(std::memory_order_relaxed), c[3].load(std::memory_order_relaxed),
          c[4].load(std::memory_order_relaxed)};
}

bool KvStore::semantic_search() const noexcept {
  return impl_->has_index();
}

std::size_t KvStore::sweep_expired() {
  return impl_->sweep_expired();
}

std::size_t KvStore::swept_total() const noexcept {
  return impl_->swept_total();
}

void KvStore::start_sweeper(std::chrono::milliseconds interval) {
  impl_->start_sweeper(interval);
}

void KvStore::stop_sweeper() {
  impl_->stop_sweeper();
}

void KvStore::wait_for_index() {
  impl_->wait_for_index();
}

}  // namespace sg
