// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace sg {

/// A random (version 4) UUID in canonical lower-case form, e.g.
/// "1b4e28ba-2fa1-41d2-883f-0016d3cca427". Uses a per-thread generator seeded from the OS.
/// Thread-safe.
[[nodiscard]] std::string new_uuid4();

}  // namespace sg
