// SPDX-License-Identifier: MIT
#include <stategraph/core/detail/cbor.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>

#include <fmt/format.h>

#include <array>
#include <utility>

namespace sg {
namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string& what) {
  throw Error(errc::kInvalidMessage, what);
}

/// A short rendering of a JSON value for error messages.
std::string preview(const json& value) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

bool empty_object(const json& value) {
  return value.is_null() || (value.is_object() && value.empty());
}

struct TypeName {
  std::string_view name;
  MessageType type;
};
constexpr std::array<TypeName, 8> kTypeNames{{{"human", MessageType::human},
                                              {"user", MessageType::human},
                                              {"ai", MessageType::ai},
                                              {"assistant", MessageType::ai},
                                              {"system", MessageType::system},
                                              {"developer", MessageType::system},
                                              {"tool", MessageType::tool},
                                              {"remove", MessageType::remove}}};

Content content_from_json(const json& value) {
  if (value.is_null()) return Content{};
  if (value.is_string()) return Content{value.get<std::string>()};
  if (value.is_array()) {
    Content::Blocks blocks;
    blocks.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
      const json& block = value[i];
      if (!block.is_object() && !block.is_string()) {
        invalid(
            fmt::format("content[{}] must be a string or an object, got {}", i, preview(block)));
      }
      blocks.push_back(block);
    }
    return Content{std::move(blocks)};
  }
  invalid(fmt::format("'content' must be a string or a list of content blocks, got {}",
                      preview(value)));
}

std::string optional_string(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_string()) invalid(fmt::format("'{}' must be a string, got {}", key, preview(*it)));
  return it->get<std::string>();
}

ToolCall tool_call_from_json(const json& value, std::size_t index) {
  if (!value.is_object()) {
    invalid(fmt::format("tool_calls[{}] must be an object, got {}", index, preview(value)));
  }
  ToolCall call;
  call.id = optional_string(value, "id");
  if (auto fn = value.find("function"); fn != value.end()) {  // OpenAI form
    if (!fn->is_object()) invalid(fmt::format("tool_calls[{}].function must be an object", index));
    call.name = optional_string(*fn, "name");
    auto args = fn->find("arguments");
    if (args != fn->end() && args->is_string()) {
      try {
        call.args = json::parse(args->get<std::string>());
      } catch (const json::exception& e) {  // parse_error, and out_of_range (1e999)
        invalid(fmt::format("tool_calls[{}].function.arguments is not valid JSON: {}", index,
                            e.what()));
      }
    } else if (args != fn->end() && !args->is_null()) {
      call.args = *args;
    }
  } else {
    call.name = optional_string(value, "name");
    if (auto args = value.find("args"); args != value.end() && !args->is_null()) call.args = *args;
  }
  if (call.name.empty()) invalid(fmt::format("tool_calls[{}] has no 'name'", index));
  if (!call.args.is_object()) {
    invalid(
        fmt::format("tool_calls[{}].args must be an object, got {}", index, preview(call.args)));
  }
  return call;
}

InvalidToolCall invalid_tool_call_from_json(const json& value, std::size_t index) {
  if (!value.is_object()) {
    invalid(fmt::format("invalid_tool_calls[{}] must be an object, got {}", index, preview(value)));
  }
  InvalidToolCall call;
  call.id = optional_string(value, "id");
  call.name = optional_string(value, "name");
  call.args = optional_string(value, "args");
  call.error = optional_string(value, "error");
  return call;
}

