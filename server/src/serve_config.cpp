// Reading stategraph.json (serve_config.hpp).
#include "serve_config.hpp"

#include <stategraph/core/error.hpp>

#include <fmt/format.h>

#include <cstdlib>
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

ServeConfig parse(const json& doc, const std::filesystem::path& dir) {
  if (!doc.is_object()) throw ConfigError{"", "the file must hold a JSON object"};
  only_fields(doc, "", {"graphs", "env", "http", "$schema"});
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

}  // namespace sg
