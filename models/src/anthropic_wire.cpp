// SPDX-License-Identifier: MIT
#include "anthropic_wire.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "http_call.hpp"
#include "openai_wire.hpp"  // add_tool_call: LangChain's parsing of tool-call arguments
#include "text.hpp"

namespace sg::detail {
namespace {

using models_detail::lower;
using nlohmann::json;

[[noreturn]] void invalid_reply(const std::string& what) {
  throw ModelError(errc::kModelInvalidResponse, "Anthropic reply: " + what);
}

[[noreturn]] void bad_message(std::size_t index, const std::string& what) {
  throw Error(errc::kInvalidArgument, "message " + std::to_string(index) + " " + what);
}

std::string json_string(const json& object, const char* key, std::string fallback = {}) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool blank(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

json text_block(std::string text) {
  return {{"type", "text"}, {"text", std::move(text)}};
}

/// Copies `key` from `from` to `to` when it is there and not null.
void copy_key(const json& from, json& to, const char* key) {
  const auto it = from.find(key);
  if (it != from.end() && !it->is_null()) to[key] = *it;
}

/// The cache_control a message asks for in its additional_kwargs (null: none).
json message_cache_control(const Message& m) {
  if (!m.additional_kwargs.is_object()) return nullptr;
  const auto it = m.additional_kwargs.find("cache_control");
  return it == m.additional_kwargs.end() ? json(nullptr) : *it;
}

/// An image block of a data URL (base64) or an http(s) URL.
json image_of_url(const std::string& url, std::size_t index) {
  if (url.starts_with("data:")) {
    const std::size_t comma = url.find(',');
    const std::string meta = url.substr(5, comma == std::string::npos ? 0 : comma - 5);
    if (comma == std::string::npos || !meta.ends_with(";base64") || meta.size() == 7) {
      bad_message(index, "has an image data URL that is not data:<media type>;base64,<data>: " +
                             excerpt(url, 60));
    }
    return {{"type", "image"},
            {"source",
             {{"type", "base64"},
              {"media_type", meta.substr(0, meta.size() - 7)},
              {"data", url.substr(comma + 1)}}}};
  }
  const std::string lowered = lower(url.substr(0, 8));
  if (lowered.starts_with("http://") || lowered.starts_with("https://")) {
    return {{"type", "image"}, {"source", {{"type", "url"}, {"url", url}}}};
  }
  bad_message(index, "has an image URL that is neither a data URL nor an http(s) URL: '" +
                         excerpt(url, 60) + "'");
}

/// A content block of a user message or a tool result in Anthropic's form: text, images (the
/// OpenAI form `image_url`, LangChain's standard image blocks, Anthropic's own); other blocks
/// (documents, tool results) pass as they are.
json user_block(const json& block, std::size_t index) {
  if (block.is_string()) return text_block(block.get<std::string>());
  if (!block.is_object()) bad_message(index, "has a content block that is not an object");
  const std::string type = json_string(block, "type");
  json out;
  if (type == "text") {
    out = text_block(json_string(block, "text"));
    copy_key(block, out, "citations");
  } else if (type == "image_url") {
    const json image_url = block.value("image_url", json());
    const std::string url = image_url.is_string()
                                ? image_url.get<std::string>()
                                : (image_url.is_object() ? json_string(image_url, "url") : "");
    out = image_of_url(url, index);
  } else if (type == "image" && block.contains("source")) {
    out = {{"type", "image"}, {"source", block["source"]}};
  } else if (type == "image") {  // LangChain's standard blocks (v1: base64/url; v0.3: source_type)
    std::string data = json_string(block, "base64");
    if (data.empty() && json_string(block, "source_type") == "base64")
      data = json_string(block, "data");
    const std::string url = json_string(block, "url");
    if (!data.empty()) {
      const std::string media = json_string(block, "mime_type");
      if (media.empty()) bad_message(index, "has a base64 image block without a mime_type");
      out = {{"type", "image"},
             {"source", {{"type", "base64"}, {"media_type", media}, {"data", data}}}};
    } else if (!url.empty()) {
      out = image_of_url(url, index);
    } else {
      bad_message(index, "has an image block with no source, base64 data or url");
    }
  } else {
    out = block;
    out.erase("index");
    return out;
  }
  copy_key(block, out, "cache_control");
  return out;
}

/// Whether a content block of this type takes its input as input_json_delta fragments when it
/// streams: a tool_use block, and a server tool's call (server_tool_use, and mcp_tool_use of the
/// MCP connector).
bool streams_input(const std::string& type) {
  return type == "tool_use" || type == "server_tool_use" || type == "mcp_tool_use";
}

/// Whether a block is a text block with nothing but whitespace (which the API refuses).
bool blank_text(const json& block) {
  return block.is_object() && json_string(block, "type") == "text" &&
         blank(json_string(block, "text"));
}

/// Content as a list of blocks.
json as_blocks(json content) {
  if (content.is_array()) return content;
  json blocks = json::array();
  if (content.is_string() && !content.get<std::string>().empty())
    blocks.push_back(text_block(content.get<std::string>()));
  return blocks;
}

/// Puts `cache_control` on the last block of `content` (a list then) unless it has one.
void mark_last(json& content, const json& cache_control) {
  if (cache_control.is_null()) return;
  content = as_blocks(std::move(content));
  if (!content.empty() && !content.back().contains("cache_control"))
    content.back()["cache_control"] = cache_control;
}

struct Turn {
  std::string role;
  json content;  // a string or a list of blocks
};

/// Appends a turn, merged into the previous one when it has the same role (the API takes
/// alternating turns).
void add_turn(std::vector<Turn>& turns, const char* role, json content) {
  if (!turns.empty() && turns.back().role == role) {
    json merged = as_blocks(std::move(turns.back().content));
    for (auto& block : as_blocks(std::move(content))) merged.push_back(std::move(block));
    turns.back().content = std::move(merged);
    return;
  }
  turns.push_back({role, std::move(content)});
}

json human_content(const Message& m, std::size_t index) {
  if (m.content.is_string()) return m.content.str();
  json blocks = json::array();
  for (const auto& b : m.content.blocks()) {
    json block = user_block(b, index);
    if (!blank_text(block)) blocks.push_back(std::move(block));
  }
  return blocks;
}

json tool_result(const Message& m, std::size_t index) {
  if (m.tool_call_id.empty()) bad_message(index, "is a tool message without a tool_call_id");
  json result = {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}};
  if (m.content.is_string()) {
    if (!m.content.str().empty()) result["content"] = m.content.str();
  } else {
    json blocks = json::array();
    for (const auto& b : m.content.blocks()) {
      json block = user_block(b, index);
      if (!blank_text(block)) blocks.push_back(std::move(block));
    }
    if (!blocks.empty()) result["content"] = std::move(blocks);
  }
  if (m.status == "error") result["is_error"] = true;
  const json cache_control = message_cache_control(m);
  if (!cache_control.is_null()) result["cache_control"] = cache_control;
  return json::array({std::move(result)});
}

json tool_use_of(const ToolCall& call) {
  return {{"type", "tool_use"},
          {"id", call.id},
          {"name", call.name},
          {"input", call.args.is_object() ? call.args : json::object()}};
}

/// An ai message's content: its text, thinking blocks as they were (the API checks their
/// signature), its tool calls as tool_use blocks (a tool_use block of the content is replaced by
/// the tool call with its id, which may have been edited; one of an invalid tool call is left
/// out, as it has no input the API would take).
json ai_content(const Message& m, std::size_t index) {
  const bool calls = !m.tool_calls.empty() || !m.invalid_tool_calls.empty();
  if (m.content.is_string() && !calls) return m.content.str();
  json blocks = json::array();
  std::set<std::string> sent;
  if (m.content.is_string()) {
    if (!blank(m.content.str())) blocks.push_back(text_block(m.content.str()));
  } else {
    for (const auto& b : m.content.blocks()) {
      if (b.is_string()) {
        if (!blank(b.get<std::string>())) blocks.push_back(text_block(b.get<std::string>()));
        continue;
      }
      if (!b.is_object()) bad_message(index, "has a content block that is not an object");
      const std::string type = json_string(b, "type");
      if (type == "text") {
        if (blank(json_string(b, "text"))) continue;
        json block = text_block(json_string(b, "text"));
        copy_key(b, block, "citations");
        copy_key(b, block, "cache_control");
        blocks.push_back(std::move(block));
      } else if (type == "thinking") {
        json block = {{"type", "thinking"}, {"thinking", json_string(b, "thinking")}};
        copy_key(b, block, "signature");
        blocks.push_back(std::move(block));
      } else if (type == "redacted_thinking") {
        blocks.push_back({{"type", "redacted_thinking"}, {"data", json_string(b, "data")}});
      } else if (type == "tool_use") {
        const std::string id = json_string(b, "id");
        const auto call = std::find_if(m.tool_calls.begin(), m.tool_calls.end(),
                                       [&](const ToolCall& c) { return c.id == id; });
        if (call != m.tool_calls.end()) {
          if (sent.insert(id).second) blocks.push_back(tool_use_of(*call));
          continue;
        }
        const bool invalid_call =
            std::any_of(m.invalid_tool_calls.begin(), m.invalid_tool_calls.end(),
                        [&](const InvalidToolCall& c) { return c.id == id; });
        if (invalid_call) continue;
        json block = {{"type", "tool_use"}, {"id", id}, {"name", json_string(b, "name")}};
        block["input"] =
            b.contains("input") && b["input"].is_object() ? b["input"] : json::object();
        copy_key(b, block, "cache_control");
        blocks.push_back(std::move(block));
      } else if (type == "image" || type == "image_url") {
        blocks.push_back(user_block(b, index));
      } else {  // server tool blocks and what is newer: as they came
        json block = b;
        block.erase("index");
        block.erase("partial_json");  // a streamed input that was not JSON (not the API's)
        blocks.push_back(std::move(block));
      }
    }
  }
  for (const auto& call : m.tool_calls) {
    if (sent.insert(call.id).second) blocks.push_back(tool_use_of(call));
  }
  return blocks;
}

/// The text blocks of a system message.
json system_blocks(const Message& m, std::size_t index) {
  json blocks = json::array();
  if (m.content.is_string()) {
    if (!m.content.str().empty()) blocks.push_back(text_block(m.content.str()));
  } else {
    for (const auto& b : m.content.blocks()) {
      const json block = user_block(b, index);
      if (json_string(block, "type") != "text") {
        bad_message(index, "is a system message with a '" + json_string(block, "type") +
                               "' block: Anthropic's system prompt takes text blocks only");
      }
      if (!blank_text(block)) blocks.push_back(block);
    }
  }
  mark_last(blocks, message_cache_control(m));
  return blocks;
}

json tool_json(const ToolSpec& tool) {
  json schema = tool.parameters.is_object() ? tool.parameters : json::object();
  if (!schema.contains("type")) schema["type"] = "object";
  json out = {{"name", tool.name}, {"input_schema", std::move(schema)}};
  if (!tool.description.empty()) out["description"] = tool.description;
  return out;
}

std::optional<std::int64_t> count_of(const json& usage, const char* key) {
  const auto it = usage.find(key);
  if (it == usage.end() || !it->is_number_integer()) return std::nullopt;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(kMax))
    return kMax;
  return it->get<std::int64_t>();
}

std::int64_t saturated_sum(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return a > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  }
  return sum;
}

