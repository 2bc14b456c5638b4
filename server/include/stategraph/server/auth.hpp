// SPDX-License-Identifier: MIT
#pragma once

// Custom authentication and authorization of the server (LangGraph's `Auth`): one handler turns
// each request into a user, and handlers per resource action allow it, deny it (403), or allow it
// on the records whose metadata matches a filter (the others look absent: 404).
//
//   sg::Auth auth;
//   auth.authenticate([](const sg::AuthRequest& r) {
//     if (r.header("authorization") != "Bearer secret") throw sg::HttpException(401, "bad token");
//     return sg::AuthUser{.identity = "alice"};
//   });
//   auth.on("*", [](const sg::AuthContext& ctx, nlohmann::json& value) {
//     if (value.contains("metadata")) value["metadata"]["owner"] = ctx.user.identity;
//     return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
//   });
//
// Give it to ServerOptions::auth, or build it in an auth library (SG_AUTH_LIBRARY, the "auth" of
// stategraph.json). What each resource action passes as `value`: docs/server.md.

#include <stategraph/core/error.hpp>
#include <stategraph/server/graph_library.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg {

/// The user a request authenticated as.
struct AuthUser {
  /// Who the user is: what owner filters compare, and `langgraph_auth_user_id` of a run's config.
  std::string identity;
  /// Empty: the identity.
  std::string display_name{};
  /// What the user may do, as the authentication handler says (`langgraph_auth_permissions`).
  std::vector<std::string> permissions{};
  bool is_authenticated = true;
  /// More fields for the graphs (an object): they are in `langgraph_auth_user` with the others.
  nlohmann::json extra = nlohmann::json::object();

  /// `{identity, display_name, permissions, is_authenticated, ...extra}`.
  [[nodiscard]] nlohmann::json to_json() const;
  /// Sets a run's `configurable` keys of the user: `langgraph_auth_user` (to_json()),
  /// `langgraph_auth_user_id` and `langgraph_auth_permissions`, replacing what they held.
  void add_to_configurable(nlohmann::json& configurable) const;
};

/// A request as the authentication handler sees it.
struct AuthRequest {
  std::string method;
  /// The path without the query ("/threads/..." ).
  std::string path;
  /// The query string without the '?'; empty when none.
  std::string query;
  /// The headers, names in lower case, in the order they came.
  std::vector<std::pair<std::string, std::string>> headers;

  /// The first header named `name` (any case); empty when absent.
  [[nodiscard]] std::string header(std::string_view name) const;
};