/// Builds a message of `type` from an object holding its fields (the dict form of LangChain).
Message message_from_fields(MessageType type, const json& fields, const char* type_key) {
  Message m;
  m.type = type;
  json extra = json::object();
  bool has_content = false;
  for (const auto& [key, value] : fields.items()) {
    if (key == type_key || key == "lc_serializable") continue;
    if (key == "content") {
      has_content = true;
      m.content = content_from_json(value);
    } else if (key == "id") {
      if (!value.is_null() && !value.is_string()) {
        invalid(fmt::format("'id' must be a string or null, got {}", preview(value)));
      }
      if (value.is_string()) m.id = value.get<std::string>();
    } else if (key == "name") {
      m.name = optional_string(fields, "name");
    } else if (key == "tool_call_id") {
      m.tool_call_id = optional_string(fields, "tool_call_id");
    } else if (key == "tool_calls") {
      if (value.is_null()) continue;
      if (!value.is_array())
        invalid(fmt::format("'tool_calls' must be a list, got {}", preview(value)));
      for (std::size_t i = 0; i < value.size(); ++i) {
        m.tool_calls.push_back(tool_call_from_json(value[i], i));
      }
    } else if (key == "additional_kwargs") {
      if (value.is_null()) continue;
      if (!value.is_object()) invalid("'additional_kwargs' must be an object");
      extra.update(value);
    } else if (key == "response_metadata") {
      if (value.is_null()) continue;
      if (!value.is_object()) invalid("'response_metadata' must be an object");
      m.response_metadata = value;
    } else if (key == "usage_metadata") {
      if (value.is_null()) continue;
      if (!value.is_object()) invalid("'usage_metadata' must be an object");
      m.usage_metadata = value;
    } else if (key == "example" && value == false) {
      continue;  // LangChain's default, not an extra
    } else if (key == "invalid_tool_calls" && value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        m.invalid_tool_calls.push_back(invalid_tool_call_from_json(value[i], i));
      }
    } else if (key == "status" && type == MessageType::tool) {
      m.status = optional_string(fields, "status");
    } else if (key == "tool_call_chunks" && value.is_array() && value.empty()) {
      continue;
    } else if (key == "type" || key == "role") {
      continue;  // the other discriminator, e.g. {"role": "user", "type": "message"}
    } else {
      extra[key] = value;  // LangChain keeps unknown keys in additional_kwargs
    }
  }
  if (!has_content && type != MessageType::remove) {
    invalid(fmt::format("a message of type '{}' needs 'content'", to_string(type)));
  }
  if (type == MessageType::remove) {
    m.content = Content{};
    if (m.id.empty()) invalid("a remove message needs an 'id'");
  }
  if (type == MessageType::tool && m.tool_call_id.empty()) {
    invalid("a tool message needs a 'tool_call_id' string");
  }
  if (type != MessageType::ai && (!m.tool_calls.empty() || !m.invalid_tool_calls.empty())) {
    invalid(fmt::format("only ai messages carry 'tool_calls', not {} messages", to_string(type)));
  }
  if (!extra.empty()) m.additional_kwargs = std::move(extra);
  return m;
}

MessageType type_from_class_name(std::string_view cls) {
  constexpr std::string_view kChunk = "Chunk";
  if (cls.size() > kChunk.size() && cls.substr(cls.size() - kChunk.size()) == kChunk) {
    cls.remove_suffix(kChunk.size());
  }
  if (cls == "HumanMessage") return MessageType::human;
  if (cls == "AIMessage") return MessageType::ai;
  if (cls == "SystemMessage") return MessageType::system;
  if (cls == "ToolMessage") return MessageType::tool;
  if (cls == "RemoveMessage") return MessageType::remove;
  invalid(fmt::format("unsupported LangChain message class '{}'", cls));
}

Message message_from_object(const json& value) {
  // LangChain's serialized constructor form: {"lc": 1, "type": "constructor", "id": [...],
  // "kwargs": {...}}
  if (value.contains("lc") && value.value("type", json()) == "constructor") {
    const json& path = value.value("id", json());
    const json& kwargs = value.value("kwargs", json::object());
    if (!path.is_array() || path.empty() || !path.back().is_string() || !kwargs.is_object()) {
      invalid("a LangChain constructor object needs an 'id' path and 'kwargs'");
    }
    return message_from_fields(type_from_class_name(path.back().get_ref<const std::string&>()),
                               kwargs, "");
  }
  const char* type_key = value.contains("role") ? "role" : "type";
  auto it = value.find(type_key);
  if (it == value.end()) {
    invalid(fmt::format("a message object needs a 'type' or 'role', got {}", preview(value)));
  }
  if (!it->is_string()) {
    invalid(fmt::format("'{}' must be a string, got {}", type_key, preview(*it)));
  }
  const MessageType type = parse_message_type(it->get_ref<const std::string&>());
  // LangChain's storage form (message_to_dict): {"type": "human", "data": {...}}
  if (auto data = value.find("data");
      data != value.end() && data->is_object() && !value.contains("content")) {
    return message_from_fields(type, *data, "type");
  }
  Message m = message_from_fields(type, value, type_key);
  if (it->get_ref<const std::string&>() == "developer") {
    if (m.additional_kwargs.is_null()) m.additional_kwargs = json::object();
    m.additional_kwargs["__openai_role__"] = "developer";
  }
  return m;
}

json optional_string_json(const std::string& value) {
  return value.empty() ? json(nullptr) : json(value);
}

json invalid_tool_call_to_json(const InvalidToolCall& call) {
  return json{{"name", optional_string_json(call.name)},
              {"args", optional_string_json(call.args)},
              {"id", optional_string_json(call.id)},
              {"error", optional_string_json(call.error)},
              {"type", "invalid_tool_call"}};
}

json tool_call_to_json(const ToolCall& call) {
  return json{{"name", call.name},
              {"args", call.args.is_null() ? json::object() : call.args},
              {"id", call.id.empty() ? json(nullptr) : json(call.id)},
              {"type", "tool_call"}};
}

}  // namespace