/// A streamed server tool call's input (its input_json_delta fragments put together) into its
/// block: the JSON object it is, as in an unstreamed reply. Input that is not a JSON object is
/// kept as `partial_json` (as in LangChain's merged chunks), the input staying the one the block
/// started with ({} when none): the block is still one the API takes back.
void set_server_tool_input(json& block, const std::string& text) {
  if (!blank(text)) {
    try {
      json input = json::parse(text);
      if (input.is_object()) {
        block["input"] = std::move(input);
        block.erase("partial_json");
        return;
      }
    } catch (const json::exception&) {  // not JSON, or a number out of range (1e999)
    }
    block["partial_json"] = text;
  }
  if (!block.contains("input") || !block["input"].is_object()) block["input"] = json::object();
}

}  // namespace

std::string anthropic_endpoint(const AnthropicConfig& config) {
  std::string host;
  const std::string url =
      checked_base_url(config.base_url, "AnthropicConfig", "ANTHROPIC_BASE_URL", &host);
  if (host == "api.anthropic.com" && config.api_key.empty()) {
    throw ModelError(errc::kModelConfig,
                     "AnthropicConfig has no api_key for api.anthropic.com (set "
                     "ANTHROPIC_API_KEY)");
  }
  return url + (lower(url).ends_with("/v1") ? "/messages" : "/v1/messages");
}

