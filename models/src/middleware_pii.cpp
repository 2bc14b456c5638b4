// SPDX-License-Identifier: MIT
// PIIMiddleware: the built-in detectors, the strategies and the hooks.
//
// The built-in detectors are hand-written scanners, not std::regex: libstdc++'s regex recurses
// once per repeated character, so a long run of word characters (a base64 blob in a tool
// result) would overflow the stack. Each scanner gives what a backtracking engine (Python's re)
// gives for the detector's pattern, on ASCII word boundaries (\b, non-ASCII bytes not being
// word characters), and runs in linear time:
//   email        \b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b
//   credit_card  \b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b, then the Luhn check
//   ip           \b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b, then 0-255 without leading zeros
//   mac_address  \b([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b
//   url          https?://[^\s<>"{}|\\^`\[\]]+ with a host, then
//                \b(?:www\.)?LABEL(?:\.LABEL)+(?:/[^\s]*)? (LABEL: [a-zA-Z0-9] or
//                [a-zA-Z0-9][a-zA-Z0-9-]{0,61}[a-zA-Z0-9]) with a path or "www.", that overlaps
//                none of the first.
// As in a regex search, the scan goes on after the end of every pattern match, also one that
// the validation (Luhn, address, host) rejects.
#include <stategraph/models/pii_middleware.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <regex>
#include <utility>

