// SPDX-License-Identifier: MIT
// Checkpointer semantics over an ordered key-value store. Layout (docs/checkpoint-format.md):
//
//   checkpoints  T\0NS\0ID                  -> record {v, t(s), cv, vs, m(etadata), p(arent),
//                                               x: small channel values [version, kind, v],
//                                               w: the writes of the tasks that made it}
//   writes       T\0NS\0ID\0TASK\0IDX        -> {channel, value, task_path}, or at IDX -100 a
//                                              task's bundled writes [[channel, value], ...]
//   blobs        T\0NS\0CHANNEL\0VERSION     -> a larger channel value (JSON) or message view
//   messages     T\0NS\0CHANNEL\0SEQ         -> one message of the channel's log
//
// A channel value is a JSON value, a message view (ranges of log sequence numbers) or "empty".
// Values whose CBOR fits kInlineMaxBytes live in the records, copied from each record to the
// next while their version stays; larger ones get a blob. Every value is an envelope: "SG",
// format version, kind, CRC-32 of the payload, CBOR payload.
//
// Internal to the checkpoint module: the helpers and types shared by kv_checkpointer.cpp (writes),
// kv_checkpointer_read.cpp (reads) and kv_checkpointer_threads.cpp (delete, copy, prune);
// KvCheckpointer::Impl is in kv_saver_impl.hpp.
#pragma once

#include <stategraph/checkpoint/kv_checkpointer.hpp>
#include <stategraph/core/detail/cbor.hpp>
#include <stategraph/kv/kv.hpp>
#include <stategraph/kv/record.hpp>

#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>

namespace sg::detail {

/// The key spaces of a checkpoint store (RocksDB column families). Shared backends (Postgres)
/// also have `heads` (per thread, a token that every write which used the caches replaces, so
/// that another process's caches of the thread stop matching) and `fences` (per thread, the token
/// of the run that may write it, see KvCheckpointer::fence); both keyed by thread_prefix().
struct Column {
  enum : std::uint8_t {
    checkpoints = 0,
    writes = 1,
    blobs = 2,
    messages = 3,
    heads = 4,
    fences = 5
  };
  static constexpr std::size_t count = 4;  // the spaces every backend has
};

}  // namespace sg::detail

namespace sg::kv_format {

using detail::Column;
using detail::KvOp;
using detail::prefix_end;
using nlohmann::json;

constexpr std::uint8_t kFormatVersion = 1;
constexpr char kRecord = 'c';
constexpr char kWrite = 'w';
constexpr char kWriteBundle = 'W';  // a task's writes in one record: [[channel, value], ...]
constexpr int kBundleIndex = -100;  // the write index of that record
constexpr char kJsonBlob = 'j';
constexpr char kViewBlob = 'v';
constexpr char kEmptyBlob = 'e';
constexpr char kLogEntry = 'm';
/// The trigger channel of node N is "branch:to:N" (LangGraph's name); records store a node's
/// versions_seen of just its trigger as the version alone.
inline bool is_trigger_of(std::string_view channel, std::string_view node) {
  return triggered_node(channel) == node;
}

/// Channel values up to this CBOR size are kept in checkpoint records instead of blobs.
constexpr std::size_t kInlineMaxBytes = 256;

[[noreturn]] inline void invalid(const std::string& message) {
  throw CheckpointError(errc::kCheckpointInvalid, message);
}

inline void check_name(std::string_view what, std::string_view value) {
  if (value.find('\0') != std::string_view::npos)
    invalid(fmt::format("{} must not contain a NUL character", what));
}

inline std::string prefix_of(std::string_view thread, std::string_view ns) {
  std::string key;
  key.reserve(thread.size() + ns.size() + 2);
  key.append(thread).push_back('\0');
  key.append(ns).push_back('\0');
  return key;
}

inline std::string thread_prefix(std::string_view thread) {
  std::string key(thread);
  key.push_back('\0');
  return key;
}

/// The exclusive end of the keys that start with `prefix`.
inline void append_u64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xFF));
}

inline std::uint64_t read_u64(std::string_view s) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8 && i < s.size(); ++i)
    v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

/// Signed numbers sort as their unsigned encodings after flipping the sign bit.
inline void append_i64(std::string& out, std::int64_t v) {
  append_u64(out, static_cast<std::uint64_t>(v) ^ (1ULL << 63));
}