std::string format_tool_name(const ChatOptions& options) {
  if (!options.response_format) return {};
  return options.response_format->name.empty() ? "response" : options.response_format->name;
}

json messages_request_body(const AnthropicConfig& config, const std::vector<Message>& messages,
                           const ChatOptions& options, bool stream) {
  // The system prompt: the system messages before the conversation.
  std::size_t first = 0;
  json system = json::array();
  bool system_as_string = true;
  for (; first < messages.size() && messages[first].type == MessageType::system; ++first) {
    const Message& m = messages[first];
    if (!m.content.is_string() || !message_cache_control(m).is_null()) system_as_string = false;
    for (auto& block : system_blocks(m, first)) system.push_back(std::move(block));
  }
  std::vector<Turn> turns;
  for (std::size_t i = first; i < messages.size(); ++i) {
    const Message& m = messages[i];
    const json cache_control = message_cache_control(m);
    json content;
    const char* role = "user";
    switch (m.type) {
      case MessageType::human:
        content = human_content(m, i);
        break;
      case MessageType::tool:
        content = tool_result(m, i);
        break;
      case MessageType::ai:
        content = ai_content(m, i);
        role = "assistant";
        break;
      case MessageType::system:
        bad_message(i,
                    "is a system message after the conversation started: Anthropic's Messages API "
                    "takes system messages only before the first other message (as LangChain's "
                    "ChatAnthropic, which refuses them too)");
      case MessageType::remove:
        bad_message(i,
                    "is a RemoveMessage, which a model cannot take (apply it with add_messages)");
    }
    if (m.type != MessageType::tool) mark_last(content, cache_control);
    add_turn(turns, role, std::move(content));
  }
  json list = json::array();
  for (auto& turn : turns)
    list.push_back({{"role", std::move(turn.role)}, {"content", std::move(turn.content)}});

  const int max_tokens = options.max_tokens.value_or(config.max_tokens);
  if (config.thinking_budget > 0 && max_tokens <= config.thinking_budget) {
    throw Error(errc::kInvalidArgument, "max_tokens " + std::to_string(max_tokens) +
                                            " must be above AnthropicConfig::thinking_budget (" +
                                            std::to_string(config.thinking_budget) +
                                            "): thinking counts toward it");
  }
  json body = {{"model", config.model}, {"max_tokens", max_tokens}, {"messages", std::move(list)}};
  if (!system.empty()) {
    body["system"] = system_as_string && first == 1 ? json(system[0]["text"]) : std::move(system);
  }
  if (stream) body["stream"] = true;
  if (config.thinking_budget > 0)
    body["thinking"] = {{"type", "enabled"}, {"budget_tokens", config.thinking_budget}};

  json tools = json::array();
  for (const auto& t : options.tools) tools.push_back(tool_json(t));
  const std::string format_tool = format_tool_name(options);
  if (!format_tool.empty()) {
    const ResponseFormat& format = *options.response_format;
    for (const auto& t : options.tools) {
      if (t.name == format_tool) {
        throw Error(errc::kInvalidArgument,
                    "the response_format's name '" + format_tool +
                        "' is also a tool's: Anthropic answers a response_format with a tool "
                        "call of that name; rename one of them");
      }
    }
    if (format.schema.contains("type") && format.schema["type"] != "object") {
      throw Error(errc::kInvalidArgument,
                  "Anthropic's structured output (a tool call's input) needs an object schema; "
                  "the response_format's schema is of type " +
                      format.schema["type"].dump());
    }
    ToolSpec spec{format_tool,
                  format.schema.is_object() && format.schema.contains("description") &&
                          format.schema["description"].is_string()
                      ? format.schema["description"].get<std::string>()
                      : "Gives the answer in the structured form the user asked for: call it "
                        "once, with the answer as its input.",
                  format.schema};
    tools.push_back(tool_json(spec));
  }
  if (!tools.empty()) {
    body["tools"] = std::move(tools);
    const std::string& choice = options.tool_choice;
    if (choice == "auto" || choice == "none") {
      body["tool_choice"] = {{"type", choice}};
    } else if (choice == "required") {
      body["tool_choice"] = {{"type", "any"}};
    } else if (!choice.empty()) {
      body["tool_choice"] = {{"type", "tool"}, {"name", choice}};
    } else if (!format_tool.empty()) {
      // Forced: the format tool alone, or any tool (a real one, or the answer) with tools. With
      // extended thinking the API allows only auto.
      if (config.thinking_budget > 0) {
        body["tool_choice"] = {{"type", "auto"}};
      } else if (options.tools.empty()) {
        body["tool_choice"] = {{"type", "tool"}, {"name", format_tool}};
      } else {
        body["tool_choice"] = {{"type", "any"}};
      }
    }
  }
  if (options.temperature) body["temperature"] = *options.temperature;
  if (!options.stop.empty()) body["stop_sequences"] = options.stop;
  return body;
}

