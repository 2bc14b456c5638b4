// SPDX-License-Identifier: MIT
#include "support/loopback_anthropic.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

namespace sg::testing {
namespace {

using nlohmann::json;

std::string field_string(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool whitespace_only(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

std::size_t words_in(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

/// The text of content (a string, or the text of its text blocks).
std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& b : content) {
      if (b.is_object() && field_string(b, "type") == "text") text += field_string(b, "text");
    }
  }
  return text;
}

/// `text` in pieces of about `size` bytes, never inside a UTF-8 character.
std::vector<std::string> pieces_of(const std::string& text, std::size_t size) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = std::min(text.size(), start + std::max<std::size_t>(size, 1));
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) ++end;
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

/// The checks of one content block; `where` names it in the message.
std::string block_error(const json& block, const std::string& where, const std::string& role) {
  if (!block.is_object() || !block.contains("type") || !block["type"].is_string())
    return where + ": a content block must be an object with a type";
  const std::string type = block["type"];
  if (type == "text") {
    if (!block.contains("text") || !block["text"].is_string())
      return where + ".text: Field required";
    if (whitespace_only(block["text"])) return where + ": text content blocks must be non-empty";
    return {};
  }
  if (type == "image") {
    if (role != "user") return where + ": image blocks are only allowed in user messages";
    const json source = block.value("source", json());
    const std::string kind = field_string(source, "type");
    if (kind == "base64") {
      static const std::set<std::string> kMedia = {"image/jpeg", "image/png", "image/gif",
                                                   "image/webp"};
      if (!kMedia.contains(field_string(source, "media_type")))
        return where +
               ".source.media_type: Input should be 'image/jpeg', 'image/png', "
               "'image/gif' or 'image/webp'";
      if (field_string(source, "data").empty()) return where + ".source.data: Field required";
      return {};
    }
    if (kind == "url") return field_string(source, "url").empty() ? where + ".source.url" : "";
    return where + ".source: Input tag '" + kind + "' does not match any of the expected tags";
  }
  if (type == "tool_use") {
    if (role != "assistant") return where + ": tool_use blocks are only allowed in assistant turns";
    if (field_string(block, "id").empty() || field_string(block, "name").empty() ||
        !block.contains("input") || !block["input"].is_object())
      return where + ": a tool_use block needs an id, a name and an input object";
    return {};
  }
  if (type == "tool_result") {
    if (role != "user") return where + ": tool_result blocks are only allowed in user turns";
    if (field_string(block, "tool_use_id").empty()) return where + ".tool_use_id: Field required";
    if (block.contains("is_error") && !block["is_error"].is_boolean())
      return where + ".is_error: Input should be a valid boolean";
    if (block.contains("content")) {
      const json& content = block["content"];
      if (content.is_array()) {
        for (std::size_t k = 0; k < content.size(); ++k) {
          const std::string error =
              block_error(content[k], where + ".content." + std::to_string(k), "user");
          if (!error.empty()) return error;
        }
      } else if (!content.is_string()) {
        return where + ".content: Input should be a string or a list";
      }
    }
    return {};
  }
  if (type == "thinking") {
    if (role != "assistant") return where + ": thinking blocks are only allowed in assistant turns";
    if (field_string(block, "signature").empty()) return where + ".signature: Field required";
    return {};
  }
  if (type == "redacted_thinking") {
    return field_string(block, "data").empty() ? where + ".data: Field required" : "";
  }
  return {};  // other block types are not checked here
}

std::string messages_error(const json& messages) {
  std::string previous_role;
  std::vector<std::string> open_tool_uses;  // the previous assistant turn's, to be answered
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages." + std::to_string(i);
    const json& m = messages[i];
    if (!m.is_object()) return where + ": Input should be an object";
    const std::string role = field_string(m, "role");
    if (role != "user" && role != "assistant")
      return where + ".role: Input should be 'user' or 'assistant'";
    if (role == previous_role)
      return "messages: roles must alternate between \"user\" and \"assistant\", but found "
             "multiple \"" +
             role + "\" roles in a row";
    const json content = m.value("content", json());
    std::vector<json> blocks;
    if (content.is_string()) {
      if (content.get<std::string>().empty() && !(role == "assistant" && i + 1 == messages.size()))
        return where +
               ": all messages must have non-empty content except for the optional "
               "final assistant message";
    } else if (content.is_array()) {
      if (content.empty()) return where + ": all messages must have non-empty content";
      blocks.assign(content.begin(), content.end());
    } else {
      return where + ".content: Input should be a string or a list";
    }
    std::vector<std::string> answered;
    bool other_seen = false;
    std::vector<std::string> tool_uses;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const std::string at = where + ".content." + std::to_string(k);
      const std::string error = block_error(blocks[k], at, role);
      if (!error.empty()) return error;
      const std::string type = field_string(blocks[k], "type");
      if (type == "tool_result") {
        const std::string id = field_string(blocks[k], "tool_use_id");
        if (std::find(open_tool_uses.begin(), open_tool_uses.end(), id) == open_tool_uses.end())
          return at + ": unexpected `tool_use_id` found in `tool_result` blocks: " + id +
                 ". Each `tool_result` block must have a corresponding `tool_use` block in the "
                 "previous message.";
        if (other_seen)
          return at +
                 ": tool_result blocks must come first in the content, before any other "
                 "block";
        answered.push_back(id);
      } else {
        other_seen = true;
      }
      if (type == "tool_use") tool_uses.push_back(field_string(blocks[k], "id"));
    }
    if (role == "user") {
      for (const auto& id : open_tool_uses) {
        if (std::find(answered.begin(), answered.end(), id) == answered.end())
          return where +
                 ": `tool_use` ids were found without `tool_result` blocks immediately "
                 "after: " +
                 id +
                 ". Each `tool_use` block must have a corresponding `tool_result` block in the "
                 "next message.";
      }
      open_tool_uses.clear();
    } else {
      open_tool_uses = tool_uses;
    }
    previous_role = role;
  }
  return {};
}

}  // namespace

