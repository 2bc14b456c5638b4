// SPDX-License-Identifier: MIT
// The built-in PII detectors (pii_middleware.hpp).
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

#include <algorithm>
#include <string>
#include <vector>

#include "pii_scan.hpp"

namespace sg {
namespace {

// ---- email ----

bool pii_email_local(char c) noexcept {
  return pii_scan::is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}
bool pii_email_domain(char c) noexcept {
  return pii_scan::is_alnum(c) || c == '.' || c == '-';
}

/// The end of `[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b` after the '@' at `at`, or npos. The domain is
/// greedy: the last '.' followed by two letters or more and a non-word character wins.
std::size_t pii_email_domain_end(std::string_view s, std::size_t at) {
  const std::size_t first = at + 1;
  std::size_t end = first;
  while (end < s.size() && pii_email_domain(s[end])) ++end;
  std::size_t letters_end = end;  // the end of the run of letters starting at i + 1
  for (std::size_t i = end; i-- > first + 1;) {
    if (s[i] == '.' && letters_end - (i + 1) >= 2 &&
        !pii_scan::is_word(pii_scan::char_at(s, letters_end)))
      return letters_end;
    if (!pii_scan::is_alpha(s[i])) letters_end = i;
  }
  return pii_scan::npos;
}

// ---- credit card ----

bool pii_card_separator(char c) noexcept {
  return c == '-' || pii_scan::is_space(c);
}

/// The end of groups `group`..3 of four digits from i (an optional separator between groups,
/// tried first), the last followed by a non-word character; npos if none.
std::size_t pii_card_groups(std::string_view s, std::size_t i, int group) {
  for (std::size_t k = 0; k < 4; ++k)
    if (!pii_scan::is_digit(pii_scan::char_at(s, i + k))) return pii_scan::npos;
  i += 4;
  if (group == 3) return pii_scan::is_word(pii_scan::char_at(s, i)) ? pii_scan::npos : i;
  if (pii_card_separator(pii_scan::char_at(s, i))) {
    const std::size_t end = pii_card_groups(s, i + 1, group + 1);
    if (end != pii_scan::npos) return end;
  }
  return pii_card_groups(s, i, group + 1);
}

bool pii_passes_luhn(std::string_view number) {
  std::vector<int> digits;
  for (const char c : number)
    if (pii_scan::is_digit(c)) digits.push_back(c - '0');
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
  while (k < 4 && pii_scan::is_digit(pii_scan::char_at(s, i + k))) ++k;
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
      return !pii_scan::is_space(c);
  }
}

bool pii_label_char(char c) noexcept {
  return pii_scan::is_alnum(c) || c == '-';
}

/// The end of the longest label at i (s[i] alphanumeric): at most 63 characters of
/// [a-zA-Z0-9-], ending alphanumeric.
std::size_t pii_label_end(std::string_view s, std::size_t i) {
  std::size_t end = i;
  while (end < s.size() && end - i < 63 && pii_label_char(s[end])) ++end;
  while (!pii_scan::is_alnum(s[end - 1])) --end;
  return end;
}

/// The end of `LABEL(?:\.LABEL)+` at i as a backtracking engine matches it, or npos. The first
/// label must be followed by ".", so it is the whole run of label characters; each later label
/// is the longest, and the repetition goes on while a "." and a label follow.
std::size_t pii_url_labels(std::string_view s, std::size_t i) {
  if (!pii_scan::is_alnum(pii_scan::char_at(s, i))) return pii_scan::npos;
  std::size_t run = i;
  while (run < s.size() && run - i <= 63 && pii_label_char(s[run])) ++run;
  if (run - i > 63 || !pii_scan::is_alnum(s[run - 1]) || pii_scan::char_at(s, run) != '.' ||
      !pii_scan::is_alnum(pii_scan::char_at(s, run + 1)))
    return pii_scan::npos;
  std::size_t pos = run;
  while (pii_scan::char_at(s, pos) == '.' && pii_scan::is_alnum(pii_scan::char_at(s, pos + 1)))
    pos = pii_label_end(s, pos + 1);
  return pos;
}

/// The host of "http://" + rest: `rest` up to the first '/', '?' or '#'.
std::string_view pii_netloc(std::string_view rest) {
  return rest.substr(0, std::min(rest.find_first_of("/?#"), rest.size()));
}
}  // namespace

