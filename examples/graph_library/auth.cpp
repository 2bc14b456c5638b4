// SPDX-License-Identifier: MIT
// An auth library: who may call `stategraph serve`, and what each user sees (the "auth" of
// stategraph.json). Built like the graph library, with stategraph_add_graph_library().
//
// Users and their tokens come from AUTH_TOKENS ("alice=TOKEN,bob=TOKEN"; set it in the
// environment or in stategraph.json's env). A request sends `Authorization: Bearer TOKEN`.
// Threads, runs and crons belong to the user who created them, and so do assistants, which
// every user may read (the graphs' own have no owner); each user's store items live under a
// namespace that starts with the user's name.
#include <stategraph/server/auth.hpp>

#include <cstdlib>
#include <map>
#include <string>

namespace {

/// AUTH_TOKENS as token -> user.
std::map<std::string, std::string> read_tokens() {
  std::map<std::string, std::string> tokens;
  const char* text = std::getenv("AUTH_TOKENS");
  std::string rest = text != nullptr ? text : "";
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string pair = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const std::size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == pair.size()) {
      throw std::invalid_argument("AUTH_TOKENS: '" + pair + "' is not USER=TOKEN");
    }
    tokens[pair.substr(equals + 1)] = pair.substr(0, equals);
  }
  return tokens;
}

}  // namespace

SG_AUTH_LIBRARY(auth) {
  auth.authenticate([tokens = read_tokens()](const sg::AuthRequest& request) {
    const std::string header = request.header("authorization");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) != 0) {
      throw sg::HttpException(401, "send Authorization: Bearer TOKEN",
                              {{"WWW-Authenticate", "Bearer"}});
    }
    const auto user = tokens.find(header.substr(prefix.size()));
    if (user == tokens.end()) throw sg::HttpException(401, "unknown token");
    return sg::AuthUser{.identity = user->second};
  });
  // Every resource: a new one is the caller's, and the caller reaches only their own.
  auth.on("*", [](const sg::AuthContext& ctx, nlohmann::json& value) {
    if (value.contains("metadata")) {
      if (!value["metadata"].is_object()) value["metadata"] = nlohmann::json::object();
      value["metadata"]["owner"] = ctx.user.identity;
    }
    return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
  });
  // The graphs' own assistants have no owner: everyone may read and search them.
  auth.on("assistants", [](const sg::AuthContext& ctx, nlohmann::json& value) -> sg::AuthDecision {
    if (ctx.action == "read" || ctx.action == "search") return true;
    if (value.contains("metadata")) {
      if (!value["metadata"].is_object()) value["metadata"] = nlohmann::json::object();
      value["metadata"]["owner"] = ctx.user.identity;
    }
    return sg::AuthDecision::filter({{"owner", ctx.user.identity}});
  });
  // Store items: under (user, ...the namespace given).
  auth.on("store", [](const sg::AuthContext& ctx, nlohmann::json& value) {
    nlohmann::json ns = nlohmann::json::array({ctx.user.identity});
    for (const auto& label : value.value("namespace", nlohmann::json::array())) ns.push_back(label);
    value["namespace"] = std::move(ns);
    return true;
  });
}
