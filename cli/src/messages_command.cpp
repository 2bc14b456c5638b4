// SPDX-License-Identifier: MIT
// `stategraph messages <op>`: the message utilities over JSON on stdin/stdout.
#include <stategraph/core/error.hpp>
#include <stategraph/core/json.hpp>
#include <stategraph/reducers/add_messages.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "cli.hpp"

namespace sg::cli {
namespace {

using nlohmann::json;

std::vector<MessageType> parse_types(const std::vector<std::string>& names) {
  std::vector<MessageType> out;
  out.reserve(names.size());
  for (const auto& name : names) out.push_back(parse_message_type(name));
  return out;
}

TokenCounter parse_counter(const std::string& name) {
  if (name == "approximate") return TokenCounter{};
  if (name == "messages") return TokenCounter(count_messages);
  if (name == "words") {
    return TokenCounter([](std::span<const Message> m) { return count_words(m, 3); });
  }
  throw Error(errc::kInvalidArgument,
              "unknown token counter '" + name + "': use approximate, messages or words");
}

std::int64_t slice_bound(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9.0e18) return std::numeric_limits<std::int64_t>::max();
  if (value <= -9.0e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(std::trunc(value));
}

struct Settings {
  int indent = -1;
  // trim
  std::int64_t max_tokens = 0;
  std::string strategy = "last";
  std::vector<std::string> start_on;
  std::vector<std::string> end_on;
  bool include_system = false;
  bool allow_partial = false;
  std::string token_counter = "approximate";
  // keep
  double from = 0;
  std::optional<double> to;
  // filter
  std::vector<std::string> include_types, exclude_types, include_names, exclude_names, include_ids,
      exclude_ids;
  // merge
  std::string separator = "\n";
  // buffer-string
  std::string human_prefix = "Human";
  std::string ai_prefix = "AI";
  bool with_tool_calls = false;
};

void run_add(const Settings& s) {
  const json input = read_stdin_json();
  if (!input.is_object() || !input.contains("left") || !input.contains("right")) {
    throw Error(errc::kInvalidArgument,
                "expected {\"left\": messages, \"right\": messages} on stdin");
  }
  std::vector<Message> left;
  std::vector<Message> right;
  try {
    left = messages_from_json(input["left"]);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("left: ") + e.what());
  }
  try {
    right = messages_from_json(input["right"]);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("right: ") + e.what());
  }
  write_json(messages_to_json(add_messages(std::move(left), std::move(right))), s.indent);
}

void run_trim(const Settings& s) {
  TrimOptions options;
  options.max_tokens = s.max_tokens;
  options.strategy = parse_trim_strategy(s.strategy);
  options.start_on = parse_types(s.start_on);
  options.end_on = parse_types(s.end_on);
  options.include_system = s.include_system;
  options.allow_partial = s.allow_partial;
  options.token_counter = parse_counter(s.token_counter);
  const auto messages = messages_from_json(read_stdin_json());
  write_json(messages_to_json(trim_messages(messages, options)), s.indent);
}

void run_keep(const Settings& s) {
  json input = read_stdin_json();
  if (!input.is_array()) throw Error(errc::kInvalidArgument, "expected a JSON list on stdin");
  KeepSlice keep{slice_bound(s.from), std::nullopt};
  if (s.to) keep.to = slice_bound(*s.to);
  auto items = input.get<std::vector<json>>();
  apply_keep(items, keep);
  write_json(json(std::move(items)), s.indent);
}

void run_filter(const Settings& s) {
  FilterOptions options;
  options.include_types = parse_types(s.include_types);
  options.exclude_types = parse_types(s.exclude_types);
  options.include_names = s.include_names;
  options.exclude_names = s.exclude_names;
  options.include_ids = s.include_ids;
  options.exclude_ids = s.exclude_ids;
  const auto messages = messages_from_json(read_stdin_json());
  write_json(messages_to_json(filter_messages(messages, options)), s.indent);
}

void run_merge(const Settings& s) {
  const auto messages = messages_from_json(read_stdin_json());
  write_json(messages_to_json(merge_message_runs(messages, s.separator)), s.indent);
}

