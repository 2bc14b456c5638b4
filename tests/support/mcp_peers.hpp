// SPDX-License-Identifier: MIT
#pragma once
// The MCP tests' peers (the client's, the CLI's): the reference servers from npm (tests/mcp,
// installed by tests/mcp/setup.sh when missing), the servers of tests/mcp written to misbehave, and
// HTTP servers started on a free port of 127.0.0.1.

#include <stategraph/models/mcp.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"

namespace sg::test {

/// tests/mcp.
inline std::string mcp_dir() {
  return SG_MCP_DIR;
}

/// The Node.js 22 the peers run on; the first call runs tests/mcp/setup.sh (npm packages and
/// Node.js installed when missing).
inline const std::string& mcp_node() {
  static const std::string node = [] {
    const ProcessResult r = run_process("/bin/bash", {mcp_dir() + "/setup.sh"});
    std::string path = r.out;
    while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
    if (r.exit_code != 0 || path.empty())
      throw std::runtime_error("tests/mcp/setup.sh failed: " + r.err);
    return path;
  }();
  return node;
}

inline std::string everything_js() {
  return mcp_dir() + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}
inline std::string filesystem_js() {
  return mcp_dir() + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
}

/// A stdio server run by the tests' node; its stderr logged (not mixed into the test output).
inline McpServerConfig node_server(std::vector<std::string> args) {
  McpServerConfig config;
  config.command = mcp_node();
  config.args = std::move(args);
  config.stderr_mode = McpStderr::log;
  return config;
}

/// server-everything over stdio.
inline McpServerConfig everything_stdio() {
  return node_server({everything_js(), "stdio"});
}

/// tests/mcp/bad-server.mjs in `mode`.
inline McpServerConfig bad_server(const std::string& mode) {
  return node_server({mcp_dir() + "/bad-server.mjs", mode});
}

/// A port of 127.0.0.1 that was free a moment ago.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("no free port");
  }
  const int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

/// A Node.js HTTP server of the tests: `script args...` with PORT set to a free port and `env`,
/// ready once its output (stdout or stderr) holds `ready`. Killed when destroyed.
class NodeHttpServer {
 public:
  NodeHttpServer(std::vector<std::string> script_and_args, std::map<std::string, std::string> env,
                 const std::string& ready) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = free_port();
      std::vector<std::string> args{"PORT=" + std::to_string(port_)};
      for (const auto& [k, v] : env) args.push_back(k + "=" + v);
      args.push_back(mcp_node());
      args.insert(args.end(), script_and_args.begin(), script_and_args.end());
      process_ = std::make_unique<BackgroundProcess>("/usr/bin/env", args);
      if (wait_for(ready)) return;
      process_.reset();  // the port was taken meanwhile, most likely: another one
    }
    throw std::runtime_error("the MCP HTTP server did not start");
  }

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string url(const std::string& path = "/mcp") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  [[nodiscard]] std::string output() const { return process_->out() + process_->err(); }

 private:
  bool wait_for(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string out = output();
      if (out.find(text) != std::string::npos) return true;
      if (out.find("EADDRINUSE") != std::string::npos ||
          out.find("already in use") != std::string::npos)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  int port_ = 0;
  std::unique_ptr<BackgroundProcess> process_;
};

/// An HTTP server config for `url`.
inline McpServerConfig http_server(const std::string& url,
                                   McpTransport transport = McpTransport::streamable_http) {
  McpServerConfig config;
  config.transport = transport;
  config.url = url;
  return config;
}

}  // namespace sg::test
