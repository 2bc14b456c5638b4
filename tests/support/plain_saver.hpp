#pragma once

// A checkpointer written from the public interface alone: it keeps the default put_all and
// takes no deltas (stores_deltas() is false), storing through an InMemorySaver. It counts the
// values it gets in a form only savers that take deltas should see (JSON binaries: pre-encoded
// messages; {"$appended": k} / {"$stored": v} write values).

#include <stategraph/checkpoint/memory_saver.hpp>

namespace sg::test {

class PlainSaver final : public Checkpointer {
 public:
  CheckpointConfig put(const CheckpointConfig& config, const Checkpoint& checkpoint,
                       const nlohmann::json& metadata,
                       const ChannelVersions& new_versions) override {
    ++puts;
    count_encoded(checkpoint.channel_values);
    return inner_.put(config, checkpoint, metadata, new_versions);
  }
  void put_writes(const CheckpointConfig& config,
                  const std::vector<std::pair<std::string, nlohmann::json>>& writes,
                  const std::string& task_id, const std::string& task_path) override {
    for (const auto& [channel, value] : writes) count_encoded(value);
    inner_.put_writes(config, writes, task_id, task_path);
  }
  std::optional<CheckpointTuple> get_tuple(const CheckpointConfig& config) override {
    return inner_.get_tuple(config);
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

  int puts = 0;
  int encoded = 0;  // values in a form for savers that take deltas (should stay 0)

 private:
  void count_encoded(const nlohmann::json& value) {
    if (value.is_binary()) ++encoded;
    if (value.is_object() && (value.contains(kAppendedWrite) || value.contains(kStoredWrite)))
      ++encoded;
    if (value.is_structured()) {
      for (const auto& item : value) count_encoded(item);
    }
  }

  InMemorySaver inner_;
};

}  // namespace sg::test
