// SPDX-License-Identifier: MIT
#pragma once
// Tools a model can call: a name, a description, a JSON schema of the arguments and a function.
//
//   struct Add {
//     double a = 0;
//     double b = 0;
//     static constexpr auto schema() {
//       return std::tuple{sg::field<"a">(&Add::a), sg::field<"b">(&Add::b)};
//     }
//   };
//   sg::Tool add = sg::make_tool<Add>("add", "Adds two numbers.",
//                                     [](const Add& x) { return x.a + x.b; });
//
// A tool may be asynchronous (Tool::AsyncFn, a coroutine, as MCP tools are): ToolNode awaits it
// without holding a thread while it waits.

#include <stategraph/core/context.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/type_schema.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/models/chat_model.hpp>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <any>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg {

namespace errc {
/// A tool call's arguments do not match the tool's arguments (make_tool's parsing).
inline constexpr std::string_view kToolArguments = "tool.invalid_arguments";
}  // namespace errc

class Store;

/// What a tool gets besides its arguments: the call, the graph state of the node running it
/// (LangGraph's InjectedState), the store (InjectedStore) and the node's Context. Any may be
/// null outside a graph. Valid during the tool call.
struct ToolRuntime {
  const ToolCall* call = nullptr;
  const std::any* state = nullptr;  // holds a `const S*`
  Store* store = nullptr;
  Context* context = nullptr;

  /// The graph state as S. Throws sg::Error (errc::kInvalidArgument) when the tool runs
  /// without a state or in a graph of another state type.
  template <class S>
  [[nodiscard]] const S& state_as() const {
    const S* const* typed = state ? std::any_cast<const S*>(state) : nullptr;
    if (!typed) throw Error(errc::kInvalidArgument, "this tool needs the graph state of its node");
    return **typed;
  }
};

/// What a tool produced: `content` for its ToolMessage (a string as it is, other JSON as text),
/// or a whole `message`, or a `Command<S>` (held in `command`) that `ToolNode<S>` returns to update
/// the state (it should carry the ToolMessage answering the call, as in LangGraph).
struct ToolResult {
  nlohmann::json content{};
  std::optional<Message> message{};
  std::any command{};
};

/// A tool: what a model sees (spec()) and the function that runs it, either a plain function
/// (Fn) or a coroutine (AsyncFn) that holds no thread while it waits. Copyable; calls are
/// thread-safe when the function is.
class Tool {
 public:
  using Fn = std::function<ToolResult(const nlohmann::json& args, const ToolRuntime& runtime)>;
  /// The arguments and the runtime are the coroutine's own copies; what the runtime points to
  /// outlives the call.
  using AsyncFn =
      std::function<boost::asio::awaitable<ToolResult>(nlohmann::json args, ToolRuntime runtime)>;

  /// Throws sg::Error (errc::kInvalidArgument) for an empty name, a schema that is not a JSON
  /// object, or no function.
  Tool(std::string name, std::string description, nlohmann::json parameters, Fn fn);
  /// An asynchronous tool; throws as the other constructor.
  Tool(std::string name, std::string description, nlohmann::json parameters, AsyncFn fn);

  [[nodiscard]] const std::string& name() const noexcept { return spec_.name; }
  [[nodiscard]] const ToolSpec& spec() const noexcept { return spec_; }
  /// True for a tool made from an AsyncFn.
  [[nodiscard]] bool is_async() const noexcept { return static_cast<bool>(async_fn_); }
  /// Runs the tool on the calling thread (an asynchronous one on a private io_context until it
  /// ends). Throws what the function throws.
  [[nodiscard]] ToolResult call(const nlohmann::json& args, const ToolRuntime& runtime) const;
  /// Runs the tool on the caller's executor (a plain one inline, blocking it while it runs).
  /// Throws what the function throws.
  [[nodiscard]] boost::asio::awaitable<ToolResult> acall(nlohmann::json args,
                                                         ToolRuntime runtime) const;

 private:
  ToolSpec spec_;
  Fn fn_{};
  AsyncFn async_fn_{};
};

/// The tool message answering `call`: `content`, the call's id and tool name, and `status`
/// ("success" or "error"). Thread-safe.
[[nodiscard]] Message tool_answer(Content content, const ToolCall& call,
                                  std::string status = "success");

/// The specs of `tools`, for ChatOptions::tools.
[[nodiscard]] std::vector<ToolSpec> tool_specs(const std::vector<Tool>& tools);

namespace detail {

/// A tool function's return value as a ToolResult.
template <class R>
ToolResult to_tool_result(R&& value) {
  using V = std::remove_cvref_t<R>;
  ToolResult out;
  if constexpr (std::is_same_v<V, ToolResult>) {
    return std::forward<R>(value);
  } else if constexpr (std::is_same_v<V, Message>) {
    out.message = std::forward<R>(value);
  } else if constexpr (requires {
                         value.update;
                         value.go_to;
                         value.resume;
                       }) {
    out.command = std::forward<R>(value);  // a Command<S>
  } else {
    out.content = nlohmann::json(std::forward<R>(value));
  }
  return out;
}

/// Parses a tool's arguments into Args; throws sg::Error (errc::kToolArguments) naming a
/// missing required argument or a bad one.
template <State Args>
Args parse_tool_args(const std::string& tool, const nlohmann::json& args) {
  if (args.is_null()) return parse_tool_args<Args>(tool, nlohmann::json::object());
  if (!args.is_object())
    throw Error(errc::kToolArguments, "tool '" + tool + "' takes a JSON object of arguments");
  for_each_field<Args>([&](auto i) {
    using V = typename field_t<Args, i>::value_type;
    const std::string name(field_t<Args, i>::name);
    if (!IsOptional<V>::value && !args.contains(name))
      throw Error(errc::kToolArguments, "tool '" + tool + "': missing argument '" + name + "'");
  });
  try {
    return state_from_json<Args>(args);
  } catch (const Error& e) {
    throw Error(errc::kToolArguments, "tool '" + tool + "': " + e.what());
  }
}

}  // namespace detail

/// A tool taking the struct `Args` (a schema() of sg::field<"name">s, like a graph state; fields
/// of type std::optional are not required). Its JSON schema comes from the fields' types
/// (`descriptions` adds a description per argument name). `fn` is called as fn(args) or
/// fn(args, runtime) and returns a string, any JSON value, a Message, a ToolResult or a
/// `Command<S>`. Bad arguments throw sg::Error (errc::kToolArguments) naming them.
template <State Args, class F>
[[nodiscard]] Tool make_tool(std::string name, std::string description, F fn,
                             const std::map<std::string, std::string>& descriptions = {}) {
  nlohmann::json schema = json_schema_of<Args>();
  for (const auto& [arg, text] : descriptions) {
    if (!schema["properties"].contains(arg))
      throw Error(errc::kInvalidArgument,
                  "tool '" + name + "': a description for unknown argument '" + arg + "'");
    schema["properties"][arg]["description"] = text;
  }
  const std::string tool_name = name;
  Tool::Fn call = [fn = std::move(fn), tool_name](const nlohmann::json& args,
                                                  const ToolRuntime& runtime) -> ToolResult {
    Args parsed = detail::parse_tool_args<Args>(tool_name, args);
    if constexpr (std::is_invocable_v<const F&, const Args&, const ToolRuntime&>) {
      return detail::to_tool_result(fn(parsed, runtime));
    } else {
      return detail::to_tool_result(fn(parsed));
    }
  };
  return Tool(std::move(name), std::move(description), std::move(schema), std::move(call));
}

}  // namespace sg
