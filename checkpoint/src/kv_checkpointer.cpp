// Checkpointer semantics over an ordered key-value store. Layout (docs/checkpoint-format.md):
//
//   checkpoints  T\0NS\0ID                  -> record {v, t(s), cv, vs, m(etadata), p(arent),
//                                               x: small channel values [version, kind, v]}
//   writes       T\0NS\0ID\0TASK\0IDX        -> {channel, value, task_path}
//   blobs        T\0NS\0CHANNEL\0VERSION     -> a larger channel value (JSON) or message view
//   messages     T\0NS\0CHANNEL\0SEQ         -> one message of the channel's log
//
// A channel value is a JSON value, a message view (ranges of log sequence numbers) or "empty".
// Values whose CBOR fits kInlineMaxBytes live in the records, copied from each record to the
// next while their version stays; larger ones get a blob. Every value is an envelope: "SG",
// format version, kind, CRC-32 of the payload, CBOR payload.
#include <stategraph/checkpoint/kv_checkpointer.hpp>
#include <stategraph/core/detail/cbor.hpp>
#include <stategraph/core/detail/record.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>

namespace sg {

using detail::Column;
using detail::KvOp;
using detail::prefix_end;
using nlohmann::json;

namespace {

constexpr std::uint8_t kFormatVersion = 1;
constexpr char kRecord = 'c';
constexpr char kWrite = 'w';
constexpr char kWriteBundle = 'W';  // a task's writes in one record: [[channel, value], ...]
constexpr int kBundleIndex = -100;  // the write index of that record
constexpr char kJsonBlob = 'j';
constexpr char kViewBlob = 'v';
constexpr char kEmptyBlob = 'e';
constexpr char kLogEntry = 'm';
constexpr std::string_view kMessagesKey = "$messages";
/// The trigger channel of node N is "branch:to:N" (LangGraph's name); records store a node's
/// versions_seen of just its trigger as the version alone.
constexpr std::string_view kTriggerPrefix = "branch:to:";

bool is_trigger_of(std::string_view channel, std::string_view node) {
  return channel.size() == kTriggerPrefix.size() + node.size() &&
         channel.starts_with(kTriggerPrefix) && channel.ends_with(node);
}

/// Channel values up to this CBOR size are kept in checkpoint records instead of blobs.
constexpr std::size_t kInlineMaxBytes = 256;

[[noreturn]] void invalid(const std::string& message) {
  throw CheckpointError(errc::kCheckpointInvalid, message);
}

void check_name(std::string_view what, std::string_view value) {
  if (value.find('\0') != std::string_view::npos)
    invalid(fmt::format("{} must not contain a NUL character", what));
}

std::string prefix_of(std::string_view thread, std::string_view ns) {
  std::string key;
  key.reserve(thread.size() + ns.size() + 2);
  key.append(thread).push_back('\0');
  key.append(ns).push_back('\0');
  return key;
}

std::string thread_prefix(std::string_view thread) {
  std::string key(thread);
  key.push_back('\0');
  return key;
}

/// The exclusive end of the keys that start with `prefix`.
void append_u64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xFF));
}

std::uint64_t read_u64(std::string_view s) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8 && i < s.size(); ++i)
    v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

/// Signed numbers sort as their unsigned encodings after flipping the sign bit.
void append_i64(std::string& out, std::int64_t v) {
  append_u64(out, static_cast<std::uint64_t>(v) ^ (1ULL << 63));
}

std::string blob_key(const std::string& prefix, std::string_view channel, std::int64_t version) {
  std::string key = prefix;
  key.append(channel).push_back('\0');
  append_i64(key, version);
  return key;
}

std::string log_prefix(const std::string& prefix, std::string_view channel) {
  std::string key = prefix;
  key.append(channel).push_back('\0');
  return key;
}

