// SPDX-License-Identifier: MIT
// Callbacks: the spans of a run, its tasks and its checkpoint writes; retries logged.

#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/log.hpp>

#include "async_writer.hpp"

namespace sg::detail {

namespace {

std::string error_text(const std::exception_ptr& error) {
  Span span;
  set_span_error(span, error);
  return span.error;
}

}  // namespace

void put_checkpoints(Checkpointer& saver, const std::vector<CheckpointPut>& puts,
                     const RunTrace* trace) {
  if (trace == nullptr) [[likely]] {
    try {
      saver.put_all(puts);
    } catch (...) {
      log(LogLevel::error, "checkpoint write failed",
          {{"thread_id", puts.empty() ? std::string() : puts.front().config.thread_id},
           {"checkpoints", puts.size()},
           {"error", error_text(std::current_exception())}});
      throw;
    }
    return;
  }
  Span span;
  span.kind = SpanKind::checkpoint;
  span.context = trace->run.context.child();
  span.parent_span_id = trace->run.context.span_id;
  span.name = "checkpoint";
  span.thread_id = trace->run.thread_id;
  span.run_id = trace->run.run_id;
  span.checkpoint_ns = trace->run.checkpoint_ns;
  span.checkpoints = static_cast<int>(puts.size());
  if (!puts.empty()) span.checkpoint_id = puts.back().checkpoint.id;
  const std::uint64_t bytes_before = checkpoint_bytes_noted();
  span.start = std::chrono::system_clock::now();
  std::exception_ptr failure;
  try {
    saver.put_all(puts);
  } catch (...) {
    failure = std::current_exception();
  }
  span.end = std::chrono::system_clock::now();
  span.bytes = checkpoint_bytes_noted() - bytes_before;
  if (failure) {
    set_span_error(span, failure);
    log(LogLevel::error, "checkpoint write failed",
        {{"thread_id", span.thread_id},
         {"run_id", span.run_id},
         {"checkpoints", puts.size()},
         {"error", span.error}});
  }
  notify(trace->callbacks, &Callbacks::on_checkpoint, span);
  if (failure) std::rethrow_exception(failure);
}

void ExecutorCore::start_run_span() {
  const RunConfig& cfg = shared_->cfg;
  auto trace = std::make_shared<RunTrace>();
  trace->callbacks = cfg.callbacks;
  Span& span = trace->run;
  span.kind = SpanKind::run;
  if (cfg.trace_parent && cfg.trace_parent->valid()) {
    span.context = cfg.trace_parent->child();
    span.parent_span_id = cfg.trace_parent->span_id;
  } else {
    span.context = TraceContext::root();
  }
  span.name = !cfg.run_name.empty()           ? cfg.run_name
              : !graph_->options.name.empty() ? graph_->options.name
                                              : std::string("LangGraph");
  span.thread_id = cfg.thread_id;
  span.run_id = shared_->span_run_id();
  span.checkpoint_ns = cfg.checkpoint_ns;
  span.start = std::chrono::system_clock::now();
  trace_ = trace;
  if (writer_) writer_->set_trace(trace);
  notify(trace->callbacks, &Callbacks::on_run_start, std::as_const(span));
}

void ExecutorCore::end_run_span_now(SpanStatus status, const std::exception_ptr& error) {
  Span& span = trace_->run;
  span.end = std::chrono::system_clock::now();
  span.status = status;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const ParentCommand&) {  // a Command to the parent graph: this run's output
      span.status = SpanStatus::ok;
    } catch (...) {
      set_span_error(span, error);
    }
  }
  span.checkpoint_id = stored_.checkpoint_id;
  notify(trace_->callbacks, &Callbacks::on_run_end, std::as_const(span));
}

Span ExecutorCore::node_span(const TaskInfo& info) const {
  Span span;
  span.kind = SpanKind::node;
  span.context = info.trace;
  span.parent_span_id = trace_->run.context.span_id;
  span.name = std::string(info.node);
  span.node = span.name;
  span.start = info.started;
  span.thread_id = trace_->run.thread_id;
  span.run_id = trace_->run.run_id;
  span.checkpoint_ns = trace_->run.checkpoint_ns;
  span.step = info.step;
  if (info.has_id) span.task_id.assign(info.id.data(), info.id.size());
  return span;
}

void ExecutorCore::start_node_span_now(TaskInfo& info) {
  if (!info.has_id) detail::assign_task_id(info, shared_->task_id_seed());
  info.trace = trace_->run.context.child();
  info.started = std::chrono::system_clock::now();
  info.span_open = true;
  notify(trace_->callbacks, &Callbacks::on_node_start, node_span(info));
}

void ExecutorCore::end_node_span(Task& t) {
  if (!t.info.span_open) return;
  t.info.span_open = false;
  Span span = node_span(t.info);
  span.end = std::chrono::system_clock::now();
  if (t.error) {
    set_span_error(span, t.error);
  } else if (t.interrupted) {
    span.status = SpanStatus::interrupted;
  }
  notify(trace_->callbacks, &Callbacks::on_node_end, std::as_const(span));
}

void ExecutorCore::report_retry(const TaskInfo& info, const std::exception_ptr& error,
                                int next_attempt) {
  const bool logged = log_enabled(LogLevel::warn);
  if (!logged && !trace_) return;
  const std::string why = error_text(error);
  if (logged) {
    log(LogLevel::warn, "node retried",
        {{"node", info.node},
         {"step", info.step},
         {"attempt", next_attempt},
         {"thread_id", shared_->cfg.thread_id},
         {"run_id", shared_->span_run_id()},
         {"error", why}});
  }
  if (trace_)
    notify(trace_->callbacks, &Callbacks::on_node_retry, node_span(info), why, next_attempt);
}

}  // namespace sg::detail
