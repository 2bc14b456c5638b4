// SPDX-License-Identifier: MIT
// /mcp: every assistant as a tool of the Model Context Protocol over Streamable HTTP, as the Agent
// Server exposes them. Stateless: no session, one JSON-RPC message per POST, each answered with
// application/json (GET is a 405: no server-sent event stream; DELETE has no session to end, a
// 404). A tools/call creates a run as POST /runs/wait does (/threads/{id}/runs/wait with a
// thread_id argument), and its response follows the run as a wait's does (server.cpp): nothing
// holds a thread while the run goes on.
#include "mcp.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/core/version.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>
#include <vector>

#include "api.hpp"

namespace sg::server {

namespace mcp {
namespace {

using nlohmann::json;

json error_message(const json& id, int code, std::string_view message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json result_message(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

/// A JSON-RPC error answering the request `id`, as a 200 response.
ApiResponse rpc_error(const json& id, int code, std::string_view message) {
  return json_response(error_message(id, code, message));
}

/// A message refused before it is answered: `status` with a JSON-RPC error without an id.
ApiResponse refused(unsigned status, int code, std::string_view message) {
  return json_response(error_message(nullptr, code, message), status);
}

/// 202 without a body: a notification or a response taken.
ApiResponse accepted() {
  ApiResponse response;
  response.status = 202;
  response.content_type.clear();
  return response;
}

/// A tools/call result whose one content is `text`; `is_error`: the tool failed.
json tool_result(std::string text, bool is_error) {
  json result = {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})}};
  if (is_error) result["isError"] = true;
  return result;
}

/// The media type of a Content-Type or of one entry of an Accept header: lower-case, without
/// parameters and spaces.
std::string media_type(std::string_view value) {
  value = value.substr(0, value.find(';'));
  std::string out;
  for (const char c : value) {
    if (std::isspace(static_cast<unsigned char>(c)) == 0) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

/// Whether an Accept header lets the answer be JSON (no header: anything goes).
bool accepts_json(std::string_view accept) {
  if (accept.empty()) return true;
  while (!accept.empty()) {
    const std::size_t comma = accept.find(',');
    const std::string type = media_type(accept.substr(0, comma));
    if (type == "application/json" || type == "application/*" || type == "*/*") return true;
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
  }
  return false;
}

/// Whether a tool of `graph` whose input schema is `input_schema` takes a `thread_id` argument:
/// its graph keeps threads, and its input has no field of that name.
bool takes_thread_id(const json& input_schema, const GraphEntry& graph) {
  if (graph.graph->checkpointer() == nullptr) return false;
  const auto properties = input_schema.find("properties");
  return properties == input_schema.end() || !properties->is_object() ||
         !properties->contains("thread_id");
}

/// The graph's input schema as a tool's inputSchema (an object schema).
json input_schema_of(const GraphEntry& graph) {
  json schema = graph.graph->schemas().value("input_schema", json());
  if (!schema.is_object()) schema = json::object();
  schema["type"] = "object";
  return schema;
}

/// The MCP tool of `assistant`, which runs `graph`.
json tool_of(const json& assistant, const GraphEntry& graph) {
  json schema = input_schema_of(graph);
  if (takes_thread_id(schema, graph)) {
    schema["properties"]["thread_id"] = {
        {"type", "string"},
        {"description",
         "A thread's id (a UUID) to run on, kept with its state (created when it does not "
         "exist). Without it the run is stateless."}};
  }
  const auto description = assistant.find("description");
  return {{"name", assistant["name"]},
          {"description",
           description != assistant.end() && description->is_string() ? *description : json("")},
          {"inputSchema", std::move(schema)}};
}

/// An assistant and the served graph it runs.
using ServedAssistant = std::pair<json, const GraphEntry*>;

/// Of `assistants`, those whose graph is served, with it.
std::vector<ServedAssistant> served_assistants(std::vector<json> assistants,
                                               const std::vector<GraphEntry>& graphs) {
  std::vector<ServedAssistant> out;
  for (auto& assistant : assistants) {
    const auto graph = std::find_if(graphs.begin(), graphs.end(), [&](const GraphEntry& g) {
      return assistant["graph_id"] == g.graph_id;
    });
    if (graph != graphs.end()) out.emplace_back(std::move(assistant), &*graph);
  }
  return out;
}

/// The JSON-RPC response of a tools/call to the run's `result` (the body of a runs/wait): its
/// values as JSON text, or a tool error for a failed or interrupted run.
std::string call_response(const json& id, const std::string& thread_id, std::string result) {
  json answer;
  const bool marked = result.find("\"__error__\"") != std::string::npos ||
                      result.find("\"__interrupt__\"") != std::string::npos;
  const json values = marked ? json::parse(result, nullptr, false) : json();
  if (marked && values.is_object() && values.contains("__error__")) {
    const json& error = values["__error__"];
    answer = tool_result(
        fmt::format("{}: {}", error.value("error", "Error"), error.value("message", std::string())),
        true);
  } else if (marked && values.is_object() && values.contains("__interrupt__")) {
    const std::string interrupts =
        values["__interrupt__"].dump(-1, ' ', false, json::error_handler_t::replace);
    answer = tool_result(
        thread_id.empty()
            ? fmt::format("the run was interrupted, waiting for input a stateless run cannot "
                          "get (give a thread_id to resume it later): {}",
                          interrupts)
            : fmt::format("the run was interrupted on thread {}, waiting for input (resume it "
                          "with a run of command {{\"resume\": ...}} on that thread): {}",
                          thread_id, interrupts),
        true);
  } else {
    answer = tool_result(std::move(result), false);
  }
  return result_message(id, std::move(answer)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace
}  // namespace mcp

ApiResponse Api::route_mcp(const ApiRequest& request) const {
  using nlohmann::json;
  if (request.method == "DELETE") {
    return mcp::refused(404, mcp::kInvalidRequest,
                        "this MCP server keeps no sessions: there is none to end");
  }
  if (!request.content_type.empty() &&
      mcp::media_type(request.content_type) != "application/json") {
    return mcp::refused(
        415, mcp::kInvalidRequest,
        fmt::format("Content-Type must be application/json, got '{}'", request.content_type));
  }
  if (!mcp::accepts_json(request.accept)) {
    return mcp::refused(406, mcp::kInvalidRequest,
                        fmt::format("the Accept header must allow application/json (every "
                                    "answer of this server is JSON), got '{}'",
                                    request.accept));
  }
  const json message = json::parse(request.body, nullptr, false);
  if (message.is_discarded()) {
    return mcp::refused(400, mcp::kParseError, "parse error: the body is not JSON");
  }
  if (message.is_array()) {
    return mcp::refused(400, mcp::kInvalidRequest,
                        "batches are not supported: send one JSON-RPC message per request");
  }
  if (!message.is_object()) {
    return mcp::refused(
        400, mcp::kInvalidRequest,
        fmt::format("a JSON-RPC message is an object, got {}", message.type_name()));
  }
  if (message.value("jsonrpc", json()) != "2.0") {
    return mcp::refused(400, mcp::kInvalidRequest, "'jsonrpc' must be \"2.0\"");
  }
  const auto method = message.find("method");
  const auto id = message.find("id");
  if (method != message.end() && !method->is_string()) {
    return mcp::refused(400, mcp::kInvalidRequest, "'method' must be a string");
  }
  const bool initialize = method != message.end() && *method == "initialize";
  if (!request.mcp_protocol_version.empty() && !initialize &&
      !mcp::supported_version(request.mcp_protocol_version)) {
    return mcp::refused(
        400, mcp::kInvalidRequest,
        fmt::format("unsupported MCP-Protocol-Version '{}' (supported: {})",
                    request.mcp_protocol_version, fmt::join(mcp::kProtocolVersions, ", ")));
  }
  if (method == message.end()) {
    // A response to a request of the server's (it sends none): taken.
    if (id != message.end() && (message.contains("result") || message.contains("error"))) {
      return mcp::accepted();
    }
    return mcp::refused(400, mcp::kInvalidRequest,
                        "not a JSON-RPC request, notification or response (no 'method')");
  }
  // A notification (initialized, cancelled, ...): nothing to do without a session.
  if (id == message.end()) return mcp::accepted();
  if (!id->is_string() && !id->is_number_integer()) {
    return mcp::refused(400, mcp::kInvalidRequest, "'id' must be a string or an integer");
  }
  json params = message.value("params", json::object());
  if (params.is_null()) params = json::object();
  if (!params.is_object())
    return mcp::rpc_error(*id, mcp::kInvalidParams, "'params' must be an object");
  const std::string& name = method->get_ref<const std::string&>();
  try {
    if (initialize) {
      const auto version = params.find("protocolVersion");
      if (version == params.end() || !version->is_string()) {
        return mcp::rpc_error(*id, mcp::kInvalidParams, "'protocolVersion' must be a string");
      }
      const std::string_view chosen = mcp::supported_version(version->get_ref<const std::string&>())
                                          ? std::string_view(version->get_ref<const std::string&>())
                                          : mcp::kProtocolVersions.front();
      return json_response(mcp::result_message(
          *id, {{"protocolVersion", chosen},
                {"capabilities", {{"tools", {{"listChanged", false}}}}},
                {"serverInfo", {{"name", "stategraph"}, {"version", kVersion}}}}));
    }
    if (name == "ping") return json_response(mcp::result_message(*id, json::object()));
    if (name == "tools/list") {
      std::size_t offset = 0;
      if (const auto cursor = params.find("cursor"); cursor != params.end() && !cursor->is_null()) {
        const std::string text = cursor->is_string() ? cursor->get<std::string>() : std::string();
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), offset);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
          return mcp::rpc_error(
              *id, mcp::kInvalidParams,
              fmt::format("'cursor' {} is not one this server gave", cursor->dump()));
        }
      }
      const Access access = authorize(request, "assistants", "search", [&] {
        return json{{"graph_id", nullptr},
                    {"metadata", json::object()},
                    {"limit", mcp::kToolsPerPage},
                    {"offset", offset}};
      });
      std::vector<mcp::ServedAssistant> tools =
          mcp::served_assistants(assistants_->all(access), graphs_);
      if (offset > tools.size()) {
        return mcp::rpc_error(*id, mcp::kInvalidParams,
                              fmt::format("'cursor' \"{}\" is past the last tool", offset));
      }
      // By name (then id): pages stay in one order.
      std::sort(tools.begin(), tools.end(), [](const auto& a, const auto& b) {
        const auto key = [](const json& x) {
          return std::pair(x.value("name", std::string()), x.value("assistant_id", std::string()));
        };
        return key(a.first) < key(b.first);
      });
      json page = json::array();
      const std::size_t end = std::min(tools.size(), offset + mcp::kToolsPerPage);
      for (std::size_t i = offset; i < end; ++i) {
        page.push_back(mcp::tool_of(tools[i].first, *tools[i].second));
      }
      json result = {{"tools", std::move(page)}};
      if (end < tools.size()) result["nextCursor"] = std::to_string(end);
      return json_response(mcp::result_message(*id, std::move(result)));
    }
    if (name == "tools/call") return call_mcp_tool(request, *id, params);
    return mcp::rpc_error(*id, mcp::kMethodNotFound, fmt::format("Method not found: {}", name));
  } catch (const ApiError& e) {
    // An authorization handler's refusal (403, or its HttpException's status).
    return mcp::refused(e.status, e.status >= 500 ? mcp::kInternalError : mcp::kInvalidRequest,
                        e.detail);
  } catch (const std::exception& e) {  // the server's fault (storage): not the request's
    return mcp::refused(500, mcp::kInternalError, e.what());
  }
}

ApiResponse Api::call_mcp_tool(const ApiRequest& request, const nlohmann::json& id,
                               const nlohmann::json& params) const {
  using nlohmann::json;
  const auto tool = params.find("name");
  if (tool == params.end() || !tool->is_string() || tool->get_ref<const std::string&>().empty()) {
    return mcp::rpc_error(id, mcp::kInvalidParams, "'name' must be the name of a tool");
  }
  const std::string& tool_name = tool->get_ref<const std::string&>();
  json arguments = params.value("arguments", json::object());
  if (arguments.is_null()) arguments = json::object();
  if (!arguments.is_object()) {
    return mcp::rpc_error(id, mcp::kInvalidParams, "'arguments' must be an object");
  }
  const Access search = authorize(request, "assistants", "search", [&] {
    return json{{"graph_id", nullptr}, {"metadata", json::object()}, {"name", tool_name}};
  });
  std::vector<mcp::ServedAssistant> named =
      mcp::served_assistants(assistants_->all(search), graphs_);
  std::erase_if(named, [&](const mcp::ServedAssistant& a) {
    return a.first.value("name", std::string()) != tool_name;
  });
  if (named.empty()) {
    return mcp::rpc_error(id, mcp::kInvalidParams, fmt::format("Unknown tool: {}", tool_name));
  }
  if (named.size() > 1) {
    return mcp::rpc_error(id, mcp::kInvalidParams,
                          fmt::format("{} assistants are named '{}': rename them so that the "
                                      "tool names one",
                                      named.size(), tool_name));
  }
  const auto& [assistant, graph] = named.front();
  // Bad arguments are the tool's errors, for the model that called it to read.
  const auto tool_error = [&](std::string_view message) {
    return json_response(mcp::result_message(id, mcp::tool_result(std::string(message), true)));
  };
  std::string thread_id;
  if (const auto thread = arguments.find("thread_id");
      thread != arguments.end() && mcp::takes_thread_id(mcp::input_schema_of(*graph), *graph)) {
    if (!thread->is_string() || thread->get_ref<const std::string&>().empty()) {
      return tool_error(fmt::format("'thread_id' must be a thread's id, got {}", thread->dump()));
    }
    thread_id = thread->get<std::string>();
    arguments.erase(thread);
  }
  json body = {{"assistant_id", assistant["assistant_id"]}, {"input", std::move(arguments)}};
  if (thread_id.empty()) {
    body["on_disconnect"] = "cancel";  // nobody could read its result any more
  } else {
    body["if_not_exists"] = "create";
  }
  ApiRequest run_request;
  run_request.method = "POST";
  run_request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  run_request.user = request.user;
  run_request.traceparent = request.traceparent;
  ApiResponse response;
  try {
    const Access access = create_run_access(run_request, thread_id);
    response = runs_->create(thread_id, run_request, RunFollow::Kind::result, access);
  } catch (const ApiError& e) {
    return tool_error(e.detail);  // bad input, a busy thread, a refusal of create_run
  } catch (const Error& e) {
    const bool bad_input = e.code() == errc::kInvalidArgument || e.code() == errc::kInvalidMessage;
    if (!bad_input) throw;
    return tool_error(e.what());
  }
  if (response.follow) {
    response.follow->result_body = [id, thread_id](std::string result) {
      return mcp::call_response(id, thread_id, std::move(result));
    };
  }
  return response;
}

}  // namespace sg::server