namespace sg {

namespace {

constexpr std::size_t kPiiNpos = std::string_view::npos;

bool pii_is_alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool pii_is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
bool pii_is_alnum(char c) noexcept {
  return pii_is_alpha(c) || pii_is_digit(c);
}
bool pii_is_word(char c) noexcept {
  return pii_is_alnum(c) || c == '_';
}
bool pii_is_hex(char c) noexcept {
  return pii_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool pii_is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/// s[i], or '\0' (not a word character, in no class) past the end.
char pii_at(std::string_view s, std::size_t i) noexcept {
  return i < s.size() ? s[i] : '\0';
}

/// \b at i: a word character on exactly one side.
bool pii_boundary(std::string_view s, std::size_t i) noexcept {
  const bool before = i > 0 && pii_is_word(s[i - 1]);
  return before != pii_is_word(pii_at(s, i));
}

PiiMatch pii_match(std::string_view type, std::string_view s, std::size_t start, std::size_t end) {
  return PiiMatch{std::string(type), std::string(s.substr(start, end - start)), start, end};
}

// ---- email ----

bool pii_email_local(char c) noexcept {
  return pii_is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}
bool pii_email_domain(char c) noexcept {
  return pii_is_alnum(c) || c == '.' || c == '-';
}

/// The end of `[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b` after the '@' at `at`, or npos. The domain is
/// greedy: the last '.' followed by two letters or more and a non-word character wins.
std::size_t pii_email_domain_end(std::string_view s, std::size_t at) {
  const std::size_t first = at + 1;
  std::size_t end = first;
  while (end < s.size() && pii_email_domain(s[end])) ++end;
  std::size_t letters_end = end;  // the end of the run of letters starting at i + 1
  for (std::size_t i = end; i-- > first + 1;) {
    if (s[i] == '.' && letters_end - (i + 1) >= 2 && !pii_is_word(pii_at(s, letters_end)))
      return letters_end;
    if (!pii_is_alpha(s[i])) letters_end = i;
  }
  return kPiiNpos;
}

// ---- credit card ----

bool pii_card_separator(char c) noexcept {
  return c == '-' || pii_is_space(c);
}

/// The end of groups `group`..3 of four digits from i (an optional separator between groups,
/// tried first), the last followed by a non-word character; npos if none.
std::size_t pii_card_groups(std::string_view s, std::size_t i, int group) {
  for (std::size_t k = 0; k < 4; ++k)
    if (!pii_is_digit(pii_at(s, i + k))) return kPiiNpos;
  i += 4;
  if (group == 3) return pii_is_word(pii_at(s, i)) ? kPiiNpos : i;
  if (pii_card_separator(pii_at(s, i))) {
    const std::size_t end = pii_card_groups(s, i + 1, group + 1);
    if (end != kPiiNpos) return end;
  }
  return pii_card_groups(s, i, group + 1);
}

bool pii_passes_luhn(std::string_view number) {
  std::vector<int> digits;
  for (const char c : number)
    if (pii_is_digit(c)) digits.push_back(c - '0');
  if (digits.size() < 13 || digits.size() > 19) return false;
  int sum = 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    int d = digits[digits.size() - 1 - i];
    if (i % 2 == 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 == 0;
}

// ---- ip ----

/// The number of digits from i, counting at most 4.
std::size_t pii_digit_run(std::string_view s, std::size_t i) {
  std::size_t k = 0;
  while (k < 4 && pii_is_digit(pii_at(s, i + k))) ++k;
  return k;
}

/// Whether a dotted quad is an IPv4 address: every part 0-255, no leading zero.
bool pii_valid_ipv4(std::string_view value) {
  std::size_t i = 0;
  for (int part = 0; part < 4; ++part) {
    const std::size_t dot = part < 3 ? value.find('.', i) : value.size();
    const std::string_view digits = value.substr(i, dot - i);
    if (digits.size() > 1 && digits.front() == '0') return false;
    int n = 0;
    for (const char c : digits) n = n * 10 + (c - '0');
    if (n > 255) return false;
    i = dot + 1;
  }
  return true;
}

// ---- url ----

bool pii_url_char(char c) noexcept {
  switch (c) {
    case '<':
    case '>':
    case '"':
    case '{':
    case '}':
    case '|':
    case '\\':
    case '^':
    case '`':
    case '[':
    case ']':
      return false;
    default:
      return !pii_is_space(c);
  }
}

bool pii_label_char(char c) noexcept {
  return pii_is_alnum(c) || c == '-';
}

/// The end of the longest label at i (s[i] alphanumeric): at most 63 characters of
/// [a-zA-Z0-9-], ending alphanumeric.
std::size_t pii_label_end(std::string_view s, std::size_t i) {
  std::size_t end = i;
  while (end < s.size() && end - i < 63 && pii_label_char(s[end])) ++end;
  while (!pii_is_alnum(s[end - 1])) --end;
  return end;
}

/// The end of `LABEL(?:\.LABEL)+` at i as a backtracking engine matches it, or npos. The first
/// label must be followed by ".", so it is the whole run of label characters; each later label
/// is the longest, and the repetition goes on while a "." and a label follow.
std::size_t pii_url_labels(std::string_view s, std::size_t i) {
  if (!pii_is_alnum(pii_at(s, i))) return kPiiNpos;
  std::size_t run = i;
  while (run < s.size() && run - i <= 63 && pii_label_char(s[run])) ++run;
  if (run - i > 63 || !pii_is_alnum(s[run - 1]) || pii_at(s, run) != '.' ||
      !pii_is_alnum(pii_at(s, run + 1)))
    return kPiiNpos;
  std::size_t pos = run;
  while (pii_at(s, pos) == '.' && pii_is_alnum(pii_at(s, pos + 1))) pos = pii_label_end(s, pos + 1);
  return pos;
}

/// The host of "http://" + rest: `rest` up to the first '/', '?' or '#'.
std::string_view pii_netloc(std::string_view rest) {
  return rest.substr(0, std::min(rest.find_first_of("/?#"), rest.size()));
}

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
    parts.push_back(s.substr(start, at == kPiiNpos ? kPiiNpos : at - start));
    if (at == kPiiNpos) return parts;
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
      if (pii_is_digit(c)) digits += c;
    const std::string_view last4 =
        std::string_view(digits).substr(digits.size() - std::min<std::size_t>(4, digits.size()));
    const char sep = value.find('-') != kPiiNpos ? '-' : value.find(' ') != kPiiNpos ? ' ' : '\0';
    if (sep == '\0') return fmt::format("************{}", last4);
    return fmt::format("****{0}****{0}****{0}{1}", sep, last4);
  }
  if (match.type == "ip") {
    const auto octets = pii_split(value, '.');
    return octets.size() == 4 ? fmt::format("*.*.*.{}", octets.back()) : "****";
  }
  if (match.type == "mac_address") {
    const char sep = value.find(':') != kPiiNpos ? ':' : '-';
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
          pii_match(type, text, start, start + static_cast<std::size_t>(it->length(0))));
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
  return kPiiNpos;
}

}  // namespace

PiiDetectionError::PiiDetectionError(std::string pii_type, std::vector<PiiMatch> matches)
    : Error(errc::kPiiDetected,
            fmt::format("Detected {} instance(s) of {} in text content", matches.size(), pii_type)),
      pii_type_(std::move(pii_type)),
      matches_(std::move(matches)) {}

std::vector<PiiMatch> detect_email(std::string_view text) {
  std::vector<PiiMatch> out;
  std::size_t run_end = 0;           // the end of the run of local-part characters containing p
  std::size_t cached_at = kPiiNpos;  // an '@' and the end of its domain (npos: none)
  std::size_t cached_end = kPiiNpos;
  for (std::size_t p = 0; p < text.size();) {
    if (!pii_email_local(text[p]) || !pii_boundary(text, p)) {
      ++p;
      continue;
    }
    if (run_end <= p) {
      run_end = p;
      while (run_end < text.size() && pii_email_local(text[run_end])) ++run_end;
    }
    if (pii_at(text, run_end) == '@') {
      if (cached_at != run_end) {
        cached_at = run_end;
        cached_end = pii_email_domain_end(text, run_end);
      }
      if (cached_end != kPiiNpos) {
        out.push_back(pii_match("email", text, p, cached_end));
        p = cached_end;
        continue;
      }
    }
    ++p;
  }
  return out;
}

std::vector<PiiMatch> detect_credit_card(std::string_view text) {
  std::vector<PiiMatch> out;
  for (std::size_t p = 0; p < text.size();) {
    const std::size_t end =
        pii_is_digit(text[p]) && pii_boundary(text, p) ? pii_card_groups(text, p, 0) : kPiiNpos;
    if (end == kPiiNpos) {
      ++p;
      continue;
    }
    if (pii_passes_luhn(text.substr(p, end - p)))
      out.push_back(pii_match("credit_card", text, p, end));
    p = end;
  }
  return out;
}

std::vector<PiiMatch> detect_ip(std::string_view text) {
  std::vector<PiiMatch> out;
  for (std::size_t p = 0; p < text.size();) {
    std::size_t end = kPiiNpos;
    if (pii_is_digit(text[p]) && pii_boundary(text, p)) {
      std::size_t i = p;
      for (int part = 0; part < 4; ++part) {
        const std::size_t k = pii_digit_run(text, i);
        if (k == 0 || k > 3) break;
        if (part < 3) {
          if (pii_at(text, i + k) != '.') break;
          i += k + 1;
        } else if (!pii_is_word(pii_at(text, i + k))) {
          end = i + k;
        }
      }
    }
    if (end == kPiiNpos) {
      ++p;
      continue;
    }
    if (pii_valid_ipv4(text.substr(p, end - p))) out.push_back(pii_match("ip", text, p, end));
    p = end;
  }
  return out;
}

std::vector<PiiMatch> detect_mac_address(std::string_view text) {
  std::vector<PiiMatch> out;
  constexpr std::size_t kLength = 17;
  for (std::size_t p = 0; p < text.size();) {
    bool ok = p + kLength <= text.size() && pii_boundary(text, p) &&
              !pii_is_word(pii_at(text, p + kLength));
    for (std::size_t k = 0; ok && k < kLength; ++k) {
      const char c = text[p + k];
      ok = k % 3 == 2 ? (c == ':' || c == '-') : pii_is_hex(c);
    }
    if (!ok) {
      ++p;
      continue;
    }
    out.push_back(pii_match("mac_address", text, p, p + kLength));
    p += kLength;
  }
  return out;
}

std::vector<PiiMatch> detect_url(std::string_view text) {
  std::vector<PiiMatch> out;
  // URLs with a scheme.
  for (std::size_t p = 0; p < text.size();) {
    std::size_t rest = kPiiNpos;
    if (text.substr(p, 4) == "http") {
      if (text.substr(p + 4, 4) == "s://") {
        rest = p + 8;
      } else if (text.substr(p + 4, 3) == "://") {
        rest = p + 7;
      }
    }
    if (rest == kPiiNpos || !pii_url_char(pii_at(text, rest))) {
      ++p;
      continue;
    }
    std::size_t end = rest;
    while (end < text.size() && pii_url_char(text[end])) ++end;
    if (!pii_netloc(text.substr(rest, end - rest)).empty())
      out.push_back(pii_match("url", text, p, end));
    p = end;
  }
  // URLs without one: skipped where they overlap one with a scheme (those are sorted and
  // disjoint; the ones without a scheme come in order after them).
  const std::size_t with_scheme = out.size();
  std::size_t first = 0;  // the first URL with a scheme that ends after p
  for (std::size_t p = 0; p < text.size();) {
    std::size_t end = kPiiNpos;
    if (pii_is_alnum(text[p]) && pii_boundary(text, p)) {
      if (text.substr(p, 4) == "www.") end = pii_url_labels(text, p + 4);
      if (end == kPiiNpos) end = pii_url_labels(text, p);
    }
    if (end == kPiiNpos) {
      ++p;
      continue;
    }
    if (pii_at(text, end) == '/') {
      ++end;
      while (end < text.size() && !pii_is_space(text[end])) ++end;
    }
    while (first < with_scheme && out[first].end <= p) ++first;
    bool overlaps = false;
    for (std::size_t k = first; k < with_scheme && out[k].start < end && !overlaps; ++k)
      overlaps = (out[k].start <= p && p < out[k].end) || (out[k].start < end && end <= out[k].end);
    const std::string_view url = text.substr(p, end - p);
    if (!overlaps && (url.find('/') != kPiiNpos || url.starts_with("www."))) {
      const std::string_view host = pii_netloc(url);
      if (!host.empty() && host.find('.') != kPiiNpos)
        out.push_back(pii_match("url", text, p, end));
    }
    p = end;
  }
  return out;
}

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
        if (i != kPiiNpos && !messages[i].content.empty()) {
          Message copy = messages[i];
          if (pii_scrub(copy.content, *shared)) changed.push_back(std::move(copy));
        }
      }
      if (tool_results) {
        const std::size_t last_ai = pii_last_of(messages, MessageType::ai);
        for (std::size_t i = last_ai == kPiiNpos ? messages.size() : last_ai + 1;
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
      if (i == kPiiNpos) return std::nullopt;
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
