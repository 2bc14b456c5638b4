// The store over an ordered key-value space.
//
//   key    LABEL1\0LABEL2\0...\0KEY     (labels are non-empty and have no zero byte, so the
//                                         first empty label ends the namespace)
//   value  "SG", format version, 's', CRC-32 of the payload, CBOR payload
//          {v: value, c: created_at, u: updated_at, e: expires_at | null, t: ttl minutes | null}
//          (times in microseconds since the epoch)
//
// A namespace prefix is the key range [enc(prefix), enc(prefix) with its last \0 -> \1).
#include <stategraph/store/kv_store.hpp>

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <shared_mutex>

namespace sg {
namespace {

using nlohmann::json;

constexpr std::uint8_t kFormatVersion = 1;
constexpr char kItemRecord = 's';

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

std::uint32_t crc_of(std::string_view data) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

std::string encode_record(const Record& r) {
  const json payload = {
      {"v", r.item.value},
      {"c",
       std::chrono::duration_cast<std::chrono::microseconds>(r.item.created_at.time_since_epoch())
           .count()},
      {"u",
       std::chrono::duration_cast<std::chrono::microseconds>(r.item.updated_at.time_since_epoch())
           .count()},
      {"e", r.expires_at ? json(*r.expires_at) : json()},
      {"t", r.ttl_minutes ? json(*r.ttl_minutes) : json()}};
  std::string out{'S', 'G', static_cast<char>(kFormatVersion), kItemRecord, 0, 0, 0, 0};
  json::to_cbor(payload, out);
  const std::uint32_t crc = crc_of(std::string_view(out).substr(8));
  for (int i = 0; i < 4; ++i)
    out[4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (i * 8)) & 0xFF);
  return out;
}

[[noreturn]] void corrupt(const Namespace& ns, const std::string& key, const std::string& why) {
  throw StoreError(errc::kStoreCorrupt, fmt::format("corrupt store item '{}' in namespace '{}': {}",
                                                    key, join_namespace(ns), why));
}

Record decode_record(std::string_view data, Namespace ns, std::string key) {
  if (data.size() < 8 || data[0] != 'S' || data[1] != 'G') corrupt(ns, key, "not a store record");
  if (static_cast<std::uint8_t>(data[2]) != kFormatVersion) {
    corrupt(ns, key,
            fmt::format("unknown format version {} (this build reads version {})",
                        static_cast<int>(static_cast<std::uint8_t>(data[2])), kFormatVersion));
  }
  if (data[3] != kItemRecord) corrupt(ns, key, "not an item record");
  std::uint32_t crc = 0;
  for (int i = 3; i >= 0; --i)
    crc = (crc << 8) | static_cast<unsigned char>(data[4 + static_cast<std::size_t>(i)]);
  if (crc != crc_of(data.substr(8))) corrupt(ns, key, "checksum mismatch");
  Record r;
  try {
    const json p = json::from_cbor(data.substr(8));
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

std::int64_t ttl_micros(double minutes) {
  return static_cast<std::int64_t>(minutes * 60.0 * 1e6);
}

/// The upper bound of the key range of a namespace prefix ("" when unbounded).
std::string prefix_end(const std::string& lower) {
  if (lower.empty()) return {};
  std::string upper = lower;
  upper.back() = '\1';  // every encoded namespace ends with \0
  return upper;
}

bool matches_path(const Namespace& ns, const Namespace& path, bool suffix) {
  if (path.size() > ns.size()) return false;
  const std::size_t offset = suffix ? ns.size() - path.size() : 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != "*" && path[i] != ns[offset + i]) return false;
  }
  return true;
}

}  // namespace

KvStore::KvStore(std::unique_ptr<detail::StoreBackend> backend, TtlConfig ttl)
    : kv_(std::move(backend)), ttl_(std::move(ttl)) {}

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
  auto stored = kv_->get(key);
  if (!stored) return std::nullopt;
  Record r = decode_record(*stored, op.ns, op.key);
  const std::int64_t now = now_micros();
  if (r.expired(now)) return std::nullopt;
  if (refresh && r.ttl_minutes) {
    r.expires_at = now + ttl_micros(*r.ttl_minutes);
    kv_->write({{key, encode_record(r)}});
  }
  return std::move(r.item);
}

