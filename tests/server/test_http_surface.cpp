// SPDX-License-Identifier: MIT
// The server's HTTP surface for browsers and tools: every route's methods (405 with Allow,
// OPTIONS), CORS (preflights, allowed and refused origins, the default of this machine's pages),
// the paths open without the API key, and the readiness probe.
#include <stategraph/server/server.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "api.hpp"
#include "server_fixture.hpp"
#include "support/http_client.hpp"

namespace {

using nlohmann::json;
using sg::test::http_request;
using sg::test::HttpResult;
using sg::test::Served;

constexpr const char* kSomeId = "00000000-0000-4000-8000-000000000000";

/// A route's pattern with each {} replaced by a well-formed id of nothing.
std::string concrete_path(std::string_view pattern) {
  std::string out = "/";
  out += pattern;
  for (std::size_t at = out.find("{}"); at != std::string::npos; at = out.find("{}")) {
    out.replace(at, 2, kSomeId);
  }
  return out;
}

HttpResult preflight(Served& s, const std::string& path, const std::string& origin,
                     const std::string& method = "POST") {
  return http_request("OPTIONS", s.server.url() + path, {},
                      {"Origin: " + origin, "Access-Control-Request-Method: " + method,
                       "Access-Control-Request-Headers: content-type,x-api-key"});
}

std::string header(const HttpResult& r, const std::string& name) {
  const auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

}  // namespace

TEST_CASE("server: every route answers a wrong method with 405 and Allow, and OPTIONS with 204") {
  Served s;
  const std::vector<std::string> methods = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  REQUIRE(sg::server::routes().size() > 30);
  for (const auto& route : sg::server::routes()) {
    const std::string path = concrete_path(route.pattern);
    const std::string allow(
        sg::server::allowed_methods(sg::server::parse_target("GET", path, {}).path));
    INFO(path << " allows " << allow);
    REQUIRE(!allow.empty());
    const HttpResult options = http_request("OPTIONS", s.server.url() + path);
    CHECK(options.status == 204);
    CHECK(header(options, "allow") == allow);
    for (const auto& method : methods) {
      INFO(method);
      const HttpResult r = http_request(method, s.server.url() + path);
      if (sg::server::method_allowed(allow, method)) {
        // A handler answered: whatever it says of the made-up ids, it is not the router's.
        CHECK(r.status != 405);
        CHECK(r.body.find("no route") == std::string::npos);
      } else {
        CHECK(r.status == 405);
        CHECK(header(r, "allow") == allow);
        CHECK(json::parse(r.body)["detail"].get<std::string>().find("not allowed") !=
              std::string::npos);
      }
    }
  }
  // The cases of the issue that asked for it: each used to be a 404.
  const HttpResult state = http_request("PUT", s.server.url() + "/threads/" + kSomeId + "/state");
  CHECK(state.status == 405);
  CHECK(header(state, "allow") == "GET, POST");
  const HttpResult stream = http_request("PUT", s.server.url() + "/runs/stream");
  CHECK(stream.status == 405);
  CHECK(header(stream, "allow") == "POST");
  const HttpResult nowhere = http_request("OPTIONS", s.server.url() + "/nowhere");
  CHECK(nowhere.status == 404);
  CHECK(json::parse(nowhere.body)["detail"] == "no route for OPTIONS /nowhere");
}

TEST_CASE("server: CORS lets this machine's pages call every route by default, and no others") {
  Served s({.api_key = "secret"});
  for (const std::string origin : {"http://localhost:3000", "http://127.0.0.1:5173",
                                   "https://localhost", "http://[::1]:8080"}) {
    INFO(origin);
    const HttpResult r = preflight(s, "/threads/search", origin);
    CHECK(r.status == 204);  // a preflight carries no API key
    CHECK(header(r, "access-control-allow-origin") == origin);
    CHECK(header(r, "access-control-allow-methods") == "POST");
    CHECK(header(r, "access-control-allow-headers") == "content-type,x-api-key");
    CHECK(header(r, "access-control-max-age") == "600");
    CHECK(header(r, "vary") == "Origin");
  }
  // The request itself: the key is needed, and the page can read the answer and its headers.
  const HttpResult search = http_request("POST", s.server.url() + "/threads/search", "{}",
                                         {"Origin: http://localhost:3000", "x-api-key: secret"});
  CHECK(search.status == 200);
  CHECK(header(search, "access-control-allow-origin") == "http://localhost:3000");
  CHECK(header(search, "access-control-expose-headers") ==
        "content-location, x-pagination-total, x-pagination-next");
  const HttpResult no_key = http_request("POST", s.server.url() + "/threads/search", "{}",
                                         {"Origin: http://localhost:3000"});
  CHECK(no_key.status == 401);
  CHECK(header(no_key, "access-control-allow-origin") == "http://localhost:3000");

  // Pages elsewhere get no CORS headers, and their requests are refused before they run.
  for (const std::string origin : {"https://evil.example", "http://localhost.evil.example",
                                   "http://127.0.0.1.evil.example:80", "null"}) {
    INFO(origin);
    const HttpResult pre = preflight(s, "/threads", origin);
    CHECK(pre.status == 403);
    CHECK(header(pre, "access-control-allow-origin").empty());
    const HttpResult simple = http_request("POST", s.server.url() + "/threads", "{}",
                                           {"Origin: " + origin, "x-api-key: secret"});
    CHECK(simple.status == 403);
    CHECK(json::parse(simple.body)["detail"].get<std::string>().find("may not call") !=
          std::string::npos);
  }
  const HttpResult threads =
      http_request("POST", s.server.url() + "/threads/count", "{}", {"x-api-key: secret"});
  CHECK(threads.body == "0");  // none of the refused requests made a thread
}

TEST_CASE("server: CORS origins as configured: a list, any, a regular expression, credentials") {
  SUBCASE("a list replaces the default") {
    Served s({.cors = {.allow_origins = {"https://ui.example.com"}}});
    CHECK(preflight(s, "/threads", "https://ui.example.com").status == 204);
    CHECK(preflight(s, "/threads", "http://localhost:3000").status == 403);
    // The server's own origin (its Host header) stays allowed: the studio's page.
    const std::string own = s.server.url();
    CHECK(http_request("POST", own + "/threads/count", "{}", {"Origin: " + own}).status == 200);
  }
  SUBCASE("any origin") {
    Served s({.cors = {.allow_origins = {"*"}}});
    const HttpResult r = preflight(s, "/runs/stream", "https://anywhere.example");
    CHECK(r.status == 204);
    CHECK(header(r, "access-control-allow-origin") == "https://anywhere.example");
    CHECK(header(r, "access-control-allow-methods") == "POST");
  }
  SUBCASE("a regular expression, headers, credentials and max age") {
    Served s({.cors = {.allow_origins = {"https://fixed.example"},
                       .allow_origin_regex = R"(https://[a-z]+\.preview\.example)",
                       .allow_headers = {"content-type", "authorization"},
                       .expose_headers = {},
                       .allow_credentials = true,
                       .max_age = std::chrono::seconds(60)}});
    const HttpResult r = preflight(s, "/threads", "https://pr.preview.example");
    CHECK(r.status == 204);
    CHECK(header(r, "access-control-allow-headers") == "content-type, authorization");
    CHECK(header(r, "access-control-allow-credentials") == "true");
    CHECK(header(r, "access-control-max-age") == "60");
    CHECK(preflight(s, "/threads", "https://pr.preview.example.evil").status == 403);
    CHECK(preflight(s, "/threads", "https://fixed.example").status == 204);
    const HttpResult get = s.get("/ok", {"Origin: https://fixed.example"});
    CHECK(header(get, "access-control-expose-headers").empty());
  }
  SUBCASE("a private-network preflight from an allowed public page") {
    Served s({.cors = {.allow_origins = {"https://ui.example.com"}}});
    const HttpResult r =
        http_request("OPTIONS", s.server.url() + "/info", {},
                     {"Origin: https://ui.example.com", "Access-Control-Request-Method: GET",
                      "Access-Control-Request-Private-Network: true"});
    CHECK(r.status == 204);
    CHECK(header(r, "access-control-allow-private-network") == "true");
  }
  CHECK_THROWS_AS(sg::Server({.cors = {.allow_origin_regex = "(unclosed"}}), sg::Error);
}

TEST_CASE("server: /ok and /info answer without the API key, the rest needs it") {
  Served s({.api_key = "secret"});
  CHECK(s.get("/ok").status == 200);
  CHECK(s.get("/ok?check_db=1").status == 200);
  CHECK(json::parse(s.get("/ok?check_db=1").body) == json{{"ok", true}});
  CHECK(s.get("/info").status == 200);
  CHECK(s.get("/assistants/agent").status == 401);
  CHECK(s.get("/ok/").status == 401);  // exact paths only
  Served closed({.api_key = "secret", .public_paths = {}});
  CHECK(closed.get("/ok").status == 401);
  CHECK(closed.get("/ok", {"x-api-key: secret"}).status == 200);
}
