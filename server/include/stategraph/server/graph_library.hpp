// SPDX-License-Identifier: MIT
#pragma once

// Graph libraries: shared libraries that add graphs to `stategraph serve` at start-up (the
// "graphs" of stategraph.json, docs/deploy.md). A library defines its graphs in one block,
//
//   SG_GRAPH_LIBRARY(registry) {
//     sg::StateGraph<sg::MessagesState> graph;
//     ...
//     registry.add("agent", sg::served_graph(std::move(graph)));
//   }
//
// and is built with the CMake package's stategraph_add_graph_library(NAME SOURCES...). The
// library uses the stategraph code of the program that loads it, so both must come from the
// same stategraph version and compiler: kGraphLibraryAbi tells.

#include <stategraph/core/error.hpp>
#include <stategraph/core/version.hpp>
#include <stategraph/server/served_graph.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace sg {

/// The ABI of graph libraries: stategraph's version, the compiler's major version and the C++
/// library's string ABI. A server loads only libraries built with its own value.
inline constexpr std::uint32_t kGraphLibraryAbi =
    (static_cast<std::uint32_t>(SG_VERSION_MAJOR) << 24U) |
    (static_cast<std::uint32_t>(SG_VERSION_MINOR) << 16U) |
    (static_cast<std::uint32_t>(SG_VERSION_PATCH) << 8U) |
    ((static_cast<std::uint32_t>(__GNUC__) & 0x7FU) << 1U) | (_GLIBCXX_USE_CXX11_ABI ? 1U : 0U);

/// Where a graph library adds its graphs. Not thread-safe: a library registers on one thread.
class GraphRegistry {
 public:
  /// Adds `graph` under `name`. Throws sg::Error (kInvalidArgument) for an empty name, a name
  /// already added, or a null graph.
  void add(const std::string& name, std::shared_ptr<const ServedGraph> graph) {
    if (name.empty()) throw Error(errc::kInvalidArgument, "a graph needs a name");
    if (!graph) throw Error(errc::kInvalidArgument, "graph '" + name + "' is null");
    if (!graphs_.emplace(name, std::move(graph)).second) {
      throw Error(errc::kInvalidArgument, "graph '" + name + "' is added twice");
    }
  }
  /// The graphs added, by name.
  [[nodiscard]] const std::map<std::string, std::shared_ptr<const ServedGraph>>& graphs()
      const noexcept {
    return graphs_;
  }

 private:
  std::map<std::string, std::shared_ptr<const ServedGraph>> graphs_;
};

/// Loads the graph library at `path` (dlopen; it stays loaded for the life of the process) and
/// returns the graphs it registers. Throws sg::Error (kInvalidArgument) when the file cannot be
/// loaded, has no SG_GRAPH_LIBRARY block, was built for another kGraphLibraryAbi, or its
/// registration throws (the message says which library). Thread-safe.
[[nodiscard]] std::map<std::string, std::shared_ptr<const ServedGraph>> load_graph_library(
    const std::string& path);

}  // namespace sg

/// The name of a graph library's registration function.
#define SG_GRAPH_LIBRARY_SYMBOL "stategraph_register_graphs"

/// Defines a graph library's registration: the block that follows gets `registry_name`, a
/// sg::GraphRegistry&, to add graphs to. The exported function registers only when the loading
/// server's ABI equals the library's, and returns the library's ABI either way (exceptions of
/// the block reach the server).
#define SG_GRAPH_LIBRARY(registry_name)                                                       \
  static void stategraph_graphs_block(::sg::GraphRegistry& registry_name);                    \
  extern "C" __attribute__((visibility("default"))) std::uint32_t stategraph_register_graphs( \
      std::uint32_t server_abi, ::sg::GraphRegistry* registry) {                              \
    if (server_abi == ::sg::kGraphLibraryAbi) stategraph_graphs_block(*registry);             \
    return ::sg::kGraphLibraryAbi;                                                            \
  }                                                                                           \
  static void stategraph_graphs_block(::sg::GraphRegistry& registry_name)