std::string_view to_string(MessageType type) noexcept {
  switch (type) {
    case MessageType::human:
      return "human";
    case MessageType::ai:
      return "ai";
    case MessageType::system:
      return "system";
    case MessageType::tool:
      return "tool";
    case MessageType::remove:
      return "remove";
  }
  return "unknown";
}

MessageType parse_message_type(std::string_view name) {
  for (const auto& entry : kTypeNames) {
    if (entry.name == name) return entry.type;
  }
  invalid(
      fmt::format("unsupported message type '{}': use one of human (user), ai (assistant), system "
                  "(developer), tool, remove",
                  name));
}

const std::string& Content::str() const {
  if (const auto* s = std::get_if<std::string>(&value_)) return *s;
  throw Error(errc::kInvalidMessage, "message content is a list of blocks, not a string");
}

const Content::Blocks& Content::blocks() const {
  if (const auto* b = std::get_if<Blocks>(&value_)) return *b;
  throw Error(errc::kInvalidMessage, "message content is a string, not a list of blocks");
}

Content::Blocks& Content::blocks() {
  if (auto* b = std::get_if<Blocks>(&value_)) return *b;
  throw Error(errc::kInvalidMessage, "message content is a string, not a list of blocks");
}

std::string Content::text() const {
  if (const auto* s = std::get_if<std::string>(&value_)) return *s;
  std::string out;
  for (const json& block : std::get<Blocks>(value_)) {
    if (block.is_string()) {
      out += block.get_ref<const std::string&>();
    } else if (block.is_object() && block.value("type", json()) == "text") {
      auto text = block.find("text");
      if (text != block.end() && text->is_string()) out += text->get_ref<const std::string&>();
    }
  }
  return out;
}

bool Content::empty() const noexcept {
  return std::visit([](const auto& v) { return v.empty(); }, value_);
}

bool operator==(const Message& a, const Message& b) {
  auto same_object = [](const json& x, const json& y) {
    return (empty_object(x) && empty_object(y)) || x == y;
  };
  return a.type == b.type && a.content == b.content && a.id == b.id && a.name == b.name &&
         a.tool_calls == b.tool_calls && a.invalid_tool_calls == b.invalid_tool_calls &&
         a.tool_call_id == b.tool_call_id && a.status == b.status &&
         same_object(a.additional_kwargs, b.additional_kwargs) &&
         same_object(a.response_metadata, b.response_metadata) &&
         a.usage_metadata == b.usage_metadata;
}

Message human(Content content, std::string id) {
  Message m;
  m.type = MessageType::human;
  m.content = std::move(content);
  m.id = std::move(id);
  return m;
}

Message ai(Content content, std::string id) {
  Message m;
  m.type = MessageType::ai;
  m.content = std::move(content);
  m.id = std::move(id);
  return m;
}

Message ai(Content content, std::vector<ToolCall> tool_calls, std::string id) {
  Message m = ai(std::move(content), std::move(id));
  m.tool_calls = std::move(tool_calls);
  return m;
}

Message system(Content content, std::string id) {
  Message m;
  m.type = MessageType::system;
  m.content = std::move(content);
  m.id = std::move(id);
  return m;
}

Message tool(Content content, std::string tool_call_id, std::string id) {
  Message m;
  m.type = MessageType::tool;
  m.content = std::move(content);
  m.tool_call_id = std::move(tool_call_id);
  m.id = std::move(id);
  return m;
}

Message remove_message(std::string id) {
  Message m;
  m.type = MessageType::remove;
  m.id = std::move(id);
  return m;
}

json message_to_json(const Message& m) {
  json out = json::object();
  out["type"] = to_string(m.type);
  if (m.content.is_string()) {
    out["content"] = m.content.str();
  } else {
    out["content"] = json(m.content.blocks());
  }
  out["id"] = m.id.empty() ? json(nullptr) : json(m.id);
  if (!m.invalid_tool_calls.empty()) {
    json calls = json::array();
    for (const auto& call : m.invalid_tool_calls) calls.push_back(invalid_tool_call_to_json(call));
    out["invalid_tool_calls"] = std::move(calls);
  }
  if (!m.name.empty()) out["name"] = m.name;
  if (!m.status.empty()) out["status"] = m.status;
  if (!m.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& call : m.tool_calls) calls.push_back(tool_call_to_json(call));
    out["tool_calls"] = std::move(calls);
  }
  if (m.type == MessageType::tool || !m.tool_call_id.empty()) out["tool_call_id"] = m.tool_call_id;
  if (!empty_object(m.additional_kwargs)) out["additional_kwargs"] = m.additional_kwargs;
  if (!empty_object(m.response_metadata)) out["response_metadata"] = m.response_metadata;
  if (!m.usage_metadata.is_null()) out["usage_metadata"] = m.usage_metadata;
  return out;
}

