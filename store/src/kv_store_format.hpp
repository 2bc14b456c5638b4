// SPDX-License-Identifier: MIT
// The store's format over an ordered key-value space (internal to the store module: the helpers
// kv_store.cpp and kv_store_search.cpp share; KvStore::Impl is in kv_store_impl.hpp).
//
//   key    LABEL1\0LABEL2\0...\0KEY     (labels are non-empty and have no zero byte, so the
//                                         first empty label ends the namespace)
//   value  "SG", format version, 's', CRC-32 of the payload, CBOR payload
//          {v: value, c: created_at, u: updated_at, e: expires_at | null, t: ttl minutes | null}
//          (times in microseconds since the epoch)
//
// A namespace prefix is the key range [enc(prefix), enc(prefix) with its last \0 -> \1).
#pragma once

#include <stategraph/kv/kv.hpp>
#include <stategraph/kv/record.hpp>
#include <stategraph/store/store.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg::detail {

/// The key spaces of a store: items, and the vectors of indexed items. A shared backend
/// (Postgres) also has `meta`: key "vectors" holds a token every change of the vectors replaces,
/// so that a process knows when its in-memory index is stale.
struct Space {
  enum : std::uint8_t { items = 0, vectors = 1, meta = 2 };
  static constexpr std::size_t count = 2;  // the spaces every backend has
};

}  // namespace sg::detail

namespace sg::store_format {

using detail::prefix_end;
using nlohmann::json;

inline detail::KvOp put_op(std::uint8_t space, std::string key, std::string value) {
  return {detail::KvOp::Kind::put, space, std::move(key), std::move(value)};
}

inline detail::KvOp erase_op(std::uint8_t space, std::string key) {
  return {detail::KvOp::Kind::erase, space, std::move(key), {}};
}

constexpr std::uint8_t kFormatVersion = 1;
constexpr char kItemRecord = 's';
constexpr char kVectorRecord = 'x';

inline std::int64_t micros_of(StoreClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

inline StoreClock::time_point from_micros(std::int64_t micros) {
  return StoreClock::time_point(
      std::chrono::duration_cast<StoreClock::duration>(std::chrono::microseconds(micros)));
}

inline std::string encode_namespace(const Namespace& ns) {
  std::string out;
  for (const auto& label : ns) {
    out += label;
    out.push_back('\0');
  }
  return out;
}

inline std::string item_key(const Namespace& ns, const std::string& key) {
  std::string out = encode_namespace(ns);
  out.push_back('\0');
  out += key;
  return out;
}

/// The namespace and item key of a stored key; false if it is not one.
inline bool decode_key(std::string_view stored, Namespace& ns, std::string& key) {
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

[[noreturn]] inline void corrupt(const Namespace& ns, const std::string& key,
                                 const std::string& why) {
  throw StoreError(errc::kStoreCorrupt, fmt::format("corrupt store item '{}' in namespace '{}': {}",
                                                    key, join_namespace(ns), why));
}

inline std::string seal(char kind, const std::string& payload) {
  std::string out = detail::record_header(kFormatVersion, kind);
  out += payload;
  detail::seal_record(out);
  return out;
}

inline std::string_view unseal(std::string_view data, char kind, const Namespace& ns,
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

inline std::string encode_record(const json& value, std::int64_t created_at,
                                 std::int64_t updated_at, std::optional<std::int64_t> expires_at,
                                 std::optional<double> ttl_minutes) {
  const json payload = {{"v", value},
                        {"c", created_at},
                        {"u", updated_at},
                        {"e", expires_at ? json(*expires_at) : json()},
                        {"t", ttl_minutes ? json(*ttl_minutes) : json()}};
  std::string body;
  json::to_cbor(payload, body);
  return seal(kItemRecord, body);
}

inline std::string encode_record(const Record& r) {
  return encode_record(r.item.value, micros_of(r.item.created_at), micros_of(r.item.updated_at),
                       r.expires_at, r.ttl_minutes);
}

inline Record decode_record(std::string_view data, Namespace ns, std::string key) {
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

/// What a put needs of the record it overwrites: its creation time and expiry.
struct RecordTimes {
  std::int64_t created_at = 0;
  std::optional<std::int64_t> expires_at;
};

/// Reads "c" and "e" of an item record without decoding its value: nlohmann's SAX parser stops
/// at the first other key (the payload's keys are written sorted, "v" last), so overwriting a
/// large item costs no parse of the old value. Throws StoreError (kStoreCorrupt) as
/// decode_record does.
inline RecordTimes decode_record_times(std::string_view data, const Namespace& ns,
                                       const std::string& key) {
  const std::string_view body = unseal(data, kItemRecord, ns, key);
  struct Reader : nlohmann::json_sax<json> {
    RecordTimes times;
    int depth = 0;
    char field = 0;  // the top-level key whose value comes next: 'c', 'e' or 0
    bool seen_created = false;
    bool integer(std::int64_t v) {
      if (field == 'c') {
        times.created_at = v;
        seen_created = true;
      } else if (field == 'e') {
        times.expires_at = v;
      }
      field = 0;
      return true;
    }
    bool null() override {
      field = 0;
      return true;
    }
    bool boolean(bool) override { return false; }
    bool number_integer(number_integer_t v) override { return integer(v); }
    bool number_unsigned(number_unsigned_t v) override {
      return integer(static_cast<std::int64_t>(v));
    }
    bool number_float(number_float_t, const string_t&) override { return false; }
    bool string(string_t&) override { return false; }
    bool binary(binary_t&) override { return false; }
    bool start_object(std::size_t) override { return ++depth == 1; }
    bool key(string_t& k) override {
      if (k == "c" || k == "e") {
        field = k[0];
        return true;
      }
      return false;  // past "c" and "e": stop
    }
    bool end_object() override { return false; }
    bool start_array(std::size_t) override { return false; }
    bool end_array() override { return false; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
      return false;
    }
  } reader;
  (void)json::sax_parse(body.begin(), body.end(), &reader, nlohmann::json::input_format_t::cbor);
  if (!reader.seen_created) {  // not the layout above: read it all
    const Record r = decode_record(data, ns, key);
    return {micros_of(r.item.created_at), r.expires_at};
  }
  return reader.times;
}

/// Vectors: u32 count, u32 dims, then count * dims little-endian floats (this machine's order).
inline std::string encode_vectors(const std::vector<std::vector<float>>& vectors) {
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

inline std::vector<std::vector<float>> decode_vectors(std::string_view data, const Namespace& ns,
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

inline double best_score(const std::vector<std::vector<float>>& vectors,
                         const std::vector<float>& q) {
  double best = -2;
  for (const auto& v : vectors) {
    double dot = 0;
    for (std::size_t i = 0; i < v.size() && i < q.size(); ++i)
      dot += static_cast<double>(v[i]) * q[i];
    best = std::max(best, dot);
  }
  return best;
}

inline void normalize(std::vector<float>& v) {
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm <= 0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(norm));
  for (float& x : v) x *= inv;
}

inline std::int64_t ttl_micros(double minutes) {
  return static_cast<std::int64_t>(minutes * 60.0 * 1e6);
}

/// Whether `ns` starts with `path` (with `suffix`: ends with it); "*" matches any one label.
inline bool matches_path(const Namespace& ns, const Namespace& path, bool suffix) {
  if (path.size() > ns.size()) return false;
  const std::size_t offset = suffix ? ns.size() - path.size() : 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != "*" && path[i] != ns[offset + i]) return false;
  }
  return true;
}

}  // namespace sg::store_format