std::string anthropic_request_error(const LoopbackRequest& request) {
  if (request.header("anthropic-version").empty()) return "anthropic-version: header is required";
  const json body = request.json();
  if (!body.is_object()) return "the body is not a JSON object";
  if (field_string(body, "model").empty()) return "model: Field required";
  if (!body.contains("max_tokens") || !body["max_tokens"].is_number_integer() ||
      body["max_tokens"].get<std::int64_t>() < 1)
    return "max_tokens: Field required (an integer of at least 1)";
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    return "messages: Field required";
  if (body.contains("system")) {
    const json& system = body["system"];
    if (system.is_array()) {
      for (std::size_t k = 0; k < system.size(); ++k) {
        if (field_string(system[k], "type") != "text")
          return "system." + std::to_string(k) + ": Input tag should be 'text'";
        const std::string error = block_error(system[k], "system." + std::to_string(k), "system");
        if (!error.empty()) return error;
      }
    } else if (!system.is_string()) {
      return "system: Input should be a string or a list of text blocks";
    }
  }
  std::set<std::string> tool_names;
  if (body.contains("tools")) {
    if (!body["tools"].is_array()) return "tools: Input should be a list";
    static const std::regex kName("^[a-zA-Z0-9_-]{1,128}$");
    for (const auto& tool : body["tools"]) {
      const std::string name = field_string(tool, "name");
      if (!std::regex_match(name, kName))
        return "tools: name '" + name + "' should match pattern '^[a-zA-Z0-9_-]{1,128}$'";
      if (!tool_names.insert(name).second) return "tools: Tool names must be unique";
      const json schema = tool.value("input_schema", json());
      if (!schema.is_object() || field_string(schema, "type") != "object")
        return "tools." + name + ".input_schema.type: Input should be 'object'";
    }
  }
  if (body.contains("tool_choice")) {
    const json& choice = body["tool_choice"];
    const std::string type = field_string(choice, "type");
    if (type != "auto" && type != "any" && type != "none" && type != "tool")
      return "tool_choice: Input tag '" + type + "' does not match any of the expected tags";
    if (type == "tool" && !tool_names.contains(field_string(choice, "name")))
      return "tool_choice: the tool '" + field_string(choice, "name") + "' is not among the tools";
  }
  if (body.contains("thinking")) {
    const json& thinking = body["thinking"];
    if (field_string(thinking, "type") == "enabled") {
      const auto budget = thinking.value("budget_tokens", std::int64_t{0});
      if (budget < 1024) return "thinking.enabled.budget_tokens: Input should be >= 1024";
      if (budget >= body["max_tokens"].get<std::int64_t>())
        return "`max_tokens` must be greater than `thinking.budget_tokens`";
      if (body.contains("tool_choice") && field_string(body["tool_choice"], "type") != "auto" &&
          field_string(body["tool_choice"], "type") != "none")
        return "Thinking may not be enabled when tool_choice forces tool use.";
    } else if (field_string(thinking, "type") != "disabled") {
      return "thinking: Input tag does not match any of the expected tags";
    }
  }
  if (body.contains("stop_sequences")) {
    if (!body["stop_sequences"].is_array()) return "stop_sequences: Input should be a list";
    for (const auto& s : body["stop_sequences"])
      if (!s.is_string()) return "stop_sequences: Input should be a list of strings";
  }
  if (body.contains("temperature") &&
      (!body["temperature"].is_number() || body["temperature"].get<double>() < 0 ||
       body["temperature"].get<double>() > 1))
    return "temperature: Input should be a number from 0 to 1";
  if (body.contains("stream") && !body["stream"].is_boolean())
    return "stream: Input should be a valid boolean";
  return messages_error(body["messages"]);
}

