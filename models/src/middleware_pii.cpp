// SPDX-License-Identifier: MIT
// PIIMiddleware: the strategies and the hooks (the built-in detectors: pii_detectors.cpp).
#include <stategraph/models/pii_middleware.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <regex>
#include <utility>

#include "pii_scan.hpp"

namespace sg {

namespace {

// ---- strategies ----

std::string pii_upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

/// The last `n` characters (UTF-8 code points) of s.
std::string_view pii_last_chars(std::string_view s, std::size_t n) {
  std::size_t i = s.size();
  while (n > 0 && i > 0) {
    --i;
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) --n;
  }
  return s.substr(i);
}

std::size_t pii_char_count(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::vector<std::string_view> pii_split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == pii_scan::npos ? pii_scan::npos : at - start));
    if (at == pii_scan::npos) return parts;
    start = at + 1;
  }
}

std::string pii_sha256_prefix(std::string_view value) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(value.data(), value.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size < 4)
    throw Error("agent.pii_hash", "SHA-256 of a PII value failed (OpenSSL)");
  return fmt::format("{:02x}{:02x}{:02x}{:02x}", digest[0], digest[1], digest[2], digest[3]);
}

std::string pii_mask(const PiiMatch& match) {
  const std::string_view value = match.value;
  if (match.type == "email") {
    const auto parts = pii_split(value, '@');
    if (parts.size() != 2) return "****";
    const auto domain = pii_split(parts[1], '.');
    return domain.size() > 1 ? fmt::format("{}@****.{}", parts[0], domain.back())
                             : fmt::format("{}@****", parts[0]);
  }
  if (match.type == "credit_card") {
    std::string digits;
    for (const char c : value)
      if (pii_scan::is_digit(c)) digits += c;
    const std::string_view last4 =
        std::string_view(digits).substr(digits.size() - std::min<std::size_t>(4, digits.size()));
    const char sep = value.find('-') != pii_scan::npos   ? '-'
                     : value.find(' ') != pii_scan::npos ? ' '
                                                         : '\0';
    if (sep == '\0') return fmt::format("************{}", last4);
    return fmt::format("****{0}****{0}****{0}{1}", sep, last4);
  }
  if (match.type == "ip") {
    const auto octets = pii_split(value, '.');
    return octets.size() == 4 ? fmt::format("*.*.*.{}", octets.back()) : "****";
  }
  if (match.type == "mac_address") {
    const char sep = value.find(':') != pii_scan::npos ? ':' : '-';
    return fmt::format("**{0}**{0}**{0}**{0}**{0}{1}", sep, pii_last_chars(value, 2));
  }
  if (match.type == "url") return "[MASKED_URL]";
  return pii_char_count(value) > 4 ? fmt::format("****{}", pii_last_chars(value, 4)) : "****";
}

std::string pii_replacement(const PiiMatch& match, PiiStrategy strategy) {
  switch (strategy) {
    case PiiStrategy::redact:
      return fmt::format("[REDACTED_{}]", pii_upper(match.type));
    case PiiStrategy::mask:
      return pii_mask(match);
    case PiiStrategy::hash:
      return fmt::format("<{}_hash:{}>", match.type, pii_sha256_prefix(match.value));
    case PiiStrategy::block:
      break;
  }
  return {};
}

// ---- the middleware ----

/// A resolved rule: the type, the strategy and the detector.
struct PiiRule {
  std::string type;
  PiiStrategy strategy = PiiStrategy::redact;
  PiiDetector detect;
};

PiiDetector pii_builtin_detector(const std::string& type) {
  if (type == "email") return detect_email;
  if (type == "credit_card") return detect_credit_card;
  if (type == "ip") return detect_ip;
  if (type == "mac_address") return detect_mac_address;
  if (type == "url") return detect_url;
  throw Error(errc::kInvalidArgument,
              fmt::format("Unknown PII type: {}. Must be one of ['email', 'credit_card', 'ip', "
                          "'mac_address', 'url'] or provide a custom detector.",
                          type));
}

