// SPDX-License-Identifier: MIT
// Token counters: langchain-core's count_tokens_approximately (which measures Python `repr`
// strings, so this file computes the length of Python's repr of JSON values) and the word
// counter of the golden vectors.
#include <stategraph/core/error.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace sg {
namespace {

using nlohmann::json;

/// Decodes the next UTF-8 code point of `s` at `i` (advancing `i`); an invalid byte decodes as
/// itself.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto byte = static_cast<unsigned char>(s[i]);
  const int extra = byte < 0x80           ? 0
                    : (byte >> 5) == 0x6  ? 1
                    : (byte >> 4) == 0xE  ? 2
                    : (byte >> 3) == 0x1E ? 3
                                          : -1;
  if (extra <= 0 || i + static_cast<std::size_t>(extra) >= s.size()) {
    ++i;
    return byte;
  }
  char32_t cp = byte & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    const auto cont = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((cont >> 6) != 0x2) {
      ++i;
      return byte;
    }
    cp = (cp << 6) | (cont & 0x3F);
  }
  i += static_cast<std::size_t>(extra) + 1;
  return cp;
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    next_code_point(s, i);
    ++n;
  }
  return n;
}

/// Python's str.isprintable() for one code point, for the categories that matter in practice
/// (controls, format characters, separators other than space, private use, non-characters).
/// Unassigned code points are treated as printable.
bool py_printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c < 0x600) return true;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x890 ||
      c == 0x891 || c == 0x8E2 || c == 0x1680 || c == 0x180E)
    return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F))
    return false;
  if (c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || (c & 0xFFFE) == 0xFFFE || (c >= 0xFDD0 && c <= 0xFDEF))
    return false;
  if (c == 0x110BD || c == 0x110CD || (c >= 0x13430 && c <= 0x1343F) ||
      (c >= 0x1BCA0 && c <= 0x1BCA3) || (c >= 0x1D173 && c <= 0x1D17A))
    return false;
  if (c == 0xE0001 || (c >= 0xE0020 && c <= 0xE007F) || c >= 0xF0000) return false;
  return true;
}

/// len(repr(s)) for a Python str.
std::size_t py_str_repr_len(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::size_t n = 2;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = next_code_point(s, i);
    if (c == static_cast<char32_t>(quote) || c == U'\\' || c == U'\n' || c == U'\r' || c == U'\t') {
      n += 2;
    } else if (py_printable(c)) {
      n += 1;
    } else {
      n += c < 0x100 ? 4 : c < 0x10000 ? 6 : 10;
    }
  }
  return n;
}

/// len(repr(x)) for a Python float (the shortest round-trip form, exponent outside
/// 1e-4 <= |x| < 1e16).
std::size_t py_float_repr_len(double x) {
  if (std::isnan(x)) return 3;
  if (std::isinf(x)) return x < 0 ? 4 : 3;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  if (ec != std::errc{}) return 0;
  std::string_view sci(buf, static_cast<std::size_t>(end - buf));
  std::size_t n = 0;
  if (sci.front() == '-') {
    n += 1;
    sci.remove_prefix(1);
  }
  const std::size_t e = sci.find('e');
  std::string digits;
  for (char ch : sci.substr(0, e)) {
    if (ch != '.') digits += ch;
  }
  const int exponent = std::stoi(std::string(sci.substr(e + 1)));
  const int decpt = exponent + 1;
  const auto nd = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    const int abs_exp = exponent < 0 ? -exponent : exponent;
    const int exp_digits = abs_exp < 10 ? 2 : abs_exp < 100 ? 2 : 3;
    return n + static_cast<std::size_t>(nd + (nd > 1 ? 1 : 0) + 2 + exp_digits);
  }
  if (decpt <= 0) return n + static_cast<std::size_t>(2 - decpt + nd);  // 0.000ddd
  if (decpt >= nd) return n + static_cast<std::size_t>(decpt + 2);      // ddd00.0
  return n + static_cast<std::size_t>(nd + 1);                          // dd.ddd
}

/// len(repr(v)) for the Python value a JSON value decodes to.
std::size_t py_repr_len(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return 4;  // None
    case json::value_t::boolean:
      return v.get<bool>() ? 4 : 5;
    case json::value_t::string:
      return py_str_repr_len(v.get_ref<const std::string&>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return v.dump().size();
    case json::value_t::number_float:
      return py_float_repr_len(v.get<double>());
    case json::value_t::array: {
      std::size_t n = 2;
      for (std::size_t i = 0; i < v.size(); ++i) n += py_repr_len(v[i]) + (i ? 2 : 0);
      return n;
    }
    case json::value_t::object: {
      std::size_t n = 2;
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        n += py_str_repr_len(key) + 2 + py_repr_len(value) + (first ? 0 : 2);
        first = false;
      }
      return n;
    }
    default:
      return v.dump().size();
  }
}

/// len(repr(tool_calls)) for LangChain's ToolCall dicts {name, args, id, type}.
std::size_t tool_calls_repr_len(const std::vector<ToolCall>& calls) {
  json list = json::array();
  for (const auto& call : calls) {
    list.push_back(json{{"name", call.name},
                        {"args", call.args.is_null() ? json::object() : call.args},
                        {"id", call.id.empty() ? json(nullptr) : json(call.id)},
                        {"type", "tool_call"}});
  }
  return py_repr_len(list);
}

std::string_view openai_role(const Message& m) {
  switch (m.type) {
    case MessageType::human:
      return "user";
    case MessageType::ai:
      return "assistant";
    case MessageType::tool:
      return "tool";
    case MessageType::system:
      if (m.additional_kwargs.is_object()) {
        auto it = m.additional_kwargs.find("__openai_role__");
        if (it != m.additional_kwargs.end() && it->is_string())
          return it->get_ref<const std::string&>();
      }
      return "system";
    case MessageType::remove:
      break;
  }
  throw Error(errc::kInvalidMessage, "cannot count tokens of a remove message (id '" + m.id + "')");
}

std::int64_t count_words_in(std::string_view text) {
  std::int64_t words = 0;
  bool in_word = false;
  for (char ch : text) {
    const bool space =
        ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

}  // namespace

std::int64_t count_tokens_approximately(std::span<const Message> messages,
                                        const ApproximateTokenOptions& options) {
  double total = 0;
  for (const Message& m : messages) {
    std::size_t chars = 0;
    if (m.content.is_string()) {
      chars += code_points(m.content.str());
    } else {
      chars += py_repr_len(json(m.content.blocks()));
    }
    if (m.type == MessageType::ai && m.content.is_string() && !m.tool_calls.empty()) {
      chars += tool_calls_repr_len(m.tool_calls);
    }
    if (m.type == MessageType::tool) chars += code_points(m.tool_call_id);
    chars += openai_role(m).size();
    if (options.count_name && !m.name.empty()) chars += code_points(m.name);
    total += std::ceil(static_cast<double>(chars) / options.chars_per_token);
    total += options.extra_tokens_per_message;
  }
  return static_cast<std::int64_t>(std::ceil(total));
}

std::int64_t count_words(std::span<const Message> messages, std::int64_t extra_per_message) {
  std::int64_t total = 0;
  for (const Message& m : messages) {
    if (m.content.is_string()) {
      total += count_words_in(m.content.str());
    } else {
      for (const json& block : m.content.blocks()) {
        if (!block.is_object() || block.value("type", json()) != "text") continue;
        auto text = block.find("text");
        if (text != block.end() && text->is_string()) {
          total += count_words_in(text->get_ref<const std::string&>());
        }
      }
    }
    total += extra_per_message;
  }
  return total;
}

}  // namespace sg
