#pragma once

// How a run's state maps to checkpoint channels, and the background writer of durability
// "async". Internal to stategraph.
//
// Channels: one per state field (its name); "branch:to:<node>" for each node triggered for the
// next superstep; "__pregel_tasks" for pending Sends; "join:<a>+<b>:<target>" for the sources a
// waiting edge has seen; "__start__" for the input of an input checkpoint. A field whose reducer
// tracks its list (add_messages) goes to savers that take deltas as a ListDelta against the
// version stored before, so a superstep stores only the messages it added
// (docs/checkpoint-format.md).

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/detail/cbor.hpp>
#include <stategraph/core/detail/topology.hpp>
#include <stategraph/core/list_origin.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/thread_pool.hpp>
#include <stategraph/core/update.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

namespace sg::detail {

inline constexpr std::string_view kStartChannel = "__start__";
inline constexpr std::string_view kTasksChannel = "__pregel_tasks";
inline constexpr std::string_view kBranchPrefix = "branch:to:";
inline constexpr std::string_view kJoinPrefix = "join:";
/// Pending-write channels of stategraph: a task's routes, and a passed breakpoint.
inline constexpr std::string_view kGotoWrite = "__goto__";
/// LangGraph's NO_WRITES: the mark of a task that finished without writing anything.
inline constexpr std::string_view kNoWrites = "__no_writes__";
/// True for a pending write that shows its task finished (anything but an error, interrupt or
/// resume value; LangGraph's rule).
inline bool is_finished_write(std::string_view channel) noexcept {
  return channel != kErrorChannel && channel != kInterruptChannel && channel != kResumeChannel;
}
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

/// A message pre-encoded as CBOR, as a JSON binary (see kCborMessageSubtype).
inline nlohmann::json encoded_message_json(const Message& message) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(message.content.is_string() ? message.content.str().size() + 64 : 256);
  message_to_cbor(message, bytes);
  return nlohmann::json::binary(std::move(bytes), kCborMessageSubtype);
}

/// The JSON of a field write for a saver: like write_to_json, but messages appended to a
/// message list are pre-encoded (encoded_message_json).
template <Reducer R>
nlohmann::json saved_write_json(const Write<R>& write) {
  if constexpr (std::is_same_v<typename R::update_type, ListUpdate<Message>>) {
    if (const auto* update = std::get_if<0>(&write); update && !update->is_keep()) {
      nlohmann::json out(nlohmann::json::value_t::array);
      out.get_ref<nlohmann::json::array_t&>().reserve(update->items().size());
      for (const auto& m : update->items()) out.push_back(encoded_message_json(m));
      return out;
    }
  }
  return write_to_json<R>(write);
}

/// One new element of a tracked list for a ListDelta: its CBOR.
template <class T>
std::string tracked_element_cbor(const T& element) {
  std::string bytes;
  if constexpr (std::is_same_v<T, Message>) {
    bytes.reserve(element.content.is_string() ? element.content.str().size() + 64 : 256);
    message_to_cbor(element, bytes);
  } else {
    CborWriter<std::string>(bytes).value(nlohmann::json(element));
  }
  return bytes;
}

/// A tracked list as a ListDelta against the version stored as `base_version` (-1: none): the
/// unchanged runs of its origin are ranges of the base list, the rest new elements. O(changes).
template <class List>
ListDelta tracked_list_delta(const List& list, const ListOrigin& origin,
                             std::int64_t base_version) {
  ListDelta delta;
  if (base_version < 0 || origin.size() != list.size()) {
    delta.pieces.reserve(list.size());
    for (const auto& element : list) delta.pieces.push_back({0, 0, tracked_element_cbor(element)});
    return delta;
  }
  delta.base = base_version;
  std::int64_t run_from = origin.head_length() ? origin.head_from() : -1;
  std::int64_t run_to = run_from + static_cast<std::int64_t>(origin.head_length());
  auto close_run = [&] {
    if (run_from >= 0) {
      delta.pieces.push_back(
          {static_cast<std::uint64_t>(run_from), static_cast<std::uint64_t>(run_to), {}});
    }
    run_from = run_to = -1;
  };
  const auto tail = origin.tail();
  for (std::size_t t = 0; t < tail.size(); ++t) {
    const std::int64_t at = tail[t];
    if (at < 0) {
      close_run();
      delta.pieces.push_back({0, 0, tracked_element_cbor(list[origin.head_length() + t])});
    } else if (run_from >= 0 && at == run_to) {
      ++run_to;
    } else {
      close_run();
      run_from = at;
      run_to = at + 1;
    }
  }
  close_run();
  return delta;
}