PiiDetector pii_regex_detector(const std::string& type, const std::string& pattern) {
  std::shared_ptr<const std::regex> re;
  try {
    re = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error(errc::kInvalidArgument,
                fmt::format("the PII pattern of '{}' is not a valid regular expression ({}): {}",
                            type, e.what(), pattern));
  }
  return [re, type](std::string_view text) {
    std::vector<PiiMatch> matches;
    using It = std::regex_iterator<std::string_view::const_iterator>;
    for (It it(text.begin(), text.end(), *re), end; it != end; ++it) {
      const auto start = static_cast<std::size_t>(it->position(0));
      matches.push_back(
          pii_scan::match(type, text, start, start + static_cast<std::size_t>(it->length(0))));
    }
    return matches;
  };
}

PiiDetector pii_custom_detector(const std::string& type, PiiDetector detector) {
  if (!detector)
    throw Error(errc::kInvalidArgument,
                fmt::format("the PII detector of '{}' is an empty function", type));
  return [type, detector = std::move(detector)](std::string_view text) {
    std::vector<PiiMatch> matches = detector(text);
    for (auto& m : matches) {
      if (m.type.empty()) m.type = type;
      if (m.value.empty() && m.start < m.end && m.end <= text.size())
        m.value = std::string(text.substr(m.start, m.end - m.start));
    }
    return matches;
  };
}

/// Applies the rule to `text`. True when something changed. Throws PiiDetectionError for
/// `block`.
bool pii_scrub_text(std::string& text, const PiiRule& rule) {
  if (text.empty()) return false;
  const std::vector<PiiMatch> matches = rule.detect(text);
  if (matches.empty()) return false;
  text = apply_pii_strategy(text, matches, rule.strategy);
  return true;
}

/// Applies the rule to `content`: its string, or the text of its string and text blocks.
bool pii_scrub(Content& content, const PiiRule& rule) {
  if (content.is_string()) {
    std::string text = content.str();
    if (!pii_scrub_text(text, rule)) return false;
    content = Content(std::move(text));
    return true;
  }
  bool changed = false;
  for (auto& block : content.blocks()) {
    nlohmann::json* part = nullptr;
    if (block.is_string()) {
      part = &block;
    } else if (block.is_object() && block.value("type", "") == "text" && block.contains("text") &&
               block["text"].is_string()) {
      part = &block["text"];
    }
    if (part != nullptr && pii_scrub_text(part->get_ref<std::string&>(), rule)) changed = true;
  }
  return changed;
}

/// Applies the rule to every string in `value` (a tool call's arguments).
bool pii_scrub_json(nlohmann::json& value, const PiiRule& rule) {
  if (value.is_string()) return pii_scrub_text(value.get_ref<std::string&>(), rule);
  bool changed = false;
  if (value.is_object() || value.is_array())
    for (auto& item : value)
      if (pii_scrub_json(item, rule)) changed = true;
  return changed;
}

std::optional<HookResult> pii_result(std::vector<Message> changed) {
  if (changed.empty()) return std::nullopt;
  HookResult result;
  // The state's messages have ids (add_messages gives them), so these replace them in place.
  result.update.set<&CreateAgentState::messages>(std::move(changed));
  return result;
}

/// The index of the last message of `type`, or npos.
std::size_t pii_last_of(const std::vector<Message>& messages, MessageType type) {
  for (std::size_t i = messages.size(); i-- > 0;)
    if (messages[i].type == type) return i;
  return pii_scan::npos;
}

}  // namespace

PiiDetectionError::PiiDetectionError(std::string pii_type, std::vector<PiiMatch> matches)
    : Error(errc::kPiiDetected,
            fmt::format("Detected {} instance(s) of {} in text content", matches.size(), pii_type)),
      pii_type_(std::move(pii_type)),
      matches_(std::move(matches)) {}

