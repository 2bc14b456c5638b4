// SPDX-License-Identifier: MIT
#include "openai_wire.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

namespace sg::detail {
namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string& what) {
  throw ModelError(errc::kModelInvalidResponse, "OpenAI-compatible reply: " + what);
}

/// Content blocks as OpenAI takes them: plain strings become text parts, objects pass as is.
json content_json(const Content& content) {
  if (content.is_string()) return content.str();
  json parts = json::array();
  for (const auto& block : content.blocks()) {
    if (block.is_string()) {
      parts.push_back({{"type", "text"}, {"text", block.get<std::string>()}});
    } else {
      parts.push_back(block);
    }
  }
  return parts;
}

json message_json(const Message& m, std::size_t index) {
  json out;
  switch (m.type) {
    case MessageType::human:
      out = {{"role", "user"}, {"content", content_json(m.content)}};
      break;
    case MessageType::system:
      out = {{"role", "system"}, {"content", content_json(m.content)}};
      break;
    case MessageType::tool:
      out = {
          {"role", "tool"}, {"content", content_json(m.content)}, {"tool_call_id", m.tool_call_id}};
      break;
    case MessageType::ai: {
      const bool calls = !m.tool_calls.empty() || !m.invalid_tool_calls.empty();
      out = {{"role", "assistant"},
             {"content", calls && m.content.empty() ? json(nullptr) : content_json(m.content)}};
      if (calls) {
        json list = json::array();
        for (const auto& c : m.tool_calls) {
          list.push_back({{"id", c.id},
                          {"type", "function"},
                          {"function", {{"name", c.name}, {"arguments", c.args.dump()}}}});
        }
        for (const auto& c : m.invalid_tool_calls) {
          list.push_back({{"id", c.id},
                          {"type", "function"},
                          {"function", {{"name", c.name}, {"arguments", c.args}}}});
        }
        out["tool_calls"] = std::move(list);
      }
      break;
    }
    case MessageType::remove:
      throw Error(
          errc::kInvalidArgument,
          "message " + std::to_string(index) +
              " is a RemoveMessage, which a model cannot take (apply it with add_messages)");
  }
  if (!m.name.empty() && m.type != MessageType::tool) out["name"] = m.name;
  return out;
}

std::string string_or(const json& object, const char* key, std::string fallback = {}) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

std::string validated_base_url(const OpenAIConfig& config) {
  std::string host;
  std::string url = checked_base_url(config.base_url, "OpenAIConfig", "OPENAI_BASE_URL", &host);
  if (host == "api.openai.com" && config.api_key.empty()) {
    throw ModelError(errc::kModelConfig,
                     "OpenAIConfig has no api_key for api.openai.com (set OPENAI_API_KEY)");
  }
  return url;
}

json chat_request_body(const std::string& model, const std::vector<Message>& messages,
                       const ChatOptions& options, bool stream) {
  json list = json::array();
  for (std::size_t i = 0; i < messages.size(); ++i) list.push_back(message_json(messages[i], i));
  json body = {{"model", model}, {"messages", std::move(list)}};
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  if (!options.tools.empty()) {
    json tools = json::array();
    for (const auto& t : options.tools) {
      json function = {{"name", t.name}, {"parameters", t.parameters}};
      if (!t.description.empty()) function["description"] = t.description;
      tools.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    body["tools"] = std::move(tools);
  }
  if (!options.tool_choice.empty()) {
    const std::string& c = options.tool_choice;
    if (c == "auto" || c == "none" || c == "required") {
      body["tool_choice"] = c;
    } else {
      body["tool_choice"] = {{"type", "function"}, {"function", {{"name", c}}}};
    }
  }
  if (options.temperature) body["temperature"] = *options.temperature;
  if (options.max_tokens) body["max_tokens"] = *options.max_tokens;
  if (!options.stop.empty()) body["stop"] = options.stop;
  if (options.response_format) {
    const ResponseFormat& f = *options.response_format;
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", f.name}, {"schema", f.schema}, {"strict", f.strict}}}};
  }
  return body;
}

json usage_metadata_of(const json& usage) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  // An integer count (none when absent or not an integer); above int64 it is the largest one
  // (not wrapped around to a negative).
  auto count = [&usage](const char* key) -> std::optional<std::int64_t> {
    const auto it = usage.find(key);
    if (it == usage.end() || !it->is_number_integer()) return std::nullopt;
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(kMax))
      return std::int64_t{kMax};  // a copy: clang needs a captured kMax to bind a reference
    return it->get<std::int64_t>();
  };
  const std::int64_t input = count("prompt_tokens").value_or(0);
  const std::int64_t output = count("completion_tokens").value_or(0);
  std::int64_t total = 0;
  if (const auto given = count("total_tokens")) {
    total = *given;
  } else if (__builtin_add_overflow(input, output, &total)) {
    total = input > 0 ? kMax : kMin;  // the sum of any two counts a server sends, saturated
  }
  json meta = {{"input_tokens", input}, {"output_tokens", output}, {"total_tokens", total}};
  const auto in_details = usage.find("prompt_tokens_details");
  if (in_details != usage.end() && in_details->is_object() &&
      in_details->contains("cached_tokens") && (*in_details)["cached_tokens"].is_number_integer()) {
    meta["input_token_details"] = {{"cache_read", (*in_details)["cached_tokens"]}};
  }
  const auto out_details = usage.find("completion_tokens_details");
  if (out_details != usage.end() && out_details->is_object() &&
      out_details->contains("reasoning_tokens") &&
      (*out_details)["reasoning_tokens"].is_number_integer()) {
    meta["output_token_details"] = {{"reasoning", (*out_details)["reasoning_tokens"]}};
  }
  return meta;
}

