// SPDX-License-Identifier: MIT
#pragma once

// io_contexts each run by one thread of its own: the server's threads, and the runs' own when
// RunManager has no server (run_queue.hpp, RunRuntime).
// clang-format off
#include <utility>  // before Boost.Asio's headers (Boost 1.74 omits it)
// clang-format on

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

namespace sg::server {

/// `count` io_contexts (concurrency hint 1), each run by one thread between start() and stop().
/// start() and stop() may alternate; call them from one thread at a time.
class IoThreads {
 public:
  using Executor = boost::asio::io_context::executor_type;

  explicit IoThreads(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
    }
  }
  ~IoThreads() { stop(); }
  IoThreads(const IoThreads&) = delete;
  IoThreads& operator=(const IoThreads&) = delete;

  /// Starts a thread per io_context; each runs until stop(), also while it has no work.
  void start() {
    for (auto& io : contexts_) {
      io->restart();
      work_.emplace_back(io->get_executor());
    }
    for (auto& io : contexts_) threads_.emplace_back([&io] { io->run(); });
  }

  /// Stops every io_context (pending handlers stay until the next start()) and joins its thread.
  void stop() {
    work_.clear();
    for (auto& io : contexts_) io->stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  [[nodiscard]] std::size_t size() const noexcept { return contexts_.size(); }
  [[nodiscard]] boost::asio::io_context& at(std::size_t i) const { return *contexts_.at(i); }
  [[nodiscard]] std::vector<Executor> executors() const {
    std::vector<Executor> out;
    for (const auto& io : contexts_) out.push_back(io->get_executor());
    return out;
  }

 private:
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<boost::asio::executor_work_guard<Executor>> work_;
  std::vector<std::thread> threads_;
};

}  // namespace sg::server
