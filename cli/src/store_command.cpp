// SPDX-License-Identifier: MIT
// `stategraph store <op>`: the long-term memory store in a RocksDB directory (RocksDbStore).
// A namespace on the command line is its labels joined by ".".
#include <stategraph/core/error.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli.hpp"

namespace sg::cli {
namespace {

using nlohmann::json;

struct StoreSettings {
  std::string db;
  std::string ns;
  std::string key;
  std::string value;
  std::string query;
  std::string filter;
  std::string prefix;
  std::string suffix;
  std::optional<double> ttl;
  std::optional<std::size_t> max_depth;
  std::size_t limit = 10;      // search
  std::size_t ns_limit = 100;  // namespaces
  std::size_t offset = 0;
  bool json = false;
};

/// Semantic search from the command line uses the built-in lexical embedder on "$".
std::shared_ptr<RocksDbStore> open_store(const StoreSettings& s, bool must_exist) {
  std::error_code ec;
  if (must_exist && !std::filesystem::is_directory(s.db, ec)) {
    throw Error(errc::kInvalidArgument, "no store database at '" + s.db + "'");
  }
  RocksDbStoreOptions options;
  options.index = IndexConfig{std::make_shared<HashedNgramEmbeddings>(384), {"$"}, 20000};
  return RocksDbStore::open(s.db, std::move(options));
}

json parse_json(const std::string& text, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, out_of_range (1e999)
    throw Error(errc::kInvalidArgument, fmt::format("{} is not valid JSON: {}", what, e.what()));
  }
}

void print_item(const Item& item, std::optional<double> score) {
  std::cout << fmt::format("{} {}", join_namespace(item.ns), item.key);
  if (score) std::cout << fmt::format("  score {:.3f}", *score);
  std::cout << fmt::format("  updated {}\n  {}\n", iso_time(item.updated_at), item.value.dump());
}

void put_item(const StoreSettings& s) {
  json value = parse_json(s.value, "--value");
  auto store = open_store(s, false);
  store->put(split_namespace(s.ns), s.key, std::move(value), s.ttl);
  if (s.json) return write_json({{"namespace", split_namespace(s.ns)}, {"key", s.key}}, -1);
  std::cout << fmt::format("stored {} {}\n", s.ns, s.key);
}

void get_item(const StoreSettings& s) {
  auto store = open_store(s, true);
  const auto item = store->get(split_namespace(s.ns), s.key);
  if (!item) {
    throw Error(errc::kInvalidArgument, fmt::format("no item '{}' in namespace '{}'", s.key, s.ns));
  }
  if (s.json) return write_json(to_json(*item), -1);
  print_item(*item, std::nullopt);
}

void delete_item(const StoreSettings& s) {
  auto store = open_store(s, true);
  const Namespace ns = split_namespace(s.ns);
  if (!store->get(ns, s.key, false)) {
    throw Error(errc::kInvalidArgument, fmt::format("no item '{}' in namespace '{}'", s.key, s.ns));
  }
  store->remove(ns, s.key);
  if (s.json) return write_json({{"deleted", {{"namespace", ns}, {"key", s.key}}}}, -1);
  std::cout << fmt::format("deleted {} {}\n", s.ns, s.key);
}

void search_items(const StoreSettings& s) {
  SearchOp op;
  op.prefix = split_namespace(s.ns);
  if (!s.filter.empty()) op.filter = parse_json(s.filter, "--filter");
  if (!s.query.empty()) op.query = s.query;
  op.limit = s.limit;
  op.offset = s.offset;
  auto store = open_store(s, true);
  const auto hits = store->search(std::move(op));
  if (s.json) {
    json out = json::array();
    for (const auto& h : hits) out.push_back(to_json(h));
    return write_json(out, -1);
  }
  if (hits.empty()) std::cout << "no items\n";
  for (const auto& h : hits) print_item(h.item, h.score);
}

void list_spaces(const StoreSettings& s) {
  ListNamespacesOp op;
  if (!s.prefix.empty())
    op.match.push_back({MatchCondition::Kind::prefix, split_namespace(s.prefix)});
  if (!s.suffix.empty())
    op.match.push_back({MatchCondition::Kind::suffix, split_namespace(s.suffix)});
  op.max_depth = s.max_depth;
  op.limit = s.ns_limit;
  op.offset = s.offset;
  auto store = open_store(s, true);
  const auto spaces = store->list_namespaces(std::move(op));
  if (s.json) return write_json(spaces, -1);
  for (const auto& ns : spaces) std::cout << join_namespace(ns) << '\n';
}

}  // namespace

void add_store_command(CLI::App& app, Action& action) {
  auto s = std::make_shared<StoreSettings>();
  auto* store = app.add_subcommand(
      "store", "The long-term memory store in a RocksDB directory (namespaces as a.b.c)");
  store->require_subcommand(1);
  auto common = [&s](CLI::App* cmd) {
    cmd->add_option("--db", s->db, "Store database directory")->required();
    cmd->add_flag("--json", s->json, "JSON output for scripts");
  };

  auto* put = store->add_subcommand("put", "Stores a JSON object under a namespace and key");
  common(put);
  put->add_option("--namespace", s->ns, "Namespace, labels joined by '.'")->required();
  put->add_option("--key", s->key, "Key")->required();
  put->add_option("--value", s->value, "A JSON object")->required();
  put->add_option("--ttl", s->ttl, "Minutes until the item expires");
  put->callback([s, &action] { action = [s] { put_item(*s); }; });

  auto* get = store->add_subcommand("get", "Prints an item");
  common(get);
  get->add_option("--namespace", s->ns, "Namespace")->required();
  get->add_option("--key", s->key, "Key")->required();
  get->callback([s, &action] { action = [s] { get_item(*s); }; });

  auto* del = store->add_subcommand("delete", "Deletes an item");
  common(del);
  del->add_option("--namespace", s->ns, "Namespace")->required();
  del->add_option("--key", s->key, "Key")->required();
  del->callback([s, &action] { action = [s] { delete_item(*s); }; });

  auto* search = store->add_subcommand(
      "search", "Items under a namespace prefix; --query ranks by (lexical) similarity");
  common(search);
  search->add_option("--namespace", s->ns, "Namespace prefix (default: everything)");
  search->add_option("--query", s->query, "Text to rank by");
  search->add_option("--filter", s->filter, R"(JSON filter, e.g. {"kind": "note"})");
  search->add_option("--limit", s->limit, "At most this many (default 10)");
  search->add_option("--offset", s->offset, "Skip this many");
  search->callback([s, &action] { action = [s] { search_items(*s); }; });

  auto* spaces = store->add_subcommand("namespaces", "Distinct namespaces, sorted");
  common(spaces);
  spaces->add_option("--prefix", s->prefix, "Only namespaces starting with this ('*' any label)");
  spaces->add_option("--suffix", s->suffix, "Only namespaces ending with this");
  spaces->add_option("--max-depth", s->max_depth, "Truncate namespaces to this many labels");
  spaces->add_option("--limit", s->ns_limit, "At most this many (default 100)");
  spaces->add_option("--offset", s->offset, "Skip this many");
  spaces->callback([s, &action] { action = [s] { list_spaces(*s); }; });
}

}  // namespace sg::cli
