// SPDX-License-Identifier: MIT
#include <stategraph/core/context.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/namespace_template.hpp>

namespace sg {
namespace {

/// The key of a placeholder label "{key}", or "" for a plain label.
std::string placeholder(const std::string& label) {
  if (label.size() >= 2 && label.front() == '{' && label.back() == '}')
    return label.substr(1, label.size() - 2);
  return {};
}

}  // namespace

NamespaceTemplate::NamespaceTemplate(Namespace labels) : labels_(std::move(labels)) {
  if (labels_.empty()) throw Error(errc::kInvalidArgument, "a namespace template needs a label");
  for (const auto& label : labels_) {
    if (label.empty() || label == "{}") {
      throw Error(errc::kInvalidArgument,
                  "namespace template " + to_string(*this) + ": empty label or placeholder");
    }
  }
}

NamespaceTemplate::NamespaceTemplate(std::initializer_list<std::string> labels)
    : NamespaceTemplate(Namespace(labels)) {}

std::vector<std::string> NamespaceTemplate::keys() const {
  std::vector<std::string> out;
  for (const auto& label : labels_)
    if (auto key = placeholder(label); !key.empty()) out.push_back(std::move(key));
  return out;
}

Namespace NamespaceTemplate::resolve(const nlohmann::json& configurable) const {
  if (!configurable.is_null() && !configurable.is_object()) {
    throw Error(errc::kInvalidArgument,
                "namespace template " + to_string(*this) + ": configurable must be an object");
  }
  Namespace out;
  out.reserve(labels_.size());
  for (const auto& label : labels_) {
    const std::string key = placeholder(label);
    if (key.empty()) {
      out.push_back(label);
      continue;
    }
    const auto it = configurable.is_object() ? configurable.find(key) : configurable.end();
    if (!configurable.is_object() || it == configurable.end()) {
      std::string available;
      if (configurable.is_object()) {
        for (const auto& [k, v] : configurable.items())
          available += (available.empty() ? "" : ", ") + k;
      }
      throw Error(errc::kInvalidArgument, "namespace template " + to_string(*this) +
                                              ": missing key '" + key +
                                              "' in the run's configurable values (available: " +
                                              (available.empty() ? "none" : available) + ")");
    }
    if (it->is_string()) {
      out.push_back(it->get<std::string>());
    } else if (it->is_number_integer()) {
      out.push_back(it->dump());
    } else {
      throw Error(errc::kInvalidArgument,
                  "namespace template " + to_string(*this) + ": configurable value '" + key +
                      "' must be a string or an integer, not " + it->dump());
    }
  }
  validate_namespace(out);
  return out;
}

Namespace NamespaceTemplate::resolve() const {
  const Context* ctx = current_context();
  return resolve(ctx ? ctx->config().configurable : nlohmann::json());
}

std::string to_string(const NamespaceTemplate& ns) {
  std::string out = "(";
  for (std::size_t i = 0; i < ns.labels().size(); ++i) out += (i ? ", " : "") + ns.labels()[i];
  return out + ")";
}

}  // namespace sg