json anthropic_message(const std::string& id, json content, const std::string& stop_reason,
                       json usage, const std::string& model) {
  return {{"id", id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model},
          {"content", std::move(content)},
          {"stop_reason", stop_reason},
          {"stop_sequence", nullptr},
          {"usage", std::move(usage)}};
}

LoopbackReply anthropic_json(const json& message) {
  return LoopbackReply::json(message);
}

LoopbackReply anthropic_error(int status, const std::string& type, const std::string& message,
                              std::vector<std::pair<std::string, std::string>> headers) {
  LoopbackReply reply = LoopbackReply::json({{"type", "error"},
                                             {"error", {{"type", type}, {"message", message}}},
                                             {"request_id", "req_loopback"}},
                                            status);
  reply.headers = std::move(headers);
  return reply;
}

std::vector<json> anthropic_stream_events(const json& message, std::size_t piece) {
  std::vector<json> events;
  const json usage = message.value("usage", json::object());
  json start = message;
  start["content"] = json::array();
  start["stop_reason"] = nullptr;
  start["stop_sequence"] = nullptr;
  start["usage"] = usage;
  start["usage"]["output_tokens"] = 1;
  events.push_back({{"type", "message_start"}, {"message", std::move(start)}});
  events.push_back({{"type", "ping"}});
  const json content = message.value("content", json::array());
  for (std::size_t i = 0; i < content.size(); ++i) {
    const json& block = content[i];
    const std::string type = field_string(block, "type");
    auto delta = [&](json d) {
      events.push_back({{"type", "content_block_delta"}, {"index", i}, {"delta", std::move(d)}});
    };
    if (type == "text") {
      events.push_back({{"type", "content_block_start"},
                        {"index", i},
                        {"content_block", {{"type", "text"}, {"text", ""}}}});
      for (const auto& p : pieces_of(field_string(block, "text"), piece))
        delta({{"type", "text_delta"}, {"text", p}});
    } else if (type == "thinking") {
      events.push_back({{"type", "content_block_start"},
                        {"index", i},
                        {"content_block", {{"type", "thinking"}, {"thinking", ""}}}});
      for (const auto& p : pieces_of(field_string(block, "thinking"), piece))
        delta({{"type", "thinking_delta"}, {"thinking", p}});
      delta({{"type", "signature_delta"}, {"signature", field_string(block, "signature")}});
    } else if (type == "tool_use") {
      events.push_back({{"type", "content_block_start"},
                        {"index", i},
                        {"content_block",
                         {{"type", "tool_use"},
                          {"id", block["id"]},
                          {"name", block["name"]},
                          {"input", json::object()}}}});
      for (const auto& p : pieces_of(block.value("input", json::object()).dump(), piece))
        delta({{"type", "input_json_delta"}, {"partial_json", p}});
    } else {
      events.push_back({{"type", "content_block_start"}, {"index", i}, {"content_block", block}});
    }
    events.push_back({{"type", "content_block_stop"}, {"index", i}});
  }
  json end_usage = {{"output_tokens", usage.value("output_tokens", 0)}};
  for (const char* key :
       {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}) {
    if (usage.contains(key)) end_usage[key] = usage[key];
  }
  events.push_back({{"type", "message_delta"},
                    {"delta",
                     {{"stop_reason", message.value("stop_reason", json())},
                      {"stop_sequence", message.value("stop_sequence", json())}}},
                    {"usage", std::move(end_usage)}});
  events.push_back({{"type", "message_stop"}});
  return events;
}

