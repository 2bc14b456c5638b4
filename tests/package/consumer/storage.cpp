// SPDX-License-Identifier: MIT
// Built against an installed stategraph: the savers and stores from their public headers alone
// (the internal kv module installs no headers), linked through the exported archives (the kv
// archive, zlib and RocksDB come along). Takes a directory for the two databases.
#include <stategraph/checkpoint/memory_saver.hpp>
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/store/memory_store.hpp>
#include <stategraph/store/rocksdb_store.hpp>

#include <iostream>
#include <string>

namespace {

// Stores a checkpoint with channel "a" = 1 and reads it back.
int roundtrip(sg::Checkpointer& saver) {
  sg::Checkpoint checkpoint;
  checkpoint.id = sg::new_checkpoint_id(0);
  checkpoint.channel_values = {{"a", 1}};
  checkpoint.channel_versions = {{"a", 1}};
  saver.put({"thread", "", ""}, checkpoint, nlohmann::json::object(), {{"a", 1}});
  auto tuple = saver.get_tuple({"thread", "", ""});
  return tuple ? tuple->checkpoint.channel_values.value("a", 0) : 0;
}

// Puts an item and reads its "name" back.
std::string roundtrip(sg::Store& store) {
  store.put({"users"}, "u1", {{"name", "Ann"}});
  auto item = store.get({"users"}, "u1");
  return item ? item->value.value("name", "") : "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  sg::InMemorySaver memory_saver;
  sg::InMemoryStore memory_store;
  auto rocks_saver = sg::RocksDbSaver::open(dir + "/checkpoints");
  auto rocks_store = sg::RocksDbStore::open(dir + "/store");
  std::cout << "checkpoints " << roundtrip(memory_saver) << ' ' << roundtrip(*rocks_saver)
            << ", store " << roundtrip(memory_store) << ' ' << roundtrip(*rocks_store) << '\n';
  return 0;
}
