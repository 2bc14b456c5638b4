// SPDX-License-Identifier: MIT
#pragma once
// PII middleware for create_agent, as LangChain's PIIMiddleware: finds one type of personal data
// (emails, credit card numbers, IP addresses, MAC addresses, URLs, or a type of your own) in the
// last user message, the tool results of the last turn and the model's last reply, and blocks,
// redacts, masks or hashes it.
//
//   auto agent = sg::create_agent(
//       model, tools,
//       {.middleware = {sg::pii_middleware({.pii_type = "email"}),
//                       sg::pii_middleware({.pii_type = "credit_card",
//                                           .strategy = sg::PiiStrategy::mask,
//                                           .apply_to_output = true}),
//                       sg::pii_middleware({.pii_type = "api_key",
//                                           .strategy = sg::PiiStrategy::block,
//                                           .detector = std::string(R"(sk-[a-zA-Z0-9]{32})")})}});
//
// Offsets are byte offsets into the UTF-8 text. The built-in detectors treat every non-ASCII
// byte as a separator, so they find a value that sits directly against non-English text.

#include <stategraph/core/error.hpp>
#include <stategraph/models/agent.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sg {

namespace errc {
/// PII the middleware was told to block (PiiDetectionError).
inline constexpr std::string_view kPiiDetected = "agent.pii_detected";
}  // namespace errc

/// One value a detector found: its type ("email", ...), its text, and where it is in the text
/// (bytes [start, end)). A plain value type.
struct PiiMatch {
  std::string type;
  std::string value;
  std::size_t start = 0;
  std::size_t end = 0;

  friend bool operator==(const PiiMatch&, const PiiMatch&) = default;
};

/// What to do with the PII found:
/// - block: throw PiiDetectionError;
/// - redact: replace each value with `[REDACTED_<TYPE>]` (`[REDACTED_EMAIL]`);
/// - mask: keep a recognisable tail (`user@****.com`, `****-****-****-1234`, `*.*.*.100`,
///   `**:**:**:**:**:5E`, `[MASKED_URL]`, else `****` and the last 4 characters);
/// - hash: replace each value with `<type_hash:h>`, h the first 8 hex digits of its SHA-256.
enum class PiiStrategy { block, redact, mask, hash };

/// A detector of your own: the matches in a text, each within it. A match without a type gets
/// the middleware's type; one without a value gets the text between its offsets.
using PiiDetector = std::function<std::vector<PiiMatch>(std::string_view)>;

/// Thrown by the `block` strategy: the type (of the first match) and every match. The message is
/// `Detected <n> instance(s) of <type> in text content`. Code "agent.pii_detected". In an
/// agent run it is the cause of the run's sg::NodeError. Thread-safe to read.
class PiiDetectionError : public Error {
 public:
  PiiDetectionError(std::string pii_type, std::vector<PiiMatch> matches);

  [[nodiscard]] const std::string& pii_type() const noexcept { return pii_type_; }
  [[nodiscard]] const std::vector<PiiMatch>& matches() const noexcept { return matches_; }

 private:
  std::string pii_type_;
  std::vector<PiiMatch> matches_;
};

/// Email addresses: `local@domain.tld`, a tld of two letters or more, on word boundaries.
/// Thread-safe; linear in the text's length.
[[nodiscard]] std::vector<PiiMatch> detect_email(std::string_view text);
/// Credit card numbers: 16 digits in groups of four, optionally separated by a space or `-`,
/// that pass the Luhn check. Thread-safe; linear.
[[nodiscard]] std::vector<PiiMatch> detect_credit_card(std::string_view text);
/// IPv4 addresses: four dotted numbers of at most three digits, each 0-255 without a leading
/// zero. Thread-safe; linear.
[[nodiscard]] std::vector<PiiMatch> detect_ip(std::string_view text);
/// MAC addresses: six pairs of hex digits separated by `:` or `-`. Thread-safe; linear.
[[nodiscard]] std::vector<PiiMatch> detect_mac_address(std::string_view text);
/// URLs: http and https URLs with a host, then scheme-less ones that start with "www." or have
/// a path ("example.com/page"; a bare "example.com" is not a URL). Thread-safe; linear.
[[nodiscard]] std::vector<PiiMatch> detect_url(std::string_view text);

/// `text` with `matches` (found in it) replaced by `strategy` (see PiiStrategy); `text` itself
/// when there are none. Throws PiiDetectionError for `block` when there are matches,
/// sg::Error (code "argument.invalid") for a match outside the text, and sg::Error (code
/// "agent.pii_hash") should OpenSSL fail to hash. Thread-safe.
[[nodiscard]] std::string apply_pii_strategy(std::string_view text,
                                             const std::vector<PiiMatch>& matches,
                                             PiiStrategy strategy);

/// Options of pii_middleware.
struct PiiOptions {
  /// "email", "credit_card", "ip", "mac_address", "url", or a name of your own (then give a
  /// detector).
  std::string pii_type;
  PiiStrategy strategy = PiiStrategy::redact;
  /// The built-in detector of `pii_type` (monostate), a regular expression (ECMAScript syntax;
  /// std::regex, so keep it simple for long texts: its backtracking recurses per character
  /// repeated), or a function.
  std::variant<std::monostate, std::string, PiiDetector> detector{};
  /// Check the last user message before each model call.
  bool apply_to_input = true;
  /// Check the model's last reply after each model call.
  bool apply_to_output = false;
  /// Check the tool messages after the last AI message before each model call.
  bool apply_to_tool_results = false;
};

/// The middleware "PIIMiddleware[<pii_type>]". Its before_model hook (only with apply_to_input
/// or apply_to_tool_results) rewrites the last user message and the tool results after the last
/// AI message, its after_model hook (only with apply_to_output) the last AI message and the
/// strings of its tool calls' arguments (so the tools get them rewritten too); each hook
/// returns the changed messages, same ids, so that they replace the state's, and nothing when
/// nothing was found. Only the text changes (string content, or the text of string and text
/// blocks); the other fields are kept. The model's reply is rewritten once complete: what
/// StreamMode::messages streamed of it is not. With `block` the hooks throw PiiDetectionError,
/// which fails the run. Throws sg::Error (code "argument.invalid") for an unknown type without a
/// detector, an invalid regular expression and an empty detector function. The hooks are
/// thread-safe if the detector is.
[[nodiscard]] AgentMiddleware pii_middleware(PiiOptions options);

}  // namespace sg
