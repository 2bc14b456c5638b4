// SPDX-License-Identifier: MIT
// LocalModel: fixed, documented rules over the messages (see local_model.hpp). Plain string
// processing on purpose: it has to be predictable, not clever.

#include <stategraph/core/uuid.hpp>
#include <stategraph/models/local_model.hpp>
#include <stategraph/reducers/message_utils.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string_view>

#include "text.hpp"

namespace sg {
namespace {

using models_detail::lower;

struct Sentence {
  std::string text;  // without its final punctuation
  bool question = false;
};

bool starts_like_question(const std::string& s) {
  static const std::set<std::string, std::less<>> kWords = {
      "what", "who", "where", "when",  "which",  "how",  "why",   "do",    "does",  "did",
      "is",   "are", "can",   "could", "should", "will", "would", "whats", "what's"};
  const std::string first = lower(s.substr(0, s.find(' ')));
  return kWords.count(first) > 0;
}

std::vector<Sentence> sentences(std::string_view text) {
  std::vector<Sentence> out;
  std::string current;
  auto flush = [&](bool question) {
    std::string t(models_detail::trim(current));
    current.clear();
    if (t.empty()) return;
    out.push_back({t, question || starts_like_question(t)});
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool end_mark = c == '.' || c == '!' || c == '?';
    // "3.5" keeps its point.
    if (c == '.' && i > 0 && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      current += c;
    } else if (end_mark || c == '\n') {
      flush(c == '?');
    } else {
      current += c;
    }
  }
  flush(false);
  return out;
}

/// The text of `text` without summarization instructions: on a line mentioning a summary, only
/// what follows its colon (the summary itself) is kept.
std::string without_instructions(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    const auto colon = line.find(':');
    const std::string head = lower(colon == std::string::npos ? line : line.substr(0, colon));
    if (head.find("summar") != std::string::npos) {
      line = colon == std::string::npos ? std::string() : line.substr(colon + 1);
    }
    out += line;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::set<std::string> content_words(std::string_view text) {
  static const std::set<std::string, std::less<>> kStop = {
      "the",  "a",    "an",       "is",    "are",   "was",    "were", "my",    "your", "i",
      "you",  "me",   "what",     "whats", "do",    "does",   "did",  "to",    "of",   "and",
      "in",   "on",   "at",       "for",   "it",    "that",   "this", "be",    "have", "has",
      "know", "tell", "remember", "about", "s",     "am",     "who",  "where", "when", "which",
      "how",  "why",  "can",      "could", "again", "please", "we",   "our",   "mine", "told"};
  std::set<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && !kStop.count(word)) out.insert(word);
    word.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::string lower_first(std::string s) {
  // "My name" -> "my name", but "I" and names stay.
  if (s.size() > 1 && std::isupper(static_cast<unsigned char>(s[0])) &&
      std::islower(static_cast<unsigned char>(s[1])) && s.rfind("I ", 0) != 0)
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

/// Statements of the context a question can be answered from, oldest first: human statements
/// and the sentences of system messages (summaries), never the model's own replies.
std::vector<std::string> facts_of(const std::vector<Message>& messages, std::size_t end) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < end; ++i) {
    const Message& m = messages[i];
    if (m.type != MessageType::human && m.type != MessageType::system) continue;
    for (auto& s : sentences(without_instructions(m.text())))
      if (!s.question) out.push_back(std::move(s.text));
  }
  return out;
}

std::int64_t approx_tokens(std::string_view text) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(text.size()) / 4.0));
}

std::string summarize(const std::vector<Message>& messages, const ChatOptions& options) {
  // Every statement: those of an existing summary quoted in the prompt (the last message)
  // first, then the conversation's.
  std::vector<std::string> facts;
  for (auto& s : sentences(without_instructions(messages.back().text())))
    if (!s.question) facts.push_back(std::move(s.text));
  for (auto& f : facts_of(messages, messages.size() - 1)) facts.push_back(std::move(f));
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (auto& f : facts)
    if (seen.insert(lower(f)).second) unique.push_back(std::move(f));
  const std::int64_t budget = options.max_tokens.value_or(256);
  std::vector<std::string> kept;  // newest first while they fit
  std::int64_t used = 0;
  for (auto it = unique.rbegin(); it != unique.rend(); ++it) {
    const std::int64_t cost = approx_tokens(*it) + 1;
    if (used + cost > budget) break;
    used += cost;
    kept.push_back(*it);
  }
  if (kept.empty()) return "No facts were stated yet.";
  std::string out;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it)
    out += (out.empty() ? "" : " ") + *it + ".";
  return out;
}

