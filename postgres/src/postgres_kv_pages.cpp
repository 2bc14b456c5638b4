// SPDX-License-Identifier: MIT
// Paged key spaces of PostgresKv (see PagedSpace): the puts of one write batch to one group
// (a run's checkpoints stored together, their messages) become one page row in key space
// `space + kPageSpaceOffset`, keyed by its first key, with `last` its last key, written once:
// Postgres compresses a row over its TOAST threshold (about 2 kB), so a batch of checkpoints or
// messages is stored compressed, and nothing is rewritten (no dead row versions for VACUUM). A
// page's value is its entries: a 4-byte big-endian key length, the key, a 4-byte value length,
// the value, in key order. A lone put, or a batch that would overlap a page or loose rows, is
// loose rows in `space` itself, which reads prefer to a page's entry of the same key. Pages of
// a group never overlap. The page writes and the erases run in plpgsql next to the data: one
// statement each, pipelined with the rest of a write batch.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>

#include "postgres_kv.hpp"

namespace sg::detail {

namespace {

/// Where the page rows of space S live.
constexpr int kPageSpaceOffset = 64;
/// Page rows a scan reads per round trip after the first.
constexpr int kPagesPerRead = 4;

std::uint32_t read_u32(std::string_view s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

struct Entry {
  std::string key;
  std::string value;
};

/// The entries of a page row's value, in key order. Throws std::runtime_error on bytes that
/// are not entries.
std::vector<Entry> page_entries(std::string_view data) {
  std::vector<Entry> out;
  std::size_t at = 0;
  while (at < data.size()) {
    if (data.size() - at < 4) throw std::runtime_error("a damaged page row");
    const std::size_t key_size = read_u32(data, at);
    if (data.size() - at - 4 < key_size + 4) throw std::runtime_error("a damaged page row");
    const std::size_t value_size = read_u32(data, at + 4 + key_size);
    if (data.size() - at - 8 - key_size < value_size)
      throw std::runtime_error("a damaged page row");
    out.push_back({std::string(data.substr(at + 4, key_size)),
                   std::string(data.substr(at + 8 + key_size, value_size))});
    at += 8 + key_size + value_size;
  }
  return out;
}

void append_u32(std::string& out, std::size_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xFF));
}

/// The group of `key`: up to and including its `nuls`-th NUL (the whole key when it has fewer).
std::string_view group_of(std::string_view key, int nuls) {
  std::size_t at = 0;
  for (int i = 0; i < nuls; ++i) {
    at = key.find('\0', at);
    if (at == std::string_view::npos) return key;
    ++at;
  }
  return key.substr(0, at);
}

}  // namespace

const PagedSpace* PostgresKv::paged(std::uint8_t space) const noexcept {
  for (const auto& p : paged_) {
    if (p.space == space) return &p;
  }
  return nullptr;
}

