// SPDX-License-Identifier: MIT
// Built against an installed stategraph: the OpenAI client from its public header alone (curl
// stays behind it), linked through the exported archive (libcurl comes along). A configuration
// without a key for api.openai.com fails before any request.
#include <stategraph/models/openai.hpp>

#include <iostream>

int main() {
  sg::OpenAIConfig config;
  config.api_key = "";
  try {
    const sg::OpenAIChatModel model(config);
  } catch (const sg::ModelError& e) {
    std::cout << "models " << e.code() << '\n';
    return 0;
  }
  return 1;
}