json anthropic_usage_metadata(const json& usage) {
  if (!usage.is_object()) return nullptr;
  const std::int64_t base = count_of(usage, "input_tokens").value_or(0);
  const std::optional<std::int64_t> read = count_of(usage, "cache_read_input_tokens");
  const std::optional<std::int64_t> written = count_of(usage, "cache_creation_input_tokens");
  const std::int64_t input =
      saturated_sum(saturated_sum(base, read.value_or(0)), written.value_or(0));
  const std::int64_t output = count_of(usage, "output_tokens").value_or(0);
  json meta = {{"input_tokens", input},
               {"output_tokens", output},
               {"total_tokens", saturated_sum(input, output)}};
  json details = json::object();
  if (read) details["cache_read"] = *read;
  if (written) details["cache_creation"] = *written;
  const auto creation = usage.find("cache_creation");
  if (creation != usage.end() && creation->is_object()) {
    for (const char* key : {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}) {
      if (const auto n = count_of(*creation, key)) details[key] = *n;
    }
  }
  if (!details.empty()) meta["input_token_details"] = std::move(details);
  return meta;
}

int anthropic_error_status(std::string_view type) {
  static constexpr std::pair<std::string_view, int> kStatuses[] = {
      {"invalid_request_error", 400}, {"authentication_error", 401},
      {"billing_error", 402},         {"permission_error", 403},
      {"not_found_error", 404},       {"request_too_large", 413},
      {"rate_limit_error", 429},      {"api_error", 500},
      {"timeout_error", 504},         {"overloaded_error", 529}};
  for (const auto& [name, status] : kStatuses) {
    if (name == type) return status;
  }
  return 500;
}

