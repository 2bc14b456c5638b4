// SPDX-License-Identifier: MIT
// The stdio transport: the server is a child process reading JSON-RPC messages, one per line, on
// its stdin and writing its own on its stdout. Its pipes are Asio descriptors on the client's
// I/O thread; its exit is watched through a pidfd (a descriptor that becomes readable when the
// process ends), so a server that dies fails the pending calls at once with its exit status.

#include <stategraph/core/log.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/write.hpp>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>

#include "http_call.hpp"
#include "mcp_transport.hpp"

extern char** environ;  // NOLINT: POSIX

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::detail {
namespace net = boost::asio;
using nlohmann::json;

namespace mcp_stdio_impl {

/// The longest line a server may send (a tool result with images can be large).
constexpr std::size_t kMaxLine = std::size_t{64} << 20;
/// The stderr lines kept for the message of an exit (McpStderr::log).
constexpr std::size_t kStderrTail = 8;

std::string errno_text(int error) {
  return std::strerror(error);
}

/// "status 3", "signal 9 (Killed)".
std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (") + name + ")" : "");
  }
  return "ended (wait status " + std::to_string(status) + ")";
}

/// The server's environment: the variables the official SDKs pass on (or all of them), then
/// the configured ones.
std::map<std::string, std::string> server_environment(const McpServerConfig& config) {
  std::map<std::string, std::string> env;
  if (config.inherit_environment) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const std::size_t eq = entry.find('=');
      if (eq != std::string_view::npos && eq > 0)
        env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
  } else {
    for (const char* name : {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}) {
      const char* value = std::getenv(name);
      // Values that start with "()" are exported shell functions: not passed on.
      if (value != nullptr && std::string_view(value).substr(0, 2) != "()") env[name] = value;
    }
  }
  for (const auto& [name, value] : config.env) env[name] = value;
  return env;
}

/// The program to run: `command` itself when it names a path, else the first executable of that
/// name on the server's PATH. Empty when none is found.
std::string resolve_program(const std::string& command,
                            const std::map<std::string, std::string>& env) {
  if (command.find('/') != std::string::npos) return command;
  const auto path = env.find("PATH");
  const std::string dirs = path == env.end() ? "/usr/local/bin:/usr/bin:/bin" : path->second;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + command;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return {};
}

/// A pipe whose ends are closed on exec.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "pipe2");
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int take_read() { return std::exchange(read, -1); }
  int take_write() { return std::exchange(write, -1); }
};

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/// Consumes a SIGPIPE left pending on this thread (where it is blocked) by a write that failed.
void clear_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  timespec zero{};
  while (::sigtimedwait(&set, nullptr, &zero) == SIGPIPE) {
  }
}

class StdioTransport final : public McpLink, public std::enable_shared_from_this<StdioTransport> {
 public:
  StdioTransport(McpRuntime& runtime, std::string server, McpServerConfig config,
                 McpTransportEvents events)
      : runtime_(runtime),
        server_(std::move(server)),
        config_(std::move(config)),
        events_(std::move(events)),
        in_(runtime.io()),
        out_(runtime.io()),
        err_(runtime.io()),
        exit_fd_(runtime.io()),
        exited_(runtime.io()) {}

