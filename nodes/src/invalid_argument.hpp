// SPDX-License-Identifier: MIT
#pragma once
// The error of a bad argument to a memory node (shared by the nodes' sources).
#include <stategraph/core/error.hpp>

#include <string>

namespace sg::detail {

/// Throws sg::Error with code errc::kInvalidArgument and `message`.
[[noreturn]] inline void invalid_argument(const std::string& message) {
  throw Error(errc::kInvalidArgument, message);
}

}  // namespace sg::detail