std::vector<PiiMatch> detect_email(std::string_view text) {
  std::vector<PiiMatch> out;
  std::size_t run_end = 0;  // the end of the run of local-part characters containing p
  std::size_t cached_at = pii_scan::npos;  // an '@' and the end of its domain (npos: none)
  std::size_t cached_end = pii_scan::npos;
  for (std::size_t p = 0; p < text.size();) {
    if (!pii_email_local(text[p]) || !pii_scan::boundary(text, p)) {
      ++p;
      continue;
    }
    if (run_end <= p) {
      run_end = p;
      while (run_end < text.size() && pii_email_local(text[run_end])) ++run_end;
    }
    if (pii_scan::char_at(text, run_end) == '@') {
      if (cached_at != run_end) {
        cached_at = run_end;
        cached_end = pii_email_domain_end(text, run_end);
      }
      if (cached_end != pii_scan::npos) {
        out.push_back(pii_scan::match("email", text, p, cached_end));
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
    const std::size_t end = pii_scan::is_digit(text[p]) && pii_scan::boundary(text, p)
                                ? pii_card_groups(text, p, 0)
                                : pii_scan::npos;
    if (end == pii_scan::npos) {
      ++p;
      continue;
    }
    if (pii_passes_luhn(text.substr(p, end - p)))
      out.push_back(pii_scan::match("credit_card", text, p, end));
    p = end;
  }
  return out;
}

std::vector<PiiMatch> detect_ip(std::string_view text) {
  std::vector<PiiMatch> out;
  for (std::size_t p = 0; p < text.size();) {
    std::size_t end = pii_scan::npos;
    if (pii_scan::is_digit(text[p]) && pii_scan::boundary(text, p)) {
      std::size_t i = p;
      for (int part = 0; part < 4; ++part) {
        const std::size_t k = pii_digit_run(text, i);
        if (k == 0 || k > 3) break;
        if (part < 3) {
          if (pii_scan::char_at(text, i + k) != '.') break;
          i += k + 1;
        } else if (!pii_scan::is_word(pii_scan::char_at(text, i + k))) {
          end = i + k;
        }
      }
    }
    if (end == pii_scan::npos) {
      ++p;
      continue;
    }
    if (pii_valid_ipv4(text.substr(p, end - p))) out.push_back(pii_scan::match("ip", text, p, end));
    p = end;
  }
  return out;
}

std::vector<PiiMatch> detect_mac_address(std::string_view text) {
  std::vector<PiiMatch> out;
  constexpr std::size_t kLength = 17;
  for (std::size_t p = 0; p < text.size();) {
    bool ok = p + kLength <= text.size() && pii_scan::boundary(text, p) &&
              !pii_scan::is_word(pii_scan::char_at(text, p + kLength));
    for (std::size_t k = 0; ok && k < kLength; ++k) {
      const char c = text[p + k];
      ok = k % 3 == 2 ? (c == ':' || c == '-') : pii_scan::is_hex(c);
    }
    if (!ok) {
      ++p;
      continue;
    }
    out.push_back(pii_scan::match("mac_address", text, p, p + kLength));
    p += kLength;
  }
  return out;
}

std::vector<PiiMatch> detect_url(std::string_view text) {
  std::vector<PiiMatch> out;
  // URLs with a scheme.
  for (std::size_t p = 0; p < text.size();) {
    std::size_t rest = pii_scan::npos;
    if (text.substr(p, 4) == "http") {
      if (text.substr(p + 4, 4) == "s://") {
        rest = p + 8;
      } else if (text.substr(p + 4, 3) == "://") {
        rest = p + 7;
      }
    }
    if (rest == pii_scan::npos || !pii_url_char(pii_scan::char_at(text, rest))) {
      ++p;
      continue;
    }
    std::size_t end = rest;
    while (end < text.size() && pii_url_char(text[end])) ++end;
    if (!pii_netloc(text.substr(rest, end - rest)).empty())
      out.push_back(pii_scan::match("url", text, p, end));
    p = end;
  }
  // URLs without one: skipped where they overlap one with a scheme (those are sorted and
  // disjoint; the ones without a scheme come in order after them).
  const std::size_t with_scheme = out.size();
  std::size_t first = 0;  // the first URL with a scheme that ends after p
  for (std::size_t p = 0; p < text.size();) {
    std::size_t end = pii_scan::npos;
    if (pii_scan::is_alnum(text[p]) && pii_scan::boundary(text, p)) {
      if (text.substr(p, 4) == "www.") end = pii_url_labels(text, p + 4);
      if (end == pii_scan::npos) end = pii_url_labels(text, p);
    }
    if (end == pii_scan::npos) {
      ++p;
      continue;
    }
    if (pii_scan::char_at(text, end) == '/') {
      ++end;
      while (end < text.size() && !pii_scan::is_space(text[end])) ++end;
    }
    while (first < with_scheme && out[first].end <= p) ++first;
    bool overlaps = false;
    for (std::size_t k = first; k < with_scheme && out[k].start < end && !overlaps; ++k)
      overlaps = (out[k].start <= p && p < out[k].end) || (out[k].start < end && end <= out[k].end);
    const std::string_view url = text.substr(p, end - p);
    if (!overlaps && (url.find('/') != pii_scan::npos || url.starts_with("www."))) {
      const std::string_view host = pii_netloc(url);
      if (!host.empty() && host.find('.') != pii_scan::npos)
        out.push_back(pii_scan::match("url", text, p, end));
    }
    p = end;
  }
  return out;
}
}  // namespace sg
