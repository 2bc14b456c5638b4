// SPDX-License-Identifier: MIT
#pragma once

// The channels of a checkpoint besides the state's fields, and the special channels of pending
// writes: the names the executor writes and the savers and tools read (docs/checkpoint-format.md).
//
// Checkpoint channels: one per state field (its name); "branch:to:<node>" for each node
// triggered for the next superstep; "__pregel_tasks" for pending Sends; "join:<a>+<b>:<target>"
// for the sources a waiting edge has seen; "__start__" for the input of an input checkpoint.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sg {

/// The input of an input checkpoint (START applies it next).
inline constexpr std::string_view kStartChannel = "__start__";
/// The Sends that run in the next superstep: [{"node", "arg"}, ...].
inline constexpr std::string_view kTasksChannel = "__pregel_tasks";
/// "branch:to:<node>": the node runs in the next superstep.
inline constexpr std::string_view kBranchPrefix = "branch:to:";
/// "join:<a>+<b>:<target>": the sources of a waiting edge that have finished.
inline constexpr std::string_view kJoinPrefix = "join:";

/// Pending-write channels: a task's error, its interrupts, the resume values it used.
inline constexpr std::string_view kErrorChannel = "__error__";
inline constexpr std::string_view kInterruptChannel = "__interrupt__";
inline constexpr std::string_view kResumeChannel = "__resume__";
/// A task's routes (node names, or {"node", "arg"} for a Send).
inline constexpr std::string_view kGotoWrite = "__goto__";
/// LangGraph's NO_WRITES: the mark of a task that finished without writing anything.
inline constexpr std::string_view kNoWrites = "__no_writes__";
/// A breakpoint the run has passed.
inline constexpr std::string_view kBreakpointWrite = "__breakpoint__";
/// The task id of writes that belong to the run rather than a task (a resuming Command's).
inline constexpr std::string_view kRunTaskId = "00000000-0000-0000-0000-000000000000";

/// The trigger channel of `node`: "branch:to:<node>". Thread-safe.
[[nodiscard]] std::string branch_channel(std::string_view node);
/// The node a trigger channel names, or nullopt for another channel.
[[nodiscard]] constexpr std::optional<std::string_view> triggered_node(
    std::string_view channel) noexcept {
  if (!channel.starts_with(kBranchPrefix)) return std::nullopt;
  return channel.substr(kBranchPrefix.size());
}
/// The channel of a waiting edge from `sources` to `target`. Thread-safe.
[[nodiscard]] std::string join_channel(std::span<const std::string> sources,
                                       std::string_view target);
/// True for the channels that say what runs next (triggers, joins, Sends, the input): they are
/// not state fields.
[[nodiscard]] constexpr bool is_scheduling_channel(std::string_view channel) noexcept {
  return channel.starts_with(kBranchPrefix) || channel.starts_with(kJoinPrefix) ||
         channel == kTasksChannel || channel == kStartChannel;
}

/// True for a pending write that shows its task finished (anything but an error, interrupts or
/// resume values; LangGraph's rule).
[[nodiscard]] constexpr bool is_finished_write(std::string_view channel) noexcept {
  return channel != kErrorChannel && channel != kInterruptChannel && channel != kResumeChannel;
}

/// The write index of a special channel (negative; upserted), or nullopt for a regular channel
/// (indexed by position; insert-if-absent). LangGraph's WRITES_IDX_MAP.
[[nodiscard]] std::optional<int> special_write_index(std::string_view channel) noexcept;

}  // namespace sg