/// Thrown by a handler to answer the request with `status` (401, 403, ...) and a
/// `{"detail": message}` body, plus `headers` (a WWW-Authenticate, say).
class HttpException : public std::runtime_error {
 public:
  explicit HttpException(unsigned status, const std::string& detail = {},
                         std::vector<std::pair<std::string, std::string>> headers = {});
  [[nodiscard]] unsigned status() const noexcept { return status_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& headers() const noexcept {
    return headers_;
  }

 private:
  unsigned status_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

/// What an authorization handler is asked: who, and which action on which resource
/// ("threads", "assistants", "crons" or "store"; "create", "read", ...: docs/server.md).
struct AuthContext {
  const AuthUser& user;
  std::string_view resource;
  std::string_view action;
};

/// An authorization handler's answer: allow, deny (403), or allow on the records whose metadata
/// matches a filter. A filter is an object of `key: value` (equal), `key: {"$eq": value}` or
/// `key: {"$contains": value or [values]}` (an array holding it, or all of them); for store items
/// it matches the item's value with `namespace` and `key` added.
class AuthDecision {
 public:
  /// true allows, false denies.
  AuthDecision(bool allowed) : allowed_(allowed) {}  // NOLINT(google-explicit-constructor)
  [[nodiscard]] static AuthDecision allow() { return AuthDecision(true); }
  [[nodiscard]] static AuthDecision deny() { return AuthDecision(false); }
  /// Allows on the records `filters` matches. Throws sg::Error (kInvalidArgument) when `filters`
  /// is not an object of such conditions.
  [[nodiscard]] static AuthDecision filter(nlohmann::json filters);

  [[nodiscard]] bool allowed() const noexcept { return allowed_; }
  /// The filter; null when none.
  [[nodiscard]] const nlohmann::json& filters() const noexcept { return filters_; }

 private:
  bool allowed_;
  nlohmann::json filters_;
};

/// Authentication and authorization handlers. Set them up on one thread before the server
/// starts; after that every method is const and thread-safe, and the handlers run on the
/// server's threads, several at once.
class Auth {
 public:
  /// Turns a request into its user; throws HttpException (401) to refuse it. Another exception
  /// refuses it with 401 and its message.
  using Authenticate = std::function<AuthUser(const AuthRequest&)>;
  /// Decides an action; may change `value` (the action's fields: a new thread's metadata, a
  /// store item's namespace), and the action then uses what it holds. Throws HttpException to
  /// answer with its status; another exception denies with 403.
  using Handler = std::function<AuthDecision(const AuthContext&, nlohmann::json& value)>;

  /// Sets the authentication handler (replacing one set before).
  Auth& authenticate(Authenticate handler);
  /// Adds the handler of `event`: "*" (every action), "threads" (every action on threads),
  /// "threads:create" (one action), "*:read" (one action on every resource). The most specific
  /// handler of an action decides: resource:action, then resource, then *:action, then *.
  /// Throws sg::Error (kInvalidArgument) for an unknown resource or action, or an event that
  /// has a handler already.
  Auth& on(std::string_view event, Handler handler);

  /// Whether an authentication handler is set.
  [[nodiscard]] bool authenticates() const noexcept { return static_cast<bool>(authenticate_); }
  /// The user of `request`. Throws HttpException (401 when the handler threw something else).
  [[nodiscard]] AuthUser authenticate_request(const AuthRequest& request) const;
  /// Runs the handler of `resource`:`action` on `value`; returns its filter (null when none or
  /// no handler applies). Throws HttpException: 403 when denied.
  [[nodiscard]] nlohmann::json authorize(const AuthUser& user, std::string_view resource,
                                         std::string_view action, nlohmann::json& value) const;
  /// Whether `metadata` passes `filters` (null filters: always).
  [[nodiscard]] static bool matches(const nlohmann::json& metadata, const nlohmann::json& filters);

 private:
  Authenticate authenticate_;
  std::map<std::string, Handler, std::less<>> handlers_;
};

/// Loads the auth library at `path` (dlopen; it stays loaded) and returns the Auth its
/// SG_AUTH_LIBRARY block sets up. Throws sg::Error (kInvalidArgument) when the file cannot be
/// loaded, has no such block, was built for another kGraphLibraryAbi, or its block throws.
/// Thread-safe.
[[nodiscard]] std::shared_ptr<const Auth> load_auth_library(const std::string& path);

}  // namespace sg

/// The name of an auth library's set-up function.
#define SG_AUTH_LIBRARY_SYMBOL "stategraph_register_auth"

/// Defines an auth library's set-up: the block that follows gets `auth_name`, a sg::Auth&, to
/// add handlers to. Built like a graph library (stategraph_add_graph_library); one library may
/// hold both blocks.
#define SG_AUTH_LIBRARY(auth_name)                                                          \
  static void stategraph_auth_block(::sg::Auth& auth_name);                                 \
  extern "C" __attribute__((visibility("default"))) std::uint32_t stategraph_register_auth( \
      std::uint32_t server_abi, ::sg::Auth* auth) {                                         \
    if (server_abi == ::sg::kGraphLibraryAbi) stategraph_auth_block(*auth);                 \
    return ::sg::kGraphLibraryAbi;                                                          \
  }                                                                                         \
  static void stategraph_auth_block(::sg::Auth& auth_name)