std::vector<pg::Statement> PostgresKv::page_schema() const {
  if (paged_.empty()) return {};
  const std::string put_page = pg::quote_identifier(table_ + "_put_page");
  const std::string erase = pg::quote_identifier(table_ + "_erase");
  const std::string& t = quoted_;
  // Loops over the entries of `data` (as page_entries does), with ek, klen, vlen set.
  const auto each_entry = [](const std::string& body) {
    return "at := 0; WHILE at < length(data) LOOP "
           "klen := (get_byte(data, at) << 24) | (get_byte(data, at + 1) << 16) | "
           "(get_byte(data, at + 2) << 8) | get_byte(data, at + 3); "
           "ek := substring(data FROM at + 5 FOR klen); "
           "vlen := (get_byte(data, at + 4 + klen) << 24) | (get_byte(data, at + 5 + klen) << 16) "
           "| (get_byte(data, at + 6 + klen) << 8) | get_byte(data, at + 7 + klen); " +
           body + " at := at + 8 + klen + vlen; END LOOP; ";
  };
  return {
      {fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS last bytea", t), {}},
      // put_page: the entries `data` (keys first_key .. last_key, ascending) of space s as one
      // page, or as loose rows when a page or loose rows of the space lie in that range.
      {fmt::format(
           "CREATE OR REPLACE FUNCTION {0}(s smallint, first_key bytea, last_key bytea, "
           "data bytea) RETURNS void LANGUAGE plpgsql AS $$ DECLARE ps smallint := s + {2}; "
           "pl bytea; at int; klen int; vlen int; ek bytea; "
           "BEGIN "
           "SELECT last INTO pl FROM {1} WHERE space = ps AND key <= last_key "
           "ORDER BY key DESC LIMIT 1; "
           "IF (pl IS NULL OR pl < first_key) AND NOT EXISTS (SELECT 1 FROM {1} WHERE "
           "space = s AND key >= first_key AND key <= last_key) THEN "
           "INSERT INTO {1} (space, key, value, last) VALUES (ps, first_key, data, last_key); "
           "RETURN; END IF; "
           "{3}"
           "END $$",
           put_page, t, kPageSpaceOffset,
           each_entry(fmt::format("INSERT INTO {} (space, key, value) VALUES (s, ek, "
                                  "substring(data FROM at + 9 + klen FOR vlen)) ON CONFLICT "
                                  "(space, key) DO UPDATE SET value = EXCLUDED.value;",
                                  t))),
       {}},
      // erase: the keys in [lower, upper) of space s, loose or in pages. Pages wholly inside
      // go at once; a page across a bound is written anew with the entries it keeps.
      {fmt::format(
           "CREATE OR REPLACE FUNCTION {0}(s smallint, lower bytea, upper bytea) RETURNS void "
           "LANGUAGE plpgsql AS $$ DECLARE ps smallint := s + {2}; r record; data bytea; "
           "kept bytea; first_kept bytea; last_kept bytea; at int; klen int; vlen int; "
           "ek bytea; removed boolean; start bytea; "
           "BEGIN "
           "DELETE FROM {1} WHERE space = s AND key >= lower AND key < upper; "
           "DELETE FROM {1} WHERE space = ps AND key >= lower AND key < upper AND last < upper; "
           "SELECT key INTO start FROM {1} WHERE space = ps AND key < lower ORDER BY key DESC "
           "LIMIT 1; "
           "FOR r IN SELECT key, value, last FROM {1} WHERE space = ps "
           "AND key >= coalesce(start, lower) AND key < upper ORDER BY key FOR UPDATE LOOP "
           "IF r.last < lower THEN CONTINUE; END IF; "
           "data := r.value; kept := ''::bytea; first_kept := NULL; last_kept := NULL; "
           "removed := false; "
           "{3}"
           "IF removed THEN "
           "DELETE FROM {1} WHERE space = ps AND key = r.key; "
           "IF first_kept IS NOT NULL THEN "
           "INSERT INTO {1} (space, key, value, last) VALUES (ps, first_kept, kept, last_kept); "
           "END IF; END IF; "
           "END LOOP; "
           "END $$",
           erase, t, kPageSpaceOffset,
           each_entry("IF ek >= lower AND ek < upper THEN removed := true; "
                      "ELSE kept := kept || substring(data FROM at + 1 FOR 8 + klen + vlen); "
                      "first_kept := coalesce(first_kept, ek); last_kept := ek; END IF;")),
       {}},
  };
}

void PostgresKv::page_statements(const std::vector<const KvOp*>& puts, const PagedSpace& space,
                                 std::vector<pg::Statement>& out) const {
  // By group, in key order, the last put of a key winning.
  std::map<std::string_view, std::map<std::string_view, const std::string*>> groups;
  for (const KvOp* op : puts) {
    groups[group_of(op->key, space.group_nuls)][op->key] = &op->value;
  }
  for (const auto& [group, entries] : groups) {
    if (entries.size() == 1) {  // alone: a loose row
      const auto& [key, value] = *entries.begin();
      out.push_back(
          {put_sql_, pg::Params().integer(space.space).binary(std::string(key)).binary(*value)});
      continue;
    }
    std::string data;
    for (const auto& [key, value] : entries) {
      append_u32(data, key.size());
      data += key;
      append_u32(data, value->size());
      data += *value;
    }
    out.push_back({put_page_sql_, pg::Params()
                                      .integer(space.space)
                                      .binary(std::string(entries.begin()->first))
                                      .binary(std::string(entries.rbegin()->first))
                                      .binary(std::move(data))});
  }
}

pg::Statement PostgresKv::page_erase_statement(const KvOp& op) const {
  if (op.kind == KvOp::Kind::erase) {
    return {page_erase_sql_,
            pg::Params().integer(op.space).binary(op.key).binary(op.key + std::string(1, '\0'))};
  }
  if (op.kind == KvOp::Kind::erase_range) {
    return {page_erase_sql_, pg::Params().integer(op.space).binary(op.key).binary(op.value)};
  }
  throw std::logic_error("PostgresKv: `expect` on a paged key space");
}

std::optional<std::string> PostgresKv::get_paged(const PagedSpace& space, std::string_view key) {
  const pg::Result r = run([&](pg::Connection& c) {
    return c.exec(page_get_sql_,
                  pg::Params()
                      .integer(space.space)
                      .binary(std::string(key))
                      .integer(space.space + kPageSpaceOffset),
                  true);
  });
  for (int row = 0; row < r.rows(); ++row) {
    if (r.get(row, 0) == std::string_view("\0\0\0\0", 4)) return std::string(r.get(row, 1));
  }
  for (int row = 0; row < r.rows(); ++row) {
    if (r.get(row, 0) == std::string_view("\0\0\0\0", 4)) continue;
    for (auto& e : page_entries(r.get(row, 1))) {
      if (e.key == key) return std::move(e.value);
    }
  }
  return std::nullopt;
}

namespace {

/// One ordered source of a paged scan: rows fetched a page of rows at a time, handed out one by
/// one.
struct Source {
  std::deque<Entry> ready;
  bool done = false;
};

}  // namespace

void PostgresKv::scan_paged(const PagedSpace& space, std::string_view lower, std::string_view upper,
                            bool reverse,
                            const std::function<bool(std::string_view, std::string_view)>& visit) {
  const int page_space = space.space + kPageSpaceOffset;
  const auto in_range = [&](const std::string& key) {
    return key >= lower && (upper.empty() || key < upper);
  };
  // Loose rows: as scan() reads them, 8 rows, then 256.
  Source loose;
  std::string loose_from(lower);
  std::string loose_to(upper);
  bool loose_first = true;
  const auto loose_statement = [&] {
    const bool after_from = !reverse && !loose_first;
    std::string sql = scan_sql_ + (after_from ? " AND key > $2" : " AND key >= $2");
    pg::Params params;
    params.integer(space.space).binary(loose_from);
    if (!loose_to.empty()) {
      params.binary(loose_to);
      sql += " AND key < $3";
    }
    sql +=
        fmt::format(" ORDER BY key {} LIMIT {}", reverse ? "DESC" : "ASC", loose_first ? 8 : 256);
    return pg::Statement{std::move(sql), std::move(params), true};
  };
  const auto take_loose = [&](const pg::Result& r) {
    const int limit = loose_first ? 8 : 256;
    for (int row = 0; row < r.rows(); ++row) {
      loose.ready.push_back({std::string(r.get(row, 0)), std::string(r.get(row, 1))});
    }
    if (r.rows() < limit) loose.done = true;
    if (r.rows() > 0) (reverse ? loose_to : loose_from) = std::string(r.get(r.rows() - 1, 0));
    loose_first = false;
  };
  // Pages: ascending, first the page that may hold `lower` (the last one starting at or before
  // it), then those starting after it; descending, those starting before `upper`, down to the
  // first one starting at or before `lower`.
  Source pages;
  std::string page_cursor(reverse ? upper : lower);
  bool page_first = true;
  const auto page_statement = [&] {
    std::string sql = fmt::format("SELECT key, value FROM {} WHERE space = $1", quoted_);
    pg::Params params;
    params.integer(page_space);
    if (reverse) {
      if (!page_cursor.empty()) {
        sql += " AND key < $2";
        params.binary(page_cursor);
      }
      sql += fmt::format(" ORDER BY key DESC LIMIT {}", page_first ? 1 : kPagesPerRead);
    } else if (page_first) {
      sql += " AND key <= $2 ORDER BY key DESC LIMIT 1";
      params.binary(page_cursor);
    } else {
      sql += " AND key > $2";
      params.binary(page_cursor);
      if (!upper.empty()) {
        sql += " AND key < $3";
        params.binary(std::string(upper));
      }
      sql += fmt::format(" ORDER BY key ASC LIMIT {}", kPagesPerRead);
    }
    return pg::Statement{std::move(sql), std::move(params), true};
  };
  const auto take_pages = [&](const pg::Result& r) {
    const bool first_ascending = !reverse && page_first;
    const int limit = page_first ? 1 : kPagesPerRead;
    page_first = false;
    for (int row = 0; row < r.rows(); ++row) {
      std::vector<Entry> entries = page_entries(r.get(row, 1));
      if (reverse) std::reverse(entries.begin(), entries.end());
      for (auto& e : entries) {
        if (in_range(e.key)) pages.ready.push_back(std::move(e));
      }
      const std::string key(r.get(row, 0));
      if (!first_ascending) page_cursor = key;
      if (reverse && !lower.empty() && key <= lower) {
        pages.done = true;
        return;
      }
    }
    if (!first_ascending && r.rows() < limit) pages.done = true;
  };
  // The first reads of both in one round trip.
  {
    std::vector<pg::Statement> first{loose_statement(), page_statement()};
    std::vector<pg::Result> results =
        run([&](pg::Connection& c) { return c.pipeline(first, /*atomic=*/false); });
    take_loose(results[0]);
    take_pages(results[1]);
  }
  const auto refill = [&](Source& source, bool is_loose) {
    while (source.ready.empty() && !source.done) {
      const pg::Statement statement = is_loose ? loose_statement() : page_statement();
      const pg::Result r = run([&](pg::Connection& c) {
        return c.exec(statement.sql, statement.params, /*binary_result=*/true);
      });
      if (is_loose) {
        take_loose(r);
      } else {
        take_pages(r);
      }
    }
  };
  for (;;) {
    refill(loose, true);
    refill(pages, false);
    if (loose.ready.empty() && pages.ready.empty()) return;
    Entry next;
    if (pages.ready.empty()) {
      next = std::move(loose.ready.front());
      loose.ready.pop_front();
    } else if (loose.ready.empty()) {
      next = std::move(pages.ready.front());
      pages.ready.pop_front();
    } else {
      const std::string& a = loose.ready.front().key;
      const std::string& b = pages.ready.front().key;
      const bool loose_first_in_order = reverse ? a >= b : a <= b;
      if (a == b) pages.ready.pop_front();  // a loose row overrides a page's entry
      if (loose_first_in_order) {
        next = std::move(loose.ready.front());
        loose.ready.pop_front();
      } else {
        next = std::move(pages.ready.front());
        pages.ready.pop_front();
      }
    }
    if (!visit(next.key, next.value)) return;
  }
}

}  // namespace sg::detail