std::string anthropic_error_message(std::string_view body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const std::string type = json_string(j["error"], "type");
    const std::string message = json_string(j["error"], "message");
    if (!type.empty()) return message.empty() ? type : type + ": " + message;
  }
  return error_message_of(body);
}

bool anthropic_retryable(int status, std::string_view body) {
  if (status == 429 || status >= 500) return true;
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("error") && j["error"].is_object() &&
         json_string(j["error"], "type") == "overloaded_error";
}

Message parse_anthropic_message(const json& body, const std::string& format_tool) {
  if (!body.is_object()) invalid_reply("the body is not a JSON object");
  if (json_string(body, "type") == "error" ||
      (body.contains("error") && !body["error"].is_null())) {
    invalid_reply("the body is an error: " + excerpt(body.dump(), 300));
  }
  const auto content = body.find("content");
  if (content == body.end() || !content->is_array()) {
    invalid_reply("no content list in " + excerpt(body.dump(), 300));
  }
  Message reply = ai("");
  reply.id = json_string(body, "id");
  json blocks = json::array();
  bool plain = true;  // nothing but text blocks without citations
  for (const auto& b : *content) {
    if (!b.is_object())
      invalid_reply("a content block is not an object: " + excerpt(b.dump(), 200));
    const std::string type = json_string(b, "type");
    if (type == "text") {
      json block = text_block(json_string(b, "text"));
      if (b.contains("citations") && b["citations"].is_array() && !b["citations"].empty()) {
        block["citations"] = b["citations"];
        plain = false;
      }
      blocks.push_back(std::move(block));
    } else if (type == "tool_use") {
      const std::string id = json_string(b, "id");
      const std::string name = json_string(b, "name");
      const json input = b.contains("input") ? b["input"] : json::object();
      if (!format_tool.empty() && name == format_tool) {
        // The structured answer: its input as JSON text (a streamed one as it came when it is
        // not JSON, which parse_structured then reports).
        std::string text = input.is_string() ? input.get<std::string>() : input.dump();
        if (input.is_string()) {
          const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
          if (!parsed.is_discarded()) text = parsed.dump();
        }
        blocks.push_back(text_block(std::move(text)));
        continue;
      }
      const std::size_t before = reply.tool_calls.size();
      add_tool_call(reply, id, name, input);
      json block = {{"type", "tool_use"}, {"id", id}, {"name", name}};
      block["input"] =
          reply.tool_calls.size() > before ? reply.tool_calls.back().args : json::object();
      blocks.push_back(std::move(block));
      plain = false;
    } else if (type == "thinking") {
      json block = {{"type", "thinking"}, {"thinking", json_string(b, "thinking")}};
      copy_key(b, block, "signature");
      blocks.push_back(std::move(block));
      plain = false;
    } else if (type == "redacted_thinking") {
      blocks.push_back({{"type", "redacted_thinking"}, {"data", json_string(b, "data")}});
      plain = false;
    } else {
      blocks.push_back(b);  // server tool blocks and what is newer: kept as they came
      plain = false;
    }
  }
  if (blocks.empty()) {
    reply.content = "";
  } else if (plain && blocks.size() == 1) {
    reply.content = blocks[0]["text"].get<std::string>();
  } else {
    reply.content = Content::Blocks(blocks.begin(), blocks.end());
  }
  const auto usage = body.find("usage");
  if (usage != body.end() && usage->is_object())
    reply.usage_metadata = anthropic_usage_metadata(*usage);
  const std::string model = json_string(body, "model");
  reply.response_metadata = {{"model_name", model}, {"model", model}};
  const std::string stop = json_string(body, "stop_reason");
  if (!stop.empty()) {
    reply.response_metadata["stop_reason"] = stop;
    reply.response_metadata["finish_reason"] = stop;
  }
  const std::string sequence = json_string(body, "stop_sequence");
  if (!sequence.empty()) reply.response_metadata["stop_sequence"] = sequence;
  return reply;
}

