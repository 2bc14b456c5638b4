// SPDX-License-Identifier: MIT
#pragma once

// A compiled graph's data, and what a run is given: the stream it writes to and the request it
// starts from. Internal to stategraph.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/detail/field_codec.hpp>
#include <stategraph/core/detail/recent_threads.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sg::detail {

/// A node as the builder keeps it.
template <State S>
struct NodeEntry {
  NodeFunction<S> fn;
  AsyncNodeFunction<S> async_fn;  // instead of fn for a coroutine node
  NodeOptions options;
  ArgReader read_arg;  // rebuilds a Send argument from a checkpoint
};

/// A thread as a run left it: its latest checkpoint's id and what restoring it would give.
template <State S>
struct FinishedThread {
  std::string checkpoint_id;
  S state;
  FieldCaches<S> caches;
  ChannelVersions versions;
  std::map<std::string, ChannelVersions> versions_seen;
  int step = -1;
};

/// A compiled graph's immutable data, shared by its runs (and by abandoned timed-out tasks).
template <State S>
struct GraphDef : GraphCore {
  std::vector<NodeFunction<S>> fns;             // by node id
  std::vector<AsyncNodeFunction<S>> async_fns;  // by node id: coroutine nodes
  std::vector<Router<S>> routers;               // by branch index
  /// Threads recently finished by runs with options.checkpointer (CompileOptions::recent_threads).
  std::unique_ptr<RecentThreads<FinishedThread<S>>> recent;
  /// The compiled graphs added as nodes (same state type; by node name), and the names of those
  /// with another state type.
  std::map<std::string, std::shared_ptr<const GraphDef<S>>> subgraphs;
  std::set<std::string> foreign_subgraphs;
};

template <State S>
using EventSink = std::function<void(StreamEvent<S>&&)>;

/// What a caller of stream() asked for. The sink runs on the thread that runs the graph.
template <State S>
struct StreamSpec : StreamTarget {
  EventSink<S> sink{};
};

/// What a run starts from: new input (applied by the START task), or the thread's checkpoint
/// (resume / continue), optionally with a Command's resume value, update and gotos.
/// `continue_saved`: a subgraph of a resumed parent step continues its checkpoint if it has one,
/// and otherwise starts from `input`.
template <State S>
struct RunRequest {
  std::optional<Update<S>> input{};
  std::optional<nlohmann::json> resume{};
  std::optional<Update<S>> update{};
  std::vector<Goto> go_to{};
  bool command = false;
  bool continue_saved = false;
  /// Load the namespace's newest checkpoint older than this id and apply `input` on top (a
  /// subgraph's first run while the root replays an older checkpoint).
  std::optional<std::string> load_before{};
};

}  // namespace sg::detail
