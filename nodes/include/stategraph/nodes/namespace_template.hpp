// SPDX-License-Identifier: MIT
#pragma once
// Store namespaces filled from the run's configurable values (LangMem's NamespaceTemplate):
// memories of user "u1" under ("memories", "u1") with one template for every user.
//
//   sg::NamespaceTemplate ns{"memories", "{user_id}"};
//   ns.resolve({{"user_id", "u1"}});  // {"memories", "u1"}
//   ns.resolve();                    // inside a node: from ctx.config().configurable

#include <stategraph/store/store.hpp>

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace sg {

/// A namespace whose labels may be placeholders "{key}" (a whole label) standing for the
/// configurable value `key` of the run. A value type; thread-safe.
class NamespaceTemplate {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for no labels, an empty label or an empty
  /// placeholder "{}".
  NamespaceTemplate(Namespace labels);  // NOLINT: implicit by design, like a Namespace
  NamespaceTemplate(std::initializer_list<std::string> labels);

  [[nodiscard]] const Namespace& labels() const noexcept { return labels_; }
  /// The configurable keys the template needs, in label order.
  [[nodiscard]] std::vector<std::string> keys() const;

  /// The namespace for `configurable` (a JSON object; null counts as empty). A placeholder takes
  /// a string value, or an integer written in decimal. Throws sg::Error (errc::kInvalidArgument)
  /// naming a missing key and the keys available, or a value of another type; throws
  /// InvalidNamespaceError when the filled namespace breaks the store's rules (e.g. a value
  /// containing ".").
  [[nodiscard]] Namespace resolve(const nlohmann::json& configurable) const;
  /// resolve() with the configurable values of the node running on this thread
  /// (sg::current_context()); outside a node, with none.
  [[nodiscard]] Namespace resolve() const;

 private:
  Namespace labels_;
};

/// "(memories, {user_id})": a template or namespace as the error messages show it.
[[nodiscard]] std::string to_string(const NamespaceTemplate& ns);

}  // namespace sg
