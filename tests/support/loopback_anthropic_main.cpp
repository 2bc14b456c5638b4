// SPDX-License-Identifier: MIT
// sg-loopback-anthropic [--port N] [--delay-ms D] [--threads T]
//                       [--call-tool NAME [--tool-args JSON]]
// Serves Anthropic's Messages API (POST /v1/messages) on 127.0.0.1 until killed, with
// LoopbackAnthropic's default replies (support/loopback_anthropic.hpp): every request checked as
// the API checks it (any x-api-key is accepted), answered after D ms with an echo of the last
// user text, or with the tool results it carries; with --call-tool, a request that offers tool
// NAME and has no tool result yet is answered with a call of it (input JSON, default {}). With
// extended thinking on, a new turn's reply starts with a thinking block; requests with
// cache_control report cache writes, then reads of the same prefix. Prints "listening on
// http://127.0.0.1:PORT" (ANTHROPIC_BASE_URL's form) once it accepts connections. Requests are
// not kept.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/loopback_anthropic.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: sg-loopback-anthropic [--port N] [--delay-ms D] [--threads T] "
               "[--call-tool NAME [--tool-args JSON]]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  sg::testing::LoopbackAnthropicOptions options;
  options.record_requests = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string text = argv[++i];
    if (arg == "--call-tool") {
      options.call_tool = text;
      continue;
    }
    if (arg == "--tool-args") {
      options.tool_args = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!options.tool_args.is_object()) return usage();
      continue;
    }
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || value < 0) return usage();
    if (arg == "--port" && value <= 65535) {
      options.port = static_cast<std::uint16_t>(value);
    } else if (arg == "--delay-ms") {
      options.delay = std::chrono::milliseconds(value);
    } else if (arg == "--threads" && value >= 1 && value <= 256) {
      options.threads = static_cast<int>(value);
    } else {
      return usage();
    }
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // the server's threads inherit the mask
  sg::testing::LoopbackAnthropic server(options);
  std::printf("listening on %s\n", server.base_url().c_str());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  return 0;
}