std::string apply_pii_strategy(std::string_view text, const std::vector<PiiMatch>& matches,
                               PiiStrategy strategy) {
  if (matches.empty()) return std::string(text);
  for (const auto& m : matches)
    if (m.start > m.end || m.end > text.size())
      throw Error(errc::kInvalidArgument,
                  fmt::format("a {} match at [{}, {}) is outside the text of {} bytes", m.type,
                              m.start, m.end, text.size()));
  if (strategy == PiiStrategy::block) throw PiiDetectionError(matches.front().type, matches);
  // Replaced from the last start to the first (a stable sort keeps equal starts in order).
  std::vector<const PiiMatch*> order;
  order.reserve(matches.size());
  for (const auto& m : matches) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(),
                   [](const PiiMatch* a, const PiiMatch* b) { return a->start > b->start; });
  bool disjoint = true;
  for (std::size_t i = 1; i < order.size() && disjoint; ++i)
    disjoint = order[i]->end <= order[i - 1]->start;
  if (!disjoint) {
    // Overlapping matches: splice one at a time, as the offsets say.
    std::string result(text);
    for (const PiiMatch* m : order) {
      const std::size_t start = std::min(m->start, result.size());
      const std::size_t end = std::min(std::max(m->end, start), result.size());
      result.replace(start, end - start, pii_replacement(*m, strategy));
    }
    return result;
  }
  std::string result;
  result.reserve(text.size());
  std::size_t at = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    result.append(text.substr(at, (*it)->start - at));
    result += pii_replacement(**it, strategy);
    at = (*it)->end;
  }
  result.append(text.substr(at));
  return result;
}

AgentMiddleware pii_middleware(PiiOptions options) {
  auto rule = std::make_shared<PiiRule>();
  rule->type = options.pii_type;
  rule->strategy = options.strategy;
  if (auto* pattern = std::get_if<std::string>(&options.detector)) {
    rule->detect = pii_regex_detector(rule->type, *pattern);
  } else if (auto* detector = std::get_if<PiiDetector>(&options.detector)) {
    rule->detect = pii_custom_detector(rule->type, std::move(*detector));
  } else {
    rule->detect = pii_builtin_detector(rule->type);
  }
  std::shared_ptr<const PiiRule> shared = std::move(rule);

  AgentMiddleware m;
  m.name = fmt::format("PIIMiddleware[{}]", options.pii_type);
  if (options.apply_to_input || options.apply_to_tool_results) {
    m.before_model = [shared, input = options.apply_to_input,
                      tool_results = options.apply_to_tool_results](
                         const CreateAgentState& state, Context&) -> std::optional<HookResult> {
      const auto& messages = state.messages;
      std::vector<Message> changed;
      if (input) {
        const std::size_t i = pii_last_of(messages, MessageType::human);
        if (i != pii_scan::npos && !messages[i].content.empty()) {
          Message copy = messages[i];
          if (pii_scrub(copy.content, *shared)) changed.push_back(std::move(copy));
        }
      }
      if (tool_results) {
        const std::size_t last_ai = pii_last_of(messages, MessageType::ai);
        for (std::size_t i = last_ai == pii_scan::npos ? messages.size() : last_ai + 1;
             i < messages.size(); ++i) {
          if (messages[i].type != MessageType::tool || messages[i].content.empty()) continue;
          Message copy = messages[i];
          if (pii_scrub(copy.content, *shared)) changed.push_back(std::move(copy));
        }
      }
      return pii_result(std::move(changed));
    };
  }
  if (options.apply_to_output) {
    m.after_model = [shared](const CreateAgentState& state, Context&) -> std::optional<HookResult> {
      const auto& messages = state.messages;
      const std::size_t i = pii_last_of(messages, MessageType::ai);
      if (i == pii_scan::npos) return std::nullopt;
      Message copy = messages[i];
      bool scrubbed = pii_scrub(copy.content, *shared);
      for (auto& call : copy.tool_calls)
        if (pii_scrub_json(call.args, *shared)) scrubbed = true;
      std::vector<Message> changed;
      if (scrubbed) changed.push_back(std::move(copy));
      return pii_result(std::move(changed));
    };
  }
  return m;
}

}  // namespace sg