inline std::string blob_key(const std::string& prefix, std::string_view channel,
                            std::int64_t version) {
  std::string key = prefix;
  key.append(channel).push_back('\0');
  append_i64(key, version);
  return key;
}

inline std::string log_prefix(const std::string& prefix, std::string_view channel) {
  std::string key = prefix;
  key.append(channel).push_back('\0');
  return key;
}

inline std::string write_key(const std::string& prefix, std::string_view checkpoint_id,
                             std::string_view task_id, int idx) {
  std::string key = prefix;
  key.append(checkpoint_id).push_back('\0');
  key.append(task_id).push_back('\0');
  append_i64(key, idx);
  return key;
}

// Compact forms of the two long strings of every record, used only when they round-trip
// exactly: a canonical UUID text as its 16 bytes, a timestamp of iso_timestamp_now()'s form as
// microseconds since the epoch.
using UuidBytes = std::array<char, 16>;

/// The 16 bytes of a canonical (lower-case) UUID text; nullopt for any other text. Hand-written:
/// Boost.Uuid's string_generator accepts other forms too, and with the round-trip check that
/// rules them out it took 490-530 ns per id against 40-80 ns here (three ids per checkpoint).
inline std::optional<UuidBytes> uuid_bytes(std::string_view text) {
  // Lower-case hex digits only: anything else keeps the text.
  static constexpr auto kDigit = [] {
    std::array<std::int8_t, 256> t{};
    t.fill(-1);
    for (int c = '0'; c <= '9'; ++c)
      t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - '0');
    for (int c = 'a'; c <= 'f'; ++c)
      t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - 'a' + 10);
    return t;
  }();
  if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-')
    return std::nullopt;
  UuidBytes out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    if (i == 8 || i == 13 || i == 18 || i == 23) ++i;  // skip a dash
    const int high = kDigit[static_cast<unsigned char>(text[i])];
    const int low = kDigit[static_cast<unsigned char>(text[i + 1])];
    if (high < 0 || low < 0) return std::nullopt;
    out[n++] = static_cast<char>((high << 4) | low);
  }
  return out;
}

/// A UUID's 16 bytes (the caller checked the size) as canonical text.
inline std::string uuid_text(const std::vector<std::uint8_t>& bytes) {
  boost::uuids::uuid uuid{};
  std::copy_n(bytes.begin(), uuid.size(), uuid.begin());
  return boost::uuids::to_string(uuid);
}

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
inline std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

inline std::optional<std::int64_t> ts_micros(std::string_view ts) {
  // "YYYY-MM-DDTHH:MM:SS.ffffff+00:00"
  if (ts.size() != 32) return std::nullopt;
  auto num = [&](std::size_t at, std::size_t n) -> std::int64_t {
    std::int64_t v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (ts[i] < '0' || ts[i] > '9') return -1;
      v = v * 10 + (ts[i] - '0');
    }
    return v;
  };
  const std::int64_t y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
                     sec = num(17, 2), frac = num(20, 6);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || mi < 0 || sec < 0 || frac < 0)
    return std::nullopt;
  const std::int64_t micros =
      ((days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 24 + h) * 60 +
       mi) *
          60'000'000 +
      sec * 1'000'000 + frac;
  std::array<char, kIsoTimestampSize> formatted;  // only exact round trips
  if (!iso_timestamp_to(micros, formatted) ||
      std::string_view(formatted.data(), formatted.size()) != ts)
    return std::nullopt;
  return micros;
}

using CborWriter = detail::CborWriter<std::string>;

inline void write_versions(CborWriter& w, const ChannelVersions& versions) {
  w.map(versions.size());
  for (const auto& [channel, version] : versions) {
    w.text(channel);
    w.integer(version);
  }
}

/// An envelope whose CBOR payload `write_payload(CborWriter&)` writes.
template <class Write>
std::string envelope_with(char kind, Write&& write_payload, std::size_t capacity = 256) {
  std::string out = detail::record_header(kFormatVersion, kind, capacity);
  CborWriter writer(out);
  write_payload(writer);
  detail::seal_record(out);
  return out;
}

inline std::string envelope(char kind, const json& payload) {
  return envelope_with(kind, [&](CborWriter& w) { w.value(payload); });
}

