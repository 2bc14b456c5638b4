#pragma once

// Blocking work awaited from a coroutine: it runs on a ThreadPool while the coroutine holds no
// thread. Internal to stategraph (the asynchronous executor and the server).

// clang-format off
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
// clang-format on

#include <stategraph/core/thread_pool.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <memory>
#include <type_traits>

namespace sg::detail {

/// `f()` on `pool`, awaited: the calling coroutine holds no thread meanwhile and goes on on its
/// own executor. Throws what `f` throws. Thread-safe.
template <class F>
boost::asio::awaitable<std::invoke_result_t<F>> on_pool(ThreadPool& pool, F f) {
  using R = std::invoke_result_t<F>;
  using Value = std::conditional_t<std::is_void_v<R>, bool, R>;
  auto executor = co_await boost::asio::this_coro::executor;
  auto initiate = [&pool, &f, executor](auto handler) {
    // ThreadPool takes copyable work: the handler and the function are shared.
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    auto work = std::make_shared<F>(std::move(f));
    pool.post([shared, work, executor] {
      std::exception_ptr error;
      Value value{};
      try {
        if constexpr (std::is_void_v<R>) {
          (*work)();
        } else {
          value = (*work)();
        }
      } catch (...) {
        error = std::current_exception();
      }
      boost::asio::post(executor, [shared, error, value = std::move(value)]() mutable {
        (*shared)(error, std::move(value));
      });
    });
  };
  if constexpr (std::is_void_v<R>) {
    (void)co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                               void(std::exception_ptr, Value)>(
        initiate, boost::asio::use_awaitable);
  } else {
    Value value = co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                       void(std::exception_ptr, Value)>(
        initiate, boost::asio::use_awaitable);
    co_return value;
  }
}

}  // namespace sg::detail
