// SPDX-License-Identifier: MIT
#include <stategraph/core/context.hpp>
#include <stategraph/core/detail/hash.hpp>
#include <stategraph/core/error.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace sg {
namespace {

thread_local Context* current = nullptr;
thread_local detail::InterruptScope* current_scope = nullptr;

/// A stable id for the k-th interrupt of a task.
std::string interrupt_id(std::string_view task_id, std::size_t index) {
  // The seed is not kFnvOffset (a digit short): kept, since saved interrupts carry these ids.
  std::uint64_t h = detail::fnv1a(task_id, 1469598103934665603ULL);
  h = (h ^ index) * 1099511628211ULL;
  std::string out(16, '0');
  detail::hex16(h, out.data());
  return out;
}

}  // namespace

namespace detail {

std::uint64_t task_id_seed(std::string_view thread, std::string_view ns,
                           std::string_view checkpoint) noexcept {
  std::uint64_t h = kFnvOffset;
  for (const std::string_view part : {thread, ns, checkpoint})
    h = (fnv1a(part, h) ^ 0xFF) * 1099511628211ULL;
  return h;
}

void assign_task_id(TaskInfo& task, std::uint64_t seed) noexcept {
  const std::int64_t numbers[2] = {task.step, task.send_index};
  std::uint64_t h =
      fnv1a(std::string_view(reinterpret_cast<const char*>(numbers), sizeof numbers), seed);
  h = (h ^ 0xFF) * 1099511628211ULL;
  h = (fnv1a(task.node, h) ^ 0xFF) * 1099511628211ULL;
  hex16(h, task.id.data());
  task.has_id = true;
}

}  // namespace detail

struct CancellationToken::State {
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable cv;
  /// Registered on_cancel callbacks (guarded by mu), and the one cancel() is calling.
  std::vector<std::pair<std::uint64_t, std::function<void()>>> callbacks;
  std::uint64_t next_id = 1;
  std::uint64_t firing = 0;
  std::thread::id firing_thread;
};

CancellationToken CancellationToken::create() {
  CancellationToken token;
  token.state_ = std::make_shared<State>();
  return token;
}

void CancellationToken::cancel() const noexcept {
  if (!state_) return;
  std::unique_lock lock(state_->mu);
  if (state_->cancelled.exchange(true, std::memory_order_acq_rel)) return;
  state_->cv.notify_all();
  state_->firing_thread = std::this_thread::get_id();
  // Each callback runs without the lock, so it may cancel other tokens or unregister itself;
  // a Subscription destroyed meanwhile on another thread waits for `firing` to move on.
  while (!state_->callbacks.empty()) {
    auto [id, callback] = std::move(state_->callbacks.front());
    state_->callbacks.erase(state_->callbacks.begin());
    state_->firing = id;
    lock.unlock();
    callback();
    lock.lock();
    state_->firing = 0;
    state_->cv.notify_all();
  }
}

CancellationToken::Subscription CancellationToken::on_cancel(std::function<void()> callback) const {
  Subscription sub;
  if (!state_) return sub;
  {
    std::lock_guard lock(state_->mu);
    if (!state_->cancelled.load(std::memory_order_acquire)) {
      sub.state_ = state_;
      sub.id_ = state_->next_id++;
      state_->callbacks.emplace_back(sub.id_, std::move(callback));
      return sub;
    }
  }
  callback();
  return sub;
}

CancellationToken::Subscription::Subscription(Subscription&& other) noexcept
    : state_(std::move(other.state_)), id_(std::exchange(other.id_, 0)) {}

CancellationToken::Subscription& CancellationToken::Subscription::operator=(
    Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

CancellationToken::Subscription::~Subscription() {
  reset();
}

void CancellationToken::Subscription::reset() noexcept {
  if (!state_) return;
  std::unique_lock lock(state_->mu);
  auto& callbacks = state_->callbacks;
  auto it = std::find_if(callbacks.begin(), callbacks.end(),
                         [this](const auto& entry) { return entry.first == id_; });
  if (it != callbacks.end()) {
    callbacks.erase(it);
  } else if (state_->firing_thread != std::this_thread::get_id()) {
    state_->cv.wait(lock, [this] { return state_->firing != id_; });
  }
  lock.unlock();
  state_.reset();
  id_ = 0;
}

bool CancellationToken::cancelled() const noexcept {
  return state_ && state_->cancelled.load(std::memory_order_acquire);
}

bool CancellationToken::wait_for(std::chrono::duration<double> duration) const {
  const auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration);
  if (!state_) {
    std::this_thread::sleep_for(d);
    return false;
  }
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, d, [&] { return state_->cancelled.load(); });
}

nlohmann::json Context::interrupt(nlohmann::json value) const {
  detail::InterruptScope* scope = current_scope;
  if (scope != nullptr && scope->task == task_) {
    // One of several parts of the task running at once: numbered within its scope, resumed by id
    // (the parts may ask in any order).
    const std::size_t index = scope->seen.fetch_add(1, std::memory_order_relaxed);
    std::string id = interrupt_id(std::string(task_id()) + "|" + scope->key, index);
    detail::TaskPartsShared& parts = *task_->parts;  // made before the parts started
    {
      std::lock_guard lock(parts.mu);
      if (auto it = parts.scoped_resume.find(id); it != parts.scoped_resume.end())
        return it->second;
    }
    if (auto answer = run_->take_resume(id)) {
      std::lock_guard lock(parts.mu);
      parts.scoped_resume.insert_or_assign(id, *answer);
      return std::move(*answer);
    }
    throw detail::GraphInterrupt{
        {Interrupt{std::move(id), std::move(value), std::string(task_->node)}}};
  }
  const std::size_t index = task_->interrupts_seen++;
  if (index < task_->resume.size()) return task_->resume[index];
  std::string id = interrupt_id(task_id(), index);
  if (auto answer = run_->take_resume(id)) {
    task_->resume.push_back(*answer);
    return std::move(*answer);
  }
  throw detail::GraphInterrupt{
      {Interrupt{std::move(id), std::move(value), std::string(task_->node)}}};
}