void add_tool_call(Message& message, std::string id, std::string name, const json& arguments) {
  if (name.empty()) {  // nothing to call (and message_from_json refuses a nameless tool call)
    message.invalid_tool_calls.push_back(InvalidToolCall{
        std::move(id), std::move(name),
        arguments.is_string() ? arguments.get<std::string>()
                              : arguments.dump(-1, ' ', false, json::error_handler_t::replace),
        "the tool call has no function name"});
    return;
  }
  if (arguments.is_object()) {  // some servers send the arguments as an object
    message.tool_calls.push_back(ToolCall{std::move(id), std::move(name), arguments});
    return;
  }
  const std::string raw = arguments.is_string() ? arguments.get<std::string>() : arguments.dump();
  const bool blank = std::all_of(
      raw.begin(), raw.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  if (blank) {  // a tool without parameters
    message.tool_calls.push_back(ToolCall{std::move(id), std::move(name), json::object()});
    return;
  }
  std::string error;
  try {
    json args = json::parse(raw);
    if (args.is_object()) {
      message.tool_calls.push_back(ToolCall{std::move(id), std::move(name), std::move(args)});
      return;
    }
    error = "Function " + name + " arguments:\n\n" + raw + "\n\nare not a JSON object.";
  } catch (const json::exception& e) {  // parse_error, out_of_range (1e999)
    error = "Function " + name + " arguments:\n\n" + raw +
            "\n\nare not valid JSON. Received JSONDecodeError " + e.what();
  }
  message.invalid_tool_calls.push_back(
      InvalidToolCall{std::move(id), std::move(name), raw, std::move(error)});
}

Message parse_chat_completion(const json& body) {
  if (!body.is_object()) invalid("the body is not a JSON object");
  if (body.contains("error") && !body["error"].is_null()) {
    invalid("the body is an error: " + excerpt(body["error"].dump(), 300));
  }
  const auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array() || choices->empty()) {
    invalid("no choices in " + excerpt(body.dump(), 300));
  }
  const json& choice = (*choices)[0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) {
    invalid("choices[0] has no message");
  }
  const json& m = choice["message"];
  Message reply = ai("");
  reply.id = string_or(body, "id");
  const auto content = m.find("content");
  if (content != m.end() && content->is_string()) {
    reply.content = content->get<std::string>();
  } else if (content != m.end() && content->is_array()) {
    reply.content = Content::Blocks(content->begin(), content->end());
  } else if (content != m.end() && !content->is_null()) {
    invalid("choices[0].message.content is neither a string nor a list");
  }
  const auto calls = m.find("tool_calls");
  if (calls != m.end() && !calls->is_null()) {
    if (!calls->is_array()) invalid("choices[0].message.tool_calls is not a list");
    for (const auto& call : *calls) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
        invalid("a tool call has no function: " + excerpt(call.dump(), 200));
      }
      const json& f = call["function"];
      add_tool_call(reply, string_or(call, "id"), string_or(f, "name"),
                    f.contains("arguments") ? f["arguments"] : json(""));
    }
  }
  const std::string refusal = string_or(m, "refusal");
  if (!refusal.empty()) reply.additional_kwargs["refusal"] = refusal;
  const auto usage = body.find("usage");
  if (usage != body.end() && usage->is_object()) reply.usage_metadata = usage_metadata_of(*usage);
  reply.response_metadata = {{"model_name", string_or(body, "model")}};
  const std::string finish = string_or(choice, "finish_reason");
  if (!finish.empty()) reply.response_metadata["finish_reason"] = finish;
  const std::string fingerprint = string_or(body, "system_fingerprint");
  if (!fingerprint.empty()) reply.response_metadata["system_fingerprint"] = fingerprint;
  return reply;
}

