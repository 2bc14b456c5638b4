// SPDX-License-Identifier: MIT
#pragma once

// A checkpointer written from the public interface alone: it keeps the default put_all and
// takes no deltas (stores_deltas() is false), storing through an InMemorySaver. It counts the
// writes it gets in a form only savers that take deltas should see (TaskWrite kinds appended
// and stored; JSON binaries).

#include "support/forwarding_saver.hpp"

namespace sg::test {

class PlainSaver final : public ForwardingSaver {
 public:
  CheckpointConfig put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                       const nlohmann::json& metadata,
                       const ChannelVersions& new_versions) override {
    ++puts;
    count_encoded(checkpoint.channel_values);
    return inner_.put(config, checkpoint, metadata, new_versions);
  }
  /// The interface's default: one put() per checkpoint, then its writes.
  std::vector<CheckpointConfig> put_all(const std::vector<CheckpointPut>& puts_to_store) override {
    for (const auto& p : puts_to_store) {
      for (const auto& task : p.writes) {
        for (const auto& w : task.writes) {
          if (w.kind == TaskWrite::Kind::appended || w.kind == TaskWrite::Kind::stored) ++encoded;
        }
      }
    }
    return Checkpointer::put_all(puts_to_store);
  }
  void put_writes(const CheckpointConfig& config,
                  const std::vector<std::pair<std::string, nlohmann::json>>& writes,
                  const std::string& task_id, const std::string& task_path) override {
    for (const auto& [channel, value] : writes) count_encoded(value);
    inner_.put_writes(config, writes, task_id, task_path);
  }
  /// The interface's defaults, not InMemorySaver's.
  std::optional<std::string> latest_checkpoint_id(const std::string& thread_id,
                                                  const std::string& checkpoint_ns) override {
    return Checkpointer::latest_checkpoint_id(thread_id, checkpoint_ns);
  }
  [[nodiscard]] bool stores_deltas() const noexcept override { return false; }
  [[nodiscard]] Durability default_durability() const noexcept override {
    return Checkpointer::default_durability();
  }

  int puts = 0;
  int encoded = 0;  // values in a form for savers that take deltas (should stay 0)

 private:
  void count_encoded(const nlohmann::json& value) {
    if (value.is_binary()) ++encoded;
    if (value.is_structured()) {
      for (const auto& item : value) count_encoded(item);
    }
  }
};

}  // namespace sg::test