void KvStore::do_put(const PutOp& op) {
  validate_namespace(op.ns);
  const std::string key = item_key(op.ns, op.key);
  std::lock_guard lock(write_mu_);
  if (!op.value) {
    kv_->write({{key, std::nullopt}});
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
  const std::int64_t now = now_micros();
  Record r;
  r.item.ns = op.ns;
  r.item.key = op.key;
  r.item.value = *op.value;
  r.item.created_at = r.item.updated_at = from_micros(now);
  if (auto stored = kv_->get(key)) {
    const Record old = decode_record(*stored, op.ns, op.key);
    if (!old.expired(now)) r.item.created_at = old.item.created_at;
  }
  r.ttl_minutes = ttl;
  if (ttl) r.expires_at = now + ttl_micros(*ttl);
  kv_->write({{key, encode_record(r)}});
}

std::vector<SearchItem> KvStore::do_search(const SearchOp& op) {
  if (!op.prefix.empty()) validate_namespace(op.prefix);
  validate_filter(op.filter);
  const bool refresh = op.refresh_ttl.value_or(ttl_.refresh_on_read);
  const std::string lower = encode_namespace(op.prefix);
  const std::int64_t now = now_micros();
  std::vector<Record> found;
  kv_->scan(lower, prefix_end(lower), [&](std::string_view k, std::string_view v) {
    Namespace ns;
    std::string key;
    if (!decode_key(k, ns, key)) return true;
    Record r = decode_record(v, std::move(ns), std::move(key));
    if (r.expired(now)) return true;
    if (!matches_filter(r.item.value, op.filter)) return true;
    found.push_back(std::move(r));
    return true;
  });
  // Most recently updated first; ties in key order (the scan's).
  std::stable_sort(found.begin(), found.end(), [](const Record& a, const Record& b) {
    return a.item.updated_at > b.item.updated_at;
  });
  std::vector<SearchItem> out;
  std::vector<std::pair<std::string, std::optional<std::string>>> refreshed;
  for (std::size_t i = op.offset; i < found.size() && out.size() < op.limit; ++i) {
    Record& r = found[i];
    if (refresh && r.ttl_minutes) {
      r.expires_at = now + ttl_micros(*r.ttl_minutes);
      refreshed.emplace_back(item_key(r.item.ns, r.item.key), encode_record(r));
    }
    out.push_back(SearchItem{std::move(r.item), std::nullopt});
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
    kv_->scan(from, upper, [&](std::string_view k, std::string_view v) {
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
  std::vector<std::pair<std::string, std::optional<std::string>>> erase;
  kv_->scan({}, {}, [&](std::string_view k, std::string_view v) {
    Namespace ns;
    std::string key;
    if (decode_key(k, ns, key) && decode_record(v, std::move(ns), std::move(key)).expired(now))
      erase.emplace_back(std::string(k), std::nullopt);
    return true;
  });
  if (!erase.empty()) kv_->write(erase);
  swept_ += erase.size();
  return erase.size();
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

namespace {

class MapBackend final : public detail::StoreBackend {
 public:
  std::optional<std::string> get(std::string_view key) override {
    std::shared_lock lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void write(const std::vector<std::pair<std::string, std::optional<std::string>>>& ops) override {
    std::unique_lock lock(mu_);
    for (const auto& [key, value] : ops) {
      if (value) {
        map_.insert_or_assign(key, *value);
      } else {
        map_.erase(key);
      }
    }
  }
  void scan(std::string_view lower, std::string_view upper,
            const std::function<bool(std::string_view, std::string_view)>& visit) override {
    std::shared_lock lock(mu_);  // `visit` must not write to this backend
    auto end = upper.empty() ? map_.end() : map_.lower_bound(upper);
    for (auto it = map_.lower_bound(lower); it != end; ++it) {
      if (!visit(it->first, it->second)) return;
    }
  }

 private:
  std::shared_mutex mu_;
  std::map<std::string, std::string, std::less<>> map_;
};

}  // namespace

InMemoryStore::InMemoryStore(TtlConfig ttl) : KvStore(std::make_unique<MapBackend>(), ttl) {}

}  // namespace sg