std::string answer(const std::vector<Message>& messages, std::size_t last) {
  const std::string text(models_detail::trim(messages[last].text()));
  const auto parts = sentences(text);
  const bool question =
      std::any_of(parts.begin(), parts.end(), [](const Sentence& s) { return s.question; });
  if (!question) return "Noted: " + lower_first(parts.empty() ? text : parts.back().text) + ".";
  const Sentence& asked =
      *std::find_if(parts.begin(), parts.end(), [](const Sentence& s) { return s.question; });
  const auto want = content_words(asked.text);
  const auto facts = facts_of(messages, last);
  std::size_t best_score = 0;
  const std::string* best = nullptr;
  for (const auto& fact : facts) {  // later facts win ties: they are the newest
    const auto have = content_words(fact);
    std::size_t score = 0;
    for (const auto& w : want) score += have.count(w);
    if (score > 0 && score >= best_score) {
      best_score = score;
      best = &fact;
    }
  }
  if (!best) return "I don't know that yet.";
  return "You told me: " + lower_first(*best) + ".";
}

std::vector<double> numbers_in(std::string_view text) {
  std::vector<double> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool sign = text[i] == '-' && i + 1 < text.size() &&
                      std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (std::isdigit(static_cast<unsigned char>(text[i])) || sign) {
      std::size_t used = 0;
      out.push_back(std::stod(std::string(text.substr(i)), &used));
      i += used;
    } else {
      ++i;
    }
  }
  return out;
}

/// The tool calls the last human message asks for: the tools it names, in order of mention.
std::vector<ToolCall> requested_calls(const std::string& text, const std::vector<ToolSpec>& tools) {
  const std::string low = lower(text);
  std::vector<std::pair<std::size_t, const ToolSpec*>> named;
  for (const auto& t : tools) {
    std::string spaced = lower(t.name);
    std::replace(spaced.begin(), spaced.end(), '_', ' ');
    std::size_t at = low.find(lower(t.name));
    if (at == std::string::npos) at = low.find(spaced);
    if (at != std::string::npos) named.emplace_back(at, &t);
  }
  std::sort(named.begin(), named.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ToolCall> calls;
  for (std::size_t k = 0; k < named.size(); ++k) {
    const auto [at, spec] = named[k];
    const std::size_t from = at + spec->name.size();
    const std::size_t to = k + 1 < named.size() ? named[k + 1].first : text.size();
    std::string rest = from < to ? text.substr(from, to - from) : std::string();
    std::vector<double> numbers = numbers_in(rest);
    std::size_t next_number = 0;
    nlohmann::json args = nlohmann::json::object();
    const nlohmann::json props = spec->parameters.value("properties", nlohmann::json::object());
    std::vector<std::string> strings;
    for (const auto& [name, schema] : props.items()) {
      const std::string type = schema.value("type", "");
      if ((type == "number" || type == "integer") && next_number < numbers.size()) {
        const double v = numbers[next_number++];
        if (type == "integer") {
          args[name] = static_cast<std::int64_t>(v);
        } else {
          args[name] = v;
        }
      } else if (type == "string") {
        strings.push_back(name);
      }
    }
    if (strings.size() == 1) {
      std::string value(models_detail::trim(rest));
      for (const char* filler : {"for ", "in ", "of ", "about ", "on "}) {
        if (lower(value).rfind(filler, 0) == 0)
          value = std::string(models_detail::trim(value.substr(std::string(filler).size())));
      }
      while (!value.empty() && std::string(".?!,;:").find(value.back()) != std::string::npos)
        value.pop_back();
      // Up to " and " (the next request), if any.
      if (auto cut = lower(value).find(" and "); cut != std::string::npos) value.resize(cut);
      args[strings.front()] = value;
    }
    ToolCall call;
    call.id = "call_" + new_uuid4().substr(0, 8);
    call.name = spec->name;
    call.args = std::move(args);
    calls.push_back(std::move(call));
  }
  return calls;
}

/// The answer once tool results follow the model's tool calls.
std::string report_tool_results(const std::vector<Message>& messages) {
  std::vector<const Message*> results;
  for (auto it = messages.rbegin(); it != messages.rend() && it->type == MessageType::tool; ++it)
    results.insert(results.begin(), &*it);
  if (results.size() == 1) return "The " + results[0]->name + " tool says: " + results[0]->text();
  std::string out = "Here is what the tools returned:";
  for (const auto* r : results) out += " " + r->name + ": " + r->text() + ";";
  out.back() = '.';
  return out;
}

/// Structured output: the schema's properties filled from the reply text and the numbers of the
/// question (strings: the text; numbers: in order; booleans: false; arrays: empty).
nlohmann::json structured(const ResponseFormat& format, const std::string& text,
                          const std::string& question) {
  nlohmann::json out = nlohmann::json::object();
  const auto numbers = numbers_in(question);
  std::size_t next = 0;
  const nlohmann::json props = format.schema.value("properties", nlohmann::json::object());
  for (const auto& [name, schema] : props.items()) {
    const std::string type = schema.value("type", "string");
    if (type == "number" || type == "integer") {
      const double v = next < numbers.size() ? numbers[next++] : 0.0;
      if (type == "integer") {
        out[name] = static_cast<std::int64_t>(v);
      } else {
        out[name] = v;
      }
    } else if (type == "boolean") {
      out[name] = false;
    } else if (type == "array") {
      out[name] = nlohmann::json::array();
    } else if (type == "object") {
      out[name] = nlohmann::json::object();
    } else {
      out[name] = text;
    }
  }
  return out;
}

}  // namespace

