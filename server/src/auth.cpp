// SPDX-License-Identifier: MIT
// Custom authentication and authorization (auth.hpp): the handlers, the lookup of the handler of
// an action, filters, and loading an auth library.
#include <stategraph/server/auth.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "library.hpp"

namespace sg {

namespace {

using nlohmann::json;

/// The resources and their actions, as LangGraph names them.
struct ResourceActions {
  std::string_view resource;
  std::array<std::string_view, 6> actions;
};
constexpr std::array<ResourceActions, 4> kResources{{
    {"threads", {"create", "read", "update", "delete", "search", "create_run"}},
    {"assistants", {"create", "read", "update", "delete", "search", ""}},
    {"crons", {"create", "read", "update", "delete", "search", ""}},
    {"store", {"put", "get", "search", "list_namespaces", "delete", ""}},
}};

bool known_action(std::string_view resource, std::string_view action) {
  for (const auto& r : kResources) {
    if (resource != "*" && r.resource != resource) continue;
    if (std::find(r.actions.begin(), r.actions.end(), action) != r.actions.end()) return true;
  }
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

json AuthUser::to_json() const {
  json out = extra.is_object() ? extra : json::object();
  out["identity"] = identity;
  out["display_name"] = display_name.empty() ? identity : display_name;
  out["permissions"] = permissions;
  out["is_authenticated"] = is_authenticated;
  return out;
}

void AuthUser::add_to_configurable(json& configurable) const {
  configurable["langgraph_auth_user"] = to_json();
  configurable["langgraph_auth_user_id"] = identity;
  configurable["langgraph_auth_permissions"] = permissions;
}

std::string AuthRequest::header(std::string_view name) const {
  const std::string wanted = lower(name);
  for (const auto& [key, value] : headers) {
    if (key == wanted) return value;
  }
  return {};
}

HttpException::HttpException(unsigned status, const std::string& detail,
                             std::vector<std::pair<std::string, std::string>> headers)
    : std::runtime_error(detail.empty() ? (status == 401   ? "Unauthorized"
                                           : status == 403 ? "Forbidden"
                                                           : fmt::format("HTTP {}", status))
                                        : detail),
      status_(status),
      headers_(std::move(headers)) {}

AuthDecision AuthDecision::filter(json filters) {
  if (!filters.is_object()) {
    throw Error(errc::kInvalidArgument, "an auth filter must be an object of metadata conditions");
  }
  for (const auto& [key, condition] : filters.items()) {
    if (!condition.is_object()) continue;
    if (condition.size() != 1 || (!condition.contains("$eq") && !condition.contains("$contains"))) {
      throw Error(errc::kInvalidArgument,
                  fmt::format("auth filter '{}': an object condition is {{\"$eq\": value}} or "
                              "{{\"$contains\": value}}, got {}",
                              key, condition.dump()));
    }
  }
  AuthDecision decision(true);
  decision.filters_ = std::move(filters);
  return decision;
}

Auth& Auth::authenticate(Authenticate handler) {
  authenticate_ = std::move(handler);
  return *this;
}

Auth& Auth::on(std::string_view event, Handler handler) {
  const std::size_t colon = event.find(':');
  const std::string_view resource = event.substr(0, colon);
  const bool known_resource =
      resource == "*" || std::any_of(kResources.begin(), kResources.end(),
                                     [&](const auto& r) { return r.resource == resource; });
  if (!known_resource) {
    throw Error(
        errc::kInvalidArgument,
        fmt::format("auth event '{}': the resource is *, threads, assistants, crons or store",
                    event));
  }
  if (colon != std::string_view::npos && !known_action(resource, event.substr(colon + 1))) {
    throw Error(errc::kInvalidArgument,
                fmt::format("auth event '{}': '{}' is not an action of {}", event,
                            event.substr(colon + 1), resource == "*" ? "any resource" : resource));
  }
  if (!handler)
    throw Error(errc::kInvalidArgument, fmt::format("auth event '{}': no handler", event));
  if (!handlers_.emplace(std::string(event), std::move(handler)).second) {
    throw Error(errc::kInvalidArgument,
                fmt::format("auth event '{}' has a handler already", event));
  }
  return *this;
}

AuthUser Auth::authenticate_request(const AuthRequest& request) const {
  AuthUser user;
  try {
    user = authenticate_(request);
  } catch (const HttpException&) {
    throw;
  } catch (const std::exception& e) {
    throw HttpException(401, e.what());
  }
  if (user.identity.empty()) {
    throw HttpException(401, "the authentication handler gave the user no identity");
  }
  return user;
}

json Auth::authorize(const AuthUser& user, std::string_view resource, std::string_view action,
                     json& value) const {
  const std::string specific = fmt::format("{}:{}", resource, action);
  const std::string any_resource = fmt::format("*:{}", action);
  const Handler* handler = nullptr;
  for (const std::string_view event : {std::string_view(specific), resource,
                                       std::string_view(any_resource), std::string_view("*")}) {
    if (const auto it = handlers_.find(event); it != handlers_.end()) {
      handler = &it->second;
      break;
    }
  }
  if (handler == nullptr) return nullptr;
  AuthDecision decision(false);
  try {
    decision = (*handler)(AuthContext{user, resource, action}, value);
  } catch (const HttpException&) {
    throw;
  } catch (const std::exception& e) {
    throw HttpException(403, fmt::format("the auth handler of {} failed: {}", specific, e.what()));
  }
  if (!decision.allowed()) throw HttpException(403);
  return decision.filters();
}

bool Auth::matches(const json& metadata, const json& filters) {
  if (!filters.is_object()) return true;
  const auto field = [&](const std::string& key) -> const json* {
    if (!metadata.is_object()) return nullptr;
    const auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &*it;
  };
  for (const auto& [key, condition] : filters.items()) {
    const json* has = field(key);
    if (condition.is_object() && condition.contains("$contains")) {
      if (has == nullptr || !has->is_array()) return false;
      const json& wanted = condition["$contains"];
      const auto holds = [&](const json& v) {
        return std::find(has->begin(), has->end(), v) != has->end();
      };
      if (wanted.is_array() ? !std::all_of(wanted.begin(), wanted.end(), holds) : !holds(wanted)) {
        return false;
      }
      continue;
    }
    const json* equal = &condition;
    if (condition.is_object()) {
      const auto eq = condition.find("$eq");
      if (eq == condition.end()) continue;  // no condition AuthDecision::filter lets through
      equal = &*eq;
    }
    if (has == nullptr || *has != *equal) return false;
  }
  return true;
}

std::shared_ptr<const Auth> load_auth_library(const std::string& path) {
  auto auth = std::make_shared<Auth>();
  server::call_library_function(
      path, SG_AUTH_LIBRARY_SYMBOL, "auth library",
      "SG_AUTH_LIBRARY block, <stategraph/server/auth.hpp>", [&](void* symbol) {
        using SetUp = std::uint32_t (*)(std::uint32_t, Auth*);
        return reinterpret_cast<SetUp>(symbol)(kGraphLibraryAbi, auth.get());
      });
  return auth;
}

}  // namespace sg
