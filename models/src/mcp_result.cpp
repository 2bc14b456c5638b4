// SPDX-License-Identifier: MIT
#include "mcp_result.hpp"

#include <set>

namespace sg::detail {
namespace mcp_result_impl {

using nlohmann::json;
using nlohmann::ordered_json;

const char* const kContentTypes[] = {"audio", "image", "resource", "resource_link", "text"};

[[noreturn]] void invalid(const std::string& server, const std::string& tool,
                          const std::string& what) {
  throw McpError(errc::kMcpProtocol, "MCP tool '" + tool + "' on server '" + server + "' " + what,
                 server);
}

std::string string_field(const json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>()
                                                         : std::string();
}

/// `out[key] = object[key]` when object has it (JavaScript's spread of a defined value).
void copy_if(json& out, const char* key, const json& object, const char* from) {
  if (object.contains(from) && !object[from].is_null()) out[key] = object[from];
}

/// An embedded resource's contents as LangChain file blocks.
void resource_blocks(const json& resource, std::vector<json>& out) {
  if (!resource.is_object()) return;
  json metadata;
  if (resource.contains("uri") && !resource["uri"].is_null()) metadata = {{"uri", resource["uri"]}};
  if (resource.contains("blob") && !resource["blob"].is_null()) {
    json block = {{"type", "file"}, {"source_type", "base64"}, {"data", resource["blob"]}};
    copy_if(block, "mime_type", resource, "mimeType");
    if (!metadata.is_null()) block["metadata"] = metadata;
    out.push_back(std::move(block));
  }
  if (resource.contains("text") && !resource["text"].is_null()) {
    json block = {{"type", "file"}, {"source_type", "text"}, {"text", resource["text"]}};
    copy_if(block, "mime_type", resource, "mimeType");
    if (!metadata.is_null()) block["metadata"] = metadata;
    out.push_back(std::move(block));
  }
}

/// A content item as LangChain content blocks (the adapters' _toolOutputToContentBlocks).
void content_blocks(const json& item, bool standard, const std::string& server,
                    const std::string& tool, std::vector<json>& out) {
  const std::string type = string_field(item, "type");
  if (type == "text") {
    json block = {{"type", "text"}, {"text", item.value("text", json(""))}};
    if (standard) block["source_type"] = "text";
    out.push_back(std::move(block));
  } else if (type == "image") {
    if (standard) {
      json block = {
          {"type", "image"}, {"source_type", "base64"}, {"data", item.value("data", json(""))}};
      copy_if(block, "mime_type", item, "mimeType");
      out.push_back(std::move(block));
    } else {
      out.push_back({{"type", "image_url"},
                     {"image_url",
                      {{"url", "data:" + string_field(item, "mimeType") + ";base64," +
                                   string_field(item, "data")}}}});
    }
  } else if (type == "audio") {
    json block = {
        {"type", "audio"}, {"source_type", "base64"}, {"data", item.value("data", json(""))}};
    copy_if(block, "mime_type", item, "mimeType");
    out.push_back(std::move(block));
  } else if (type == "resource") {
    resource_blocks(item.value("resource", json()), out);
  } else if (type == "resource_link") {
    json block = {{"type", "file"}, {"source_type", "url"}, {"url", item.value("uri", json(""))}};
    copy_if(block, "mime_type", item, "mimeType");
    out.push_back(std::move(block));
  } else {
    std::string expected;
    for (const char* t : kContentTypes)
      expected += (expected.empty() ? "\"" : ", \"") + std::string(t) + "\"";
    invalid(server, tool,
            "returned a content block with unexpected type \"" + type + "\". Expected one of " +
                expected + ".");
  }
}

McpOutput output_of(const std::string& type, const McpClientOptions& options) {
  const auto it = options.output_handling.find(type);
  if (it != options.output_handling.end()) return it->second;
  return type == "resource" ? McpOutput::artifact : McpOutput::content;
}

/// Inlines local $refs (the adapters' dereferenceJsonSchema).
json dereference(const json& node, const json& definitions, std::set<std::string>& visiting) {
  if (node.is_array()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(dereference(item, definitions, visiting));
    return out;
  }
  if (!node.is_object()) return node;
  if (node.contains("$ref") && node["$ref"].is_string()) {
    const std::string ref = node["$ref"].get<std::string>();
    std::string name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (ref.starts_with(prefix)) name = ref.substr(std::string(prefix).size());
    }
    if (!name.empty() && definitions.is_object() && definitions.contains(name)) {
      if (visiting.contains(ref)) return {{"type", "object"}};
      visiting.insert(ref);
      json resolved = dereference(definitions[name], definitions, visiting);
      visiting.erase(ref);
      if (!resolved.is_object()) resolved = json::object();
      for (const auto& [key, value] : node.items())
        if (key != "$ref") resolved[key] = value;
      return resolved;
    }
    return node;
  }
  json out = json::object();
  for (const auto& [key, value] : node.items()) {
    if (key == "$defs" || key == "definitions") continue;
    out[key] = dereference(value, definitions, visiting);
  }
  return out;
}

Message tool_message(const json& result, const std::string& server, const std::string& tool,
                     const McpClientOptions& options) {
  if (!result.is_object() || !result.contains("content") || !result["content"].is_array()) {
    const json content = result.is_object() ? result.value("content", json()) : json();
    invalid(server, tool,
            "returned an invalid result - expected an array of content, but was " +
                std::string(content.is_null() ? "undefined" : content.type_name()));
  }
  const json& items = result["content"];
  if (result.value("isError", false) == true) {
    std::string text;
    bool first = true;
    for (const auto& item : items) {
      if (!first) text += "\n";
      first = false;
      if (string_field(item, "type") == "text") text += string_field(item, "text");
    }
    throw McpError(errc::kMcpToolError,
                   "MCP tool '" + tool + "' on server '" + server + "' returned an error: " + text,
                   server);
  }
  const bool standard = options.use_standard_content_blocks;
  std::vector<json> blocks;
  json artifact = json::array();
  for (const auto& item : items) {
    const std::string type = string_field(item, "type");
    if (output_of(type, options) == McpOutput::content) {
      content_blocks(item, standard, server, tool, blocks);
    } else if (standard) {
      std::vector<json> converted;
      content_blocks(item, standard, server, tool, converted);
      for (auto& b : converted) artifact.push_back(std::move(b));
    } else {
      artifact.push_back(item);
    }
  }
  const bool structured = result.contains("structuredContent") &&
                          !result["structuredContent"].is_null() &&
                          result["structuredContent"] != false;
  const bool meta = result.contains("_meta") && !result["_meta"].is_null();
  if (structured)
    artifact.push_back({{"type", "mcp_structured_content"}, {"data", result["structuredContent"]}});
  if (meta) artifact.push_back({{"type", "mcp_meta"}, {"data", result["_meta"]}});

  Content content;
  if (blocks.size() == 1 && blocks.front().value("type", "") == "text") {
    if (structured || meta) {
      // One text block with the structured content beside it: LangChain.js turns that lone
      // object into its JSON text, keys in the adapters' order.
      ordered_json object;
      object["type"] = "text";
      if (standard) object["source_type"] = "text";
      object["text"] = blocks.front()["text"];
      if (structured) object["structuredContent"] = ordered_json(result["structuredContent"]);
      if (meta) object["meta"] = ordered_json(result["_meta"]);
      content = Content(object.dump(-1, ' ', false, json::error_handler_t::replace));
    } else {
      content =
          Content(blocks.front()["text"].is_string() ? blocks.front()["text"].get<std::string>()
                                                     : blocks.front()["text"].dump());
    }
  } else {
    content = Content(Content::Blocks(std::move(blocks)));
  }
  Message message = sg::tool(std::move(content), std::string());
  message.status = "success";
  if (!artifact.empty()) message.additional_kwargs = {{"artifact", std::move(artifact)}};
  return message;
}

json tool_schema(const json& input_schema) {
  if (!input_schema.is_object()) return {{"type", "object"}, {"properties", json::object()}};
  json definitions = input_schema.contains("$defs") ? input_schema["$defs"]
                                                    : input_schema.value("definitions", json());
  std::set<std::string> visiting;
  json out = dereference(input_schema, definitions, visiting);
  out.erase("$schema");
  if (!out.contains("type")) out["type"] = "object";
  if (!out.contains("properties") || !out["properties"].is_object())
    out["properties"] = json::object();
  return out;
}

}  // namespace mcp_result_impl

Message mcp_tool_message(const nlohmann::json& result, const std::string& server,
                         const std::string& tool, const McpClientOptions& options) {
  return mcp_result_impl::tool_message(result, server, tool, options);
}

nlohmann::json mcp_tool_schema(const nlohmann::json& input_schema) {
  return mcp_result_impl::tool_schema(input_schema);
}

}  // namespace sg::detail
