// SPDX-License-Identifier: MIT
// PostgresSaver and PostgresStore: KvCheckpointer and KvStore over PostgresKv.
#include <stategraph/postgres/postgres_saver.hpp>
#include <stategraph/postgres/postgres_store.hpp>

#include "postgres_kv.hpp"

namespace sg {

std::shared_ptr<PostgresSaver> PostgresSaver::open(const std::string& conninfo,
                                                   PostgresOptions options) {
  detail::PostgresFail fail = [](const PostgresError& e) {
    throw CheckpointError(e.sqlstate() == "55P03" ? errc::kCheckpointLocked : errc::kCheckpointIo,
                          std::string("the checkpoint database: ") + e.what());
  };
  std::vector<detail::PagedSpace> paged;
  for (const auto& [space, group_nuls] : appended_spaces()) paged.push_back({space, group_nuls});
  auto kv = std::make_unique<detail::PostgresKv>(
      conninfo, options.pool_size, options.table.empty() ? "sg_checkpoints" : options.table,
      options.exclusive, options.prepare, std::move(fail), std::move(paged));
  return std::shared_ptr<PostgresSaver>(new PostgresSaver(kv.release()));
}

PostgresSaver::PostgresSaver(detail::PostgresKv* kv)
    : KvCheckpointer(std::unique_ptr<detail::KvBackend>(kv)), kv_(kv) {}

pg::Statement PostgresSaver::fence_statement(const std::string& thread_id,
                                             std::string token) const {
  auto [space, key] = fence_key(thread_id);
  return kv_->put_statement(space, std::move(key), std::move(token));
}

std::shared_ptr<PostgresStore> PostgresStore::open(const std::string& conninfo,
                                                   PostgresOptions options, TtlConfig ttl,
                                                   std::optional<IndexConfig> index) {
  detail::PostgresFail fail = [](const PostgresError& e) {
    throw StoreError(e.sqlstate() == "55P03" ? errc::kStoreLocked : errc::kStoreIo,
                     std::string("the store database: ") + e.what());
  };
  const bool exclusive = options.exclusive;
  auto kv = std::make_unique<detail::PostgresKv>(conninfo, options.pool_size,
                                                 options.table.empty() ? "sg_store" : options.table,
                                                 exclusive, options.prepare, std::move(fail));
  return std::shared_ptr<PostgresStore>(
      new PostgresStore(std::move(kv), std::move(ttl), std::move(index)));
}

PostgresStore::PostgresStore(std::unique_ptr<detail::KvBackend> kv, TtlConfig ttl,
                             std::optional<IndexConfig> index)
    : KvStore(std::move(kv), std::move(ttl), std::move(index)) {}

}  // namespace sg