  ~StdioTransport() override {
    if (pid_ > 0 && !reaped_) {  // never closed: no process is left behind
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  net::awaitable<void> start() override {
    spawn();
    auto self = shared_from_this();
    net::co_spawn(runtime_.io(), self->read_stdout(), net::detached);
    net::co_spawn(runtime_.io(), self->watch_exit(), net::detached);
    if (err_.is_open()) net::co_spawn(runtime_.io(), self->read_stderr(), net::detached);
    co_return;
  }

  void send(const json& message, std::function<void(std::exception_ptr)> failed) override {
    if (!writable_) {
      if (failed) failed(std::make_exception_ptr(gone("cannot take messages any more")));
      return;
    }
    outbox_.push_back(mcp_dump(message) + "\n");
    if (!writing_) {
      writing_ = true;
      net::co_spawn(runtime_.io(), shared_from_this()->write_loop(), net::detached);
    }
  }

  net::awaitable<void> close() override {
    auto self = shared_from_this();
    if (closing_ || pid_ <= 0) co_return;
    closing_ = true;
    // The specification's order: close the server's stdin, wait for it to exit, SIGTERM, wait,
    // SIGKILL.
    close_stdin();
    if (!exited_.is_set()) co_await exited_.wait(config_.shutdown_timeout);
    if (!exited_.is_set()) {
      ::kill(pid_, SIGTERM);
      co_await exited_.wait(config_.shutdown_timeout);
    }
    if (!exited_.is_set()) {
      ::kill(pid_, SIGKILL);
      co_await exited_.wait(config_.shutdown_timeout);
    }
    boost::system::error_code ignored;
    out_.close(ignored);
    err_.close(ignored);
  }

 private:
  [[nodiscard]] std::string who() const {
    std::string text = "MCP server '" + server_ + "' (" + config_.command;
    for (const auto& a : config_.args) text += " " + a;
    return text + ")";
  }

  [[nodiscard]] McpError gone(const std::string& why) const {
    return McpError(errc::kMcpConnection, who() + " " + why, server_);
  }

  void spawn() {
    const std::map<std::string, std::string> env = server_environment(config_);
    const std::string program = resolve_program(config_.command, env);
    if (program.empty()) {
      const auto path = env.find("PATH");
      throw McpError(errc::kMcpConnection,
                     "MCP server '" + server_ + "': command '" + config_.command +
                         "' was not found on PATH (" + (path == env.end() ? "" : path->second) +
                         ")",
                     server_);
    }
    if (!config_.cwd.empty()) {
      struct stat st {};
      if (::stat(config_.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw McpError(errc::kMcpConnection,
                       "MCP server '" + server_ + "': cwd '" + config_.cwd + "' is not a directory",
                       server_);
      }
    }
    std::vector<std::string> env_strings;
    env_strings.reserve(env.size());
    for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> arg_strings{config_.command};
    arg_strings.insert(arg_strings.end(), config_.args.begin(), config_.args.end());
    std::vector<char*> argv;
    for (auto& s : arg_strings) argv.push_back(s.data());
    argv.push_back(nullptr);

    Pipe to_child;
    Pipe from_child;
    std::optional<Pipe> errors;
    if (config_.stderr_mode == McpStderr::log) errors.emplace();

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child.read, 0);
    posix_spawn_file_actions_adddup2(&actions, from_child.write, 1);
    if (errors) {
      posix_spawn_file_actions_adddup2(&actions, errors->write, 2);
    } else if (config_.stderr_mode == McpStderr::ignore) {
      posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    }
    if (!config_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, config_.cwd.c_str());
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);  // this thread blocks SIGPIPE; the server must not
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int rc = ::posix_spawn(&pid_, program.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      pid_ = -1;
      throw McpError(
          errc::kMcpConnection,
          "MCP server '" + server_ + "': cannot start '" + program + "': " + errno_text(rc),
          server_);
    }
    const int in_fd = to_child.take_write();
    const int out_fd = from_child.take_read();
    set_nonblocking(in_fd);
    set_nonblocking(out_fd);
    in_.assign(in_fd);
    out_.assign(out_fd);
    if (errors) {
      const int err_fd = errors->take_read();
      set_nonblocking(err_fd);
      err_.assign(err_fd);
    }
    const long pidfd = ::syscall(SYS_pidfd_open, pid_, 0);
    if (pidfd >= 0) exit_fd_.assign(static_cast<int>(pidfd));
    writable_ = true;
    log(LogLevel::debug, "MCP server started", {{"server", server_}, {"pid", pid_}});
  }

  net::awaitable<void> write_loop() {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    while (!outbox_.empty() && writable_) {
      // Taken out first: close_stdin() may clear the queue while the line is being written.
      const std::string line = std::move(outbox_.front());
      outbox_.pop_front();
      boost::system::error_code ec;
      co_await net::async_write(in_, net::buffer(line),
                                net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        if (ec == boost::asio::error::broken_pipe) clear_sigpipe();
        writable_ = false;  // the server is gone or closed its stdin: its exit reports it
        break;
      }
    }
    if (!writable_) outbox_.clear();
    writing_ = false;
  }

  void close_stdin() {
    writable_ = false;
    outbox_.clear();
    boost::system::error_code ignored;
    in_.close(ignored);
  }

  void deliver_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      events_.malformed("a line that is not JSON: " + excerpt(line, 200));
      return;
    }
    events_.message(std::move(message));
  }

  net::awaitable<void> read_stdout() {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    std::array<char, 65536> chunk{};
    std::string buffer;
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = co_await out_.async_read_some(
          net::buffer(chunk), net::redirect_error(net::use_awaitable, ec));
      if (ec) break;
      buffer.append(chunk.data(), n);
      std::size_t start = 0;
      for (std::size_t nl = buffer.find('\n'); nl != std::string::npos;
           nl = buffer.find('\n', start)) {
        deliver_line(std::string_view(buffer).substr(start, nl - start));
        start = nl + 1;
      }
      buffer.erase(0, start);
      if (buffer.size() > kMaxLine) {
        report(gone("sent a line longer than " + std::to_string(kMaxLine >> 20) + " MiB"));
        ::kill(pid_, SIGKILL);
        co_return;
      }
    }
    if (closing_) co_return;
    // The server closed its stdout: it exited or is about to. Its exit status says more.
    if (!exited_.is_set()) co_await exited_.wait(std::chrono::milliseconds(1000));
    if (!exited_.is_set()) {
      report(gone("closed its stdout"));
      ::kill(pid_, SIGKILL);
    }
  }

  net::awaitable<void> read_stderr() {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    std::array<char, 8192> chunk{};
    std::string buffer;
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = co_await err_.async_read_some(
          net::buffer(chunk), net::redirect_error(net::use_awaitable, ec));
      if (!ec) buffer.append(chunk.data(), n);
      std::size_t start = 0;
      for (std::size_t nl = buffer.find('\n'); nl != std::string::npos;
           nl = buffer.find('\n', start)) {
        stderr_line(buffer.substr(start, nl - start));
        start = nl + 1;
      }
      buffer.erase(0, start);
      if (ec) {
        if (!buffer.empty()) stderr_line(buffer);
        co_return;
      }
      if (buffer.size() > 65536) {
        stderr_line(buffer);
        buffer.clear();
      }
    }
  }

  void stderr_line(std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    log(LogLevel::info, "MCP server stderr", {{"server", server_}, {"line", line}});
    stderr_tail_.push_back(std::move(line));
    if (stderr_tail_.size() > kStderrTail) stderr_tail_.pop_front();
  }

  net::awaitable<void> watch_exit() {
    ActiveGuard active(runtime_);
    auto self = shared_from_this();
    int status = 0;
    bool known = false;
    if (exit_fd_.is_open()) {
      boost::system::error_code ec;
      co_await exit_fd_.async_wait(net::posix::stream_descriptor::wait_read,
                                   net::redirect_error(net::use_awaitable, ec));
    }
    // Reap it (polling when there is no pidfd, or it returned early).
    net::steady_timer poll(runtime_.io());
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        known = true;
        break;
      }
      if (r < 0) break;  // not our child any more (someone reaped it): status unknown
      poll.expires_after(std::chrono::milliseconds(20));
      boost::system::error_code ec;
      co_await poll.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    reaped_ = true;
    boost::system::error_code ignored;
    exit_fd_.close(ignored);
    writable_ = false;
    // Let the last stderr lines arrive before they go into the message.
    if (err_.is_open() && !closing_) {
      net::steady_timer settle(runtime_.io(), std::chrono::milliseconds(20));
      co_await settle.async_wait(net::redirect_error(net::use_awaitable, ignored));
    }
    exited_.set();
    log(LogLevel::debug, "MCP server exited",
        {{"server", server_}, {"status", known ? describe_status(status) : "unknown"}});
    if (closing_) co_return;
    std::string why = known ? describe_status(status) : "exited";
    if (!stderr_tail_.empty()) {
      why += "; its last stderr lines:";
      for (const auto& line : stderr_tail_) why += "\n  " + line;
    }
    report(gone(why));
  }

  void report(const McpError& error) {
    if (reported_) return;
    reported_ = true;
    writable_ = false;
    if (events_.closed) events_.closed(std::make_exception_ptr(error));
  }

  McpRuntime& runtime_;
  std::string server_;
  McpServerConfig config_;
  McpTransportEvents events_;
  net::posix::stream_descriptor in_;
  net::posix::stream_descriptor out_;
  net::posix::stream_descriptor err_;
  net::posix::stream_descriptor exit_fd_;
  McpEvent exited_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool writable_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool reported_ = false;
  std::deque<std::string> outbox_{};
  std::deque<std::string> stderr_tail_{};
};

}  // namespace mcp_stdio_impl

std::shared_ptr<McpLink> make_stdio_transport(McpRuntime& runtime, const std::string& server,
                                              const McpServerConfig& config,
                                              McpTransportEvents events) {
  return std::make_shared<mcp_stdio_impl::StdioTransport>(runtime, server, config,
                                                          std::move(events));
}

}  // namespace sg::detail
