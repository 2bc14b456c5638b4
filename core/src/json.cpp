// SPDX-License-Identifier: MIT
#include <stategraph/core/json.hpp>

#include <cmath>
#include <limits>

namespace sg {
namespace {

using nlohmann::json;

/// JavaScript ToIntegerOrInfinity for a slice bound, clamped to int64.
std::int64_t slice_index(const json& value, const char* name) {
  if (value.is_null()) return 0;
  if (!value.is_number()) {
    throw Error(errc::kInvalidArgument,
                std::string("keep update: '") + name + "' must be a number, got " + value.dump());
  }
  constexpr auto kInt64Max = std::numeric_limits<std::int64_t>::max();
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(kInt64Max)) {
    return kInt64Max;  // not wrapped around to a negative bound
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  const double d = value.get<double>();
  if (std::isnan(d)) return 0;
  constexpr double kMax = 9.0e18;
  if (d >= kMax) return std::numeric_limits<std::int64_t>::max();
  if (d <= -kMax) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(std::trunc(d));
}

}  // namespace

KeepSlice keep_slice_from_json(const json& value) {
  if (!is_keep_update(value)) {
    throw Error(errc::kInvalidArgument,
                "expected {\"type\": \"keep\", \"from\": F, \"to\": T}, got " + value.dump());
  }
  KeepSlice keep;
  if (auto from = value.find("from"); from != value.end()) keep.from = slice_index(*from, "from");
  if (auto to = value.find("to"); to != value.end()) keep.to = slice_index(*to, "to");
  return keep;
}

json keep_slice_to_json(const KeepSlice& keep) {
  json out{{"type", "keep"}, {"from", keep.from}};
  if (keep.to) out["to"] = *keep.to;
  return out;
}

}  // namespace sg
