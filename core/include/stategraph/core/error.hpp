// SPDX-License-Identifier: MIT
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sg {

/// Stable error codes carried by every sg::Error (`module.reason`).
namespace errc {
inline constexpr std::string_view kInvalidMessage = "message.invalid";
inline constexpr std::string_view kUnknownMessageId = "message.unknown_id";
inline constexpr std::string_view kInvalidUpdate = "state.invalid_update";
inline constexpr std::string_view kInvalidArgument = "argument.invalid";
inline constexpr std::string_view kInvalidGraph = "graph.invalid";
inline constexpr std::string_view kRecursionLimit = "run.recursion_limit";
inline constexpr std::string_view kNodeFailed = "run.node_failed";
inline constexpr std::string_view kNodeTimeout = "run.node_timeout";
inline constexpr std::string_view kCancelled = "run.cancelled";
inline constexpr std::string_view kInvalidRun = "run.invalid";
inline constexpr std::string_view kEmptyInput = "run.empty_input";
}  // namespace errc

/// Root of every exception stategraph throws. `code()` is a stable identifier such as
/// "message.invalid"; `what()` is a human-readable sentence naming what is wrong.
/// Thread-safe to read from any thread once constructed.
class Error : public std::runtime_error {
 public:
  Error(std::string_view code, const std::string& message)
      : std::runtime_error(message), code_(code) {}

  /// The stable error code, e.g. "state.invalid_update".
  [[nodiscard]] const std::string& code() const noexcept { return code_; }

 private:
  std::string code_;
};

/// A state update that cannot be applied: a last-value field written twice in one superstep,
/// two overwrites of one field in a step, or a RemoveMessage for an id that does not exist.
/// Code "state.invalid_update" (or "message.unknown_id" for the last case).
class InvalidUpdateError : public Error {
 public:
  explicit InvalidUpdateError(const std::string& message,
                              std::string_view code = errc::kInvalidUpdate)
      : Error(code, message) {}
};

/// The graph cannot be compiled: no entry point, an edge to or from an unknown node, a
/// duplicate or reserved name, an unreachable node, an unknown node in an interrupt list, a node
/// that can never finish. Code "graph.invalid".
class GraphValidationError : public Error {
 public:
  explicit GraphValidationError(const std::string& message) : Error(errc::kInvalidGraph, message) {}
};

/// A run took more supersteps than its recursion limit. Code "run.recursion_limit".
class GraphRecursionError : public Error {
 public:
  explicit GraphRecursionError(const std::string& message)
      : Error(errc::kRecursionLimit, message) {}
};

/// A node threw. The message names the node and the superstep; `cause()` is the node's exception
/// (also reachable with std::rethrow_if_nested). Code "run.node_failed".
class NodeError : public Error, public std::nested_exception {
 public:
  NodeError(const std::string& message, std::string node, int step)
      : Error(errc::kNodeFailed, message), node_(std::move(node)), step_(step) {}

  /// The node that failed.
  [[nodiscard]] const std::string& node() const noexcept { return node_; }
  /// The superstep it failed in.
  [[nodiscard]] int step() const noexcept { return step_; }
  /// The exception the node threw.
  [[nodiscard]] std::exception_ptr cause() const noexcept { return nested_ptr(); }

 private:
  std::string node_;
  int step_;
};

/// A node attempt ran longer than its timeout. Subject to the node's retry policy. Code
/// "run.node_timeout".
class NodeTimeoutError : public Error {
 public:
  explicit NodeTimeoutError(const std::string& message) : Error(errc::kNodeTimeout, message) {}
};

/// The run was cancelled through its CancellationToken. Code "run.cancelled".
class CancelledError : public Error {
 public:
  explicit CancelledError(const std::string& message = "the run was cancelled")
      : Error(errc::kCancelled, message) {}
};

/// A run was given nothing to do: an empty Command, or no input on a thread without a
/// checkpoint (LangGraph's EmptyInputError). Code "run.empty_input".
class EmptyInputError : public Error {
 public:
  explicit EmptyInputError(const std::string& message) : Error(errc::kEmptyInput, message) {}
};

}  // namespace sg
