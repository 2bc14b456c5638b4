// SPDX-License-Identifier: MIT
// Reading stategraph.json (serve_config.hpp).
#include "serve_config.hpp"

#include <stategraph/core/error.hpp>
#include <stategraph/models/mcp.hpp>

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace sg {
namespace {

using nlohmann::json;

/// A field of the file that is not as it must be.
struct ConfigError {
  std::string field;
  std::string why;
};

std::vector<std::string> string_list(const json& value, const std::string& field) {
  if (!value.is_array()) throw ConfigError{field, "must be an array of strings"};
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) throw ConfigError{field, "must be an array of strings"};
    out.push_back(item.get<std::string>());
  }
  return out;
}

void only_fields(const json& object, const std::string& where,
                 std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw ConfigError{where.empty() ? key : where + "." + key,
                        fmt::format("unknown field (known here: {})", fmt::join(known, ", "))};
    }
  }
}

/// KEY=VALUE lines; blank lines and # comments skipped; `export ` and one pair of quotes
/// around the value dropped.
std::map<std::string, std::string> read_env_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError{"env", fmt::format("cannot read the env file '{}'", path.string())};
  std::map<std::string, std::string> out;
  const std::regex line_re(R"(^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$)");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) {
      throw ConfigError{"env", fmt::format("{} line {}: not KEY=VALUE", path.string(), number)};
    }
    std::string value = m[2];
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    out[m[1]] = value;
  }
  return out;
}

CorsOptions read_cors(const json& cors) {
  if (!cors.is_object()) throw ConfigError{"http.cors", "must be an object"};
  only_fields(cors, "http.cors",
              {"allow_origins", "allow_origin_regex", "allow_headers", "expose_headers",
               "allow_credentials", "max_age"});
  CorsOptions out;
  const auto list = [&](const char* key, std::vector<std::string>& into) {
    if (cors.contains(key)) into = string_list(cors[key], std::string("http.cors.") + key);
  };
  list("allow_origins", out.allow_origins);
  list("allow_headers", out.allow_headers);
  list("expose_headers", out.expose_headers);
  if (cors.contains("allow_origin_regex")) {
    if (!cors["allow_origin_regex"].is_string()) {
      throw ConfigError{"http.cors.allow_origin_regex", "must be a string"};
    }
    out.allow_origin_regex = cors["allow_origin_regex"];
  }
  if (cors.contains("allow_credentials")) {
    if (!cors["allow_credentials"].is_boolean()) {
      throw ConfigError{"http.cors.allow_credentials", "must be true or false"};
    }
    out.allow_credentials = cors["allow_credentials"];
  }
  if (cors.contains("max_age")) {
    if (!cors["max_age"].is_number_integer() || cors["max_age"].get<std::int64_t>() < 0) {
      throw ConfigError{"http.cors.max_age", "must be a whole number of seconds, 0 or more"};
    }
    out.max_age = std::chrono::seconds(cors["max_age"].get<std::int64_t>());
  }
  return out;
}

/// A number of minutes above 0 at `field`, as milliseconds.
std::chrono::milliseconds minutes(const json& value, const std::string& field) {
  if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > 1e8) {
    throw ConfigError{field, "must be a number of minutes above 0"};
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(value.get<double>() * 60000));
}

ThreadTtlOptions read_checkpointer_ttl(const json& ttl) {
  if (!ttl.is_object()) throw ConfigError{"checkpointer.ttl", "must be an object"};
  only_fields(ttl, "checkpointer.ttl", {"strategy", "default_ttl", "sweep_interval_minutes"});
  ThreadTtlOptions out;
  if (ttl.contains("strategy")) {
    if (ttl["strategy"] == "keep_latest") {
      out.strategy = PruneStrategy::keep_latest;
    } else if (ttl["strategy"] != "delete") {
      throw ConfigError{"checkpointer.ttl.strategy", "must be \"delete\" or \"keep_latest\""};
    }
  }
  if (ttl.contains("default_ttl")) {
    out.default_ttl = minutes(ttl["default_ttl"], "checkpointer.ttl.default_ttl");
  }
  if (ttl.contains("sweep_interval_minutes")) {
    out.sweep_interval =
        minutes(ttl["sweep_interval_minutes"], "checkpointer.ttl.sweep_interval_minutes");
  }
  return out;
}

