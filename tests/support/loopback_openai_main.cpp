// sg-loopback-openai [--port N] [--delay-ms D] [--chunks K] [--threads T]
// Serves OpenAI's chat-completions and embeddings API on 127.0.0.1 until killed: every chat
// request is answered after D ms with K content chunks (an echo of the last user message when
// K is 0). Prints "listening on http://127.0.0.1:PORT/v1" once it accepts connections.
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
               "usage: sg-loopback-openai [--port N] [--delay-ms D] [--chunks K] [--threads T]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  sg::testing::LoopbackOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const long value = std::strtol(argv[++i], nullptr, 10);
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