/// How long a checkpoint of durability "async" may stay queued while steps run. Checkpoints
/// queued together are stored together, in one write.
inline constexpr std::chrono::milliseconds kAsyncWriteDelay{1};
/// ... and how many may queue up: small batches reuse warm memory.
inline constexpr std::size_t kAsyncWriteBatch = 16;

/// Stores checkpoints and writes in submission order (durability "async"). Jobs queue up until
/// start_if_due() finds them due: before a step that may be long (a model call) they go to the
/// graph's thread pool (one drain task at a time), so the write overlaps the step; between short
/// steps, once kAsyncWriteDelay or kAsyncWriteBatch is reached, they are stored on the calling
/// thread, which costs less than a hand-off to another thread (and keeps step times steady).
/// wait() stores the rest on the calling thread. Consecutive checkpoints go in one put_all().
/// The first failure drops the queue and is rethrown by wait(). Thread-safe.
class AsyncWriter {
 public:
  AsyncWriter(ThreadPool& pool, Checkpointer& saver)
      : pool_(pool), state_(std::make_shared<State>(saver)) {}
  AsyncWriter(const AsyncWriter&) = delete;
  AsyncWriter& operator=(const AsyncWriter&) = delete;
  ~AsyncWriter() { state_->drain_and_wait(); }

  /// Queues checkpoints to store.
  void submit(std::vector<CheckpointPut> puts) { enqueue(Job{std::move(puts)}); }
  /// Queues other work (task writes).
  void submit(std::function<void()> work) { enqueue(Job{std::move(work)}); }

  /// Stores the queue if it is due (see the class comment); `long_step`: the next step may be
  /// long. A short step waits for a background write still storing a full batch (back-pressure:
  /// steps never run ahead of the writes by much more than kAsyncWriteBatch checkpoints).
  void start_if_due(bool long_step) {
    enum class Do { nothing, post, drain_here, wait_then_drain } action = Do::nothing;
    {
      std::lock_guard lock(state_->mu);
      const bool busy = state_->running || state_->scheduled;
      const bool full = state_->queued_puts >= kAsyncWriteBatch;
      if (state_->jobs.empty()) {
        action = Do::nothing;
      } else if (busy) {
        action = !long_step && full ? Do::wait_then_drain : Do::nothing;
      } else if (long_step) {
        action = Do::post;
        state_->scheduled = true;
      } else if (full || std::chrono::steady_clock::now() - state_->oldest >= kAsyncWriteDelay) {
        action = Do::drain_here;
      }
    }
    switch (action) {
      case Do::nothing:
        break;
      case Do::post:
        pool_.post([state = state_] { state->drain(true); });
        break;
      case Do::drain_here:
        state_->drain(false);
        break;
      case Do::wait_then_drain:
        state_->drain_and_wait();
        break;
    }
  }

  void wait() {
    state_->drain_and_wait();
    std::lock_guard lock(state_->mu);
    if (auto error = std::exchange(state_->error, nullptr)) std::rethrow_exception(error);
  }

 private:
  using Job = std::variant<std::vector<CheckpointPut>, std::function<void()>>;