void run_buffer_string(const Settings& s) {
  auto messages = messages_from_json(read_stdin_json());
  if (s.with_tool_calls) {
    // LangChain prints only an AI message's text: a message that only calls tools shows as an
    // empty "AI: " line. Spell the calls out after the text instead.
    for (Message& m : messages) {
      if (m.type != MessageType::ai || m.tool_calls.empty()) continue;
      std::string calls;
      for (const ToolCall& c : m.tool_calls) {
        calls += fmt::format("{}{}({})", calls.empty() ? "" : ", ", c.name, c.args.dump());
      }
      const std::string text = m.text();
      m.content = text + (text.empty() ? "" : " ") + "[calls " + calls + "]";
    }
  }
  write_json(get_buffer_string(messages, s.human_prefix, s.ai_prefix), s.indent);
}

}  // namespace

void add_messages_command(CLI::App& app, Action& action) {
  auto settings = std::make_shared<Settings>();
  CLI::App* messages = app.add_subcommand(
      "messages", "Message utilities: a message list as JSON on stdin, JSON on stdout");
  messages->require_subcommand(1);
  messages->add_option("--indent", settings->indent, "Indent the JSON output by this many spaces");

  auto bind = [&action, settings](CLI::App* sub, void (*run)(const Settings&)) {
    sub->callback([&action, settings, run] { action = [settings, run] { run(*settings); }; });
  };

  CLI::App* add = messages->add_subcommand(
      "add", "add_messages: stdin {\"left\": L, \"right\": R} -> the merged list");
  bind(add, run_add);

  CLI::App* trim = messages->add_subcommand("trim", "trim_messages: keep what fits a token budget");
  trim->add_option("--max-tokens", settings->max_tokens, "Token budget")->required();
  trim->add_option("--strategy", settings->strategy, "first or last (default last)");
  trim->add_option("--start-on", settings->start_on,
                   "Types to start on (last only), comma-separated")
      ->delimiter(',');
  trim->add_option("--end-on", settings->end_on, "Types to end on, comma-separated")
      ->delimiter(',');
  trim->add_flag("--include-system", settings->include_system,
                 "Keep a leading system message (last only)");
  trim->add_flag("--allow-partial", settings->allow_partial, "Split the boundary message");
  trim->add_option(
      "--token-counter", settings->token_counter,
      "approximate (default), messages (1 per message) or words (words + 3 per message)");
  bind(trim, run_trim);

  CLI::App* keep =
      messages->add_subcommand("keep", "Keep list[from:to] of any JSON list (JavaScript slice)");
  keep->add_option("--from", settings->from,
                   "Start index; negative counts from the end (default 0)");
  keep->add_option("--to", settings->to, "End index, exclusive; negative counts from the end");
  bind(keep, run_keep);

  CLI::App* filter = messages->add_subcommand("filter", "filter_messages by type, name or id");
  filter->add_option("--include-types", settings->include_types, "Types to keep")->delimiter(',');
  filter->add_option("--exclude-types", settings->exclude_types, "Types to drop")->delimiter(',');
  filter->add_option("--include-names", settings->include_names, "Names to keep")->delimiter(',');
  filter->add_option("--exclude-names", settings->exclude_names, "Names to drop")->delimiter(',');
  filter->add_option("--include-ids", settings->include_ids, "Ids to keep")->delimiter(',');
  filter->add_option("--exclude-ids", settings->exclude_ids, "Ids to drop")->delimiter(',');
  bind(filter, run_filter);

  CLI::App* merge = messages->add_subcommand("merge", "merge_message_runs: merge consecutive runs");
  merge->add_option("--separator", settings->separator,
                    "Joins two string contents (default newline)");
  bind(merge, run_merge);

  CLI::App* buffer = messages->add_subcommand(
      "buffer-string", "get_buffer_string: \"Human: ...\\nAI: ...\" as a JSON string");
  buffer->add_option("--human-prefix", settings->human_prefix, "Prefix of human messages");
  buffer->add_option("--ai-prefix", settings->ai_prefix, "Prefix of AI messages");
  buffer->add_flag("--with-tool-calls", settings->with_tool_calls,
                   "Append an AI message's tool calls (LangChain prints only the text, so a "
                   "message that only calls tools is an empty \"AI: \" line)");
  bind(buffer, run_buffer_string);
}

}  // namespace sg::cli