/// Where a record came from, for error messages.
struct Origin {
  std::string_view thread;
  std::string_view checkpoint;
  std::string what;
};

[[noreturn]] inline void corrupt(const Origin& o, const std::string& detail) {
  throw CheckpointError(errc::kCheckpointCorrupt,
                        fmt::format("corrupt {} of thread '{}', checkpoint '{}': {}", o.what,
                                    o.thread, o.checkpoint, detail));
}

inline json open_envelope(std::string_view data, char expected_kind, const Origin& origin,
                          char* kind_out = nullptr) {
  const auto record = detail::open_record(data);
  if (!record) corrupt(origin, "not a stategraph record");
  const std::uint8_t version = record->version;
  if (version != kFormatVersion) {
    throw CheckpointError(
        errc::kCheckpointCorrupt,
        fmt::format(
            "unknown format version {} in the {} of thread '{}', checkpoint '{}' (this build "
            "reads version {})",
            version, origin.what, origin.thread, origin.checkpoint, kFormatVersion));
  }
  const char kind = record->kind;
  if (kind_out) {
    *kind_out = kind;
  } else if (kind != expected_kind) {
    corrupt(origin, fmt::format("record kind '{}' where '{}' was expected", kind, expected_kind));
  }
  if (!record->intact) corrupt(origin, "checksum mismatch");
  const std::string_view body = record->payload;
  try {
    return json::from_cbor(body.begin(), body.end());
  } catch (const json::exception& e) {
    corrupt(origin, e.what());
  }
}

/// Whether a stored checkpoint record keeps its parent's writes ("w", written as its first key),
/// read from its first bytes without decoding it (the full read checks its CRC).
inline bool keeps_parent_writes(std::string_view data) {
  if (data.size() < detail::kRecordHeaderSize + 3 || data.substr(0, 2) != "SG" ||
      data[3] != kRecord)
    return false;
  const std::string_view payload = data.substr(detail::kRecordHeaderSize);
  const auto head = static_cast<std::uint8_t>(payload[0]);
  if ((head & 0xe0) != 0xa0) return false;  // not a CBOR map
  const std::size_t key = (head & 0x1f) < 24 ? 1 : (head & 0x1f) == 24 ? 2 : 3;
  return payload.size() > key + 1 && static_cast<std::uint8_t>(payload[key]) == 0x61 &&
         payload[key + 1] == 'w';
}

/// Half-open ranges of log sequence numbers: the messages of a list, in order.
using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

inline void push_range(Ranges& ranges, std::uint64_t from, std::uint64_t to) {
  if (from >= to) return;
  if (!ranges.empty() && ranges.back().second == from) {
    ranges.back().second = to;
  } else {
    ranges.emplace_back(from, to);
  }
}

/// A stored view's ranges: each [from, to] with unsigned integers from <= to (a float, a
/// negative or an inverted range is a corrupt view: converting a float out of range is undefined
/// behaviour, an inverted range would wrap around in the arithmetic on positions).
inline Ranges ranges_from_json(const json& view, const Origin& origin) {
  const auto ranges = view.find("ranges");  // end() for a view that is not an object
  if (ranges == view.end() || !ranges->is_array())
    corrupt(origin, "a message view is not {\"ranges\": [[from, to], ...]}");
  Ranges out;
  out.reserve(ranges->size());
  for (const auto& r : *ranges) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_unsigned() ||
        !r[1].is_number_unsigned() || r[0].get<std::uint64_t>() > r[1].get<std::uint64_t>()) {
      corrupt(origin, "a range of a message view is not [from, to] with from <= to: " +
                          r.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    out.emplace_back(r[0].get<std::uint64_t>(), r[1].get<std::uint64_t>());
  }
  return out;
}

/// Whether log position `seq` is in one of `ranges`.
inline bool in_ranges(const Ranges& ranges, std::uint64_t seq) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const auto& r) { return r.first <= seq && seq < r.second; });
}

/// A stored integer (a JSON integer of the int64 range); anything else is corrupt (a float out
/// of range would make the conversion undefined behaviour).
inline std::int64_t stored_integer(const json& value, const Origin& origin, std::string_view what) {
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() &&
       value.get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
    corrupt(origin, fmt::format("{} is not an integer: {}", what,
                                value.dump(-1, ' ', false, json::error_handler_t::replace)));
  }
  return value.get<std::int64_t>();
}

