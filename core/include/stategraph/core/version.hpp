// SPDX-License-Identifier: MIT
#pragma once

// stategraph's version (the top-level CMakeLists.txt reads it from here).

#include <string_view>

#define SG_VERSION_MAJOR 0
#define SG_VERSION_MINOR 1
#define SG_VERSION_PATCH 0

namespace sg {

/// "MAJOR.MINOR.PATCH".
inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace sg
