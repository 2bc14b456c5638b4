// SPDX-License-Identifier: MIT
// The hands-on exercise of the buffer memory lesson (seeds/000): a customer support chat that
// keeps the last `window_size` exchanges of each ticket, counts every message it saw (pruned
// ones too) and reports per-session statistics. Built the modern way: a prompt and a model
// wrapped with RunnableWithMessageHistory, over a WindowedChatMessageHistory per session.
//
// The model is sg::LocalModel (offline, deterministic): it acknowledges statements and answers
// questions from the statements still in its context, so pruning is visible in its answers.
#include <stategraph/models/local_model.hpp>
#include <stategraph/nodes/buffer_memory.hpp>
#include <stategraph/nodes/session_history.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

class SupportChat {
 public:
  explicit SupportChat(std::size_t window_size = 10)
      : window_size_(window_size),
        chain_(
            // The prompt: a system message, the history, the new input; then the model.
            [model = std::make_shared<sg::LocalModel>()](const nlohmann::json& input,
                                                         const sg::RunConfig&) -> nlohmann::json {
              std::vector<sg::Message> prompt{sg::system(
                  "You are a helpful customer support agent. Be friendly and efficient.")};
              for (auto& m : sg::messages_from_json(input.at("history"))) prompt.push_back(m);
              prompt.push_back(sg::human(input.at("input").get<std::string>()));
              return model->invoke(prompt);
            },
            [this](const sg::SessionKeys& keys) { return session(keys.at("session_id")); },
            {.input_messages_key = "input", .history_messages_key = "history"}) {}

  SupportChat(const SupportChat&) = delete;  // the history factory points at this object
  SupportChat& operator=(const SupportChat&) = delete;

  /// Sends a message to a ticket and returns the agent's reply.
  std::string send(const std::string& message, const std::string& session_id) {
    sg::RunConfig config;
    config.configurable = {{"session_id", session_id}};
    return chain_.invoke_message({{"input", message}}, config).text();
  }

  /// The ticket's statistics, printed as the lesson's Python dict.
  std::string get_session_stats(const std::string& session_id) const {
    std::size_t seen = 0;
    std::size_t size = 0;
    {
      std::lock_guard lock(mu_);
      if (auto it = store_.find(session_id); it != store_.end()) {
        seen = it->second->total_messages_seen();
        size = it->second->messages().size();
      }
    }
    return "{'total_messages_seen': " + std::to_string(seen) +
           ", 'current_history_size': " + std::to_string(size) +
           ", 'window_size': " + std::to_string(window_size_) + "}";
  }

  std::vector<std::string> list_sessions() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [id, history] : store_) out.push_back(id);
    return out;
  }

 private:
  std::shared_ptr<sg::WindowedChatMessageHistory> session(const std::string& session_id) {
    std::lock_guard lock(mu_);
    auto& history = store_[session_id];
    if (!history) history = std::make_shared<sg::WindowedChatMessageHistory>(window_size_);
    return history;
  }

  std::size_t window_size_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<sg::WindowedChatMessageHistory>> store_;
  sg::RunnableWithMessageHistory chain_;
};

int main() {
  std::cout << "=== SupportChat(window_size=10) ===\n";
  SupportChat chat(10);
  for (const char* text : {"I need help with my order", "Order number is 45678"}) {
    std::cout << "customer: " << text << "\nagent: " << chat.send(text, "ticket-123") << '\n';
  }
  std::cout << chat.get_session_stats("ticket-123") << "\n\n";

  // A window of 5 exchanges: after 12 turns the first ones are pruned (but counted), and the
  // agent no longer sees the order number given in turn 1.
  std::cout << "=== SupportChat(window_size=5), ticket 123 ===\n";
  SupportChat small(5);
  for (int turn = 1; turn <= 12; ++turn) {
    std::string text = "Message " + std::to_string(turn) + " about my issue";
    if (turn == 1) text = "My order number is 45678.";
    if (turn == 2 || turn == 12) text = "What is my order number?";
    std::cout << "Turn " << turn << ": " << text << " -> " << small.send(text, "ticket-123")
              << '\n';
  }
  std::cout << "Stats: " << small.get_session_stats("ticket-123") << "\n\n";

  std::cout << "=== ticket 456 ===\n";
  std::cout << "agent: " << small.send("Different customer here", "ticket-456") << '\n';
  std::cout << "Ticket 456 stats: " << small.get_session_stats("ticket-456") << '\n';
  std::cout << "Unknown ticket stats: " << small.get_session_stats("ticket-789") << '\n';

  std::cout << "Active sessions: [";
  const auto sessions = small.list_sessions();
  for (std::size_t i = 0; i < sessions.size(); ++i)
    std::cout << (i ? ", '" : "'") << sessions[i] << "'";
  std::cout << "]\n";
  return 0;
}