std::string write_key(const std::string& prefix, std::string_view checkpoint_id,
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

std::optional<UuidBytes> uuid_bytes(std::string_view text) {
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

std::string uuid_text(const std::vector<std::uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xF]);
  }
  return out;
}

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::optional<std::int64_t> ts_micros(std::string_view ts) {
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

void write_versions(CborWriter& w, const ChannelVersions& versions) {
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

std::string envelope(char kind, const json& payload) {
  return envelope_with(kind, [&](CborWriter& w) { w.value(payload); });
}

/// Where a record came from, for error messages.
struct Origin {
  std::string_view thread;
  std::string_view checkpoint;
  std::string what;
};

[[noreturn]] void corrupt(const Origin& o, const std::string& detail) {
  throw CheckpointError(errc::kCheckpointCorrupt,
                        fmt::format("corrupt {} of thread '{}', checkpoint '{}': {}", o.what,
                                    o.thread, o.checkpoint, detail));
}

json open_envelope(std::string_view data, char expected_kind, const Origin& origin,
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
bool keeps_parent_writes(std::string_view data) {
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

void push_range(Ranges& ranges, std::uint64_t from, std::uint64_t to) {
  if (from >= to) return;
  if (!ranges.empty() && ranges.back().second == from) {
    ranges.back().second = to;
  } else {
    ranges.emplace_back(from, to);
  }
}

Ranges ranges_from_json(const json& view, const Origin& origin) {
  Ranges out;
  try {
    for (const auto& r : view.at("ranges"))
      out.emplace_back(r.at(0).get<std::uint64_t>(), r.at(1).get<std::uint64_t>());
  } catch (const json::exception& e) {
    corrupt(origin, e.what());
  }
  return out;
}

/// A message view: `{"ranges": [[from, to], ...]}`.
void write_view(CborWriter& w, const Ranges& ranges) {
  w.map(1);
  w.text("ranges");
  w.array(ranges.size());
  for (const auto& [a, b] : ranges) {
    w.array(2);
    w.integer(static_cast<std::int64_t>(a));
    w.integer(static_cast<std::int64_t>(b));
  }
}

/// A JSON value whose pre-encoded messages (binary, kCborMessageSubtype) are written as the CBOR
/// maps they hold: the record reads back as plain JSON.
void write_with_messages(CborWriter& w, const json& j) {
  if (j.is_binary() && j.get_binary().has_subtype() &&
      j.get_binary().subtype() == kCborMessageSubtype) {
    const auto& bytes = j.get_binary();
    if (bytes.empty() || (bytes[0] >> 5) != 5)
      throw CheckpointError(errc::kCheckpointInvalid, "an encoded message must be a CBOR map");
    w.raw(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } else if (j.is_array()) {
    w.array(j.size());
    for (const json& item : j) write_with_messages(w, item);
  } else {
    w.value(j);
  }
}

/// A write stored as log positions: `{"$log": {"ranges": [[from, to], ...]}}`.
constexpr std::string_view kLogWrite = "$log";
/// A write stored as the version of the channel's blob: `{"$blob": version}`.
constexpr std::string_view kBlobWrite = "$blob";

/// The last `count` positions of a view.
Ranges last_positions(const Ranges& view, std::uint64_t count) {
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
std::string envelope_of_cbor(char kind, std::string_view body) {
  return envelope_with(
      kind, [&](CborWriter& w) { w.raw(body); }, detail::kRecordHeaderSize + body.size());
}

/// Appends base positions [from, to) of a list stored as `base` ranges, as log ranges.
void map_positions(const Ranges& base, std::uint64_t from, std::uint64_t to, Ranges& out) {
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
    invalid(fmt::format("$messages: base positions [{}, {}) beyond the base list of {} messages",
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

bool matches_filter(const json& metadata, const json& filter) {
  if (!filter.is_object()) return true;
  for (const auto& [key, value] : filter.items()) {
    auto it = metadata.find(key);
    if (it == metadata.end() || *it != value) return false;
  }
  return true;
}

}  // namespace

struct KvCheckpointer::Record {
  std::string id;
  Checkpoint checkpoint;
  json metadata;
  std::string parent;
  json values = json::object();  // channel -> [version, kind, value] (small values)
  json parent_writes;            // "w": [[task_id, [[channel, value], ...]], ...] or null
};

KvCheckpointer::KvCheckpointer(std::unique_ptr<detail::KvBackend> kv) : kv_(std::move(kv)) {}
KvCheckpointer::~KvCheckpointer() = default;

std::uint64_t KvCheckpointer::next_seq(const std::string& prefix) {
  auto it = next_seq_.find(prefix);
  if (it != next_seq_.end()) return it->second;
  std::uint64_t next = 0;
  kv_->scan(Column::messages, prefix, prefix_end(prefix), true,
            [&](std::string_view key, std::string_view) {
              next = read_u64(key.substr(prefix.size())) + 1;
              return false;
            });
  next_seq_[prefix] = next;
  return next;
}

void KvCheckpointer::forget_thread(const std::string& thread_key) {
  auto forget = [&](auto& cache) {
    for (auto it = cache.lower_bound(thread_key);
         it != cache.end() && it->first.compare(0, thread_key.size(), thread_key) == 0;) {
      it = cache.erase(it);
    }
  };
  forget(next_seq_);
  forget(views_);
  forget(latest_);
  forget(inline_);
}

/// A batch being built: its operations and what they change in the caches.
struct KvCheckpointer::Staged {
  std::vector<KvOp> batch;
  std::map<std::string, std::uint64_t> seqs;                     // log -> next sequence number
  std::map<std::string, std::pair<std::int64_t, Ranges>> views;  // log -> newest staged view
  std::map<std::string, std::string> latest;                     // prefix -> newest staged id
  std::map<std::string, std::pair<std::string, InlineValues>> inlines;  // prefix -> newest record
};

const KvCheckpointer::InlineValues& KvCheckpointer::parent_inline(const Staged& staged,
                                                                  const std::string& thread,
                                                                  const std::string& ns,
                                                                  const std::string& parent_id,
                                                                  InlineValues& read) {
  if (parent_id.empty()) return read;
  const std::string prefix = prefix_of(thread, ns);
  using Inlines = std::map<std::string, std::pair<std::string, InlineValues>>;
  for (const Inlines* inlines : {&staged.inlines, static_cast<const Inlines*>(&inline_)}) {
    auto it = inlines->find(prefix);
    if (it != inlines->end() && it->second.first == parent_id) return it->second.second;
  }
  auto stored = kv_->get(Column::checkpoints, prefix + parent_id);
  if (!stored) return read;  // an unknown parent: nothing to carry over
  auto record = read_record(thread, ns, prefix + parent_id, *stored);
  for (const auto& [channel, item] : record->values.items()) {
    const auto cbor = json::to_cbor(item);
    read[channel] = InlineValue{item.at(0).get<std::int64_t>(),
                                std::make_shared<const std::string>(cbor.begin(), cbor.end())};
  }
  return read;
}

KvCheckpointer::LogRanges KvCheckpointer::base_view(
    const Staged& staged, const InlineValues& parent, const std::string& prefix,
    const std::string& channel, std::int64_t version, const CheckpointConfig& config,
    const Checkpoint& checkpoint) {
  const std::string log = log_prefix(prefix, channel);
  using Views = std::map<std::string, std::pair<std::int64_t, Ranges>>;
  for (const Views* views : {&staged.views, static_cast<const Views*>(&views_)}) {
    auto it = views->find(log);
    if (it != views->end() && it->second.first == version) return it->second.second;
  }
  const Origin origin{config.thread_id, checkpoint.id, "message view"};
  if (auto it = parent.find(channel);
      it != parent.end() && it->second.version == version && it->second.item) {
    try {
      const json item = json::from_cbor(*it->second.item);
      if (item.at(1) == std::string(1, kViewBlob)) return ranges_from_json(item.at(2), origin);
    } catch (const json::exception& e) {
      corrupt(origin, e.what());
    }
  }
  auto stored = kv_->get(Column::blobs, blob_key(prefix, channel, version));
  if (!stored) {
    invalid(fmt::format("$messages: channel '{}' has no version {} to build on", channel, version));
  }
  return ranges_from_json(open_envelope(*stored, kViewBlob, origin), origin);
}

std::optional<KvCheckpointer::InlineValue> KvCheckpointer::find_inline(const Staged& staged,
                                                                       const std::string& thread,
                                                                       const std::string& ns,
                                                                       const std::string& channel,
                                                                       std::int64_t version) {
  const std::string prefix = prefix_of(thread, ns);
  using Inlines = std::map<std::string, std::pair<std::string, InlineValues>>;
  for (const Inlines* inlines : {&staged.inlines, static_cast<const Inlines*>(&inline_)}) {
    auto it = inlines->find(prefix);
    if (it == inlines->end()) continue;
    auto v = it->second.second.find(channel);
    if (v != it->second.second.end() && v->second.version == version) return v->second;
  }
  if (kv_->get(Column::blobs, blob_key(prefix, channel, version)))
    return InlineValue{version, nullptr};
  std::optional<InlineValue> found;
  kv_->scan(
      Column::checkpoints, prefix, prefix_end(prefix), true,
      [&](std::string_view key, std::string_view data) {
        const auto record = read_record(thread, ns, key, data);
        auto item = record->values.find(channel);
        if (item == record->values.end() || (*item)[0].get<std::int64_t>() != version) return true;
        const auto cbor = json::to_cbor(*item);
        found = InlineValue{version, std::make_shared<const std::string>(cbor.begin(), cbor.end())};
        return false;
      });
  return found;
}

void KvCheckpointer::stage_put(Staged& staged, const CheckpointConfig& config,
                               const Checkpoint& checkpoint, const json& metadata,
                               const ChannelVersions& new_versions,
                               const std::vector<TaskWrites>* parent_writes) {
  if (config.thread_id.empty()) invalid("put: the config needs a thread_id");
  if (checkpoint.id.empty()) invalid("put: the checkpoint needs an id");
  check_name("thread_id", config.thread_id);
  check_name("checkpoint_ns", config.checkpoint_ns);
  const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
  auto& batch = staged.batch;
  if (checkpoint.id < newest_id(staged, prefix))
    keep_writes_apart(staged, config.thread_id, config.checkpoint_ns, checkpoint.id);
  InlineValues read;  // the parent's values when no cache has them
  const InlineValues& parent =
      parent_inline(staged, config.thread_id, config.checkpoint_ns, config.checkpoint_id, read);

  // Small values of unchanged channels come along from the parent's record (or, for a put not
  // chained to the checkpoint that wrote them, from wherever they are).
  InlineValues values;
  for (const auto& [channel, version] : checkpoint.channel_versions) {
    if (new_versions.count(channel)) continue;
    auto it = parent.find(channel);
    if (it != parent.end() && it->second.version == version) {
      values.insert(*it);
    } else if (auto found =
                   find_inline(staged, config.thread_id, config.checkpoint_ns, channel, version)) {
      values[channel] = std::move(*found);
    }
  }
  // A new value: in the record if small, else in a blob.
  auto store = [&](const std::string& channel, std::int64_t version, char kind,
                   auto&& write_value) {
    // The inline item [version, kind, value]; its value part is the blob's body if too large.
    auto item = std::make_shared<std::string>();
    item->reserve(kInlineMaxBytes + 16);
    CborWriter w(*item);
    w.array(3);
    w.integer(version);
    w.text(std::string_view(&kind, 1));
    const std::size_t body_at = item->size();
    write_value(w);
    const std::size_t body_size = item->size() - body_at;
    if (body_size <= kInlineMaxBytes && body_size > 0) {
      values[channel] = InlineValue{version, std::move(item)};
    } else {
      batch.push_back({KvOp::Kind::put, Column::blobs, blob_key(prefix, channel, version),
                       envelope_of_cbor(kind, std::string_view(*item).substr(body_at))});
      values[channel] = InlineValue{version, nullptr};  // "in a blob", for the caches only
    }
  };

  for (const auto& [channel, version] : new_versions) {
    check_name("channel", channel);
    auto value = checkpoint.channel_values.find(channel);
    if (value == checkpoint.channel_values.end()) {
      store(channel, version, kEmptyBlob, [](CborWriter& w) { w.value(json()); });
      continue;
    }
    if (!value->is_object() || !value->contains(kMessagesKey)) {
      store(channel, version, kJsonBlob, [&](CborWriter& w) { w.value(*value); });
      continue;
    }
    // An incremental message list: base positions and new messages -> log ranges.
    const json& spec = (*value)[kMessagesKey];
    Ranges base;
    if (auto b = spec.find("base"); b != spec.end() && !b->is_null()) {
      if (!b->is_number_integer()) invalid("$messages: base must be an integer version");
      base = base_view(staged, parent, prefix, channel, b->get<std::int64_t>(), config, checkpoint);
    }
    const std::string log = log_prefix(prefix, channel);
    auto seq_it = staged.seqs.find(log);
    std::uint64_t seq = seq_it != staged.seqs.end() ? seq_it->second : next_seq(log);
    Ranges ranges;
    if (auto items = spec.find("items"); items != spec.end()) {
      if (!items->is_array()) invalid("$messages: items must be an array");
      for (const json& item : *items) {
        if (item.is_array()) {
          try {
            map_positions(base, item.at(0).get<std::uint64_t>(), item.at(1).get<std::uint64_t>(),
                          ranges);
          } catch (const json::exception& e) {
            invalid(fmt::format("$messages: a position range must be [from, to]: {}", e.what()));
          }
        } else {
          std::string key_seq = log;
          append_u64(key_seq, seq);
          std::string entry;
          if (item.is_binary() && item.get_binary().has_subtype() &&
              item.get_binary().subtype() == kCborMessageSubtype) {
            // Already CBOR (see kCborMessageSubtype): a map, or it is not a message.
            const auto& bytes = item.get_binary();
            if (bytes.empty() || (bytes[0] >> 5) != 5)
              invalid("$messages: an encoded message must be a CBOR map");
            entry = envelope_of_cbor(
                kLogEntry,
                std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
          } else {
            entry = envelope(kLogEntry, item);
          }
          batch.push_back(
              {KvOp::Kind::put, Column::messages, std::move(key_seq), std::move(entry)});
          push_range(ranges, seq, seq + 1);
          ++seq;
        }
      }
    }
    staged.seqs[log] = seq;
    store(channel, version, kViewBlob, [&](CborWriter& w) { write_view(w, ranges); });
    staged.views[log] = {version, std::move(ranges)};
  }

  static const json kNoMetadata = json::object();
  const json& meta = metadata.is_null() ? kNoMetadata : metadata;  // no copy
  // A canonical run_id goes in "r" as its 16 bytes.
  std::optional<UuidBytes> run_id;
  if (auto it = meta.find("run_id"); it != meta.end() && it->is_string())
    run_id = uuid_bytes(it->get_ref<const std::string&>());
  std::size_t capacity = 256;  // the record without its inline values, usually
  for (const auto& [channel, v] : values) {
    if (v.item) capacity += channel.size() + v.item->size() + 2;
  }
  batch.push_back({KvOp::Kind::put, Column::checkpoints, prefix + checkpoint.id,
                   envelope_with(
                       kRecord,
                       [&](CborWriter& w) {
                         // Short keys; the id is the key's. See docs/checkpoint-format.md.
                         w.map((run_id ? 8 : 7) + (parent_writes ? 1 : 0));
                         // "w" first: a reader checks for it without decoding the record.
                         if (parent_writes) {
                           w.text("w");
                           w.array(parent_writes->size());
                           for (const auto& task : *parent_writes) {
                             w.array(2);
                             w.text(task.task_id);
                             w.array(task.writes.size());
                             for (const auto& [channel, value] : task.writes) {
                               w.array(2);
                               w.text(channel);
                               write_value(w, prefix, channel, value, staged, values);
                             }
                           }
                         }
                         w.text("v");
                         w.integer(checkpoint.v);
                         w.text("t");
                         if (auto micros = ts_micros(checkpoint.ts)) {
                           w.integer(*micros);
                         } else {
                           w.text(checkpoint.ts);
                         }
                         w.text("cv");
                         write_versions(w, checkpoint.channel_versions);
                         w.text("vs");
                         w.map(checkpoint.versions_seen.size());
                         for (const auto& [node, seen] : checkpoint.versions_seen) {
                           w.text(node);
                           if (seen.size() == 1 && is_trigger_of(seen.begin()->first, node)) {
                             w.integer(seen.begin()->second);  // {"branch:to:NODE": V} as V
                           } else {
                             write_versions(w, seen);
                           }
                         }
                         w.text("m");
                         if (run_id) {
                           w.map(meta.size() - 1);
                           for (const auto& [key, value] : meta.items()) {
                             if (key == "run_id") continue;
                             w.text(key);
                             w.value(value);
                           }
                           w.text("r");
                           w.bytes(std::string_view(run_id->data(), run_id->size()));
                         } else {
                           w.value(meta);
                         }
                         w.text("p");
                         if (auto bytes = uuid_bytes(config.checkpoint_id)) {
                           w.bytes(std::string_view(bytes->data(), bytes->size()));
                         } else {
                           w.text(config.checkpoint_id);
                         }
                         w.text("x");
                         w.map(static_cast<std::size_t>(std::count_if(
                             values.begin(), values.end(),
                             [](const auto& v) { return v.second.item != nullptr; })));
                         for (const auto& [channel, v] : values) {
                           if (!v.item) continue;
                           w.text(channel);
                           w.raw(*v.item);
                         }
                       },
                       capacity)});
  auto& newest = staged.latest[prefix];
  if (newest < checkpoint.id) newest = checkpoint.id;
  staged.inlines[prefix] = {checkpoint.id, std::move(values)};
}

void KvCheckpointer::commit(Staged& staged) {
  kv_->write(staged.batch);
  for (auto& [log, seq] : staged.seqs) next_seq_[log] = seq;
  for (auto& [log, view] : staged.views) views_[log] = std::move(view);
  for (auto& [prefix, values] : staged.inlines) inline_[prefix] = std::move(values);
  for (auto& [prefix, id] : staged.latest) {
    // Only a known newest id can be advanced: without one, older storage is unknown.
    auto it = latest_.find(prefix);
    if (it != latest_.end() && it->second < id) it->second = id;
  }
}

CheckpointConfig KvCheckpointer::put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                                     const json& metadata, const ChannelVersions& new_versions) {
  std::lock_guard lock(write_mu_);
  Staged staged;
  stage_put(staged, config, checkpoint, metadata, new_versions);
  commit(staged);
  return CheckpointConfig{config.thread_id, config.checkpoint_ns, checkpoint.id};
}

std::vector<CheckpointConfig> KvCheckpointer::put_all(const std::vector<CheckpointPut>& puts) {
  std::lock_guard lock(write_mu_);
  Staged staged;
  std::vector<CheckpointConfig> out;
  out.reserve(puts.size());
  for (const auto& p : puts) {
    // The writes of the tasks that just ran (nothing is saved under their ids yet) go in the
    // new record when its parent is the newest checkpoint, so the new one is the next key after
    // it (where reads look); otherwise in a record of their own. Either way appended messages
    // and blob values refer to what the new checkpoint stores.
    const bool embed = !p.writes.empty() && !p.config.checkpoint_id.empty() &&
                       p.checkpoint.id > p.config.checkpoint_id &&
                       newest_id(staged, prefix_of(p.config.thread_id, p.config.checkpoint_ns)) ==
                           p.config.checkpoint_id;
    stage_put(staged, p.config, p.checkpoint, p.metadata, p.new_versions,
              embed ? &p.writes : nullptr);
    if (!embed) {
      for (const auto& w : p.writes) {
        stage_writes(staged.batch, p.config, w.writes, w.task_id, {}, /*check_existing=*/false,
                     &staged);
      }
    }
    out.push_back(CheckpointConfig{p.config.thread_id, p.config.checkpoint_ns, p.checkpoint.id});
  }
  if (!staged.batch.empty()) commit(staged);
  return out;
}

std::optional<std::string> KvCheckpointer::latest_checkpoint_id(const std::string& thread_id,
                                                                const std::string& checkpoint_ns) {
  if (thread_id.empty()) return std::nullopt;
  const std::string prefix = prefix_of(thread_id, checkpoint_ns);
  std::lock_guard lock(write_mu_);
  if (auto it = latest_.find(prefix); it != latest_.end()) return it->second;
  std::optional<std::string> found;
  kv_->scan(Column::checkpoints, prefix, prefix_end(prefix), true,
            [&](std::string_view key, std::string_view) {
              found = std::string(key.substr(prefix.size()));
              return false;
            });
  if (found) latest_[prefix] = *found;
  return found;
}

void KvCheckpointer::keep_writes_apart(Staged& staged, const std::string& thread,
                                       const std::string& ns, const std::string& id) {
  // The stored records just before and after the new key.
  const std::string prefix = prefix_of(thread, ns);
  const std::string key = prefix + id;
  std::string before;
  kv_->scan(Column::checkpoints, prefix, key, true, [&](std::string_view k, std::string_view) {
    before = std::string(k.substr(prefix.size()));
    return false;
  });
  if (before.empty()) return;
  std::optional<Record> after;
  kv_->scan(Column::checkpoints, key, prefix_end(prefix), false,
            [&](std::string_view k, std::string_view value) {
              after = read_record(thread, ns, k, value);
              return false;
            });
  if (!after || after->parent != before || !after->parent_writes.is_array()) return;
  // `before`'s writes are in `after`'s record, which stops being its next record: copy them
  // under `before`, one bundle per task (reads resolve the same references).
  for (const auto& task : after->parent_writes) {
    if (!task.is_array() || task.size() != 2 || !task[0].is_string()) continue;
    staged.batch.push_back({KvOp::Kind::put, Column::writes,
                            write_key(prefix, before, task[0].get<std::string>(), kBundleIndex),
                            envelope_with(kWriteBundle, [&](CborWriter& w) { w.value(task[1]); })});
  }
}

std::string KvCheckpointer::newest_id(const Staged& staged, const std::string& prefix) {
  if (auto it = staged.latest.find(prefix); it != staged.latest.end()) return it->second;
  if (auto it = latest_.find(prefix); it != latest_.end()) return it->second;
  std::string found;
  kv_->scan(Column::checkpoints, prefix, prefix_end(prefix), true,
            [&](std::string_view key, std::string_view) {
              found = std::string(key.substr(prefix.size()));
              return false;
            });
  if (!found.empty()) latest_[prefix] = found;
  return found;
}

void KvCheckpointer::put_writes(const CheckpointConfig& config,
                                const std::vector<std::pair<std::string, json>>& writes,
                                const std::string& task_id, const std::string& task_path) {
  std::lock_guard lock(write_mu_);
  std::vector<KvOp> batch;
  stage_writes(batch, config, writes, task_id, task_path, /*check_existing=*/true);
  if (!batch.empty()) kv_->write(batch);
}

void KvCheckpointer::stage_writes(std::vector<KvOp>& batch, const CheckpointConfig& config,
                                  const std::vector<std::pair<std::string, json>>& writes,
                                  const std::string& task_id, const std::string& task_path,
                                  bool check_existing, const Staged* appended_from) {
  if (config.thread_id.empty()) invalid("put_writes: the config needs a thread_id");
  if (config.checkpoint_id.empty()) invalid("put_writes: the config needs a checkpoint_id");
  check_name("thread_id", config.thread_id);
  check_name("task_id", task_id);
  const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
  if (appended_from) {
    // The writes of a task that just ran, with its put: one record (nothing is saved under the
    // task's id yet). Values that the put's checkpoint stores anyway refer to it.
    static const InlineValues kNone;
    const auto in = appended_from->inlines.find(prefix);
    const InlineValues& stored = in == appended_from->inlines.end() ? kNone : in->second.second;
    batch.push_back({KvOp::Kind::put, Column::writes,
                     write_key(prefix, config.checkpoint_id, task_id, kBundleIndex),
                     envelope_with(kWriteBundle, [&](CborWriter& w) {
                       w.array(writes.size());
                       for (const auto& [channel, value] : writes) {
                         w.array(2);
                         w.text(channel);
                         write_value(w, prefix, channel, value, *appended_from, stored);
                       }
                     })});
    return;
  }
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const auto& [channel, value] = writes[i];
    const auto special = special_write_index(channel);
    const int idx = special ? *special : static_cast<int>(i);
    std::string key = write_key(prefix, config.checkpoint_id, task_id, idx);
    if (check_existing && !special && kv_->get(Column::writes, key))
      continue;  // a re-run task cannot change saved writes
    if (value.is_object() && value.size() == 1 &&
        (value.contains(kAppendedWrite) || value.contains(kStoredWrite))) {
      invalid("put_writes: '" + channel + "': $appended / $stored writes go only with put_all");
    }
    batch.push_back(
        {KvOp::Kind::put, Column::writes, std::move(key), envelope_with(kWrite, [&](CborWriter& w) {
           w.map(3);
           w.text("channel");
           w.text(channel);
           w.text("value");
           write_with_messages(w, value);
           w.text("task_path");
           w.text(task_path);
         })});
  }
}

void KvCheckpointer::write_value(detail::CborWriter<std::string>& w, const std::string& prefix,
                                 const std::string& channel, const json& value,
                                 const Staged& staged, const InlineValues& stored) {
  // {"$appended": k}: the last k messages of the channel's view in the staged checkpoint,
  // stored as {"$log": {"ranges": [[from, to], ...]}}.
  if (value.is_object() && value.size() == 1 && value.contains(kAppendedWrite)) {
    const auto it = staged.views.find(log_prefix(prefix, channel));
    if (it == staged.views.end())
      invalid("put_all: an appended write to '" + channel + "' without a staged message list");
    w.map(1);
    w.text(kLogWrite);
    write_view(w, last_positions(it->second.second, value[kAppendedWrite].get<std::uint64_t>()));
    return;
  }
  // {"$stored": v}: v, or {"$blob": version} when the checkpoint keeps v in a blob.
  if (value.is_object() && value.size() == 1 && value.contains(kStoredWrite)) {
    if (auto v = stored.find(channel); v != stored.end() && !v->second.item) {
      w.map(1);
      w.text(kBlobWrite);
      w.integer(v->second.version);
      return;
    }
    write_with_messages(w, value[kStoredWrite]);
    return;
  }
  write_with_messages(w, value);
}

std::optional<KvCheckpointer::Record> KvCheckpointer::read_record(const std::string& thread,
                                                                  const std::string& ns,
                                                                  std::string_view key,
                                                                  std::string_view value) {
  const std::string id(key.substr(prefix_of(thread, ns).size()));
  const json data = open_envelope(value, kRecord, {thread, id, "checkpoint"});
  Record r;
  r.id = id;
  try {
    r.checkpoint.v = data.at("v").get<int>();
    r.checkpoint.id = id;
    const json& ts = data.at("t");
    r.checkpoint.ts =
        ts.is_number_integer() ? iso_timestamp(ts.get<std::int64_t>()) : ts.get<std::string>();
    r.checkpoint.channel_versions = data.at("cv").get<ChannelVersions>();
    for (const auto& [node, seen] : data.at("vs").items()) {
      r.checkpoint.versions_seen[node] =
          seen.is_number_integer()
              ? ChannelVersions{{std::string(kTriggerPrefix) + node, seen.get<std::int64_t>()}}
              : seen.get<ChannelVersions>();
    }
    r.metadata = data.at("m");
    if (auto run_id = data.find("r"); run_id != data.end()) {
      if (!run_id->is_binary() || run_id->get_binary().size() != 16 || !r.metadata.is_object())
        corrupt({thread, id, "checkpoint"}, "bad run id");
      r.metadata["run_id"] = uuid_text(run_id->get_binary());
    }
    const json& parent = data.at("p");
    if (parent.is_binary()) {
      if (parent.get_binary().size() != 16) corrupt({thread, id, "checkpoint"}, "bad parent id");
      r.parent = uuid_text(parent.get_binary());
    } else {
      r.parent = parent.get<std::string>();
    }
    if (auto values = data.find("x"); values != data.end()) {
      for (const auto& [channel, item] : values->items()) {
        if (!item.is_array() || item.size() != 3 || !item[0].is_number_integer() ||
            !item[1].is_string() || item[1].get_ref<const std::string&>().size() != 1) {
          corrupt({thread, id, "checkpoint"},
                  fmt::format("malformed value of channel '{}'", channel));
        }
      }
      r.values = *values;
    }
    if (auto writes = data.find("w"); writes != data.end()) {
      if (!writes->is_array()) corrupt({thread, id, "checkpoint"}, "malformed parent writes");
      r.parent_writes = *writes;
    }
  } catch (const json::exception& e) {
    corrupt({thread, id, "checkpoint"}, e.what());
  }
  return r;
}

json KvCheckpointer::read_channel(const std::string& thread, const std::string& ns,
                                  const std::string& checkpoint_id, const std::string& channel,
                                  std::int64_t version, bool& present) {
  const std::string prefix = prefix_of(thread, ns);
  auto stored = kv_->get(Column::blobs, blob_key(prefix, channel, version));
  present = false;
  if (!stored) return json();
  const Origin origin{thread, checkpoint_id, "value of channel '" + channel + "'"};
  char kind = 0;
  json value = open_envelope(*stored, 0, origin, &kind);
  return resolve_value(thread, ns, checkpoint_id, channel, kind, std::move(value), present);
}

json KvCheckpointer::resolve_value(const std::string& thread, const std::string& ns,
                                   const std::string& checkpoint_id, const std::string& channel,
                                   char kind, json value, bool& present) {
  const Origin origin{thread, checkpoint_id, "value of channel '" + channel + "'"};
  present = kind != kEmptyBlob;
  if (kind == kEmptyBlob) return json();
  if (kind == kJsonBlob) return value;
  if (kind != kViewBlob) corrupt(origin, fmt::format("record kind '{}'", kind));
  const Ranges ranges = ranges_from_json(value, origin);
  const std::string log = log_prefix(prefix_of(thread, ns), channel);
  json messages = json::array();
  for (const auto& [a, b] : ranges) {
    std::string lo = log;
    append_u64(lo, a);
    std::string hi = log;
    append_u64(hi, b);
    std::uint64_t expected = a;
    kv_->scan(Column::messages, lo, hi, false, [&](std::string_view key, std::string_view data) {
      const std::uint64_t seq = read_u64(key.substr(log.size()));
      if (seq != expected)
        corrupt(origin, fmt::format("message {} of the log is missing", expected));
      messages.push_back(open_envelope(data, kLogEntry, origin));
      ++expected;
      return true;
    });
    if (expected != b) corrupt(origin, fmt::format("message {} of the log is missing", expected));
  }
  return messages;
}

void KvCheckpointer::add_pending_write(const std::string& thread, const std::string& ns,
                                       std::string task_id, std::string channel, json value,
                                       CheckpointTuple& t) {
  const std::string& id = t.config.checkpoint_id;
  if (value.is_object() && value.size() == 1 && value.contains(kLogWrite)) {
    bool present = false;
    value = resolve_value(thread, ns, id, channel, kViewBlob, std::move(value[kLogWrite]), present);
  } else if (value.is_object() && value.size() == 1 && value.contains(kBlobWrite)) {
    bool present = false;
    value = read_channel(thread, ns, id, channel, value[kBlobWrite].get<std::int64_t>(), present);
  }
  t.pending_writes.push_back(
      PendingWrite{std::move(task_id), std::move(channel), std::move(value)});
}

CheckpointTuple KvCheckpointer::to_tuple(const std::string& thread, const std::string& ns,
                                         Record record, bool values, const Record* newer,
                                         bool newer_known) {
  CheckpointTuple t;
  t.config = CheckpointConfig{thread, ns, record.id};
  t.checkpoint = std::move(record.checkpoint);
  t.metadata = std::move(record.metadata);
  if (!record.parent.empty()) t.parent_config = CheckpointConfig{thread, ns, record.parent};
  if (values) {
    for (const auto& [channel, version] : t.checkpoint.channel_versions) {
      bool present = false;
      json value;
      auto item = record.values.find(channel);
      if (item != record.values.end() && (*item)[0].get<std::int64_t>() == version) {
        value = resolve_value(thread, ns, record.id, channel,
                              (*item)[1].get_ref<const std::string&>()[0], std::move((*item)[2]),
                              present);
      } else {
        value = read_channel(thread, ns, record.id, channel, version, present);
      }
      if (present) t.checkpoint.channel_values[channel] = std::move(value);
    }
  }
  std::string lo = prefix_of(thread, ns) + record.id;
  lo.push_back('\0');
  kv_->scan(Column::writes, lo, prefix_end(lo), false,
            [&](std::string_view key, std::string_view data) {
              const std::string_view rest = key.substr(lo.size());
              const std::string task_id(rest.substr(0, rest.find('\0')));
              const Origin origin{thread, record.id, "pending write"};
              char kind = 0;
              json w = open_envelope(data, 0, origin, &kind);
              auto add = [&](std::string channel, json value) {
                add_pending_write(thread, ns, task_id, std::move(channel), std::move(value), t);
              };
              if (kind == kWriteBundle) {
                if (!w.is_array()) corrupt(origin, "a bundle of writes must be an array");
                for (auto& item : w) {
                  if (!item.is_array() || item.size() != 2 || !item[0].is_string())
                    corrupt(origin, "a bundled write must be [channel, value]");
                  add(item[0].get<std::string>(), std::move(item[1]));
                }
              } else if (kind == kWrite) {
                add(w.value("channel", std::string()), std::move(w["value"]));
              } else {
                corrupt(origin, fmt::format("record kind '{}' where a write was expected", kind));
              }
              return true;
            });
  // The writes of the step that ran from this checkpoint, kept in the record of the checkpoint
  // it made: always the next record of the namespace (stage_put moves them when a record is put
  // in between).
  std::optional<Record> found;
  const Record* child = newer;
  if (!child && !newer_known) {
    std::string from = prefix_of(thread, ns) + record.id;
    from.push_back('\0');
    kv_->scan(Column::checkpoints, from, prefix_end(prefix_of(thread, ns)), false,
              [&](std::string_view key, std::string_view value) {
                if (keeps_parent_writes(value)) found = read_record(thread, ns, key, value);
                return false;
              });
    if (found) child = &*found;
  }
  if (child && (child->parent != record.id || !child->parent_writes.is_array())) child = nullptr;
  if (child) {
    const Origin origin{thread, record.id, "pending write"};
    for (const auto& task : child->parent_writes) {
      if (!task.is_array() || task.size() != 2 || !task[0].is_string() || !task[1].is_array())
        corrupt(origin, "a checkpoint's parent writes must be [task_id, [[channel, value]...]]");
      for (const auto& item : task[1]) {
        if (!item.is_array() || item.size() != 2 || !item[0].is_string())
          corrupt(origin, "a bundled write must be [channel, value]");
        add_pending_write(thread, ns, task[0].get<std::string>(), item[0].get<std::string>(),
                          item[1], t);
      }
    }
  }
  return t;
}

std::optional<CheckpointTuple> KvCheckpointer::get_tuple(const CheckpointConfig& config) {
  if (config.thread_id.empty()) return std::nullopt;
  return in_context(
      config.thread_id, config.checkpoint_id, [&]() -> std::optional<CheckpointTuple> {
        const std::string prefix = prefix_of(config.thread_id, config.checkpoint_ns);
        std::optional<Record> record;
        std::optional<Record> newer;  // the next record, when it keeps this one's writes
        if (!config.checkpoint_id.empty()) {
          // One scan reads the record and peeks at the next one.
          const std::string key = prefix + config.checkpoint_id;
          kv_->scan(Column::checkpoints, key, prefix_end(prefix), false,
                    [&](std::string_view k, std::string_view value) {
                      if (!record) {
                        if (k != key) return false;
                        record = read_record(config.thread_id, config.checkpoint_ns, k, value);
                        return true;
                      }
                      if (keeps_parent_writes(value))
                        newer = read_record(config.thread_id, config.checkpoint_ns, k, value);
                      return false;
                    });
        } else {
          // The newest record: nothing after it.
          kv_->scan(Column::checkpoints, prefix, prefix_end(prefix), true,
                    [&](std::string_view key, std::string_view value) {
                      record = read_record(config.thread_id, config.checkpoint_ns, key, value);
                      return false;
                    });
        }
        if (!record) return std::nullopt;
        return to_tuple(config.thread_id, config.checkpoint_ns, std::move(*record), true,
                        newer ? &*newer : nullptr, /*newer_known=*/true);
      });
}

std::vector<std::string> KvCheckpointer::threads() {
  std::vector<std::string> out;
  std::string from;
  for (;;) {
    std::optional<std::string> found;
    kv_->scan(Column::checkpoints, from, {}, false, [&](std::string_view key, std::string_view) {
      found = std::string(key.substr(0, key.find('\0')));
      return false;
    });
    if (!found) break;
    out.push_back(*found);
    from = prefix_end(thread_prefix(*found));
  }
  return out;
}

std::vector<std::string> KvCheckpointer::namespaces(const std::string& thread_id) {
  std::vector<std::string> out;
  const std::string tp = thread_prefix(thread_id);
  std::string from = tp;
  const std::string end = prefix_end(tp);
  for (;;) {
    std::optional<std::string> found;
    kv_->scan(Column::checkpoints, from, end, false, [&](std::string_view key, std::string_view) {
      const std::string_view rest = key.substr(tp.size());
      found = std::string(rest.substr(0, rest.find('\0')));
      return false;
    });
    if (!found) break;
    out.push_back(*found);
    from = prefix_end(prefix_of(thread_id, *found));
  }
  return out;
}

std::vector<CheckpointTuple> KvCheckpointer::list(const ListOptions& options) {
  std::vector<std::pair<std::string, std::string>> groups;
  const std::vector<std::string> thread_ids =
      options.thread_id ? std::vector<std::string>{*options.thread_id} : threads();
  for (const auto& thread : thread_ids) {
    if (options.checkpoint_ns) {
      groups.emplace_back(thread, *options.checkpoint_ns);
    } else {
      for (auto& ns : namespaces(thread)) groups.emplace_back(thread, std::move(ns));
    }
  }
  const std::size_t limit = options.limit.value_or(std::numeric_limits<std::size_t>::max());
  std::vector<CheckpointTuple> out;
  for (const auto& [thread, ns] : groups) {
    const std::string prefix = prefix_of(thread, ns);
    const std::string upper = options.before ? prefix + *options.before : prefix_end(prefix);
    std::size_t taken = 0;
    in_context(thread, options.before.value_or(""), [&] {
      // Newest first: each record read is the next-newer neighbour of the one after it.
      std::optional<Record> newer;
      kv_->scan(Column::checkpoints, prefix, upper, true,
                [&](std::string_view key, std::string_view value) {
                  auto record = read_record(thread, ns, key, value);
                  if (!matches_filter(record->metadata, options.filter)) {
                    newer = std::move(record);
                    return true;
                  }
                  Record keep{record->id,     {}, {},
                              record->parent, {}, std::move(record->parent_writes)};
                  // Without `before`, the first record read is the newest: nothing follows it.
                  out.push_back(to_tuple(thread, ns, std::move(*record), options.include_values,
                                         newer ? &*newer : nullptr,
                                         newer.has_value() || !options.before));
                  newer = std::move(keep);
                  return ++taken < limit;
                });
    });
  }
  if (groups.size() > 1) {
    std::stable_sort(out.begin(), out.end(),
                     [](const CheckpointTuple& a, const CheckpointTuple& b) {
                       return a.config.checkpoint_id > b.config.checkpoint_id;
                     });
    if (out.size() > limit) out.resize(limit);
  }
  return out;
}

void KvCheckpointer::delete_thread(const std::string& thread_id) {
  check_name("thread_id", thread_id);
  const std::string tp = thread_prefix(thread_id);
  std::lock_guard lock(write_mu_);
  std::vector<KvOp> batch;
  for (std::uint8_t column = 0; column < Column::count; ++column)
    batch.push_back({KvOp::Kind::erase_range, column, tp, prefix_end(tp)});
  kv_->write(batch);
  forget_thread(tp);
}

void KvCheckpointer::copy_thread(const std::string& source, const std::string& target) {
  check_name("thread_id", source);
  check_name("thread_id", target);
  if (source == target) return;
  const std::string from = thread_prefix(source);
  const std::string to = thread_prefix(target);
  std::lock_guard lock(write_mu_);
  std::vector<KvOp> batch;
  for (std::uint8_t column = 0; column < Column::count; ++column) {
    batch.push_back({KvOp::Kind::erase_range, column, to, prefix_end(to)});
    kv_->scan(column, from, prefix_end(from), false,
              [&](std::string_view key, std::string_view value) {
                batch.push_back({KvOp::Kind::put, column, to + std::string(key.substr(from.size())),
                                 std::string(value)});
                return true;
              });
  }
  kv_->write(batch);
  forget_thread(to);
}

void KvCheckpointer::prune(const std::vector<std::string>& thread_ids, PruneStrategy strategy) {
  if (strategy == PruneStrategy::delete_all) {
    for (const auto& t : thread_ids) delete_thread(t);
    return;
  }
  for (const auto& thread : thread_ids) {
    for (const auto& ns : namespaces(thread)) {
      auto latest = get_tuple(CheckpointConfig{thread, ns, {}});
      if (!latest) continue;
      const std::string prefix = prefix_of(thread, ns);
      const std::string& keep_id = latest->config.checkpoint_id;
      std::lock_guard lock(write_mu_);
      std::vector<KvOp> batch;
      // Older checkpoints and their writes.
      batch.push_back({KvOp::Kind::erase_range, Column::checkpoints, prefix, prefix + keep_id});
      batch.push_back({KvOp::Kind::erase_range, Column::writes, prefix, prefix + keep_id});
      // Values the kept checkpoint does not use; log messages its views do not reference.
      std::map<std::string, std::set<std::uint64_t>> keep_seqs;
      auto keep_view = [&](const std::string& channel, const json& view) {
        for (const auto& [a, b] : ranges_from_json(view, {thread, keep_id, "message view"})) {
          for (std::uint64_t s = a; s < b; ++s) keep_seqs[channel].insert(s);
        }
      };
      if (auto stored = kv_->get(Column::checkpoints, prefix + keep_id)) {
        const auto record = read_record(thread, ns, prefix + keep_id, *stored);
        for (const auto& [channel, item] : record->values.items()) {
          if (item[1] == std::string(1, kViewBlob)) keep_view(channel, item[2]);
        }
      }
      kv_->scan(
          Column::blobs, prefix, prefix_end(prefix), false,
          [&](std::string_view key, std::string_view data) {
            const std::string_view rest = key.substr(prefix.size());
            const std::string channel(rest.substr(0, rest.find('\0')));
            const auto version =
                static_cast<std::int64_t>(read_u64(rest.substr(channel.size() + 1)) ^ (1ULL << 63));
            auto used = latest->checkpoint.channel_versions.find(channel);
            if (used == latest->checkpoint.channel_versions.end() || used->second != version) {
              batch.push_back({KvOp::Kind::erase, Column::blobs, std::string(key), {}});
              return true;
            }
            char kind = 0;
            const json value = open_envelope(
                data, 0, {thread, keep_id, "value of channel '" + channel + "'"}, &kind);
            if (kind == kViewBlob) keep_view(channel, value);
            return true;
          });
      kv_->scan(Column::messages, prefix, prefix_end(prefix), false,
                [&](std::string_view key, std::string_view) {
                  const std::string_view rest = key.substr(prefix.size());
                  const std::string channel(rest.substr(0, rest.find('\0')));
                  const std::uint64_t seq = read_u64(rest.substr(channel.size() + 1));
                  auto kept = keep_seqs.find(channel);
                  if (kept == keep_seqs.end() || !kept->second.contains(seq)) {
                    batch.push_back({KvOp::Kind::erase, Column::messages, std::string(key), {}});
                  }
                  return true;
                });
      kv_->write(batch);
      forget_thread(thread_prefix(thread));
    }
  }
}

}  // namespace sg
