#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace sg {

/// Stable error codes carried by every sg::Error (`module.reason`).
namespace errc {
inline constexpr std::string_view kInvalidMessage = "message.invalid";
inline constexpr std::string_view kUnknownMessageId = "message.unknown_id";
inline constexpr std::string_view kInvalidUpdate = "state.invalid_update";
inline constexpr std::string_view kInvalidArgument = "argument.invalid";
}  // namespace errc

/// Root of every exception stategraph throws. `code()` is a stable identifier such as
/// "message.invalid"; `what()` is a human-readable sentence naming what is wrong.
/// Thread-safe to read from any thread once constructed.
class Error : public std::runtime_error {
 public:
  Error(std::string_view code, const std::string& message)
      : std::runtime_error(message), code_(code) {}

  /// The stable error code, e.g. "state.invalid_update".
  [[nodiscard]] const std::string& code() const noexcept { return code_; }

 private:
  std::string code_;
};

/// A state update that cannot be applied: a last-value field written twice in one superstep,
/// two overwrites of one field in a step, or a RemoveMessage for an id that does not exist.
/// Code "state.invalid_update" (or "message.unknown_id" for the last case).
class InvalidUpdateError : public Error {
 public:
  explicit InvalidUpdateError(const std::string& message,
                              std::string_view code = errc::kInvalidUpdate)
      : Error(code, message) {}
};

}  // namespace sg
