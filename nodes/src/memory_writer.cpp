// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/memory_writer.hpp>

#include <algorithm>

namespace sg {

MemoryWriter::MemoryWriter(Write write, MemoryWriterOptions options)
    : write_(std::move(write)), options_(std::move(options)) {
  if (!write_) throw Error(errc::kInvalidArgument, "MemoryWriter: no write function");
  if (options_.delay.count() < 0)
    throw Error(errc::kInvalidArgument, "MemoryWriter: the delay must not be negative");
  worker_ = std::thread([this] { run(); });
}

MemoryWriter::~MemoryWriter() {
  close(true);
}

void MemoryWriter::submit(std::string thread_id, std::vector<Message> messages,
                          nlohmann::json configurable) {
  submit(std::move(thread_id), std::move(messages), std::move(configurable), options_.delay);
}

void MemoryWriter::submit(std::string thread_id, std::vector<Message> messages,
                          nlohmann::json configurable, std::chrono::milliseconds delay) {
  if (delay.count() < 0)
    throw Error(errc::kInvalidArgument, "MemoryWriter: the delay must not be negative");
  std::lock_guard lock(mu_);
  if (closed_) throw Error(errc::kInvalidArgument, "MemoryWriter: submit after close");
  ++stats_.submitted;
  // Submissions without a thread are never merged: each gets a key no thread id has.
  std::string key =
      thread_id.empty() ? std::string(1, '\0') + std::to_string(anonymous_++) : thread_id;
  Pending next;
  next.due = Clock::now() + delay;
  next.job.thread_id = std::move(thread_id);
  next.job.messages = std::move(messages);
  next.job.configurable = std::move(configurable);
  next.job.cancellation = CancellationToken::create();
  if (auto it = pending_.find(key); it != pending_.end()) {
    next.job.submissions += it->second.job.submissions;
    ++stats_.superseded;
    it->second = std::move(next);
  } else {
    pending_.emplace(key, std::move(next));
  }
  if (running_ && running_key_ == key && !running_token_.cancelled()) {
    running_token_.cancel();
    ++stats_.interrupted;
  }
  wake_.notify_one();
}

bool MemoryWriter::idle() const {
  return pending_.empty() && !running_;
}

void MemoryWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (pending_.empty()) {
      if (closed_) return;
      wake_.wait(lock);
      continue;
    }
    auto next =
        std::min_element(pending_.begin(), pending_.end(),
                         [](const auto& a, const auto& b) { return a.second.due < b.second.due; });
    if (flushers_ == 0 && !closed_ && next->second.due > Clock::now()) {
      // A copy: the entry may be replaced or erased while the lock is released.
      const Clock::time_point due = next->second.due;
      wake_.wait_until(lock, due);
      continue;
    }
    MemoryWriteJob job = std::move(next->second.job);
    running_key_ = next->first;
    pending_.erase(next);
    running_ = true;
    running_token_ = job.cancellation;
    lock.unlock();

    std::exception_ptr error;
    try {
      write_(job);
    } catch (...) {
      error = std::current_exception();
    }
    if (error && options_.on_error) {
      try {
        options_.on_error(job, error);
      } catch (...) {  // NOLINT(bugprone-empty-catch): a failing error handler changes nothing
      }
    }

    lock.lock();
    running_ = false;
    running_key_.clear();
    running_token_ = CancellationToken();
    if (error) {
      ++stats_.failed;
      last_error_ = error;
    } else {
      ++stats_.written;
    }
    done_.notify_all();
  }
}

void MemoryWriter::flush() {
  std::unique_lock lock(mu_);
  ++flushers_;
  wake_.notify_one();
  done_.wait(lock, [this] { return idle(); });
  --flushers_;
}

void MemoryWriter::close(bool run_pending) {
  {
    std::unique_lock lock(mu_);
    if (!closed_) {
      if (run_pending) {
        ++flushers_;
        wake_.notify_one();
        done_.wait(lock, [this] { return idle(); });
        --flushers_;
      } else {
        stats_.discarded += pending_.size();
        pending_.clear();
        if (running_ && !running_token_.cancelled()) {
          running_token_.cancel();
          ++stats_.interrupted;
        }
      }
      closed_ = true;
      wake_.notify_one();
    }
  }
  // The first caller joins; a concurrent one waits for it.
  std::lock_guard join(join_mu_);
  if (worker_.joinable()) worker_.join();
}

std::size_t MemoryWriter::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

MemoryWriter::Stats MemoryWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::exception_ptr MemoryWriter::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

}  // namespace sg