void LocalModel::script(std::vector<Message> replies) {
  std::lock_guard lock(mu_);
  for (auto& r : replies) script_.push_back(std::move(r));
}

std::size_t LocalModel::scripted() const {
  std::lock_guard lock(mu_);
  return script_.size();
}

Message LocalModel::reply_to(const Request& request) const {
  const auto& messages = *request.messages;
  const ChatOptions& options = *request.options;
  {
    std::lock_guard lock(mu_);
    if (!script_.empty()) {
      Message m = std::move(script_.front());
      script_.pop_front();
      if (m.id.empty()) m.id = "local-" + new_uuid4();
      return m;
    }
  }
  Message reply = ai("", "local-" + new_uuid4());
  std::size_t last = messages.size();
  while (last > 0 && messages[last - 1].type == MessageType::system) --last;
  if (messages.empty()) {
    reply.content = "Hello! Tell me something, or ask me about what you told me.";
  } else if (messages.back().type == MessageType::tool) {
    reply.content = report_tool_results(messages);
  } else if (lower(messages.back().text()).find("summar") != std::string::npos &&
             messages.size() > 1) {
    reply.content = summarize(messages, options);
  } else if (last == 0 || messages[last - 1].type != MessageType::human) {
    reply.content = "I can only answer a human message.";
  } else {
    if (!options.tools.empty() && options.tool_choice != "none")
      reply.tool_calls = requested_calls(messages[last - 1].text(), options.tools);
    if (reply.tool_calls.empty()) reply.content = answer(messages, last - 1);
  }
  if (options.response_format && reply.tool_calls.empty()) {
    const std::string question = last > 0 ? messages[last - 1].text() : std::string();
    reply.content = structured(*options.response_format, reply.text(), question).dump();
  }
  return reply;
}

Message LocalModel::generate(const Request& request) const {
  if (request.cancelled()) throw CancelledError();
  Message reply = reply_to(request);
  const std::int64_t input =
      request.messages->empty() ? 0 : count_tokens_approximately(*request.messages);
  const std::int64_t output = approx_tokens(reply.text()) + 3;
  reply.usage_metadata = {
      {"input_tokens", input}, {"output_tokens", output}, {"total_tokens", input + output}};
  reply.response_metadata = {{"model_name", model_name()},
                             {"finish_reason", reply.tool_calls.empty() ? "stop" : "tool_calls"}};
  if (request.on_chunk) {
    // Word by word: each chunk a word with the whitespace after it; tool calls in one chunk;
    // the last chunk carries the metadata and usage.
    const std::string text = reply.text();
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find(' ', at);
      end = end == std::string::npos ? text.size() : end + 1;
      if (request.cancelled()) throw CancelledError();
      MessageChunk chunk{ai(text.substr(at, end - at), reply.id), {}};
      (*request.on_chunk)(chunk);
      at = end;
    }
    MessageChunk last{ai("", reply.id), {}};
    for (std::size_t i = 0; i < reply.tool_calls.size(); ++i) {
      const auto& call = reply.tool_calls[i];
      last.tool_call_chunks.push_back({call.id, call.name, call.args.dump(), static_cast<int>(i)});
    }
    last.message.response_metadata = reply.response_metadata;
    last.message.usage_metadata = reply.usage_metadata;
    (*request.on_chunk)(last);
  }
  return reply;
}

boost::asio::awaitable<Message> LocalModel::agenerate(Request request) const {
  Message reply = generate(request);
  co_return reply;
}

}  // namespace sg
