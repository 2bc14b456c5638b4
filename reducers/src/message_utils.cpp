// SPDX-License-Identifier: MIT
// filter_messages, merge_message_runs and get_buffer_string.
#include <stategraph/core/error.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <algorithm>

namespace sg {
namespace {

using nlohmann::json;

template <class T>
bool contains(const std::vector<T>& list, const T& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool has_name_in(const Message& m, const std::vector<std::string>& names) {
  return !m.name.empty() && contains(names, m.name);
}

bool has_id_in(const Message& m, const std::vector<std::string>& ids) {
  return !m.id.empty() && contains(ids, m.id);
}

/// LangChain's chunk dict merge: strings concatenate (ids, names and types keep a value), numbers
/// add (except index-like keys), objects merge recursively, lists merge.
json merge_dicts(json left, const json& right);

json merge_lists(json left, const json& right) {
  if (left.is_null()) return right;
  if (right.is_null()) return left;
  for (const json& item : right) {
    auto target = left.end();
    if (item.is_object() && item.contains("index")) {
      target = std::find_if(left.begin(), left.end(), [&](const json& l) {
        return l.is_object() && l.contains("index") && l["index"] == item["index"];
      });
    }
    if (target != left.end()) {
      *target = merge_dicts(*target, item);
    } else if (!(item.is_object() && item.value("text", json()) == "")) {
      left.push_back(item);
    }
  }
  return left;
}

json merge_dicts(json left, const json& right) {
  if (left.is_null()) return right;
  if (right.is_null()) return left;
  if (!left.is_object() || !right.is_object()) return left;
  for (const auto& [key, value] : right.items()) {
    auto it = left.find(key);
    if (it == left.end() || it->is_null()) {
      left[key] = value;
    } else if (value.is_null()) {
      continue;
    } else if (it->is_string() && value.is_string()) {
      if (key == "type") continue;
      if (key == "id" || key == "name" || key == "output_version" || key == "model_provider") {
        if (!value.get_ref<const std::string&>().empty()) *it = value;
      } else if (key != "index" && key != "created" && key != "timestamp") {
        it->get_ref<std::string&>() += value.get_ref<const std::string&>();
      }
    } else if (it->is_number() && value.is_number()) {
      if (key == "index" || key == "created" || key == "timestamp") continue;
      if (it->is_number_float() || value.is_number_float()) {
        *it = it->get<double>() + value.get<double>();
      } else {
        *it = it->get<std::int64_t>() + value.get<std::int64_t>();
      }
    } else if (it->is_object() && value.is_object()) {
      *it = merge_dicts(*it, value);
    } else if (it->is_array() && value.is_array()) {
      *it = merge_lists(*it, value);
    } else if (it->type() != value.type()) {
      throw Error(errc::kInvalidMessage, "cannot merge field '" + key +
                                             "': it exists in both messages with different types");
    }
  }
  return left;
}

Content::Blocks to_blocks(const Content& content) {
  if (content.is_blocks()) return content.blocks();
  if (content.str().empty()) return {};
  return {json{{"type", "text"}, {"text", content.str()}}};
}

Content merge_content(const Content& a, const Content& b, std::string_view separator) {
  if (a.is_string() && b.is_string()) {
    std::string out = a.str();
    out += separator;
    out += b.str();
    return Content(std::move(out));
  }
  if (a.is_string() && a.str().empty()) return b;
  if (b.is_string() && b.str().empty()) return a;
  json merged = merge_lists(json(to_blocks(a)), json(to_blocks(b)));
  return Content(merged.get<Content::Blocks>());
}

Message merge_two(const Message& last, const Message& curr, std::string_view separator) {
  Message out;
  out.type = last.type;
  out.content = merge_content(last.content, curr.content, separator);
  out.id = !last.id.empty() ? last.id : curr.id;
  out.tool_calls = last.tool_calls;
  out.tool_calls.insert(out.tool_calls.end(), curr.tool_calls.begin(), curr.tool_calls.end());
  out.invalid_tool_calls = last.invalid_tool_calls;
  out.invalid_tool_calls.insert(out.invalid_tool_calls.end(), curr.invalid_tool_calls.begin(),
                                curr.invalid_tool_calls.end());
  out.additional_kwargs = merge_dicts(last.additional_kwargs, curr.additional_kwargs);
  out.response_metadata = last.response_metadata;  // the later message's metadata is cleared
  out.usage_metadata = merge_dicts(last.usage_metadata, curr.usage_metadata);
  return out;
}

}  // namespace

std::vector<Message> filter_messages(std::span<const Message> messages, const FilterOptions& o) {
  const bool any_include =
      !o.include_names.empty() || !o.include_types.empty() || !o.include_ids.empty();
  std::vector<Message> out;
  for (const Message& m : messages) {
    if (has_name_in(m, o.exclude_names) || contains(o.exclude_types, m.type) ||
        has_id_in(m, o.exclude_ids)) {
      continue;
    }
    if (!any_include || has_name_in(m, o.include_names) || contains(o.include_types, m.type) ||
        has_id_in(m, o.include_ids)) {
      out.push_back(m);
    }
  }
  return out;
}

std::vector<Message> merge_message_runs(std::span<const Message> messages,
                                        std::string_view separator) {
  std::vector<Message> merged;
  merged.reserve(messages.size());
  for (const Message& m : messages) {
    const bool mergeable = !merged.empty() && merged.back().type == m.type &&
                           m.type != MessageType::tool && m.type != MessageType::remove;
    if (mergeable) {
      merged.back() = merge_two(merged.back(), m, separator);
    } else {
      merged.push_back(m);
    }
  }
  return merged;
}

std::string get_buffer_string(std::span<const Message> messages, std::string_view human_prefix,
                              std::string_view ai_prefix) {
  std::string out;
  for (const Message& m : messages) {
    std::string_view role;
    switch (m.type) {
      case MessageType::human:
        role = human_prefix;
        break;
      case MessageType::ai:
        role = ai_prefix;
        break;
      case MessageType::system:
        role = "System";
        break;
      case MessageType::tool:
        role = "Tool";
        break;
      case MessageType::remove:
        throw Error(errc::kInvalidMessage,
                    "get_buffer_string: unsupported message type 'remove' (id '" + m.id + "')");
    }
    if (!out.empty()) out += '\n';
    out += role;
    out += ": ";
    out += m.text();
    if (m.type == MessageType::ai && m.additional_kwargs.is_object()) {
      if (auto fc = m.additional_kwargs.find("function_call"); fc != m.additional_kwargs.end()) {
        out += fc->is_string() ? fc->get<std::string>() : fc->dump();
      }
    }
  }
  return out;
}

}  // namespace sg