AnthropicStreamAccumulator::AnthropicStreamAccumulator(std::string format_tool, bool blocks)
    : format_tool_(std::move(format_tool)), blocks_(blocks) {}

MessageChunk AnthropicStreamAccumulator::chunk() const {
  MessageChunk out;
  out.message = ai("");
  out.message.id = json_string(message_, "id");
  return out;
}

json& AnthropicStreamAccumulator::block_at(const json& event) {
  const auto index = event.find("index");
  if (index == event.end() || !index->is_number_unsigned()) {
    invalid_reply("a " + json_string(event, "type") +
                  " event without an index: " + excerpt(event.dump(), 200));
  }
  const auto it = content_.find(index->get<std::size_t>());
  if (it == content_.end()) {
    invalid_reply("a " + json_string(event, "type") + " event for content block " +
                  std::to_string(index->get<std::size_t>()) + ", which did not start");
  }
  return it->second;
}

std::optional<MessageChunk> AnthropicStreamAccumulator::add(const json& event) {
  if (!event.is_object())
    invalid_reply("a stream event is not a JSON object: " + excerpt(event.dump(), 200));
  const std::string type = json_string(event, "type");
  if (type == "error") {
    const json error = event.value("error", json::object());
    const std::string kind = error.is_object() ? json_string(error, "type") : std::string();
    const std::string message = error.is_object() ? json_string(error, "message") : std::string();
    throw ModelError(errc::kModelHttpStatus,
                     "messages: the stream reported an error: " +
                         (kind.empty() ? std::string("(no type)") : kind) +
                         (message.empty() ? std::string() : ": " + message),
                     anthropic_error_status(kind), excerpt(event.dump()));
  }
  if (type.empty()) invalid_reply("a stream event without a type: " + excerpt(event.dump(), 200));
  if (type == "ping") return std::nullopt;
  if (type == "message_start") {
    const auto message = event.find("message");
    if (message == event.end() || !message->is_object())
      invalid_reply("message_start without a message: " + excerpt(event.dump(), 200));
    message_ = *message;
    content_.clear();
    partial_json_.clear();
    started_ = true;
    return std::nullopt;
  }
  if (!started_) invalid_reply("a " + type + " event before message_start");
  if (type == "content_block_start") {
    const auto index = event.find("index");
    const auto block = event.find("content_block");
    if (index == event.end() || !index->is_number_unsigned() || block == event.end() ||
        !block->is_object()) {
      invalid_reply("a malformed content_block_start: " + excerpt(event.dump(), 200));
    }
    const std::size_t i = index->get<std::size_t>();
    content_[i] = *block;
    const std::string kind = json_string(*block, "type");
    if (streams_input(kind)) {
      partial_json_[i] = "";
    } else {
      partial_json_.erase(i);
    }
    MessageChunk out = chunk();
    if (kind == "tool_use") {
      if (json_string(*block, "name") == format_tool_) return std::nullopt;
      out.tool_call_chunks.push_back(ToolCallChunk{
          json_string(*block, "id"), json_string(*block, "name"), "", static_cast<int>(i)});
      return out;
    }
    if (kind == "text") {
      const std::string text = json_string(*block, "text");
      if (text.empty()) return std::nullopt;
      out.message.content =
          blocks_ ? Content(Content::Blocks{{{"type", "text"}, {"text", text}, {"index", i}}})
                  : Content(text);
      return out;
    }
    if (kind == "thinking") {
      if (json_string(*block, "thinking").empty()) return std::nullopt;
      out.message.content = Content::Blocks{
          {{"type", "thinking"}, {"thinking", json_string(*block, "thinking")}, {"index", i}}};
      return out;
    }
    // redacted_thinking, a server tool's call (server_tool_use: its input follows as
    // input_json_delta) and result (web_search_tool_result, ...), newer blocks: shown whole, as
    // they start. A server tool's call is not a tool call: the API ran it.
    json shown = *block;
    shown["index"] = i;
    out.message.content = Content::Blocks{std::move(shown)};
    return out;
  }
  if (type == "content_block_delta") {
    json& block = block_at(event);
    const std::size_t i = event["index"].get<std::size_t>();
    const auto delta = event.find("delta");
    if (delta == event.end() || !delta->is_object())
      invalid_reply("a content_block_delta without a delta: " + excerpt(event.dump(), 200));
    const std::string kind = json_string(*delta, "type");
    MessageChunk out = chunk();
    auto text_chunk = [&](const std::string& text) {
      out.message.content =
          blocks_ ? Content(Content::Blocks{{{"type", "text"}, {"text", text}, {"index", i}}})
                  : Content(text);
    };
    if (kind == "text_delta") {
      const std::string text = json_string(*delta, "text");
      block["text"] = json_string(block, "text") + text;
      if (text.empty()) return std::nullopt;
      text_chunk(text);
      return out;
    }
    if (kind == "input_json_delta") {
      const std::string block_type = json_string(block, "type");
      if (!streams_input(block_type))
        invalid_reply("an input_json_delta for a " + block_type + " block");
      const std::string part = json_string(*delta, "partial_json");
      partial_json_[i] += part;
      if (part.empty()) return std::nullopt;
      if (block_type != "tool_use") {  // a server tool's input: a content block, as LangChain's
        out.message.content =
            Content::Blocks{{{"type", "input_json_delta"}, {"partial_json", part}, {"index", i}}};
      } else if (json_string(block, "name") == format_tool_) {
        text_chunk(part);
      } else {
        out.tool_call_chunks.push_back(ToolCallChunk{"", "", part, static_cast<int>(i)});
      }
      return out;
    }
    if (kind == "thinking_delta") {
      const std::string thinking = json_string(*delta, "thinking");
      block["thinking"] = json_string(block, "thinking") + thinking;
      out.message.content =
          Content::Blocks{{{"type", "thinking"}, {"thinking", thinking}, {"index", i}}};
      return out;
    }
    if (kind == "signature_delta") {
      const std::string signature = json_string(*delta, "signature");
      block["signature"] = json_string(block, "signature") + signature;
      out.message.content =
          Content::Blocks{{{"type", "thinking"}, {"signature", signature}, {"index", i}}};
      return out;
    }
    if (kind == "citations_delta" && delta->contains("citation")) {
      if (!block.contains("citations") || !block["citations"].is_array())
        block["citations"] = json::array();
      block["citations"].push_back((*delta)["citation"]);
    }
    return std::nullopt;  // a delta of a kind this client does not show
  }
  if (type == "content_block_stop") {
    (void)block_at(event);
    return std::nullopt;
  }
  if (type == "message_delta") {
    const json delta = event.value("delta", json::object());
    if (delta.is_object()) {
      for (const char* key : {"stop_reason", "stop_sequence"}) {
        if (delta.contains(key)) message_[key] = delta[key];
      }
    }
    const auto usage = event.find("usage");
    if (usage != event.end() && usage->is_object()) {
      if (!message_.contains("usage") || !message_["usage"].is_object())
        message_["usage"] = json::object();
      for (const auto& [key, value] : usage->items()) {
        if (!value.is_null()) message_["usage"][key] = value;
      }
    }
    const std::string stop = json_string(message_, "stop_reason");
    if (!stop.empty()) finished_ = true;
    MessageChunk out = chunk();
    const std::string model = json_string(message_, "model");
    out.message.response_metadata = {{"model_name", model}, {"model", model}};
    if (!stop.empty()) {
      out.message.response_metadata["stop_reason"] = stop;
      out.message.response_metadata["finish_reason"] = stop;
    }
    const std::string sequence = json_string(message_, "stop_sequence");
    if (!sequence.empty()) out.message.response_metadata["stop_sequence"] = sequence;
    if (message_.contains("usage"))
      out.message.usage_metadata = anthropic_usage_metadata(message_["usage"]);
    return out;
  }
  if (type == "message_stop") {
    finished_ = true;
    return std::nullopt;
  }
  return std::nullopt;  // an event type this client does not know (the API may add some)
}

Message AnthropicStreamAccumulator::result() const {
  json body = message_;
  json content = json::array();
  for (const auto& [index, block] : content_) {
    json b = block;
    const auto partial = partial_json_.find(index);
    if (partial != partial_json_.end()) {
      if (json_string(b, "type") == "tool_use") {
        // parse_anthropic_message reads it as a tool call's arguments.
        if (!partial->second.empty()) b["input"] = partial->second;
      } else {
        set_server_tool_input(b, partial->second);
      }
    }
    content.push_back(std::move(b));
  }
  body["content"] = std::move(content);
  return parse_anthropic_message(body, format_tool_);
}

}  // namespace sg::detail
