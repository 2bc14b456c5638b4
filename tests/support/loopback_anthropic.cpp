// SPDX-License-Identifier: MIT
#include "support/loopback_anthropic.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

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

/// FNV-1a (64 bits) of `text`: the signatures and cache keys of the loopback, the same in every
/// run.
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

/// The signatures of the thinking blocks the loopback writes start with this; the server checks
/// such a signature against the thinking text it comes back with.
constexpr std::string_view kSignaturePrefix = "loopback-sig-";

std::string signature_of(const std::string& thinking) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(thinking)));
  return std::string(kSignaturePrefix) + hex;
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

/// Whether a block type is a server tool's result (web_search_tool_result,
/// code_execution_tool_result, ...), which follows its server_tool_use in an assistant turn.
bool server_tool_result(const std::string& type) {
  return type.ends_with("_tool_result");
}

/// The first key of `block` not in `allowed` ("" when there is none).
std::string extra_key(const json& block, const std::set<std::string>& allowed) {
  for (const auto& [key, value] : block.items()) {
    if (!allowed.contains(key)) return key;
  }
  return {};
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
    const std::string signature = field_string(block, "signature");
    if (signature.empty()) return where + ".signature: Field required";
    if (signature.starts_with(kSignaturePrefix) &&
        signature != signature_of(field_string(block, "thinking")))
      return where + ": Invalid `signature` in `thinking` block";
    return {};
  }
  if (type == "redacted_thinking") {
    return field_string(block, "data").empty() ? where + ".data: Field required" : "";
  }
  // A server tool's call and result, sent back as the API gave them (no streaming leftovers).
  if (type == "server_tool_use") {
    if (role != "assistant")
      return where + ": server_tool_use blocks are only allowed in assistant turns";
    if (field_string(block, "id").empty() || field_string(block, "name").empty() ||
        !block.contains("input") || !block["input"].is_object())
      return where + ": a server_tool_use block needs an id, a name and an input object";
    const std::string extra =
        extra_key(block, {"type", "id", "name", "input", "cache_control", "caller"});
    if (!extra.empty()) return where + "." + extra + ": Extra inputs are not permitted";
    return {};
  }
  if (server_tool_result(type)) {
    if (role != "assistant")
      return where + ": " + type + " blocks are only allowed in assistant turns";
    if (field_string(block, "tool_use_id").empty()) return where + ".tool_use_id: Field required";
    if (!block.contains("content")) return where + ".content: Field required";
    const std::string extra =
        extra_key(block, {"type", "tool_use_id", "content", "cache_control", "caller", "is_error"});
    if (!extra.empty()) return where + "." + extra + ": Extra inputs are not permitted";
    return {};
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
    std::vector<std::string> server_uses;  // this turn's server_tool_use ids so far
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
      if (type == "server_tool_use") server_uses.push_back(field_string(blocks[k], "id"));
      if (server_tool_result(type)) {
        const std::string id = field_string(blocks[k], "tool_use_id");
        if (std::find(server_uses.begin(), server_uses.end(), id) == server_uses.end())
          return at + ": the `tool_use_id` " + id + " of a " + type +
                 " block does not match a server_tool_use block before it in the same message";
      }
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

/// With thinking enabled: the last assistant turn, when it has tool_use blocks, must start with
/// a thinking or redacted_thinking block (the thinking that led to the calls).
std::string thinking_turn_error(const json& messages) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (field_string(messages[i], "role") != "assistant") continue;
    const json& content = messages[i]["content"];
    if (!content.is_array() || content.empty()) return {};
    const bool calls = std::any_of(content.begin(), content.end(), [](const json& b) {
      return field_string(b, "type") == "tool_use";
    });
    const std::string first = field_string(content[0], "type");
    if (!calls || first == "thinking" || first == "redacted_thinking") return {};
    return "messages." + std::to_string(i) +
           ".content.0.type: Expected `thinking` or `redacted_thinking`, but found `" + first +
           "`. When thinking is enabled, a final assistant message with tool_use blocks must "
           "start with a thinking block.";
  }
  return {};
}

/// The words a content block counts for: its text, a tool result's, a tool call's input, a
/// thinking text.
std::size_t block_words(const json& block) {
  if (block.is_string()) return words_in(block.get<std::string>());
  const std::string type = field_string(block, "type");
  if (type == "text") return words_in(field_string(block, "text"));
  if (type == "thinking") return words_in(field_string(block, "thinking"));
  if (type == "tool_use") return words_in(block.value("input", json::object()).dump());
  if (type != "tool_result") return 0;
  const json content = block.value("content", json(""));
  if (!content.is_array()) return block_words(content);
  std::size_t n = 0;
  for (const auto& b : content) n += block_words(b);
  return n;
}

/// A valid request's prompt in words, and its cache_control breakpoints in order: the key of
/// the prefix up to each (the model, the thinking setting, then the tools, the system and the
/// messages' blocks) and its words.
struct Prompt {
  std::size_t words = 0;
  std::vector<std::pair<std::uint64_t, std::size_t>> breakpoints{};
};

