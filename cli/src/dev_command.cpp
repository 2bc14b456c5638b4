// SPDX-License-Identifier: MIT
// `stategraph dev`: a project's graph library built, served and rebuilt on every change, as
// `langgraph dev` reloads a project (docs/deploy.md). The server runs as a child process
// (`stategraph serve --config`) on a data directory of the project's, so threads survive each
// restart; a graph library cannot be unloaded safely while its graphs run, so a new build means
// a new server process.
#include <stategraph/core/error.hpp>

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"

extern char** environ;  // NOLINT: POSIX declares it nowhere

namespace sg::cli {
namespace {

namespace fs = std::filesystem;

struct DevArgs {
  std::string config = "stategraph.json";
  std::string build_dir;  // default: the config's directory's build/
  std::string host = "127.0.0.1";
  std::uint16_t port = 2024;
  std::string db;  // default: the config's directory's .stategraph-dev/
  double poll_seconds = 0.5;
};

/// Starts `argv` with the signals unblocked and the environment inherited; throws sg::Error when
/// it cannot start.
pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw Error(errc::kInvalidArgument,
                fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }
  return pid;
}

/// Runs `argv` to its end (its output is this process's); whether it succeeded.
bool run(const std::vector<std::string>& argv) {
  const pid_t pid = spawn(argv);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// Stops the server child (SIGTERM, then waits for it).
void stop(pid_t& child) {
  if (child <= 0) return;
  kill(child, SIGTERM);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  child = -1;
}

/// The newest modification time of the project's files, outside `skip` and hidden directories.
fs::file_time_type newest_source(const fs::path& project, const std::vector<fs::path>& skip) {
  fs::file_time_type newest = fs::file_time_type::min();  // the file clock's epoch is in 2174
  std::error_code walk;  // the walk's own: the checks below may fail on a file that went away
  for (auto it = fs::recursive_directory_iterator(
           project, fs::directory_options::skip_permission_denied, walk);
       !walk && it != fs::recursive_directory_iterator(); it.increment(walk)) {
    std::error_code ec;
    const fs::path& path = it->path();
    if (it->is_directory(ec)) {
      const std::string name = path.filename().string();
      const bool skipped = std::any_of(skip.begin(), skip.end(), [&](const fs::path& s) {
        std::error_code missing;
        return fs::equivalent(s, path, missing);
      });
      if (skipped || (!name.empty() && name[0] == '.')) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) {
      const fs::file_time_type written = it->last_write_time(ec);
      if (!ec) newest = std::max(newest, written);
    }
  }
  return newest;
}

void dev(const DevArgs& args) {
  const fs::path config = fs::absolute(args.config).lexically_normal();
  if (!fs::is_regular_file(config)) {
    throw Error(errc::kInvalidArgument,
                fmt::format("no config file '{}' (stategraph new writes one)", config.string()));
  }
  const fs::path project = config.parent_path();
  const fs::path build = args.build_dir.empty() ? project / "build" : fs::absolute(args.build_dir);
  const fs::path db = args.db.empty() ? project / ".stategraph-dev" : fs::absolute(args.db);
  const std::string self = fs::read_symlink("/proc/self/exe").string();

  // SIGINT and SIGTERM stop; SIGCHLD tells the server died. All are taken with sigtimedwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (!fs::exists(build / "CMakeCache.txt") &&
      !run({"cmake", "-S", project.string(), "-B", build.string()})) {
    throw Error(errc::kInvalidArgument,
                fmt::format("cmake could not configure '{}'", project.string()));
  }
  const auto build_and_serve = [&](pid_t& child) {
    std::cout << "stategraph dev: building " << build.string() << '\n' << std::flush;
    if (!run({"cmake", "--build", build.string()})) {
      std::cout << "stategraph dev: the build failed; "
                << (child > 0 ? "the server goes on with the last build" : "no server yet")
                << ", waiting for a change\n"
                << std::flush;
      return;
    }
    stop(child);
    child = spawn({self, "serve", "--config", config.string(), "--host", args.host, "--port",
                   std::to_string(args.port), "--db", db.string(), "--shutdown-grace", "0"});
  };
  pid_t child = -1;
  fs::file_time_type built = newest_source(project, {build, db});
  build_and_serve(child);
  std::cout << "stategraph dev: watching " << project.string()
            << " (a change rebuilds and restarts the server; Ctrl-C stops)\n"
            << std::flush;
  const auto poll = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(std::max(args.poll_seconds, 0.05)));
  const timespec wait{static_cast<time_t>(poll.count() / 1'000'000'000),
                      static_cast<long>(poll.count() % 1'000'000'000)};
  for (;;) {
    siginfo_t info{};
    const int signal = sigtimedwait(&signals, &info, &wait);
    if (signal == SIGINT || signal == SIGTERM) {
      stop(child);
      std::cout << "stategraph dev: stopped\n" << std::flush;
      return;
    }
    if (signal == SIGCHLD && child > 0) {
      int status = 0;
      if (waitpid(child, &status, WNOHANG) == child) {
        child = -1;
        std::cout << "stategraph dev: the server exited; waiting for a change\n" << std::flush;
      }
    }
    const fs::file_time_type newest = newest_source(project, {build, db});
    if (newest > built) {
      built = newest;
      build_and_serve(child);
    }
  }
}

}  // namespace

void add_dev_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<DevArgs>();
  auto* cmd = app.add_subcommand(
      "dev",
      "Build a project's graph library (stategraph new makes one), serve it with its "
      "stategraph.json, and rebuild and restart the server whenever a file of the project "
      "changes; threads are kept in the project's .stategraph-dev/");
  cmd->add_option("--config", args->config, "The project's stategraph.json")->capture_default_str();
  cmd->add_option("--build-dir", args->build_dir,
                  "The CMake build directory (configured when missing; default: build/ beside "
                  "the config)");
  cmd->add_option("--host", args->host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", args->port, "Port")->capture_default_str();
  cmd->add_option("--db", args->db,
                  "Data directory of the server (default: .stategraph-dev/ beside the config)");
  cmd->add_option("--poll", args->poll_seconds, "Seconds between looks for changed files")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([&action, args] { action = [args] { dev(*args); }; });
}

}  // namespace sg::cli