/// Stored channel versions: an object of integers.
inline ChannelVersions stored_versions(const json& value, const Origin& origin,
                                       std::string_view what) {
  if (!value.is_object()) corrupt(origin, fmt::format("{} is not an object", what));
  ChannelVersions out;
  for (const auto& [channel, version] : value.items())
    out.emplace_hint(out.end(), channel, stored_integer(version, origin, what));
  return out;
}

/// A message view: `{"ranges": [[from, to], ...]}`.
inline void write_view(CborWriter& w, const Ranges& ranges) {
  w.map(1);
  w.text("ranges");
  w.array(ranges.size());
  for (const auto& [a, b] : ranges) {
    w.array(2);
    w.integer(static_cast<std::int64_t>(a));
    w.integer(static_cast<std::int64_t>(b));
  }
}

/// A write stored as log positions: `{"$log": {"ranges": [[from, to], ...]}}`.
constexpr std::string_view kLogWrite = "$log";
/// A write stored as the version of the channel's blob: `{"$blob": version}`.
constexpr std::string_view kBlobWrite = "$blob";
/// A write whose value looks like a reference, escaped: `{"$value": value}`.
constexpr std::string_view kEscapedWrite = "$value";

/// True for a write value a reader would take for a reference (or an escaped value).
inline bool looks_like_reference(const json& value) {
  return value.is_object() && value.size() == 1 &&
         (value.contains(kLogWrite) || value.contains(kBlobWrite) || value.contains(kEscapedWrite));
}

/// The last `count` positions of a view.
inline Ranges last_positions(const Ranges& view, std::uint64_t count) {
  Ranges out;
  for (auto it = view.rbegin(); it != view.rend() && count > 0; ++it) {
    const std::uint64_t take = std::min(count, it->second - it->first);
    out.emplace_back(it->second - take, it->second);
    count -= take;
  }
  if (count > 0) {
    throw CheckpointError(errc::kCheckpointInvalid,
                          "put_all: an appended write is longer than its message list");
  }
  std::reverse(out.begin(), out.end());
  return out;
}

/// An envelope around an encoded CBOR payload.
inline std::string envelope_of_cbor(char kind, std::string_view body) {
  return envelope_with(
      kind, [&](CborWriter& w) { w.raw(body); }, detail::kRecordHeaderSize + body.size());
}

/// Stages `cbor` (one CBOR value) as item `seq` of the log whose keys start with `log`, adds it to
/// `ranges` and advances `seq`.
inline void stage_log_item(std::vector<detail::KvOp>& batch, const std::string& log,
                           std::uint64_t& seq, std::string_view cbor, Ranges& ranges) {
  std::string key = log;
  append_u64(key, seq);
  batch.push_back({detail::KvOp::Kind::put, Column::messages, std::move(key),
                   envelope_of_cbor(kLogEntry, cbor)});
  push_range(ranges, seq, seq + 1);
  ++seq;
}

