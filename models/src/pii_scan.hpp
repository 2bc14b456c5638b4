// SPDX-License-Identifier: MIT
#pragma once
// The character classes and match helper the PII detectors and strategies share (private).

#include <stategraph/models/pii_middleware.hpp>

#include <string>
#include <string_view>

namespace sg::pii_scan {

inline constexpr std::size_t npos = std::string_view::npos;

inline bool is_alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
inline bool is_alnum(char c) noexcept {
  return is_alpha(c) || is_digit(c);
}
inline bool is_word(char c) noexcept {
  return is_alnum(c) || c == '_';
}
inline bool is_hex(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/// s[i], or '\0' (not a word character, in no class) past the end.
inline char char_at(std::string_view s, std::size_t i) noexcept {
  return i < s.size() ? s[i] : '\0';
}

/// \b at i: a word character on exactly one side.
inline bool boundary(std::string_view s, std::size_t i) noexcept {
  const bool before = i > 0 && is_word(s[i - 1]);
  return before != is_word(char_at(s, i));
}

inline PiiMatch match(std::string_view type, std::string_view s, std::size_t start,
                      std::size_t end) {
  return PiiMatch{std::string(type), std::string(s.substr(start, end - start)), start, end};
}

}  // namespace sg::pii_scan
