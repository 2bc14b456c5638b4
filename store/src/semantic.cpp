// SPDX-License-Identifier: MIT
// The offline embedder and the text extraction of IndexConfig paths.
#include <stategraph/core/detail/hash.hpp>
#include <stategraph/store/store.hpp>

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace sg {
namespace {

using nlohmann::json;

void add_feature(std::vector<float>& v, std::string_view feature, float weight) {
  // The seed is not detail::kFnvOffset (a digit short): kept, since stored vectors use it.
  const std::uint64_t h = detail::fnv1a(feature, 1469598103934665603ULL ^ 0x5bd1e995);
  const std::size_t bucket = static_cast<std::size_t>(h % v.size());
  v[bucket] += (h >> 63) ? -weight : weight;
}

std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

[[noreturn]] void bad_path(std::string_view path, const std::string& why) {
  throw Error(errc::kInvalidArgument, fmt::format("index path '{}': {}", path, why));
}

void collect(const json& at, std::string_view path, std::size_t pos, std::vector<std::string>& out,
             std::string_view whole) {
  if (pos >= path.size()) {
    out.push_back(text_of(at));
    return;
  }
  if (path[pos] == '.') ++pos;
  if (path[pos] == '[') {
    const std::size_t close = path.find(']', pos);
    if (close == std::string_view::npos) bad_path(whole, "missing ']'");
    const std::string_view index = path.substr(pos + 1, close - pos - 1);
    if (!at.is_array()) return;
    if (index == "*") {
      for (const auto& element : at) collect(element, path, close + 1, out, whole);
      return;
    }
    long long i = 0;
    try {
      std::size_t used = 0;
      i = std::stoll(std::string(index), &used);
      if (used != index.size()) bad_path(whole, "bad index");
    } catch (const std::logic_error&) {
      bad_path(whole, "bad index '" + std::string(index) + "'");
    }
    const auto n = static_cast<long long>(at.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return;
    collect(at[static_cast<std::size_t>(i)], path, close + 1, out, whole);
    return;
  }
  std::size_t end = pos;
  while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
  if (end == pos) bad_path(whole, "empty field name");
  if (!at.is_object()) return;
  auto it = at.find(std::string(path.substr(pos, end - pos)));
  if (it == at.end()) return;
  collect(*it, path, end, out, whole);
}

}  // namespace

HashedNgramEmbeddings::HashedNgramEmbeddings(std::size_t dims) : dims_(dims) {
  if (dims == 0) throw Error(errc::kInvalidArgument, "HashedNgramEmbeddings: dims must be > 0");
}

std::vector<std::vector<float>> HashedNgramEmbeddings::embed(
    const std::vector<std::string>& texts) {
  std::vector<std::vector<float>> out;
  out.reserve(texts.size());
  for (const auto& text : texts) {
    std::vector<float> v(dims_, 0.0f);
    std::string word;
    auto flush = [&] {
      if (word.empty()) return;
      add_feature(v, "w:" + word, 1.0f);
      const std::string padded = "<" + word + ">";
      for (std::size_t i = 0; i + 3 <= padded.size(); ++i)
        add_feature(v, "t:" + padded.substr(i, 3), 0.5f);
      word.clear();
    };
    for (unsigned char c : text) {
      if (std::isalnum(c) || c >= 0x80) {
        word.push_back(static_cast<char>(std::tolower(c)));
      } else {
        flush();
      }
    }
    flush();
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    if (norm > 0) {
      const auto inv = static_cast<float>(1.0 / std::sqrt(norm));
      for (float& x : v) x *= inv;
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::string> texts_at_path(const json& value, std::string_view path) {
  std::vector<std::string> out;
  if (path.empty()) bad_path(path, "empty path");
  if (path == "$") {
    out.push_back(text_of(value));
    return out;
  }
  collect(value, path, 0, out, path);
  return out;
}

}  // namespace sg
