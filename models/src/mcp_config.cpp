// SPDX-License-Identifier: MIT
// The `mcpServers` configuration MCP clients share, with the options of @langchain/mcp-adapters'
// MultiServerMCPClient.

#include "mcp_config.hpp"

#include <stategraph/models/mcp.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

namespace sg {
namespace mcp_config_impl {

using nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(errc::kInvalidArgument, path + ": " + what);
}

std::string string_at(const json& object, const char* key, const std::string& path) {
  const json& value = object[key];
  if (!value.is_string()) bad(path + "." + key, "expected a string, got " + value.dump());
  return value.get<std::string>();
}

bool bool_at(const json& object, const char* key, const std::string& path) {
  const json& value = object[key];
  if (!value.is_boolean()) bad(path + "." + key, "expected true or false, got " + value.dump());
  return value.get<bool>();
}

std::map<std::string, std::string> string_map_at(const json& object, const char* key,
                                                 const std::string& path) {
  const json& value = object[key];
  const std::string where = path + "." + key;
  if (!value.is_object()) bad(where, "expected an object of strings, got " + value.dump());
  std::map<std::string, std::string> out;
  for (const auto& [name, v] : value.items()) {
    if (!v.is_string()) bad(where + "." + name, "expected a string, got " + v.dump());
    out[name] = v.get<std::string>();
  }
  return out;
}

std::chrono::milliseconds millis_at(const json& object, const char* key, const std::string& path) {
  const json& value = object[key];
  if (!value.is_number() || value.get<double>() <= 0)
    bad(path + "." + key, "expected a number of milliseconds above 0, got " + value.dump());
  return std::chrono::milliseconds(static_cast<std::int64_t>(value.get<double>()));
}

McpTransport transport_named(const std::string& name, const std::string& path) {
  if (name == "stdio") return McpTransport::stdio;
  if (name == "http" || name == "streamable_http" || name == "streamable-http" ||
      name == "streamableHttp")
    return McpTransport::streamable_http;
  if (name == "sse") return McpTransport::sse;
  bad(path, "unknown transport '" + name + "' (expected stdio, http or sse)");
}

void check_server(const std::string& name, const McpServerConfig& server) {
  const std::string path = "mcpServers." + name;
  if (name.empty()) throw Error(errc::kInvalidArgument, "mcpServers: a server has an empty name");
  if (server.transport == McpTransport::stdio) {
    if (server.command.empty()) bad(path + ".command", "is empty");
  } else {
    if (!server.url.starts_with("http://") && !server.url.starts_with("https://"))
      bad(path + ".url", "expected an http:// or https:// URL, got '" + server.url + "'");
  }
  if (server.connect_timeout.count() < 0 || server.request_timeout.count() < 0 ||
      server.tool_timeout.count() < 0 || server.shutdown_timeout.count() < 0)
    bad(path, "a timeout is negative");
}

McpServerConfig parse_server(const std::string& name, const json& value) {
  const std::string path = "mcpServers." + name;
  if (!value.is_object()) bad(path, "expected an object, got " + value.dump());
  McpServerConfig server;
  const bool has_command = value.contains("command");
  const bool has_url = value.contains("url");
  std::optional<McpTransport> transport;
  for (const char* key : {"transport", "type"}) {
    if (value.contains(key))
      transport = transport_named(string_at(value, key, path), path + "." + key);
  }
  if (has_command && has_url) bad(path, "has both `command` (stdio) and `url` (HTTP)");
  if (!transport) {
    if (!has_command && !has_url) bad(path, "needs `command` (a stdio server) or `url` (HTTP)");
    transport = has_command ? McpTransport::stdio : McpTransport::streamable_http;
  }
  server.transport = *transport;
  if (server.transport == McpTransport::stdio) {
    if (!has_command) bad(path, "a stdio server needs `command`");
    server.command = string_at(value, "command", path);
    if (value.contains("args")) {
      const json& args = value["args"];
      if (!args.is_array()) bad(path + ".args", "expected an array of strings, got " + args.dump());
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (!args[i].is_string())
          bad(path + ".args[" + std::to_string(i) + "]",
              "expected a string, got " + args[i].dump());
        server.args.push_back(args[i].get<std::string>());
      }
    }
    if (value.contains("env")) server.env = string_map_at(value, "env", path);
    if (value.contains("cwd")) server.cwd = string_at(value, "cwd", path);
    if (value.contains("stderr")) {
      const std::string mode = string_at(value, "stderr", path);
      if (mode == "inherit") {
        server.stderr_mode = McpStderr::inherit;
      } else if (mode == "ignore") {
        server.stderr_mode = McpStderr::ignore;
      } else if (mode == "log" || mode == "pipe" || mode == "overlapped") {
        server.stderr_mode = McpStderr::log;
      } else {
        bad(path + ".stderr", "expected inherit, log or ignore, got '" + mode + "'");
      }
    }
  } else {
    if (!has_url) bad(path, "an HTTP server needs `url`");
    server.url = string_at(value, "url", path);
    if (value.contains("headers")) server.headers = string_map_at(value, "headers", path);
  }
  if (value.contains("defaultToolTimeout"))
    server.tool_timeout = millis_at(value, "defaultToolTimeout", path);
  check_server(name, server);
  return server;
}

