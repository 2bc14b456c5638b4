// SPDX-License-Identifier: MIT
// What tasks on other threads share with their run: config, resume values, stream delivery.

#include <stategraph/core/detail/executor_core.hpp>

namespace sg::detail {

std::uint64_t RunShared::task_id_seed() const noexcept {
  return detail::task_id_seed(cfg.thread_id, cfg.checkpoint_ns,
                              current_checkpoint ? *current_checkpoint : std::string_view());
}

nlohmann::json RunShared::checkpoint_parents() const {
  nlohmann::json out = parents.is_null() ? nlohmann::json::object() : parents;
  if (current_checkpoint && !current_checkpoint->empty())
    out[cfg.checkpoint_ns] = *current_checkpoint;
  return out;
}

std::optional<std::string> RunShared::mapped_checkpoint(const std::string& checkpoint_ns) const {
  if (parent) return parent->mapped_checkpoint(checkpoint_ns);
  if (auto it = checkpoint_map.find(checkpoint_ns); it != checkpoint_map.end())
    return it->get<std::string>();
  return std::nullopt;
}

std::optional<std::string> RunShared::replay_bound(const std::string& checkpoint_ns) {
  if (parent) return parent->replay_bound(checkpoint_ns);
  std::lock_guard lock(resume_mu);
  if (!replay_before) return std::nullopt;
  // The same subgraph in a later iteration (another task id) loads its latest checkpoint.
  const std::string stable = checkpoint_ns.substr(0, checkpoint_ns.rfind(':'));
  if (!replay_visited.insert(stable).second) return std::nullopt;
  return replay_before;
}

std::optional<nlohmann::json> RunShared::take_resume(const std::string& interrupt_id) {
  if (resume_map.is_object()) {
    if (auto it = resume_map.find(interrupt_id); it != resume_map.end()) return *it;
  }
  {
    std::lock_guard lock(resume_mu);
    if (null_resume) {
      std::optional<nlohmann::json> out = std::move(null_resume);
      null_resume.reset();
      return out;
    }
  }
  return parent ? parent->take_resume(interrupt_id) : std::nullopt;
}

void RunShared::write_custom(const std::string& node, int step, nlohmann::json value) {
  if (!stream_custom) return;
  deliver(
      [this, c = Custom{node, step, std::move(value)}]() mutable { deliver_custom(std::move(c)); });
}

bool RunShared::first_sight(const MessageEvent& event) {
  const std::string& id = event.chunk.message.id;
  if (id.empty()) return true;
  std::lock_guard lock(seen->mu);
  return seen->ids.insert(id).second || !event.complete;
}

void RunShared::write_message(MessageEvent&& event) {
  if (!stream_messages || !first_sight(event)) return;
  deliver([this, e = std::move(event)]() mutable { deliver_message(std::move(e)); });
}

void RunShared::forward_event(ForeignEvent&& event) {
  if (!deliver_child) return;
  deliver([this, e = std::move(event)]() mutable { deliver_child(std::move(e)); });
}

void RunShared::deliver(std::function<void()> delivery) {
  if (!alive.load()) return;
  if (std::this_thread::get_id() == orchestrator) {
    // A node running on the orchestrator delivers its own events at once, but those of the
    // threads it started are queued: deliver those first to keep the order of arrival. A thread
    // the node joined (or otherwise synchronized with) has its `queued` visible here.
    if (queued.load(std::memory_order_relaxed)) deliver_queued();
    delivery();
    return;
  }
  {
    std::lock_guard lock(mu);
    deliveries.push_back(std::move(delivery));
    queued.store(true, std::memory_order_relaxed);
  }
  notify();
}

void RunShared::deliver_queued() {
  std::vector<std::function<void()>> now;
  {
    std::lock_guard lock(mu);
    now.swap(deliveries);
    queued.store(false, std::memory_order_relaxed);
  }
  for (auto& d : now) d();
}

void RunShared::notify() {
  cv.notify_all();
  if (has_wake) {
    std::lock_guard lock(mu);
    if (wake) wake();  // posts: never runs the loop here
  }
}

}  // namespace sg::detail
