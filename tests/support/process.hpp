// SPDX-License-Identifier: MIT
#pragma once

// Runs a program with a given stdin and captures its exit code, stdout and stderr (through
// temporary files, so large outputs cannot deadlock).

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sg::test {

/// The threads of this process (/proc/self/status). The first call starts and joins one thread,
/// so that a runtime that starts its own thread with the process's first (TSan's background
/// thread) has started it before any count is taken.
inline int thread_count() {
  static const bool warmed = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)warmed;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Starts `program` with `args`, stdin from `in_path` and stdout/stderr into the other two files;
/// its pid. Throws if it cannot fork.
inline pid_t spawn(const std::string& program, const std::vector<std::string>& args,
                   const std::filesystem::path& in_path, const std::filesystem::path& out_path,
                   const std::filesystem::path& err_path) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int in_fd = open(in_path.c_str(), O_RDONLY);
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

/// Runs `program` with `args`, feeding `input` on stdin. Throws if it cannot start.
inline ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                                 const std::string& input = {}) {
  namespace fs = std::filesystem;
  char dir_template[] = "/tmp/sg-process-XXXXXX";
  if (!mkdtemp(dir_template)) throw std::runtime_error("mkdtemp failed");
  const fs::path dir(dir_template);
  const fs::path in_path = dir / "stdin", out_path = dir / "stdout", err_path = dir / "stderr";
  std::ofstream(in_path, std::ios::binary) << input;

  const pid_t pid = spawn(program, args, in_path, out_path, err_path);
  int status = 0;
  waitpid(pid, &status, 0);
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  fs::remove_all(dir);
  return result;
}

/// A program running in the background, its stdout and stderr in temporary files; killed
/// (SIGKILL) and reaped when destroyed unless wait() reaped it.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::string& program, const std::vector<std::string>& args) {
    char dir_template[] = "/tmp/sg-process-XXXXXX";
    if (!mkdtemp(dir_template)) throw std::runtime_error("mkdtemp failed");
    dir_ = dir_template;
    pid_ = spawn(program, args, "/dev/null", dir_ / "stdout", dir_ / "stderr");
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  ~BackgroundProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  [[nodiscard]] std::string out() const { return slurp(dir_ / "stdout"); }
  [[nodiscard]] std::string err() const { return slurp(dir_ / "stderr"); }

  /// Waits until stdout holds `text` (true) or the process ended or `timeout` passed (false).
  bool wait_for_output(const std::string& text,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (out().find(text) != std::string::npos) return true;
      if (pid_ > 0 && waitpid(pid_, &status_, WNOHANG) == pid_) {
        pid_ = -1;
        return out().find(text) != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void signal(int sig) const {
    if (pid_ > 0) kill(pid_, sig);
  }

  /// Waits for the exit; the exit code (128 + signal when killed by one).
  int wait() {
    if (pid_ > 0) {
      waitpid(pid_, &status_, 0);
      pid_ = -1;
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int status_ = 0;
};

}  // namespace sg::test