ServeConfig::StoreTtl read_store_ttl(const json& ttl) {
  if (!ttl.is_object()) throw ConfigError{"store.ttl", "must be an object"};
  only_fields(ttl, "store.ttl", {"default_ttl", "refresh_on_read", "sweep_interval_minutes"});
  ServeConfig::StoreTtl out;
  if (ttl.contains("default_ttl")) {
    out.ttl.default_ttl =
        static_cast<double>(minutes(ttl["default_ttl"], "store.ttl.default_ttl").count()) / 60000.0;
  }
  if (ttl.contains("refresh_on_read")) {
    if (!ttl["refresh_on_read"].is_boolean()) {
      throw ConfigError{"store.ttl.refresh_on_read", "must be true or false"};
    }
    out.ttl.refresh_on_read = ttl["refresh_on_read"];
  }
  if (ttl.contains("sweep_interval_minutes")) {
    out.sweep_interval = minutes(ttl["sweep_interval_minutes"], "store.ttl.sweep_interval_minutes");
  }
  return out;
}

ServeConfig::StoreIndex read_store_index(const json& index) {
  if (!index.is_object()) throw ConfigError{"store.index", "must be an object"};
  only_fields(index, "store.index", {"embed", "dims", "fields"});
  ServeConfig::StoreIndex out;
  const json& embed = index.value("embed", json());
  if (!embed.is_string() ||
      (embed != "hashed" && (embed.get<std::string>().rfind("openai:", 0) != 0 ||
                             embed.get<std::string>().size() == 7))) {
    throw ConfigError{"store.index.embed",
                      R"(must be "openai:MODEL" (OPENAI_BASE_URL, OPENAI_API_KEY) or "hashed")"};
  }
  out.embed = embed;
  const json& dims = index.value("dims", json());
  if (!dims.is_number_unsigned() || dims.get<std::uint64_t>() == 0 ||
      dims.get<std::uint64_t>() > 65536) {
    throw ConfigError{"store.index.dims", "must be the embeddings' size, from 1 to 65536"};
  }
  out.dims = dims.get<std::size_t>();
  if (index.contains("fields")) out.fields = string_list(index["fields"], "store.index.fields");
  return out;
}