  void enqueue(Job job) {
    std::lock_guard lock(state_->mu);
    if (state_->error) return;  // the first failure stops the queue; wait() reports it
    if (state_->jobs.empty()) state_->oldest = std::chrono::steady_clock::now();
    if (job.index() == 0) state_->queued_puts += std::get<0>(job).size();
    state_->jobs.push_back(std::move(job));
  }

  struct State {
    explicit State(Checkpointer& s) : saver(s) {}
    Checkpointer& saver;
    std::mutex mu;
    std::condition_variable idle;
    std::deque<Job> jobs;
    std::exception_ptr error;
    std::chrono::steady_clock::time_point oldest;  // when the first queued job came
    bool running = false;                          // a thread is draining
    bool scheduled = false;                        // a drain task is posted and has not started
    std::size_t queued_puts = 0;                   // checkpoints in `jobs`

    /// Runs the queued jobs unless another thread already does: a posted drain those queued when
    /// it starts (later ones wait until they are due), the caller's until none is left.
    void drain(bool posted) noexcept {
      std::unique_lock lock(mu);
      if (posted) scheduled = false;
      if (running) return;
      running = true;
      std::size_t budget = posted ? jobs.size() : std::numeric_limits<std::size_t>::max();
      while (!jobs.empty() && budget > 0) {
        // Consecutive checkpoints go in one put_all().
        std::vector<CheckpointPut> puts;
        std::function<void()> work;
        while (!jobs.empty() && budget > 0 && jobs.front().index() == 0) {
          auto& more = std::get<0>(jobs.front());
          if (puts.empty()) {
            puts = std::move(more);
            puts.reserve(queued_puts);
          } else {
            std::move(more.begin(), more.end(), std::back_inserter(puts));
          }
          jobs.pop_front();
          --budget;
        }
        if (puts.empty()) {
          work = std::move(std::get<1>(jobs.front()));
          jobs.pop_front();
          --budget;
        }
        queued_puts -= puts.size();
        lock.unlock();
        std::exception_ptr failure;
        try {
          if (!puts.empty()) {
            saver.put_all(puts);
          } else {
            work();
          }
        } catch (...) {
          failure = std::current_exception();
        }
        lock.lock();
        if (failure && !error) {
          error = failure;
          jobs.clear();
          queued_puts = 0;
        }
      }
      running = false;
      idle.notify_all();
    }

    void drain_and_wait() noexcept {
      std::unique_lock lock(mu);
      while (true) {
        lock.unlock();
        drain(false);
        lock.lock();
        idle.wait(lock, [&] { return !running; });
        if (jobs.empty()) return;
      }
    }
  };

  ThreadPool& pool_;
  std::shared_ptr<State> state_;
};

/// The final state of recently finished threads, so that the next run on one skips loading its
/// checkpoint. Holds at most `capacity` threads; the least recently stored goes first.
/// Thread-safe.
template <class Entry>
class RecentThreads {
 public:
  explicit RecentThreads(std::size_t capacity) : capacity_(capacity) {}

  [[nodiscard]] bool contains(const std::string& thread) const {
    std::lock_guard lock(mu_);
    return index_.count(thread) > 0;
  }

  /// Removes and returns the entry of `thread`, if any.
  std::optional<Entry> take(const std::string& thread) {
    std::lock_guard lock(mu_);
    auto it = index_.find(thread);
    if (it == index_.end()) return std::nullopt;
    std::optional<Entry> out(std::move(it->second->second));
    order_.erase(it->second);
    index_.erase(it);
    return out;
  }

  void put(const std::string& thread, Entry entry) {
    if (capacity_ == 0) return;
    std::lock_guard lock(mu_);
    if (auto it = index_.find(thread); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
    order_.emplace_front(thread, std::move(entry));
    index_[thread] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, Entry>> order_;  // newest first
  std::unordered_map<std::string, typename std::list<std::pair<std::string, Entry>>::iterator>
      index_;
};

}  // namespace sg::detail
