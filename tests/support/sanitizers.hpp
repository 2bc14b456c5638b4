// SPDX-License-Identifier: MIT
#pragma once
// Which sanitizer the test build uses, for the few tests that leave a part out under one (each
// says why where it does).

namespace sg::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace sg::test
