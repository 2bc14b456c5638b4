// SPDX-License-Identifier: MIT
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/openai.hpp>

#include <cstdlib>
#include <iostream>
#include <mutex>

namespace sg {

std::shared_ptr<ChatModel> default_chat_model() {
  std::shared_ptr<ChatModel> model;
  std::string which;
  const char* base_url = std::getenv("OPENAI_BASE_URL");
  if (base_url && *base_url) {
    OpenAIConfig config = OpenAIConfig::from_env();
    which = "stategraph: model " + config.model + " at " + config.base_url + " (OPENAI_BASE_URL)";
    model = std::make_shared<OpenAIChatModel>(std::move(config));
  } else {
    which =
        "stategraph: model stategraph-local (the offline LocalModel; set OPENAI_BASE_URL to use "
        "an OpenAI-compatible server)";
    model = std::make_shared<LocalModel>();
  }
  static std::once_flag said;
  std::call_once(said, [&] { std::cerr << which << '\n'; });
  return model;
}

}  // namespace sg
