// SPDX-License-Identifier: MIT
#pragma once
// Callbacks that record every event (thread-safe), for the tests of spans.

#include <stategraph/core/callbacks.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

namespace sg::testing {

/// One recorded callback: which method ("run_start", "node_end", ...) and a copy of its span
/// (pointers cleared). `text`: the retry's error or the token's text.
struct SpanEvent {
  std::string what;
  sg::Span span;
  std::string text{};
  int attempt = 0;
  std::size_t tool_arguments = 0;  // the size of a tool start's arguments object
  std::size_t messages = 0;        // the messages a model start carried
};

class RecordingCallbacks : public sg::Callbacks {
 public:
  void on_run_start(const sg::Span& s) override { add("run_start", s); }
  void on_run_end(const sg::Span& s) override { add("run_end", s); }
  void on_node_start(const sg::Span& s) override { add("node_start", s); }
  void on_node_end(const sg::Span& s) override { add("node_end", s); }
  void on_node_retry(const sg::Span& s, std::string_view error, int next_attempt) override {
    add("node_retry", s, std::string(error), next_attempt);
  }
  void on_model_start(const sg::Span& s) override { add("model_start", s); }
  void on_model_token(const sg::Span& s, const sg::MessageChunk& chunk) override {
    add("model_token", s, chunk.message.text());
  }
  void on_model_end(const sg::Span& s) override { add("model_end", s); }
  void on_tool_start(const sg::Span& s) override { add("tool_start", s); }
  void on_tool_end(const sg::Span& s) override { add("tool_end", s); }
  void on_checkpoint(const sg::Span& s) override { add("checkpoint", s); }

  [[nodiscard]] std::vector<SpanEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  /// The recorded events named `what`, in order.
  [[nodiscard]] std::vector<SpanEvent> named(const std::string& what) const {
    std::vector<SpanEvent> out;
    for (auto& e : events())
      if (e.what == what) out.push_back(e);
    return out;
  }
  /// The end events (spans as they ended) of spans named `name` of `kind`.
  [[nodiscard]] std::vector<sg::Span> ended(sg::SpanKind kind, const std::string& name = "") const {
    std::vector<sg::Span> out;
    for (auto& e : events()) {
      const bool end = e.what == "run_end" || e.what == "node_end" || e.what == "model_end" ||
                       e.what == "tool_end" || e.what == "checkpoint";
      if (end && e.span.kind == kind && (name.empty() || e.span.name == name))
        out.push_back(e.span);
    }
    return out;
  }

 private:
  void add(const char* what, const sg::Span& s, std::string text = {}, int attempt = 0) {
    SpanEvent e{what, s, std::move(text), attempt};
    if (s.arguments) e.tool_arguments = s.arguments->size();
    if (s.messages) e.messages = s.messages->size();
    e.span.messages = nullptr;
    e.span.reply = nullptr;
    e.span.arguments = nullptr;
    e.span.result = nullptr;
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }

  mutable std::mutex mu_;
  std::vector<SpanEvent> events_;
};

}  // namespace sg::testing