McpConfig parse_config(const json& config) {
  if (!config.is_object()) bad("mcp configuration", "expected a JSON object, got " + config.dump());
  const bool wrapped = config.contains("mcpServers");
  const json& servers = wrapped ? config["mcpServers"] : config;
  if (!servers.is_object())
    bad("mcpServers", "expected an object of servers, got " + servers.dump());
  if (servers.empty()) bad("mcpServers", "no MCP servers are configured");
  McpConfig out;
  McpClientOptions& options = out.options;
  if (wrapped) {
    const std::string path = "mcp configuration";
    if (config.contains("prefixToolNameWithServerName"))
      options.prefix_tool_name_with_server_name =
          bool_at(config, "prefixToolNameWithServerName", path);
    if (config.contains("additionalToolNamePrefix"))
      options.additional_tool_name_prefix = string_at(config, "additionalToolNamePrefix", path);
    if (config.contains("useStandardContentBlocks"))
      options.use_standard_content_blocks = bool_at(config, "useStandardContentBlocks", path);
    if (config.contains("streamProgress"))
      options.stream_progress = bool_at(config, "streamProgress", path);
    if (config.contains("defaultToolTimeout"))
      options.tool_timeout = millis_at(config, "defaultToolTimeout", path);
    if (config.contains("onConnectionError")) {
      const std::string mode = string_at(config, "onConnectionError", path);
      if (mode != "throw" && mode != "ignore")
        bad(path + ".onConnectionError", "expected throw or ignore, got '" + mode + "'");
      options.ignore_connection_errors = mode == "ignore";
    }
    if (config.contains("outputHandling")) {
      const json& handling = config["outputHandling"];
      auto output_named = [](const json& v, const std::string& where) {
        if (v == "content") return McpOutput::content;
        if (v == "artifact") return McpOutput::artifact;
        bad(where, "expected content or artifact, got " + v.dump());
      };
      const char* types[] = {"audio", "image", "resource", "resource_link", "text"};
      if (handling.is_string()) {
        const McpOutput all = output_named(handling, "outputHandling");
        for (const char* t : types) options.output_handling[t] = all;
      } else if (handling.is_object()) {
        for (const auto& [type, v] : handling.items()) {
          if (std::find(std::begin(types), std::end(types), type) == std::end(types))
            bad("outputHandling." + type, "unknown content type");
          options.output_handling[type] = output_named(v, "outputHandling." + type);
        }
      } else {
        bad("outputHandling", "expected content, artifact or an object, got " + handling.dump());
      }
    }
  }
  for (const auto& [name, value] : servers.items()) out.servers[name] = parse_server(name, value);
  return out;
}

}  // namespace mcp_config_impl

namespace detail {

void check_mcp_server(const std::string& name, const McpServerConfig& server) {
  mcp_config_impl::check_server(name, server);
}

}  // namespace detail

McpConfig parse_mcp_config(const nlohmann::json& config) {
  return mcp_config_impl::parse_config(config);
}

nlohmann::json read_mcp_config_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw Error(errc::kInvalidArgument,
                "cannot read the MCP configuration '" + path.string() + "'");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e999)
    throw Error(errc::kInvalidArgument, path.string() + ": not valid JSON: " + e.what());
  }
  try {
    (void)parse_mcp_config(config);
  } catch (const Error& e) {
    throw Error(errc::kInvalidArgument, path.string() + ": " + e.what());
  }
  return config;
}

}  // namespace sg