void Context::push_message(Message message, std::string_view field) const {
  if (message.id.empty())
    throw Error(errc::kInvalidMessage, "Message ID is required (push_message)");
  if (task_->parts) {
    std::lock_guard lock(task_->parts->mu);
    task_->pushed.emplace_back(std::string(field), std::move(message));
    return;
  }
  task_->pushed.emplace_back(std::string(field), std::move(message));
}

nlohmann::json detail::messages_metadata(const RunConfig& config, const TaskInfo& task,
                                         std::string_view task_id, const nlohmann::json& extra) {
  const std::string node(task.node);
  const bool pushed = task.send_index >= 0;
  std::string task_ns = node + ":" + std::string(task_id);
  std::string ns = config.checkpoint_ns.empty() ? task_ns : config.checkpoint_ns + "|" + task_ns;
  nlohmann::json meta = nlohmann::json::object();
  if (!config.thread_id.empty()) meta["thread_id"] = config.thread_id;
  meta["langgraph_step"] = task.step;
  meta["langgraph_node"] = node;
  meta["langgraph_triggers"] =
      nlohmann::json::array({pushed ? std::string("__pregel_push") : "branch:to:" + node});
  meta["langgraph_path"] = pushed ? nlohmann::json::array({"__pregel_push", task.send_index})
                                  : nlohmann::json::array({"__pregel_pull", node});
  meta["langgraph_checkpoint_ns"] = ns;
  meta["checkpoint_ns"] = std::move(ns);
  if (extra.is_object()) meta.update(extra);
  return meta;
}

nlohmann::json Context::messages_metadata(const nlohmann::json& extra) const {
  return detail::messages_metadata(config(), *task_, task_id(), extra);
}

Span Context::child_span(SpanKind kind, std::string name) const {
  const RunConfig& cfg = config();
  Span span;
  span.kind = kind;
  span.context = task_->trace.child();
  span.parent_span_id = task_->trace.span_id;
  span.name = std::move(name);
  span.start = std::chrono::system_clock::now();
  span.thread_id = cfg.thread_id;
  span.run_id = run_->span_run_id();
  span.checkpoint_ns = cfg.checkpoint_ns;
  span.step = task_->step;
  span.task_id = std::string(task_id());
  span.node = std::string(task_->node);
  return span;
}

void Context::write_message_chunk(const MessageChunk& chunk, const nlohmann::json& metadata) const {
  if (!run_->streams_messages()) return;
  run_->write_message(
      detail::MessageEvent{std::string(task_->node), task_->step, chunk, false, metadata});
}

void Context::write_message_done(const Message& reply, const nlohmann::json& metadata) const {
  if (!run_->streams_messages()) return;
  run_->write_message(detail::MessageEvent{std::string(task_->node), task_->step,
                                           MessageChunk{reply, {}}, true, metadata});
}

Context* current_context() noexcept {
  return current;
}

nlohmann::json interrupt(nlohmann::json value) {
  if (!current) throw Error(errc::kInvalidRun, "sg::interrupt() called outside a graph node");
  return current->interrupt(std::move(value));
}

detail::CurrentContextGuard::CurrentContextGuard(Context* ctx) noexcept : previous_(current) {
  current = ctx;
}

detail::CurrentContextGuard::~CurrentContextGuard() {
  current = previous_;
}

void detail::ensure_parts_shared(TaskInfo& task) {
  if (!task.parts) task.parts = std::make_shared<TaskPartsShared>();
}

detail::InterruptScope* detail::current_interrupt_scope() noexcept {
  return current_scope;
}

detail::InterruptScopeGuard::InterruptScopeGuard(InterruptScope* scope) noexcept
    : previous_(current_scope) {
  current_scope = scope;
}

detail::InterruptScopeGuard::~InterruptScopeGuard() {
  current_scope = previous_;
}

bool default_retry_on(const std::exception& error) noexcept {
  if (dynamic_cast<const std::logic_error*>(&error)) return false;
  // LangGraph retries ConnectionError but no other OSError: a system error is retried when it is
  // about a connection.
  if (const auto* system = dynamic_cast<const std::system_error*>(&error)) {
    const std::error_condition c = system->code().default_error_condition();
    for (std::errc e :
         {std::errc::connection_refused, std::errc::connection_reset, std::errc::connection_aborted,
          std::errc::timed_out, std::errc::network_unreachable, std::errc::network_down,
          std::errc::network_reset, std::errc::host_unreachable, std::errc::broken_pipe,
          std::errc::not_connected}) {
      if (c == e) return true;
    }
    return false;
  }
  if (dynamic_cast<const InvalidUpdateError*>(&error)) return false;
  if (dynamic_cast<const GraphValidationError*>(&error)) return false;
  if (dynamic_cast<const CancelledError*>(&error)) return false;
  return true;
}

std::string_view to_string(StreamMode mode) noexcept {
  switch (mode) {
    case StreamMode::values:
      return "values";
    case StreamMode::updates:
      return "updates";
    case StreamMode::custom:
      return "custom";
    case StreamMode::debug:
      return "debug";
    case StreamMode::messages:
      return "messages";
  }
  return "unknown";
}

}  // namespace sg
