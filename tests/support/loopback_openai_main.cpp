// SPDX-License-Identifier: MIT
// sg-loopback-openai [--port N] [--delay-ms D] [--chunks K] [--threads T]
//                    [--call-tool NAME [--tool-args JSON]]
// Serves OpenAI's chat-completions and embeddings API on 127.0.0.1 until killed: every chat
// request is answered after D ms with K content chunks (an echo of the last user message when
// K is 0); with --call-tool, a request that offers tool NAME and has no tool result yet is
// answered with a call of it (arguments JSON, default {}). GET /v1/stats tells the requests
// received, in flight and the most in flight at once (POST /v1/stats/reset starts the most
// again); requests are not kept. Prints "listening on http://127.0.0.1:PORT/v1" once it accepts
// connections.
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/loopback_openai.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: sg-loopback-openai [--port N] [--delay-ms D] [--chunks K] [--threads T] "
               "[--call-tool NAME [--tool-args JSON]]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  sg::testing::LoopbackOptions options;
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
    const long value = std::strtol(text.c_str(), nullptr, 10);
    if (value < 0) return usage();
    if (arg == "--port") {
      options.port = static_cast<std::uint16_t>(value);
    } else if (arg == "--delay-ms") {
      options.delay = std::chrono::milliseconds(value);
    } else if (arg == "--chunks") {
      options.chunks = static_cast<int>(value);
    } else if (arg == "--threads") {
      options.threads = static_cast<int>(value);
    } else {
      return usage();
    }
  }
  // Many concurrent connections: raise the open-file limit to its hard maximum.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // the server's threads inherit the mask
  sg::testing::LoopbackOpenAI server(options);
  std::printf("listening on %s\n", server.base_url().c_str());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  return 0;
}
