#pragma once

// How a run's state maps to checkpoint channels, and the background writer of durability
// "async". Internal to stategraph.
//
// Channels: one per state field (its name); "branch:to:<node>" for each node triggered for the
// next superstep; "__pregel_tasks" for pending Sends; "join:<a>+<b>:<target>" for the sources a
// waiting edge has seen; "__start__" for the input of an input checkpoint. A field whose reducer
// tracks its list (add_messages) is written as a "$messages" delta against the version stored
// before, so a superstep stores only the messages it added (docs/checkpoint-format.md).

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/update.hpp>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sg::detail {

inline constexpr std::string_view kStartChannel = "__start__";
inline constexpr std::string_view kTasksChannel = "__pregel_tasks";
inline constexpr std::string_view kBranchPrefix = "branch:to:";
inline constexpr std::string_view kJoinPrefix = "join:";
/// Pending-write channels of stategraph: a task's routes, and a passed breakpoint.
inline constexpr std::string_view kGotoWrite = "__goto__";
inline constexpr std::string_view kBreakpointWrite = "__breakpoint__";
/// The task id of writes that belong to the run rather than a task.
inline constexpr std::string_view kRunTaskId = "00000000-0000-0000-0000-000000000000";

inline std::string branch_channel(std::string_view node) {
  return std::string(kBranchPrefix) + std::string(node);
}

inline std::string join_channel(const Topology& topo, const Topology::Join& join) {
  std::string name(kJoinPrefix);
  for (std::size_t i = 0; i < join.sources.size(); ++i) {
    if (i) name += '+';
    name += topo.names[static_cast<std::size_t>(join.sources[i])];
  }
  name += ':';
  name += topo.names[static_cast<std::size_t>(join.target)];
  return name;
}

/// A reducer whose cache tracks where each element of the list was in the last checkpointed
/// list (add_messages): its field is stored incrementally.
template <class R>
concept TrackedListReducer = CachedReducer<R> &&
    requires(typename R::Cache& c, const typename R::value_type& v) {
  c.track = true;
  c.origin;
  c.rebase(v);
};

/// The checkpoint JSON of a tracked list: `{"$messages": {"base": V, "items": [...]}}` where
/// items are [from, to) position ranges of the base list or new elements.
template <class List>
nlohmann::json tracked_list_json(const List& list, const std::vector<std::int64_t>& origin,
                                 std::int64_t base_version) {
  nlohmann::json items = nlohmann::json::array();
  std::int64_t run_from = -1;
  std::int64_t run_to = -1;
  auto close_run = [&] {
    if (run_from >= 0) items.push_back(nlohmann::json::array({run_from, run_to}));
    run_from = run_to = -1;
  };
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::int64_t at = base_version >= 0 && i < origin.size() ? origin[i] : -1;
    if (at < 0) {
      close_run();
      items.push_back(nlohmann::json(list[i]));
    } else if (run_from >= 0 && at == run_to) {
      ++run_to;
    } else {
      close_run();
      run_from = at;
      run_to = at + 1;
    }
  }
  close_run();
  nlohmann::json spec{{"items", std::move(items)}};
  if (base_version >= 0) spec["base"] = base_version;
  return nlohmann::json{{"$messages", std::move(spec)}};
}

/// Runs jobs in submission order on a background thread (durability "async"). wait() blocks
/// until the queue is empty and rethrows the first failure. Thread-safe.
class AsyncWriter {
 public:
  AsyncWriter() = default;
  AsyncWriter(const AsyncWriter&) = delete;
  AsyncWriter& operator=(const AsyncWriter&) = delete;
  ~AsyncWriter() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void submit(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      if (error_) return;  // the first failure stops the queue; wait() reports it
      jobs_.push_back(std::move(job));
      if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    }
    cv_.notify_all();
  }

  void wait() {
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [&] { return jobs_.empty() && !busy_; });
    if (error_) {
      auto error = error_;
      error_ = nullptr;
      std::rethrow_exception(error);
    }
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      std::exception_ptr failure;
      try {
        job();
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      if (failure && !error_) {
        error_ = failure;
        jobs_.clear();
      }
      idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> jobs_;
  std::exception_ptr error_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sg::detail