/// Whether `bytes` are exactly one CBOR value json::from_cbor reads: definite or indefinite
/// lengths, no tags, simple values false/true/null and floats only. Hand-written: checking with
/// json::sax_parse cost about 5,800 instructions per message (callgrind, summarize_trim), more
/// than encoding it; this walk costs a few per byte of structure and skips string bodies.
inline bool is_cbor_item(std::string_view bytes) {
  struct Open {
    std::uint64_t left;  // items still to come; unused when indefinite
    bool indefinite;
    bool map;
    bool odd;  // an indefinite map has read a key without its value
  };
  std::vector<Open> open;
  std::size_t at = 0;
  auto byte = [&] { return static_cast<std::uint8_t>(bytes[at++]); };
  // Reads an item's head: false if cut short or reserved; `value` is the length or number.
  auto head = [&](std::uint8_t& major, std::uint8_t& info, std::uint64_t& value) {
    if (at >= bytes.size()) return false;
    const std::uint8_t initial = byte();
    major = initial >> 5;
    info = initial & 0x1F;
    value = info;
    if (info < 24 || info == 31) return info != 31 || (major >= 2 && major <= 5) || initial == 0xFF;
    if (info > 27) return false;
    const std::size_t n = std::size_t{1} << (info - 24);
    if (bytes.size() - at < n) return false;
    value = 0;
    for (std::size_t k = 0; k < n; ++k) value = (value << 8) | byte();
    return true;
  };
  auto skip = [&](std::uint64_t n) {
    if (bytes.size() - at < n) return false;
    at += static_cast<std::size_t>(n);
    return true;
  };
  do {
    std::uint8_t major = 0;
    std::uint8_t info = 0;
    std::uint64_t value = 0;
    if (!head(major, info, value)) return false;
    bool done = true;                // this item is complete (not a container still open)
    if (major == 7 && info == 31) {  // a break closes the innermost indefinite container
      if (open.empty() || !open.back().indefinite || open.back().odd) return false;
      open.pop_back();
    } else if (major <= 1) {
      if (info == 31) return false;
    } else if (major <= 3) {
      if (info != 31) {
        if (!skip(value)) return false;
      } else {
        for (;;) {  // chunks of the same major type, definite, until a break
          std::uint8_t chunk_major = 0;
          std::uint8_t chunk_info = 0;
          if (!head(chunk_major, chunk_info, value)) return false;
          if (chunk_major == 7 && chunk_info == 31) break;
          if (chunk_major != major || chunk_info == 31 || !skip(value)) return false;
        }
      }
    } else if (major <= 5) {
      const bool map = major == 5;
      if (info == 31) {
        open.push_back({0, true, map, false});
        done = false;
      } else if (value > 0) {
        if (value > bytes.size()) return false;  // more items than bytes left
        open.push_back({map ? value * 2 : value, false, map, false});
        done = false;
      }
    } else if (major == 6) {
      return false;  // tags: json::from_cbor refuses them
    } else if (info < 20 || info == 23 || info == 24) {
      return false;  // simple values other than false, true, null
    }
    // A complete item counts toward the containers it closes.
    while (done && !open.empty()) {
      Open& top = open.back();
      if (top.indefinite) {
        if (top.map) top.odd = !top.odd;
        break;
      }
      if (--top.left > 0) break;
      open.pop_back();
    }
  } while (!open.empty());
  return at == bytes.size();
}

/// A task write's value as put_writes stores it: `value` (escaped when it looks like a
/// reference), or the list of pre-encoded `items` (each checked to be one CBOR value).
inline void write_plain(CborWriter& w, const TaskWrite& write) {
  if (write.kind != TaskWrite::Kind::items) {
    if (looks_like_reference(write.value)) {
      w.map(1);
      w.text(kEscapedWrite);
    }
    w.value(write.value);
    return;
  }
  w.array(write.items.size());
  for (const std::string& item : write.items) {
    if (!is_cbor_item(item)) {
      throw CheckpointError(
          errc::kCheckpointInvalid,
          "a write to channel '" + write.channel + "' has an item that is not one CBOR value");
    }
    w.raw(item);
  }
}

/// Appends base positions [from, to) of a list stored as `base` ranges, as log ranges.
inline void map_positions(const Ranges& base, std::uint64_t from, std::uint64_t to, Ranges& out) {
  std::uint64_t position = 0;
  for (const auto& [a, b] : base) {
    const std::uint64_t len = b - a;
    const std::uint64_t lo = std::max(from, position);
    const std::uint64_t hi = std::min(to, position + len);
    if (lo < hi) push_range(out, a + (lo - position), a + (hi - position));
    position += len;
    if (position >= to) break;
  }
  if (to > position)
    invalid(fmt::format("list delta: base positions [{}, {}) beyond the base list of {} items",
                        from, to, position));
}

/// Runs `read`, adding the thread and checkpoint to storage errors that do not name them.
template <class F>
auto in_context(std::string_view thread, std::string_view checkpoint, F&& read) {
  try {
    return read();
  } catch (const CheckpointError& e) {
    const std::string what = e.what();
    if (what.find("thread '") != std::string::npos) throw;
    throw CheckpointError(e.code(),
                          fmt::format("reading thread '{}', checkpoint '{}': {}", thread,
                                      checkpoint.empty() ? "(latest)" : checkpoint, what));
  }
}

inline bool matches_filter(const json& metadata, const json& filter) {
  if (!filter.is_object()) return true;
  for (const auto& [key, value] : filter.items()) {
    auto it = metadata.find(key);
    if (it == metadata.end() || *it != value) return false;
  }
  return true;
}

}  // namespace sg::kv_format
