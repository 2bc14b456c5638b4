// SPDX-License-Identifier: MIT
#pragma once
// ASCII text helpers shared by the models module's sources (private).

#include <cctype>
#include <string>
#include <string_view>

namespace sg::models_detail {

/// `s` with ASCII letters lower-cased.
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// `s` without leading and trailing whitespace.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace sg::models_detail
