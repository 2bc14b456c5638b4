// SPDX-License-Identifier: MIT
// `stategraph chat`: an interactive chat on the demo's summarize-and-trim graph, persisted in
// RocksDB so that the next run continues the thread. On a terminal the line is read with libedit
// (line editing, a history file) and replies stream word by word; from a pipe, one message per
// line.
#include <stategraph/checkpoint/rocksdb_saver.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/models/mcp.hpp>
#include <stategraph/models/react_agent.hpp>
#include <stategraph/nodes/summarize_trim.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <editline/readline.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>
#include <type_traits>

#include "builtin_graphs.hpp"
#include "cli.hpp"

namespace sg::cli {

namespace {

struct ChatArgs {
  std::string db = "stategraph-data";
  /// Empty: "chat", or "agent" with --mcp (the two graphs' states differ).
  std::string thread{};
  /// An mcpServers file: chat with the ReAct agent and those servers' tools.
  std::string mcp{};
};

/// The summarize-and-trim graph of the demo, or with --mcp the ReAct agent.
template <class S>
constexpr bool kIsAgent = std::is_same_v<S, AgentState>;

/// Where the typed lines are kept between runs: $XDG_STATE_HOME/stategraph/chat_history, else
/// ~/.local/state/stategraph/chat_history; empty when neither variable is set.
std::filesystem::path history_file() {
  std::filesystem::path dir;
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state != '\0') {
    dir = state;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = std::filesystem::path(home) / ".local" / "state";
  } else {
    return {};
  }
  return dir / "stategraph" / "chat_history";
}

/// Reads the user's lines: libedit's readline on a terminal (editing, history recalled with the
/// arrow keys and kept in history_file()), plain lines from a pipe or a file.
class LineReader {
 public:
  LineReader() : interactive_(isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1) {
    if (!interactive_) return;
    using_history();
    stifle_history(1000);
    history_path_ = history_file();
    if (!history_path_.empty()) read_history(history_path_.c_str());
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  ~LineReader() {
    if (!interactive_ || history_path_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(history_path_.parent_path(), ec);
    if (!ec) write_history(history_path_.c_str());
  }

  /// The next line, or nullopt at the end of input (Ctrl-D).
  std::optional<std::string> read(const std::string& prompt) {
    if (!interactive_) {
      std::string line;
      if (!std::getline(std::cin, line)) return std::nullopt;
      return line;
    }
    char* raw = readline(prompt.c_str());
    if (raw == nullptr) return std::nullopt;
    std::string line(raw);
    std::free(raw);  // NOLINT: readline's buffer comes from malloc
    if (line.find_first_not_of(" \t") != std::string::npos) add_history(line.c_str());
    return line;
  }

  [[nodiscard]] bool interactive() const { return interactive_; }

 private:
  bool interactive_;
  std::filesystem::path history_path_;
};

std::atomic<bool> g_stop_reply{false};

extern "C" void on_chat_sigint(int) {
  g_stop_reply.store(true);
}

/// Cancels `token` when Ctrl-C is pressed while it lives (a reply is being produced).
class CtrlCCancels {
 public:
  explicit CtrlCCancels(CancellationToken token) {
    g_stop_reply = false;  // before the handler: a Ctrl-C from now on counts
    previous_ = std::signal(SIGINT, on_chat_sigint);
    watcher_ = std::jthread([token = std::move(token)](const std::stop_token& stop) {
      while (!stop.stop_requested()) {
        if (g_stop_reply.load()) {
          token.cancel();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  CtrlCCancels(const CtrlCCancels&) = delete;
  CtrlCCancels& operator=(const CtrlCCancels&) = delete;
  ~CtrlCCancels() {
    watcher_.request_stop();
    watcher_.join();
    std::signal(SIGINT, previous_);
  }

 private:
  void (*previous_)(int) = nullptr;
  std::jthread watcher_;
};

constexpr const char* kHelp =
    "  /history             the thread's checkpoints, newest first (ids for /fork)\n"
    "  /state               the state the next message continues from\n"
    "  /summary             the running summary of the older turns (not with --mcp)\n"
    "  /tools               the agent's tools (with --mcp)\n"
    "  /fork CHECKPOINT     continue from an older checkpoint (an id or a unique prefix)\n"
    "  /help                this list\n"
    "  /quit                leave (Ctrl-D too); the next run continues the thread\n"
    "  Ctrl-C while a reply streams stops that reply.\n";

/// The system prompt of `chat --mcp`'s agent.
constexpr const char* kAgentPrompt =
    "You are a helpful assistant. Use the tools when they help, and say what they returned.";

/// A chat on a thread of the summarize-and-trim graph (S = SummaryTrimState) or of the ReAct
/// agent with MCP tools (S = AgentState).
template <class S>
class ChatSession {
 public:
  ChatSession(const ChatArgs& args, std::vector<Tool> tools)
      : args_(args),
        saver_(RocksDbSaver::open(args.db)),
        options_(demo_graph_options()),
        tools_(tools),
        app_(build(saver_, options_, std::move(tools))),
        colour_(colour_output()) {
    config_.thread_id = args.thread;
    // OTEL_EXPORTER_OTLP_ENDPOINT set: each turn's spans go to that collector (its destructor
    // sends the last ones).
    if (auto tracer = OtlpTracer::from_environment())
      config_.callbacks.push_back(std::move(tracer));
  }

  static CompiledGraph<S> build(const std::shared_ptr<RocksDbSaver>& saver,
                                const SummaryTrimOptions& options, std::vector<Tool> tools) {
    if constexpr (kIsAgent<S>) {
      ReactAgentOptions agent;
      agent.system_prompt = kAgentPrompt;
      agent.checkpointer = saver;
      agent.name = "chat_agent";
      return create_react_agent(default_chat_model(), std::move(tools), std::move(agent));
    } else {
      return summarize_and_trim_graph(default_chat_model(), options)
          .compile({.checkpointer = saver});
    }
  }

  void run() {
    LineReader reader;
    greet();
    // libedit skips what lies between \1 and \2 when it measures the prompt.
    const std::string prompt = colour_ ? "\001\033[1m\002you>\001\033[0m\002 " : "you> ";
    while (true) {
      const auto line = reader.read(prompt);
      if (!line) break;
      const auto first = line->find_first_not_of(" \t");
      if (first == std::string::npos) continue;
      const std::string text = line->substr(first);
      if (text.front() == '/') {
        if (!command(text)) break;
        continue;
      }
      turn(text);
    }
    if (reader.interactive()) std::cout << '\n';
  }

 private:
  /// `text` painted with the SGR code `sgr` when colour is on.
  [[nodiscard]] std::string paint(const std::string& text, const char* sgr) const {
    return colour_ ? fmt::format("\033[{}m{}\033[0m", sgr, text) : text;
  }

  /// The config the next message and /state read: the thread, at the fork point if one is set.
  [[nodiscard]] RunConfig current_config() const {
    RunConfig config = config_;
    if (fork_from_) config.checkpoint_id = *fork_from_;
    return config;
  }

  void greet() {
    const auto state = app_.get_state(config_);
    std::cout << fmt::format("stategraph chat: thread '{}' in {}", args_.thread, args_.db);
    if (!state || state->values.messages.empty()) {
      std::cout << " (new)\n";
    } else {
      if constexpr (kIsAgent<S>) {
        std::cout << fmt::format(" (continuing: {} messages)\n", state->values.messages.size());
      } else {
        std::cout << fmt::format(" (continuing: {} turns, {} messages kept, summary {} chars)\n",
                                 state->values.turns, state->values.messages.size(),
                                 state->values.summary.size());
      }
      for (const Message& m : last_exchange(state->values.messages)) {
        std::cout << paint(fmt::format("  {}: {}", to_string(m.type), one_line(m.text(), 100)), "2")
                  << '\n';
      }
    }
    if constexpr (kIsAgent<S>)
      std::cout << fmt::format("{} tools from {}\n", tools_.size(), args_.mcp);
    std::cout << "Type a message; /help lists the commands, /quit or Ctrl-D leaves.\n";
  }

  static std::vector<Message> last_exchange(const std::vector<Message>& messages) {
    const std::size_t from = messages.size() > 2 ? messages.size() - 2 : 0;
    return {messages.begin() + static_cast<std::ptrdiff_t>(from), messages.end()};
  }

  /// Runs one turn, streaming the replies of the model's node ("chat", or the agent's "agent")
  /// and, for the agent, a line per tool result.
  void turn(const std::string& text) {
    RunConfig config = current_config();
    config.cancellation = CancellationToken::create();
    auto update = Update<S>{}.template set<&S::messages>(human(text));
    bool streamed = false;  // text of the current reply was printed
    const auto prompt = [this] { std::cout << paint("ai> ", "1;36") << std::flush; };
    try {
      std::optional<S> state;
      {
        // Ctrl-C stops the reply from the moment its prompt shows.
        CtrlCCancels ctrl_c(config.cancellation);
        prompt();
        state =
            app_.stream(std::move(update), config, StreamMode::messages,
                        [&](const StreamEvent<S>& event) {
                          if (!event.message) return;
                          const Message& m = event.message->message;
                          if (event.node == (kIsAgent<S> ? "agent" : "chat")) {
                            std::cout << m.text() << std::flush;
                            streamed = streamed || !m.text().empty();
                          } else if (m.type == MessageType::tool) {
                            // On a line of its own: "ai> [tool: result]".
                            if (streamed) {
                              std::cout << '\n';
                              prompt();
                            }
                            std::cout
                                << paint(fmt::format("[{}: {}]", m.name, one_line(m.text(), 100)),
                                         "2")
                                << '\n';
                            prompt();
                            streamed = false;
                          }
                        })
                .state;
      }
      fork_from_.reset();  // the fork's new branch is now the thread's head
      if (!streamed && !state->messages.empty()) std::cout << state->messages.back().text();
      std::cout << '\n';
      if constexpr (!kIsAgent<S>) {
        const auto context = summary_trim_context(*state, options_);
        std::cout << paint(fmt::format("   [turn {} | kept {} msgs | {} tokens in context | "
                                       "summary {} chars]",
                                       state->turns, state->messages.size(),
                                       options_.token_counter(context), state->summary.size()),
                           "2")
                  << '\n';
      }
    } catch (const CancelledError&) {
      std::cout << '\n' << paint("   [stopped; the thread keeps your message]", "2") << '\n';
    }
  }

  /// Runs a slash command; false to quit. Errors of a command are printed, not fatal.
  bool command(const std::string& text) {
    const auto space = text.find(' ');
    const std::string name = text.substr(0, space);
    std::string arg = space == std::string::npos ? "" : text.substr(space + 1);
    arg.erase(0, arg.find_first_not_of(' '));
    arg.erase(arg.find_last_not_of(' ') + 1);
    try {
      if (name == "/quit" || name == "/exit") return false;
      if (name == "/help") {
        std::cout << kHelp;
      } else if (name == "/history") {
        history();
      } else if (name == "/state") {
        show_state();
      } else if (name == "/summary" && !kIsAgent<S>) {
        if constexpr (!kIsAgent<S>) {
          const auto state = app_.get_state(current_config());
          const std::string summary = state ? state->values.summary : "";
          std::cout << (summary.empty() ? "(no summary yet: the conversation still fits)" : summary)
                    << '\n';
        }
      } else if (name == "/tools" && kIsAgent<S>) {
        for (const Tool& t : tools_)
          std::cout << fmt::format("  {}: {}\n", t.name(), one_line(t.spec().description, 90));
      } else if (name == "/fork") {
        fork(arg);
      } else {
        std::cout << fmt::format("unknown command {}; /help lists the commands\n", name);
      }
    } catch (const Error& e) {
      std::cout << "error: " << e.what() << '\n';
    }
    return true;
  }

  void history() {
    const auto history = app_.get_state_history(config_);
    if (history.empty()) {
      std::cout << "(no checkpoints yet)\n";
      return;
    }
    constexpr std::size_t kShown = 20;
    std::cout << fmt::format("{} checkpoints, newest first:\n", history.size());
    for (std::size_t i = 0; i < history.size() && i < kShown; ++i) {
      const auto& h = history[i];
      const bool fork_point = fork_from_ && *fork_from_ == h.config.checkpoint_id;
      std::cout << fmt::format("  {}  step {:>3}  {:<6} msgs {:>2}  next: {}{}\n",
                               h.config.checkpoint_id, h.metadata.value("step", -1),
                               h.metadata.value("source", std::string()), h.values.messages.size(),
                               next_text(h.next),
                               fork_point ? "  <- the next message continues here" : "");
    }
    if (history.size() > kShown) {
      std::cout << fmt::format("  ... {} older\n", history.size() - kShown);
    }
  }

  void show_state() {
    const auto state = app_.get_state(current_config());
    if (!state) {
      std::cout << "(no state yet: send a message)\n";
      return;
    }
    const auto& v = state->values;
    std::cout << fmt::format("checkpoint {} (step {}){}\n", state->config.checkpoint_id,
                             state->metadata.value("step", -1),
                             fork_from_ ? ", the fork point" : "");
    if constexpr (!kIsAgent<S>)
      std::cout << fmt::format("turns {}, summary {} chars, ", v.turns, v.summary.size());
    std::cout << fmt::format("{} messages:\n", v.messages.size());
    for (std::size_t i = 0; i < v.messages.size(); ++i) {
      const Message& m = v.messages[i];
      std::cout << fmt::format("  [{}] {}: {}\n", i, to_string(m.type), one_line(m.text(), 100));
    }
  }

  /// Sets the fork point to the thread's checkpoint whose id is `id` or starts with it.
  void fork(const std::string& id) {
    if (id.empty()) throw Error(errc::kInvalidArgument, "/fork needs a checkpoint id (/history)");
    std::vector<std::string> matches;
    for (const auto& h : app_.get_state_history(config_)) {
      if (h.config.checkpoint_id == id) {
        matches = {id};
        break;
      }
      if (h.config.checkpoint_id.rfind(id, 0) == 0) matches.push_back(h.config.checkpoint_id);
    }
    if (matches.empty()) {
      throw Error(
          errc::kInvalidArgument,
          fmt::format("no checkpoint '{}' in thread '{}' (/history lists them)", id, args_.thread));
    }
    if (matches.size() > 1) {
      throw Error(
          errc::kInvalidArgument,
          fmt::format("'{}' matches {} checkpoints; give more of the id", id, matches.size()));
    }
    fork_from_ = matches.front();
    const auto state = app_.get_state(current_config());
    std::cout << fmt::format(
        "forked from checkpoint {} (step {}, {} messages): the next message continues from "
        "there, on a new branch\n",
        *fork_from_, state ? state->metadata.value("step", -1) : -1,
        state ? state->values.messages.size() : 0);
  }

  ChatArgs args_;
  std::shared_ptr<RocksDbSaver> saver_;
  SummaryTrimOptions options_;
  std::vector<Tool> tools_;
  CompiledGraph<S> app_;
  bool colour_;
  RunConfig config_;
  std::optional<std::string> fork_from_;
};

}  // namespace

void add_chat_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ChatArgs>();
  auto* chat = app.add_subcommand(
      "chat",
      "Chat with the summarize-and-trim graph of the demo on a RocksDB thread that the next run "
      "continues (line editing and history on a terminal; one message per line from a pipe)");
  chat->add_option("--db", args->db, "RocksDB directory")->capture_default_str();
  chat->add_option("--thread", args->thread, "Thread id (default: chat; agent with --mcp)");
  chat->add_option("--mcp", args->mcp,
                   "An mcpServers JSON file (the shape MCP clients share): chat with the ReAct "
                   "agent and the tools of those MCP servers instead")
      ->check(CLI::ExistingFile);
  chat->footer(std::string("\nCommands inside the chat:\n") + kHelp);
  chat->callback([&action, args] {
    action = [args] {
      if (args->mcp.empty()) {
        if (args->thread.empty()) args->thread = "chat";
        ChatSession<SummaryTrimState> session(*args, {});
        session.run();
        return;
      }
      if (args->thread.empty()) args->thread = "agent";
      std::vector<Tool> tools = load_mcp_tools(read_mcp_config_file(args->mcp));
      ChatSession<AgentState> session(*args, std::move(tools));
      session.run();
    };
  });
}

}  // namespace sg::cli