LoopbackReply anthropic_sse(const std::vector<json>& events, std::size_t per_chunk) {
  std::vector<std::string> chunks;
  std::string chunk;
  std::size_t in_chunk = 0;
  for (const auto& e : events) {
    chunk += "event: " + field_string(e, "type") + "\ndata: " + e.dump() + "\n\n";
    if (per_chunk != 0 && ++in_chunk == per_chunk) {
      chunks.push_back(std::move(chunk));
      chunk.clear();
      in_chunk = 0;
    }
  }
  if (!chunk.empty()) chunks.push_back(std::move(chunk));
  return LoopbackReply::raw_stream(std::move(chunks));
}

struct LoopbackAnthropic::Impl {
  explicit Impl(LoopbackAnthropicOptions o)
      : options(std::move(o)), server(LoopbackOptions{.threads = options.threads}) {}

  LoopbackReply answer(const LoopbackRequest& request) {
    if (request.method != "POST" || !request.target.ends_with("/v1/messages"))
      return anthropic_error(404, "not_found_error", "Not found: " + request.target);
    if (request.header("x-api-key").empty())
      return anthropic_error(401, "authentication_error", "x-api-key header is required");
    const std::string error = anthropic_request_error(request);
    if (!error.empty()) return anthropic_error(400, "invalid_request_error", error);
    const json body = request.json();
    const std::uint64_t n = ++next_id;
    const json& messages = body["messages"];
    // The last user turn's text, and the tool results it carries.
    std::string question;
    std::vector<std::string> results;
    std::size_t prompt_words = words_in(text_of(body.value("system", json())));
    for (const auto& m : messages) {
      prompt_words += words_in(text_of(m["content"]));
      if (field_string(m, "role") != "user") continue;
      results.clear();
      for (const auto& b : m["content"].is_array() ? m["content"] : json::array()) {
        if (field_string(b, "type") == "tool_result")
          results.push_back(text_of(b.value("content", json(""))));
      }
      const std::string text = text_of(m["content"]);
      if (!text.empty()) question = text;
    }
    bool offered = false;
    for (const auto& t : body.value("tools", json::array()))
      offered = offered || field_string(t, "name") == options.call_tool;
    json content;
    std::string stop = "end_turn";
    std::size_t output_words = 0;
    if (!options.call_tool.empty() && offered && results.empty()) {
      content = {{{"type", "tool_use"},
                  {"id", "toolu_loopback_" + std::to_string(n)},
                  {"name", options.call_tool},
                  {"input", options.tool_args}}};
      stop = "tool_use";
      output_words = words_in(options.tool_args.dump());
    } else {
      std::string text = "echo: " + question;
      if (!results.empty()) {
        text = "the tools said:";
        for (const auto& r : results) text += " " + r;
      }
      output_words = words_in(text);
      content = {{{"type", "text"}, {"text", std::move(text)}}};
    }
    const json message = anthropic_message(
        "msg_loopback_" + std::to_string(n), std::move(content), stop,
        {{"input_tokens", prompt_words}, {"output_tokens", output_words}}, body["model"]);
    LoopbackReply reply = body.value("stream", false)
                              ? anthropic_sse(anthropic_stream_events(message))
                              : anthropic_json(message);
    reply.delay = options.delay;
    return reply;
  }

  LoopbackAnthropicOptions options;
  std::atomic<std::uint64_t> next_id{0};
  LoopbackOpenAI server;  // last: its threads stop before the members they read go
};

LoopbackAnthropic::LoopbackAnthropic() : LoopbackAnthropic(LoopbackAnthropicOptions{}) {}

LoopbackAnthropic::LoopbackAnthropic(LoopbackAnthropicOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->server.set_handler([impl = impl_.get()](const LoopbackRequest& request) {
    return std::optional<LoopbackReply>(impl->answer(request));
  });
}

LoopbackAnthropic::~LoopbackAnthropic() = default;

std::string LoopbackAnthropic::base_url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->server.port());
}

void LoopbackAnthropic::push(LoopbackReply reply) {
  impl_->server.push(std::move(reply));
}

std::vector<LoopbackRequest> LoopbackAnthropic::requests() const {
  return impl_->server.requests();
}

std::size_t LoopbackAnthropic::request_count() const {
  return impl_->server.request_count();
}

LoopbackOpenAI& LoopbackAnthropic::server() {
  return impl_->server;
}

}  // namespace sg::testing
