// SPDX-License-Identifier: MIT
#include <stategraph/core/thread_pool.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <thread>
#include <utility>  // before Asio (Boost 1.74 misses it)

namespace sg {

struct ThreadPool::Impl {
  explicit Impl(std::size_t n) : threads(std::max<std::size_t>(n, 1)), pool(threads) {}
  std::size_t threads;
  boost::asio::thread_pool pool;
};

ThreadPool::ThreadPool(std::size_t threads) : impl_(std::make_unique<Impl>(threads)) {}

ThreadPool::~ThreadPool() {
  impl_->pool.join();
}

std::size_t ThreadPool::size() const noexcept {
  return impl_->threads;
}

void ThreadPool::post(std::function<void()> work) {
  boost::asio::post(impl_->pool, std::move(work));
}

std::shared_ptr<ThreadPool> ThreadPool::shared() {
  // Never destroyed: a node still running at exit must not make the process wait for it.
  static const auto* pool = new std::shared_ptr<ThreadPool>(
      std::make_shared<ThreadPool>(std::max(2U, std::thread::hardware_concurrency())));
  return *pool;
}

}  // namespace sg