namespace {

template <class Out>
void write_message_cbor(const Message& m, Out& out) {
  // The keys of message_to_json(), in its (sorted) order, under the same conditions.
  const bool kwargs = !empty_object(m.additional_kwargs);
  const bool name = !m.name.empty();
  const bool response = !empty_object(m.response_metadata);
  const bool call_id = m.type == MessageType::tool || !m.tool_call_id.empty();
  const bool calls = !m.tool_calls.empty();
  const bool usage = !m.usage_metadata.is_null();
  const bool invalid_calls = !m.invalid_tool_calls.empty();
  const bool status = !m.status.empty();
  detail::CborWriter<Out> w(out);
  w.map(3 + static_cast<std::size_t>(kwargs) + name + response + call_id + calls + usage +
        invalid_calls + status);
  if (kwargs) {
    w.text("additional_kwargs");
    w.value(m.additional_kwargs);
  }
  w.text("content");
  if (m.content.is_string()) {
    w.text(m.content.str());
  } else {
    w.array(m.content.blocks().size());
    for (const json& block : m.content.blocks()) w.value(block);
  }
  w.text("id");
  if (m.id.empty()) {
    w.value(nullptr);
  } else {
    w.text(m.id);
  }
  if (invalid_calls) {
    w.text("invalid_tool_calls");
    w.array(m.invalid_tool_calls.size());
    for (const auto& call : m.invalid_tool_calls) w.value(invalid_tool_call_to_json(call));
  }
  if (name) {
    w.text("name");
    w.text(m.name);
  }
  if (response) {
    w.text("response_metadata");
    w.value(m.response_metadata);
  }
  if (status) {
    w.text("status");
    w.text(m.status);
  }
  if (call_id) {
    w.text("tool_call_id");
    w.text(m.tool_call_id);
  }
  if (calls) {
    w.text("tool_calls");
    w.array(m.tool_calls.size());
    for (const auto& call : m.tool_calls) w.value(tool_call_to_json(call));
  }
  w.text("type");
  w.text(to_string(m.type));
  if (usage) {
    w.text("usage_metadata");
    w.value(m.usage_metadata);
  }
}

}  // namespace

void message_to_cbor(const Message& m, std::vector<std::uint8_t>& out) {
  write_message_cbor(m, out);
}

void message_to_cbor(const Message& m, std::string& out) {
  write_message_cbor(m, out);
}

json message_chunk_to_json(const MessageChunk& chunk) {
  json out = message_to_json(chunk.message);
  out["type"] = "AIMessageChunk";
  json calls = json::array();
  for (const auto& c : chunk.tool_call_chunks) {
    calls.push_back(json{{"name", optional_string_json(c.name)},
                         {"args", optional_string_json(c.args)},
                         {"id", optional_string_json(c.id)},
                         {"index", c.index},
                         {"type", "tool_call_chunk"}});
  }
  out["tool_call_chunks"] = std::move(calls);
  if (!out.contains("tool_calls")) out["tool_calls"] = json::array();
  if (!out.contains("invalid_tool_calls")) out["invalid_tool_calls"] = json::array();
  return out;
}

json messages_to_json(std::span<const Message> messages) {
  json out = json::array();
  for (const auto& m : messages) out.push_back(message_to_json(m));
  return out;
}

Message message_from_json(const json& value) {
  if (value.is_string()) return human(value.get<std::string>());
  if (value.is_array()) {
    if (value.size() != 2 || !value[0].is_string()) {
      invalid(fmt::format("a message pair must be [role, content], got {}", preview(value)));
    }
    const MessageType type = parse_message_type(value[0].get_ref<const std::string&>());
    if (type == MessageType::tool || type == MessageType::remove) {
      invalid(fmt::format("a [role, content] pair cannot make a {} message", to_string(type)));
    }
    Message m;
    m.type = type;
    m.content = content_from_json(value[1]);
    return m;
  }
  if (value.is_object()) return message_from_object(value);
  invalid(fmt::format("expected a message (a string, a [role, content] pair or an object), got {}",
                      preview(value)));
}

std::vector<Message> messages_from_json(const json& value) {
  std::vector<Message> out;
  if (!value.is_array()) {  // a single message-like, as LangGraph wraps a non-list update
    out.push_back(message_from_json(value));
    return out;
  }
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    try {
      out.push_back(message_from_json(value[i]));
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("messages[{}]: {}", i, e.what()));
    }
  }
  return out;
}

void to_json(json& j, const Message& message) {
  j = message_to_json(message);
}
void from_json(const json& j, Message& message) {
  message = message_from_json(j);
}
void to_json(json& j, MessageType type) {
  j = to_string(type);
}
void from_json(const json& j, MessageType& type) {
  if (!j.is_string()) invalid(fmt::format("a message type must be a string, got {}", preview(j)));
  type = parse_message_type(j.get_ref<const std::string&>());
}

}  // namespace sg
