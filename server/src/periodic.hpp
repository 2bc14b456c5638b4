// SPDX-License-Identifier: MIT
#pragma once

// A task run every interval on a thread of its own (internal): the server's sweeps.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sg::server {

/// Calls a function every `interval` on its own thread, from start() until stop() or
/// destruction; an exception the function throws is dropped (the next call tries again).
/// start() and stop() from one thread.
class Periodic {
 public:
  Periodic() = default;
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;
  ~Periodic() { stop(); }

  /// Starts calling `task` every `interval` (the first call after one interval).
  void start(std::chrono::milliseconds interval, std::function<void()> task) {
    stop();
    stopping_ = false;
    thread_ = std::thread([this, interval, task = std::move(task)] {
      std::unique_lock lock(mu_);
      while (!changed_.wait_for(lock, interval, [&] { return stopping_; })) {
        lock.unlock();
        try {
          task();
        } catch (...) {
          // A sweep that failed (a database away) runs again at the next interval.
        }
        lock.lock();
      }
    });
  }

  /// Stops and joins the thread (waiting for a call in progress). Idempotent.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sg::server