Prompt prompt_of(const json& body) {
  Prompt prompt;
  std::string prefix = body["model"].dump() + body.value("thinking", json()).dump();
  const auto add = [&](const json& part, std::size_t words) {
    prefix += part.dump();
    prompt.words += words;
    if (part.is_object() && part.contains("cache_control"))
      prompt.breakpoints.emplace_back(fnv1a(prefix), prompt.words);
  };
  for (const auto& tool : body.value("tools", json::array())) add(tool, words_in(tool.dump()));
  const json system = body.value("system", json());
  if (system.is_array()) {
    for (const auto& b : system) add(b, block_words(b));
  } else if (system.is_string()) {
    add(system, words_in(system.get<std::string>()));
  }
  for (const auto& m : body["messages"]) {
    prefix += field_string(m, "role");
    const json& content = m["content"];
    if (!content.is_array()) {
      add(content, block_words(content));
      continue;
    }
    for (const auto& b : content) add(b, block_words(b));
  }
  return prompt;
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
  const std::string error = messages_error(body["messages"]);
  if (!error.empty()) return error;
  if (field_string(body.value("thinking", json()), "type") == "enabled")
    return thinking_turn_error(body["messages"]);
  return {};
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
      const json citations = block.value("citations", json());
      if (citations.is_array()) {
        for (const auto& c : citations) delta({{"type", "citations_delta"}, {"citation", c}});
      }
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
    } else if (type == "server_tool_use" || type == "mcp_tool_use") {
      // A server tool's call streams as a tool_use does: input {} first, then its JSON text.
      json call = block;
      call["input"] = json::object();
      events.push_back(
          {{"type", "content_block_start"}, {"index", i}, {"content_block", std::move(call)}});
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
      : options(std::move(o)),
        server(LoopbackOptions{.port = options.port,
                               .threads = options.threads,
                               .record_requests = options.record_requests}) {}

  /// The cache's reads and writes for `prompt` (in words), as the API counts them: the longest
  /// prefix cached before is read, the rest up to the last breakpoint is written.
  std::pair<std::size_t, std::size_t> use_cache(const Prompt& prompt) {
    if (prompt.breakpoints.empty()) return {0, 0};
    const std::lock_guard lock(mutex);
    std::size_t read = 0;
    for (auto it = prompt.breakpoints.rbegin(); it != prompt.breakpoints.rend(); ++it) {
      if (cached.contains(it->first)) {
        read = it->second;
        break;
      }
    }
    for (const auto& breakpoint : prompt.breakpoints) cached.insert(breakpoint.first);
    return {read, prompt.breakpoints.back().second - read};
  }

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
    // The last user turn's text (and its last text block), and the tool results it carries.
    std::string question;
    std::string last_text;
    std::vector<std::string> results;
    for (const auto& m : messages) {
      if (field_string(m, "role") != "user") continue;
      results.clear();
      for (const auto& b : m["content"].is_array() ? m["content"] : json::array()) {
        if (field_string(b, "type") == "tool_result")
          results.push_back(text_of(b.value("content", json(""))));
        if (field_string(b, "type") == "text") last_text = field_string(b, "text");
      }
      if (m["content"].is_string()) last_text = m["content"].get<std::string>();
      const std::string text = text_of(m["content"]);
      if (!text.empty()) question = text;
    }
    bool offered = false;
    for (const auto& t : body.value("tools", json::array()))
      offered = offered || field_string(t, "name") == options.call_tool;
    const bool calls = !options.call_tool.empty() && offered && results.empty();
    json content = json::array();
    // Extended thinking opens an assistant turn (not its continuation after tool results).
    if (field_string(body.value("thinking", json()), "type") == "enabled" && results.empty()) {
      const std::vector<std::string> asked = pieces_of(last_text, 80);  // its start
      std::string thinking = "The question is \"" + (asked.empty() ? "" : asked[0]) + "\". ";
      thinking += calls ? "The " + options.call_tool + " tool can answer it: I call it first."
                        : "I can answer it directly.";
      const std::string signature = signature_of(thinking);
      content.push_back(
          {{"type", "thinking"}, {"thinking", std::move(thinking)}, {"signature", signature}});
    }
    std::string stop = "end_turn";
    if (calls) {
      content.push_back({{"type", "tool_use"},
                         {"id", "toolu_loopback_" + std::to_string(n)},
                         {"name", options.call_tool},
                         {"input", options.tool_args}});
      stop = "tool_use";
    } else {
      std::string text = "echo: " + question;
      if (!results.empty()) {
        text = "the tools said:";
        for (const auto& r : results) text += " " + r;
      }
      content.push_back({{"type", "text"}, {"text", std::move(text)}});
    }
    std::size_t output_words = 0;
    for (const auto& b : content) output_words += block_words(b);
    const Prompt prompt = prompt_of(body);
    const auto [read, written] = use_cache(prompt);
    json usage = {{"input_tokens", prompt.words - read - written}, {"output_tokens", output_words}};
    if (!prompt.breakpoints.empty()) {
      usage["cache_creation_input_tokens"] = written;
      usage["cache_read_input_tokens"] = read;
    }
    const json message = anthropic_message("msg_loopback_" + std::to_string(n), std::move(content),
                                           stop, std::move(usage), body["model"]);
    LoopbackReply reply = body.value("stream", false)
                              ? anthropic_sse(anthropic_stream_events(message))
                              : anthropic_json(message);
    reply.delay = options.delay;
    return reply;
  }

  LoopbackAnthropicOptions options;
  std::atomic<std::uint64_t> next_id{0};
  std::mutex mutex;
  std::unordered_set<std::uint64_t> cached;  // the keys of the prefixes cached, under `mutex`
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
