#include <stategraph/detail/rocks_db.hpp>
#include <stategraph/store/kv_store.hpp>

#include <fmt/format.h>

namespace sg {
namespace {

[[noreturn]] void fail(detail::RocksFailure failure, const std::string& message) {
  switch (failure) {
    case detail::RocksFailure::locked:
      throw StoreError(errc::kStoreLocked, "the store database " + message);
    case detail::RocksFailure::corrupt:
      throw StoreError(errc::kStoreCorrupt, "the store database is corrupt: " + message);
    case detail::RocksFailure::io:
      break;
  }
  throw StoreError(errc::kStoreIo, "the store database: " + message);
}

}  // namespace

class RocksDbStore::Backend final : public detail::StoreBackend {
 public:
  explicit Backend(std::unique_ptr<detail::RocksDb> db) : db_(std::move(db)) {}

  std::optional<std::string> get(detail::Space space, std::string_view key) override {
    return db_->get(static_cast<std::size_t>(space), key);
  }

  void write(const std::vector<detail::StoreWrite>& writes) override {
    std::vector<detail::RocksWrite> out;
    out.reserve(writes.size());
    for (const auto& w : writes) {
      out.push_back({static_cast<std::size_t>(w.space), w.key,
                     w.value ? std::optional<std::string_view>(*w.value) : std::nullopt,
                     std::nullopt});
    }
    db_->write(out);
  }

  void scan(detail::Space space, std::string_view lower, std::string_view upper,
            const std::function<bool(std::string_view, std::string_view)>& visit) override {
    db_->scan(static_cast<std::size_t>(space), lower, upper, false, visit);
  }

 private:
  std::unique_ptr<detail::RocksDb> db_;
};

std::shared_ptr<RocksDbStore> RocksDbStore::open(const std::string& path,
                                                 RocksDbStoreOptions options) {
  auto db = detail::RocksDb::open(path, {"store", "store_vectors"},
                                  {.fsync = options.fsync, .create_if_missing = true}, fail);
  return std::shared_ptr<RocksDbStore>(new RocksDbStore(
      std::make_unique<Backend>(std::move(db)), std::move(options.ttl), std::move(options.index)));
}

RocksDbStore::RocksDbStore(std::unique_ptr<detail::StoreBackend> backend, TtlConfig ttl,
                           std::optional<IndexConfig> index)
    : KvStore(std::move(backend), std::move(ttl), std::move(index)) {}

}  // namespace sg