std::optional<MessageChunk> ChatStreamAccumulator::add(const json& event) {
  if (!event.is_object())
    invalid("a stream event is not a JSON object: " + excerpt(event.dump(), 200));
  if (event.contains("error") && !event["error"].is_null()) {
    const json& e = event["error"];
    invalid("the stream reported an error: " +
            (e.is_object() ? string_or(e, "message", e.dump()) : e.dump()));
  }
  if (id_.empty()) id_ = string_or(event, "id");
  if (model_.empty()) model_ = string_or(event, "model");
  if (fingerprint_.empty()) fingerprint_ = string_or(event, "system_fingerprint");
  MessageChunk chunk;
  chunk.message = ai("");
  bool any = false;
  const auto usage = event.find("usage");
  if (usage != event.end() && usage->is_object()) {
    usage_ = *usage;
    chunk.message.usage_metadata = usage_metadata_of(usage_);
    any = true;
  }
  const auto choices = event.find("choices");
  if (choices != event.end() && choices->is_array() && !choices->empty()) {
    const json& choice = (*choices)[0];
    if (!choice.is_object()) invalid("a stream event's choice is not an object");
    const auto delta = choice.find("delta");
    if (delta != choice.end() && delta->is_object()) {
      const std::string text = string_or(*delta, "content");
      if (!text.empty()) {
        content_ += text;
        chunk.message.content = text;
        any = true;
      }
      refusal_ += string_or(*delta, "refusal");
      const auto calls = delta->find("tool_calls");
      if (calls != delta->end() && calls->is_array()) {
        int position = 0;
        for (const auto& call : *calls) {
          if (!call.is_object()) invalid("a streamed tool call is not an object");
          const auto index_it = call.find("index");
          const int index = index_it != call.end() && index_it->is_number_integer()
                                ? index_it->get<int>()
                                : position;
          ++position;
          PartialCall& partial = calls_[index];
          ToolCallChunk piece;
          piece.index = index;
          piece.id = string_or(call, "id");
          if (partial.id.empty()) partial.id = piece.id;
          const auto function = call.find("function");
          if (function != call.end() && function->is_object()) {
            piece.name = string_or(*function, "name");
            if (partial.name.empty()) partial.name = piece.name;
            piece.args = string_or(*function, "arguments");
            partial.arguments += piece.args;
          }
          chunk.tool_call_chunks.push_back(std::move(piece));
          any = true;
        }
      }
    }
    const std::string finish = string_or(choice, "finish_reason");
    if (!finish.empty()) {
      finish_reason_ = finish;
      chunk.message.response_metadata = {{"model_name", model_}, {"finish_reason", finish}};
      if (!fingerprint_.empty())
        chunk.message.response_metadata["system_fingerprint"] = fingerprint_;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  chunk.message.id = id_;
  return chunk;
}

Message ChatStreamAccumulator::result() const {
  json message = {{"role", "assistant"}, {"content", content_}};
  if (!refusal_.empty()) message["refusal"] = refusal_;
  if (!calls_.empty()) {
    json list = json::array();
    for (const auto& [index, call] : calls_) {
      list.push_back({{"id", call.id},
                      {"type", "function"},
                      {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(list);
  }
  json choice = {{"index", 0}, {"message", std::move(message)}};
  if (!finish_reason_.empty()) choice["finish_reason"] = finish_reason_;
  json body = {{"id", id_}, {"model", model_}, {"choices", json::array({std::move(choice)})}};
  if (!fingerprint_.empty()) body["system_fingerprint"] = fingerprint_;
  if (usage_.is_object()) body["usage"] = usage_;
  return parse_chat_completion(body);
}

}  // namespace sg::detail
