// SPDX-License-Identifier: MIT
#pragma once

// A checkpointer that forwards every call to an InMemorySaver: tests derive from it and override
// what they watch, slow down or break.

#include <stategraph/checkpoint/memory_saver.hpp>

namespace sg::test {

class ForwardingSaver : public Checkpointer {
 public:
  CheckpointConfig put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                       const nlohmann::json& metadata,
                       const ChannelVersions& new_versions) override {
    return inner_.put(config, checkpoint, metadata, new_versions);
  }
  std::vector<CheckpointConfig> put_all(const std::vector<CheckpointPut>& puts) override {
    return inner_.put_all(puts);
  }
  void put_writes(const CheckpointConfig& config,
                  const std::vector<std::pair<std::string, nlohmann::json>>& writes,
                  const std::string& task_id, const std::string& task_path) override {
    inner_.put_writes(config, writes, task_id, task_path);
  }
  std::optional<CheckpointTuple> get_tuple(const CheckpointConfig& config) override {
    return inner_.get_tuple(config);
  }
  std::optional<std::string> latest_checkpoint_id(const std::string& thread_id,
                                                  const std::string& checkpoint_ns) override {
    return inner_.latest_checkpoint_id(thread_id, checkpoint_ns);
  }
  std::vector<CheckpointTuple> list(const ListOptions& options) override {
    return inner_.list(options);
  }
  std::vector<std::string> threads() override { return inner_.threads(); }
  void delete_thread(const std::string& thread_id) override { inner_.delete_thread(thread_id); }
  void copy_thread(const std::string& source, const std::string& target) override {
    inner_.copy_thread(source, target);
  }
  void prune(const std::vector<std::string>& thread_ids, PruneStrategy strategy) override {
    inner_.prune(thread_ids, strategy);
  }
  [[nodiscard]] bool stores_deltas() const noexcept override { return inner_.stores_deltas(); }
  [[nodiscard]] Durability default_durability() const noexcept override {
    return inner_.default_durability();
  }

 protected:
  InMemorySaver inner_;
};

}  // namespace sg::test
