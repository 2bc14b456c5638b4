// SPDX-License-Identifier: MIT
#include <stategraph/core/log.hpp>
#include <stategraph/models/anthropic.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "http_call.hpp"

namespace sg {

namespace {

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value && *value;
}

}  // namespace

std::shared_ptr<ChatModel> default_chat_model() {
  std::shared_ptr<ChatModel> model;
  std::string which;
  nlohmann::json fields;
  // OPENAI_BASE_URL first: a server chosen for stategraph, where ANTHROPIC_API_KEY is often
  // exported for other tools too; then Anthropic; then the offline model.
  if (env_set("OPENAI_BASE_URL")) {
    OpenAIConfig config = OpenAIConfig::from_env();
    const std::string where = detail::url_for_log(config.base_url);
    which = "stategraph: model " + config.model + " at " + where + " (OPENAI_BASE_URL)";
    fields = {{"model", config.model}, {"base_url", where}, {"provider", "openai"}};
    model = std::make_shared<OpenAIChatModel>(std::move(config));
  } else if (env_set("ANTHROPIC_API_KEY") || env_set("ANTHROPIC_BASE_URL")) {
    AnthropicConfig config = AnthropicConfig::from_env();
    const std::string where = detail::url_for_log(config.base_url);
    which = "stategraph: model " + config.model + " at " + where + " (Anthropic)";
    fields = {{"model", config.model}, {"base_url", where}, {"provider", "anthropic"}};
    model = std::make_shared<AnthropicChatModel>(std::move(config));
  } else {
    which =
        "stategraph: model stategraph-local (the offline LocalModel; set OPENAI_BASE_URL to use "
        "an OpenAI-compatible server, or ANTHROPIC_API_KEY for Anthropic)";
    fields = {{"model", "stategraph-local"}, {"provider", "local"}};
    model = std::make_shared<LocalModel>();
  }
  static std::once_flag said;
  std::call_once(said, [&] {
    // A program with a log sink (stategraph serve) gets it as a log line, so that its stderr
    // stays one format; others on stderr.
    if (log_enabled(LogLevel::error)) {
      log(LogLevel::info, "chat model", fields);
    } else {
      std::cerr << which << '\n';
    }
  });
  return model;
}

}  // namespace sg
