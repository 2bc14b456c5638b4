// SPDX-License-Identifier: MIT
#pragma once

// A started coroutine node as Boost.Asio sees it: what AsyncCall erases. Internal to stategraph;
// included by <stategraph/core/async.hpp> and the executor's sources.

// clang-format off
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
// clang-format on

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/detail/node.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace sg::detail {

struct AwaitableCall final : AsyncCall::Impl {
  explicit AwaitableCall(boost::asio::awaitable<void> w) : work(std::move(w)) {}
  boost::asio::awaitable<void> work;
};

/// The coroutine an AsyncCall carries.
inline boost::asio::awaitable<void> take_work(AsyncCall& call) {
  return std::move(static_cast<AwaitableCall&>(*call.impl).work);
}

/// The supersteps of an asynchronous run, on its strand (core/src/executor/async.cpp).
boost::asio::awaitable<StepsOutcome> run_steps_async(ExecutorCore& core, bool skip_breakpoint);

/// Whether `executor` is a strand (of an io_context or of any executor): a run started on it
/// needs no strand of its own.
bool is_strand(const boost::asio::any_io_executor& executor) noexcept;

/// Makes `core` an asynchronous run on `strand`, the executor its coroutine runs on.
void enable_async(ExecutorCore& core, const boost::asio::any_io_executor& strand);

}  // namespace sg::detail
