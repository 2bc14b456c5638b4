// SPDX-License-Identifier: MIT
#pragma once

// stategraph.json: what `stategraph serve --config FILE` serves and how (docs/deploy.md).

#include <stategraph/server/server.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sg {

/// One served graph: its id, and where it comes from.
struct ConfiguredGraph {
  std::string id;
  /// The graph library (an absolute path); empty for a built-in graph.
  std::string library;
  /// The graph's name in its library, or the built-in graph's name.
  std::string name;
};

/// A stategraph.json, read.
struct ServeConfig {
  std::vector<ConfiguredGraph> graphs;
  /// Environment variables to set (those already set keep their value).
  std::map<std::string, std::string> env;
  /// http.cors, when given.
  std::optional<CorsOptions> cors;
  /// http.public_paths, when given.
  std::optional<std::vector<std::string>> public_paths;
  /// checkpointer.ttl, when given: threads' time to live.
  std::optional<ThreadTtlOptions> thread_ttl;
  /// store.ttl, when given: the store's TTL settings and how often expired items are swept.
  struct StoreTtl {
    TtlConfig ttl;
    std::chrono::milliseconds sweep_interval{std::chrono::hours(1)};
  };
  std::optional<StoreTtl> store_ttl;
  /// store.index, when given: semantic search of the store's items.
  struct StoreIndex {
    /// "openai:MODEL" (an OpenAI-compatible server's embeddings, OPENAI_BASE_URL and
    /// OPENAI_API_KEY) or "hashed" (HashedNgramEmbeddings: offline, lexical).
    std::string embed;
    std::size_t dims = 0;
    std::vector<std::string> fields{"$"};
  };
  std::optional<StoreIndex> store_index;
  /// auth.path, an absolute path: the auth library; empty when none.
  std::string auth_library;
  /// mcpServers, when given, as `{"mcpServers": ...}` (parse_mcp_config's shape, checked): the
  /// MCP servers whose tools the served agents get (ServerOptions::mcp_tools).
  nlohmann::json mcp{};
};

/// Reads `path`. Relative paths in it are taken from the file's directory. Throws sg::Error
/// (kInvalidArgument) naming the file and the field for a missing or malformed file, an unknown
/// or unsupported field, or an env file that cannot be read.
[[nodiscard]] ServeConfig read_serve_config(const std::filesystem::path& path);

/// Sets `env`'s variables that the environment does not have yet.
void apply_env(const std::map<std::string, std::string>& env);

/// The server's API key from the environment: STATEGRAPH_API_KEY, or the first line of the file
/// STATEGRAPH_API_KEY_FILE names (a mounted secret, a systemd credential); "" for neither.
/// Throws sg::Error (kInvalidArgument) when both are set, or the file cannot be read or holds no
/// key; the message names the file, never its content.
[[nodiscard]] std::string api_key_from_environment();

}  // namespace sg