ServeConfig parse(const json& doc, const std::filesystem::path& dir) {
  if (!doc.is_object()) throw ConfigError{"", "the file must hold a JSON object"};
  only_fields(doc, "",
              {"graphs", "env", "http", "store", "checkpointer", "auth", "mcpServers", "$schema"});
  ServeConfig out;
  if (!doc.contains("graphs")) throw ConfigError{"graphs", "is required"};
  const json& graphs = doc["graphs"];
  if (!graphs.is_object() || graphs.empty()) {
    throw ConfigError{"graphs", R"(must map graph ids to "PATH.so:NAME" or "builtin:NAME")"};
  }
  for (const auto& [id, source] : graphs.items()) {
    const std::string field = "graphs." + id;
    if (!source.is_string())
      throw ConfigError{field, R"(must be "PATH.so:NAME" or "builtin:NAME")"};
    const std::string text = source;
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
      throw ConfigError{field,
                        fmt::format(R"("{}": must be "PATH.so:NAME" or "builtin:NAME")", text)};
    }
    ConfiguredGraph graph{id, text.substr(0, colon), text.substr(colon + 1)};
    if (graph.library == "builtin") {
      graph.library.clear();
    } else {
      graph.library = (dir / graph.library).lexically_normal().string();
    }
    out.graphs.push_back(std::move(graph));
  }
  if (doc.contains("env")) {
    const json& env = doc["env"];
    if (env.is_string()) {
      out.env = read_env_file(dir / env.get<std::string>());
    } else if (env.is_object()) {
      for (const auto& [key, value] : env.items()) {
        if (!value.is_string()) throw ConfigError{"env." + key, "must be a string"};
        out.env[key] = value;
      }
    } else {
      throw ConfigError{"env", "must be an env file's path or an object of strings"};
    }
  }
  if (doc.contains("checkpointer")) {
    const json& checkpointer = doc["checkpointer"];
    if (!checkpointer.is_object()) throw ConfigError{"checkpointer", "must be an object"};
    only_fields(checkpointer, "checkpointer", {"ttl"});
    if (checkpointer.contains("ttl")) out.thread_ttl = read_checkpointer_ttl(checkpointer["ttl"]);
  }
  if (doc.contains("store")) {
    const json& store = doc["store"];
    if (!store.is_object()) throw ConfigError{"store", "must be an object"};
    only_fields(store, "store", {"ttl", "index"});
    if (store.contains("ttl")) out.store_ttl = read_store_ttl(store["ttl"]);
    if (store.contains("index")) out.store_index = read_store_index(store["index"]);
  }
  if (doc.contains("auth")) {
    const json& auth = doc["auth"];
    if (!auth.is_object())
      throw ConfigError{"auth", R"(must be an object: {"path": "LIBRARY.so"})"};
    only_fields(auth, "auth", {"path"});
    const auto path = auth.find("path");
    if (path == auth.end() || !path->is_string() || path->get<std::string>().empty()) {
      throw ConfigError{"auth.path", "must be the path of an auth library (SG_AUTH_LIBRARY)"};
    }
    out.auth_library = (dir / path->get<std::string>()).lexically_normal().string();
  }
  if (doc.contains("mcpServers")) {
    json mcp = {{"mcpServers", doc["mcpServers"]}};
    try {
      (void)parse_mcp_config(mcp);  // its errors name the field: mcpServers.NAME.args[1]: ...
    } catch (const Error& e) {
      throw ConfigError{"", e.what()};
    }
    out.mcp = std::move(mcp);
  }
  if (doc.contains("http")) {
    const json& http = doc["http"];
    if (!http.is_object()) throw ConfigError{"http", "must be an object"};
    only_fields(http, "http", {"cors", "public_paths"});
    if (http.contains("cors")) out.cors = read_cors(http["cors"]);
    if (http.contains("public_paths")) {
      out.public_paths = string_list(http["public_paths"], "http.public_paths");
    }
  }
  return out;
}

}  // namespace

ServeConfig read_serve_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error(errc::kInvalidArgument,
                fmt::format("cannot read the config file '{}'", path.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw Error(errc::kInvalidArgument,
                fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
  try {
    return parse(doc, std::filesystem::absolute(path).parent_path());
  } catch (const ConfigError& e) {
    throw Error(errc::kInvalidArgument,
                e.field.empty() ? fmt::format("{}: {}", path.string(), e.why)
                                : fmt::format("{}: {}: {}", path.string(), e.field, e.why));
  } catch (const json::exception& e) {
    throw Error(errc::kInvalidArgument, fmt::format("{}: {}", path.string(), e.what()));
  }
}

void apply_env(const std::map<std::string, std::string>& env) {
  for (const auto& [key, value] : env) (void)setenv(key.c_str(), value.c_str(), 0);
}

std::string api_key_from_environment() {
  const char* key = std::getenv("STATEGRAPH_API_KEY");
  const char* file = std::getenv("STATEGRAPH_API_KEY_FILE");
  if (file == nullptr || *file == '\0') return key != nullptr ? key : "";
  if (key != nullptr && *key != '\0') {
    throw Error(errc::kInvalidArgument,
                "STATEGRAPH_API_KEY and STATEGRAPH_API_KEY_FILE are both set: set one");
  }
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    throw Error(errc::kInvalidArgument,
                fmt::format("STATEGRAPH_API_KEY_FILE: cannot read '{}'{}", file,
                            in ? "" : std::string(": ") + std::strerror(errno)));
  }
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty()) {
    throw Error(errc::kInvalidArgument,
                fmt::format("STATEGRAPH_API_KEY_FILE: '{}' holds no key on its first line", file));
  }
  return line;
}

}  // namespace sg
