// SPDX-License-Identifier: MIT
// A ReAct agent on Claude through Anthropic's Messages API (sg::AnthropicChatModel): it answers
// a question about a long document with two tools, streams its extended thinking and its reply,
// caches the document (prompt caching) and prints each model call's usage with the tokens
// written to and read from the cache. Needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL, e.g. a
// proxy); STATEGRAPH_MODEL picks the model. Run it from the repository's root:
//
//   ./anthropic_agent [DOCUMENT] [QUESTION]      (default: docs/models.md, a question on it)

#include <stategraph/models/anthropic.hpp>
#include <stategraph/models/react_agent.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace {

// The tools' argument: a word to look for in the document.
struct Word {
  std::string word{};
  static constexpr auto schema() { return std::tuple{sg::field<"word">(&Word::word)}; }
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "docs/models.md";
  const std::string question =
      argc > 2 ? argv[2] : "Which lines of the document mention retry-after, and what do they say?";
  std::ifstream file(path);
  if (!file) {
    std::cerr << "cannot read " << path << " (run from the repository's root, or name a file)\n";
    return 1;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  std::string document;
  for (const auto& line : lines) document += line + '\n';

  // Tools that read the document: models quote line numbers and count words badly.
  const auto find_lines = [lines](const Word& w) {
    std::string found;
    int shown = 0;
    int more = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (w.word.empty() || lower(lines[i]).find(lower(w.word)) == std::string::npos) continue;
      if (shown++ < 8) {
        found += std::to_string(i + 1) + ": " + lines[i] + '\n';
      } else {
        ++more;
      }
    }
    if (more > 0) found += "(and " + std::to_string(more) + " more lines)\n";
    return found.empty() ? "No line mentions " + w.word + "." : found;
  };
  const auto count_word = [text = lower(document)](const Word& w) {
    const std::string word = lower(w.word);
    std::size_t n = 0;
    for (auto at = text.find(word); !word.empty() && at != std::string::npos;
         at = text.find(word, at + word.size()))
      ++n;
    return n;
  };
  std::vector<sg::Tool> tools{
      sg::make_tool<Word>("find_lines",
                          "The document's lines that mention a word, with their line numbers.",
                          find_lines, {{"word", "the word, any case"}}),
      sg::make_tool<Word>("count_word", "How many times a word occurs in the document.", count_word,
                          {{"word", "the word, any case"}})};

  // The model: extended thinking on (its budget is part of max_tokens).
  sg::AnthropicConfig config = sg::AnthropicConfig::from_env();
  config.max_tokens = 8192;
  config.thinking_budget = 2048;
  std::shared_ptr<sg::AnthropicChatModel> model;
  try {
    model = std::make_shared<sg::AnthropicChatModel>(config);
  } catch (const sg::ModelError& e) {
    std::cerr << e.what() << "\n(set ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL for a proxy)\n";
    return 1;
  }
  sg::ReactAgentOptions options;
  options.system_prompt =
      "You answer questions about the document the user gives. Use the tools "
      "to find and count words; quote line numbers.";
  auto agent = sg::create_react_agent(model, std::move(tools), options);

  // Prompt caching: a breakpoint on the document's block caches the prompt up to it (tools,
  // system prompt, document). The agent's next call, after the tool results, reads it from the
  // cache, and so does the next run within the cache's five minutes. (Claude caches only a
  // prefix above a minimum length, 1,024 tokens or more depending on the model.)
  sg::Message ask =
      sg::human(sg::Content::Blocks{{{"type", "text"},
                                     {"text", "<document>\n" + document + "</document>"},
                                     {"cache_control", {{"type", "ephemeral"}}}},
                                    {{"type", "text"}, {"text", question}}});
  sg::Update<sg::AgentState> input;
  input.set<&sg::AgentState::messages>(std::vector<sg::Message>{std::move(ask)});
  std::cout << "user: " << question << " (about " << path << ", " << lines.size() << " lines)\n";

  // Stream the model's thinking and text as they come (blocks with an index: thinking first),
  // each tool call once whole when the tools start, and every tool result.
  std::string open;  // the label of the line being streamed ("thinking", "assistant") or ""
  const auto say = [&](const std::string& label, const std::string& text) {
    if (open != label) std::cout << (open.empty() ? "" : "\n") << label << ": ";
    open = label;
    std::cout << text << std::flush;
  };
  const auto end_line = [&] {
    if (!open.empty()) std::cout << '\n';
    open.clear();
  };
  std::map<int, sg::ToolCallChunk> calls;  // by content block index
  const auto on_event = [&](const sg::StreamEvent<sg::AgentState>& e) {
    const sg::Message& m = e.message->message;
    if (m.type == sg::MessageType::tool) {
      end_line();
      for (const auto& [index, call] : calls)
        std::cout << "calls " << call.name << ' ' << call.args << '\n';
      calls.clear();
      std::cout << "tool " << m.name << ":\n";
      std::istringstream text(m.text());
      for (std::string line; std::getline(text, line);) std::cout << "  " << line << '\n';
      return;
    }
    for (const auto& piece : e.message->tool_call_chunks) {
      sg::ToolCallChunk& call = calls[piece.index];
      call.name += piece.name;
      call.args += piece.args;
    }
    if (m.content.is_string()) {
      if (!m.text().empty()) say("assistant", m.text());
      return;
    }
    for (const auto& block : m.content.blocks()) {
      const std::string type = block.value("type", "");
      if (type == "thinking" && block.contains("thinking"))
        say("thinking", block.value("thinking", ""));
      if (type == "text") say("assistant", block.value("text", ""));
    }
  };
  sg::RunResult<sg::AgentState> result;
  try {
    result = agent.stream(std::move(input), {}, sg::StreamMode::messages, on_event);
  } catch (const sg::Error& e) {
    end_line();
    std::cerr << "the agent failed: " << e.what() << '\n';
    return 1;
  }
  end_line();

  // Each model call's usage: input_tokens counts the cached tokens too.
  int call = 0;
  for (const sg::Message& m : result.state.messages) {
    if (m.type != sg::MessageType::ai || !m.usage_metadata.is_object()) continue;
    const nlohmann::json& usage = m.usage_metadata;
    const nlohmann::json cache = usage.value("input_token_details", nlohmann::json::object());
    std::cout << "model call " << ++call << ": " << usage.value("input_tokens", 0)
              << " input tokens (" << cache.value("cache_creation", 0) << " written to the cache, "
              << cache.value("cache_read", 0) << " read from it), "
              << usage.value("output_tokens", 0) << " output tokens\n";
  }
}
