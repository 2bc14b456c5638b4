// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/nodes/short_term.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "invalid_argument.hpp"

namespace sg {
namespace {

void check_importance(double importance) {
  if (!std::isfinite(importance))
    detail::invalid_argument(fmt::format("importance must be finite, not {}", importance));
}

/// What pruning needs to know of one message.
struct PruneItem {
  std::int64_t tokens = 0;
  bool system = false;
  double importance = 1.0;
};

struct Limits {
  std::int64_t max_tokens = 0;
  std::optional<std::size_t> max_messages;
  PruningStrategy strategy = PruningStrategy::hybrid;
  double threshold = 0.5;
};

/// The seed's _enforce_limits over `items`: the indices of the kept items, in order. Drops one
/// item at a time while over the limits and more than one is left; stops when the strategy has
/// nothing it may drop (the seed's loops would spin forever on only system messages).
std::vector<std::size_t> plan_pruning(const std::vector<PruneItem>& items, const Limits& limits) {
  std::vector<std::size_t> alive(items.size());
  std::iota(alive.begin(), alive.end(), std::size_t{0});
  std::int64_t total = 0;
  for (const auto& item : items) total += item.tokens;
  auto over = [&] {
    return alive.size() > 1 && (total > limits.max_tokens ||
                                (limits.max_messages && alive.size() > *limits.max_messages));
  };
  auto drop = [&](std::size_t pos) {
    total -= items[alive[pos]].tokens;
    alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(pos));
  };
  auto first_non_system = [&]() -> std::optional<std::size_t> {
    for (std::size_t p = 0; p < alive.size(); ++p)
      if (!items[alive[p]].system) return p;
    return std::nullopt;
  };
  auto fifo = [&] {
    while (over()) {
      const auto pos = first_non_system();
      if (!pos) return;
      drop(*pos);
    }
  };
  switch (limits.strategy) {
    case PruningStrategy::oldest:
      while (over()) drop(0);
      break;
    case PruningStrategy::fifo:
      fifo();
      break;
    case PruningStrategy::importance:
      while (over()) {
        std::optional<std::size_t> least;
        for (std::size_t p = 0; p < alive.size(); ++p) {
          const auto& item = items[alive[p]];
          if (!item.system && (!least || item.importance < items[alive[*least]].importance))
            least = p;
        }
        if (!least) break;
        drop(*least);
      }
      break;
    case PruningStrategy::hybrid:
      while (over()) {
        std::optional<std::size_t> low;
        for (std::size_t p = 0; p < alive.size() && !low; ++p) {
          const auto& item = items[alive[p]];
          if (!item.system && item.importance < limits.threshold) low = p;
        }
        if (!low) {
          fifo();  // the seed falls back to FIFO once no unimportant message is left
          break;
        }
        drop(*low);
      }
      break;
  }
  return alive;
}

std::vector<std::size_t> kept_indices(std::span<const Message> messages,
                                      const PruneOptions& options) {
  check_prune_options(options);
  std::vector<PruneItem> items;
  items.reserve(messages.size());
  for (const auto& m : messages) {
    if (m.type == MessageType::remove)
      detail::invalid_argument("prune_messages: a RemoveMessage is not a message");
    items.push_back({options.token_counter(m), m.type == MessageType::system, importance_of(m)});
  }
  return plan_pruning(items, {options.max_tokens, options.max_messages, options.strategy,
                              options.importance_threshold});
}

}  // namespace

double importance_of(const Message& message) {
  const auto& kwargs = message.additional_kwargs;
  if (!kwargs.is_object()) return 1.0;
  const auto it = kwargs.find(kImportanceKey);
  if (it == kwargs.end()) return 1.0;
  if (!it->is_number())
    detail::invalid_argument("additional_kwargs[\"importance\"] must be a number, not " +
                             it->dump());
  const double value = it->get<double>();
  check_importance(value);
  return value;
}

Message with_importance(Message message, double importance) {
  check_importance(importance);
  if (!message.additional_kwargs.is_object()) message.additional_kwargs = nlohmann::json::object();
  message.additional_kwargs[std::string(kImportanceKey)] = importance;
  return message;
}

void check_prune_options(const PruneOptions& options) {
  if (options.max_tokens <= 0)
    detail::invalid_argument(fmt::format("max_tokens must be > 0, not {}", options.max_tokens));
  if (options.max_messages && *options.max_messages == 0)
    detail::invalid_argument("max_messages must be > 0");
  if (!std::isfinite(options.importance_threshold))
    detail::invalid_argument("importance_threshold must be finite");
}

std::vector<Message> prune_messages(std::span<const Message> messages,
                                    const PruneOptions& options) {
  std::vector<Message> out;
  for (std::size_t i : kept_indices(messages, options)) out.push_back(messages[i]);
  return out;
}

std::vector<Message> pruned_removals(std::span<const Message> messages,
                                     const PruneOptions& options) {
  const auto kept = kept_indices(messages, options);
  std::vector<Message> removals;
  std::size_t next = 0;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (next < kept.size() && kept[next] == i) {
      ++next;
      continue;
    }
    if (messages[i].id.empty())
      detail::invalid_argument(
          fmt::format("pruned_removals: message {} has no id, so it cannot be removed", i));
    removals.push_back(remove_message(messages[i].id));
  }
  return removals;
}

double recency_weight(MemoryClock::time_point timestamp, MemoryClock::time_point now,
                      const RecencyOptions& options) {
  const double age_minutes =
      std::max(0.0, std::chrono::duration<double, std::ratio<60>>(now - timestamp).count());
  return std::exp(-options.decay_rate * age_minutes / options.half_life_minutes);
}

// ---- ShortTermMemoryBuffer ----

ShortTermMemoryBuffer::ShortTermMemoryBuffer(ShortTermMemoryOptions options)
    : options_(std::move(options)) {
  check_prune_options({options_.max_tokens, options_.max_messages, options_.strategy,
                       options_.importance_threshold, options_.token_counter});
  if (!(options_.recency.decay_rate >= 0) || !std::isfinite(options_.recency.decay_rate))
    detail::invalid_argument("recency decay_rate must be finite and >= 0");
  if (!(options_.recency.half_life_minutes > 0) ||
      !std::isfinite(options_.recency.half_life_minutes))
    detail::invalid_argument("recency half_life_minutes must be finite and > 0");
}

MemoryClock::time_point ShortTermMemoryBuffer::now() const {
  return options_.clock ? options_.clock() : MemoryClock::now();
}

MemoryEntry ShortTermMemoryBuffer::make_entry(Message message, double importance) const {
  if (message.type == MessageType::remove)
    detail::invalid_argument("a RemoveMessage cannot be added to a buffer");
  check_importance(importance);
  MemoryEntry entry;
  entry.tokens = options_.token_counter(message);
  entry.message = std::move(message);
  entry.importance = importance;
  entry.timestamp = now();
  return entry;
}

void ShortTermMemoryBuffer::add(Message message) {
  const double importance = importance_of(message);
  add(std::move(message), importance);
}

void ShortTermMemoryBuffer::add(Message message, double importance) {
  MemoryEntry entry = make_entry(std::move(message), importance);
  total_tokens_ += entry.tokens;
  entries_.push_back(std::move(entry));
  enforce_limits();
}

std::vector<MemoryEntry> ShortTermMemoryBuffer::checked_entries(
    std::vector<MemoryEntry> entries) const {
  std::vector<MemoryEntry> checked;
  checked.reserve(entries.size());
  for (auto& e : entries) {
    const auto stamp = e.timestamp;
    checked.push_back(make_entry(std::move(e.message), e.importance));
    if (stamp != MemoryClock::time_point{}) checked.back().timestamp = stamp;
  }
  return checked;
}

void ShortTermMemoryBuffer::append(std::vector<MemoryEntry> entries) {
  for (auto& e : checked_entries(std::move(entries))) {
    total_tokens_ += e.tokens;
    entries_.push_back(std::move(e));
  }
  enforce_limits();
}

void ShortTermMemoryBuffer::replace(std::vector<MemoryEntry> entries) {
  std::vector<MemoryEntry> checked = checked_entries(std::move(entries));
  std::int64_t total = 0;
  for (const auto& e : checked) total += e.tokens;
  entries_ = std::move(checked);
  total_tokens_ = total;
}

void ShortTermMemoryBuffer::set_importance(std::size_t index, double importance) {
  if (index >= entries_.size())
    detail::invalid_argument(
        fmt::format("entry {} out of range ({} entries)", index, entries_.size()));
  check_importance(importance);
  entries_[index].importance = importance;
}

void ShortTermMemoryBuffer::clear() noexcept {
  entries_.clear();
  total_tokens_ = 0;
}

void ShortTermMemoryBuffer::enforce_limits() {
  std::vector<PruneItem> items;
  items.reserve(entries_.size());
  for (const auto& e : entries_)
    items.push_back({e.tokens, e.message.type == MessageType::system, e.importance});
  const auto kept = plan_pruning(items, {options_.max_tokens, options_.max_messages,
                                         options_.strategy, options_.importance_threshold});
  if (kept.size() == entries_.size()) return;
  std::vector<MemoryEntry> out;
  out.reserve(kept.size());
  std::int64_t total = 0;
  for (std::size_t i : kept) {
    total += entries_[i].tokens;
    out.push_back(std::move(entries_[i]));
  }
  entries_ = std::move(out);
  total_tokens_ = total;
}

std::vector<Message> ShortTermMemoryBuffer::context() const {
  std::vector<Message> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.message);
  return out;
}

double ShortTermMemoryBuffer::effective_importance(const MemoryEntry& entry) const {
  return entry.importance * recency_weight(entry.timestamp, now(), options_.recency);
}

std::vector<Message> ShortTermMemoryBuffer::weighted_context() const {
  std::vector<std::pair<double, std::size_t>> weighted;
  weighted.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i)
    weighted.emplace_back(effective_importance(entries_[i]), i);
  std::stable_sort(weighted.begin(), weighted.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Message> out;
  out.reserve(weighted.size());
  for (const auto& [weight, i] : weighted) out.push_back(entries_[i].message);
  return out;
}

// ---- compression ----

SummarizationCompressor::SummarizationCompressor(std::shared_ptr<const ChatModel> model,
                                                 std::string prompt, ChatOptions model_options)
    : model_(std::move(model)),
      prompt_(std::move(prompt)),
      model_options_(std::move(model_options)) {
  if (!model_) detail::invalid_argument("SummarizationCompressor needs a model");
}

std::vector<MemoryEntry> SummarizationCompressor::compress(std::vector<MemoryEntry> entries) {
  if (entries.size() < 3) return entries;
  std::vector<Message> segment;
  segment.reserve(entries.size());
  for (const auto& e : entries) segment.push_back(e.message);
  const std::vector<Message> request{human(get_buffer_string(segment)), human(prompt_)};
  const Message reply = model_->invoke(request, model_options_);
  MemoryEntry summary;
  summary.message = sg::system("[Previous conversation summary]: " + reply.text());
  summary.importance = 0.8;  // summaries are moderately important
  return {std::move(summary)};
}

SelectiveCompressor::SelectiveCompressor(double importance_threshold)
    : threshold_(importance_threshold) {
  if (!std::isfinite(threshold_))
    detail::invalid_argument("SelectiveCompressor: the threshold must be finite");
}

std::vector<MemoryEntry> SelectiveCompressor::compress(std::vector<MemoryEntry> entries) {
  std::vector<MemoryEntry> important;
  std::size_t omitted = 0;
  for (auto& e : entries) {
    if (e.importance >= threshold_) {
      important.push_back(std::move(e));
    } else {
      ++omitted;
    }
  }
  if (omitted == 0) return important;
  MemoryEntry note;
  note.message = sg::system(fmt::format("[{} messages omitted for brevity]", omitted));
  note.importance = 0.3;
  important.insert(important.begin(), std::move(note));
  return important;
}

CompressionPipeline::CompressionPipeline(std::vector<std::shared_ptr<Compressor>> compressors,
                                         double threshold)
    : compressors_(std::move(compressors)), threshold_(threshold) {
  for (const auto& c : compressors_)
    if (!c) detail::invalid_argument("CompressionPipeline: a compressor is null");
  if (!(threshold_ > 0 && threshold_ <= 1))
    detail::invalid_argument(
        fmt::format("CompressionPipeline: the threshold must be in (0, 1], not {}", threshold_));
}

bool CompressionPipeline::should_compress(const ShortTermMemoryBuffer& buffer) const {
  return static_cast<double>(buffer.current_tokens()) >
         static_cast<double>(buffer.max_tokens()) * threshold_;
}

bool CompressionPipeline::compress_if_needed(ShortTermMemoryBuffer& buffer) const {
  if (!should_compress(buffer)) return false;
  const auto& entries = buffer.entries();
  const std::size_t segment = entries.size() / 3;
  std::vector<MemoryEntry> compressed(entries.begin(),
                                      entries.begin() + static_cast<std::ptrdiff_t>(segment));
  for (const auto& c : compressors_) compressed = c->compress(std::move(compressed));
  compressed.insert(compressed.end(), entries.begin() + static_cast<std::ptrdiff_t>(segment),
                    entries.end());
  buffer.replace(std::move(compressed));
  return true;
}

// ---- ContextManager ----

ContextManager::ContextManager(ShortTermMemoryOptions per_context)
    : per_context_(std::move(per_context)) {
  ShortTermMemoryBuffer check(per_context_);  // rejects bad options now, not at first use
}

ShortTermMemoryBuffer& ContextManager::create_context(const std::string& name) {
  if (name.empty()) detail::invalid_argument("a context needs a name");
  if (contexts_.count(name)) detail::invalid_argument("context '" + name + "' exists already");
  return contexts_.emplace(name, ShortTermMemoryBuffer(per_context_)).first->second;
}

void ContextManager::switch_context(const std::string& name, bool preserve_summary) {
  if (name.empty()) detail::invalid_argument("a context needs a name");
  if (active_ == name) return;
  if (!contexts_.count(name)) create_context(name);
  if (active_) {
    auto& current = contexts_.at(*active_);
    if (preserve_summary && !current.entries().empty()) {
      const std::size_t last = current.entries().size() - 1;
      current.set_importance(last, std::max(current.entries()[last].importance, 0.9));
    }
    stack_.push_back(*active_);
  }
  active_ = name;
}

std::optional<std::string> ContextManager::return_to_previous() {
  if (stack_.empty()) return std::nullopt;
  active_ = std::move(stack_.back());
  stack_.pop_back();
  return active_;
}

void ContextManager::merge_contexts(const std::string& source, const std::string& target) {
  if (source == target)
    detail::invalid_argument("merge_contexts: source and target are both '" + source + "'");
  auto from = contexts_.find(source);
  auto to = contexts_.find(target);
  if (from == contexts_.end())
    detail::invalid_argument("merge_contexts: no context '" + source + "'");
  if (to == contexts_.end())
    detail::invalid_argument("merge_contexts: no context '" + target + "'");
  std::vector<MemoryEntry> moved = from->second.entries();
  for (auto& e : moved) e.importance *= 0.7;  // merged content matters less
  to->second.append(std::move(moved));
  contexts_.erase(from);
  if (active_ == source) active_ = target;
  std::erase(stack_, source);
}

ShortTermMemoryBuffer* ContextManager::active_buffer() {
  return active_ ? find(*active_) : nullptr;
}

ShortTermMemoryBuffer* ContextManager::find(const std::string& name) {
  auto it = contexts_.find(name);
  return it == contexts_.end() ? nullptr : &it->second;
}

// ---- attention windows ----

double cosine_similarity(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size())
    detail::invalid_argument(
        fmt::format("cosine_similarity: sizes {} and {} differ", a.size(), b.size()));
  double dot = 0;
  double na = 0;
  double nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return na > 0 && nb > 0 ? dot / (std::sqrt(na) * std::sqrt(nb)) : 0.0;
}

std::vector<Message> attention_window(std::span<const MemoryEntry> entries, std::string_view query,
                                      Embeddings& embedder, std::int64_t window_tokens) {
  if (window_tokens <= 0)
    detail::invalid_argument(
        fmt::format("attention_window: window_tokens must be > 0, not {}", window_tokens));
  if (entries.empty()) return {};
  std::vector<std::string> texts{std::string(query)};
  for (const auto& e : entries) texts.push_back(e.message.text());
  const auto vectors = embedder.embed(texts);
  if (vectors.size() != texts.size())
    detail::invalid_argument(
        fmt::format("attention_window: the embedder returned {} vectors for {} texts",
                    vectors.size(), texts.size()));
  std::vector<std::pair<double, std::size_t>> scored;
  scored.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    scored.emplace_back(cosine_similarity(vectors[0], vectors[i + 1]), i);
  // Python's sort(reverse=True) over (similarity, index, entry): ties go to the later entry.
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  std::set<std::size_t> selected;
  std::int64_t used = 0;
  for (const auto& [similarity, idx] : scored) {
    if (used + entries[idx].tokens > window_tokens) break;
    const std::size_t from = idx == 0 ? 0 : idx - 1;
    const std::size_t to = std::min(entries.size(), idx + 2);
    for (std::size_t n = from; n < to; ++n) {
      if (selected.count(n) || used + entries[n].tokens > window_tokens) continue;
      selected.insert(n);
      used += entries[n].tokens;
    }
  }
  std::vector<Message> out;
  for (std::size_t i : selected) out.push_back(entries[i].message);
  return out;
}

// ---- ShortTermMemorySystem ----

namespace {

ShortTermMemoryOptions buffer_options(const ShortTermMemorySystemOptions& o, std::int64_t tokens) {
  ShortTermMemoryOptions b;
  b.max_tokens = tokens;
  b.token_counter = o.token_counter;
  b.clock = o.clock;
  return b;  // hybrid pruning, threshold 0.5, recency 0.1 / 5 min: the seed's defaults
}

std::vector<std::shared_ptr<Compressor>> compressors_for(const ShortTermMemorySystemOptions& o) {
  std::vector<std::shared_ptr<Compressor>> out;
  if (o.llm) out.push_back(std::make_shared<SummarizationCompressor>(o.llm));
  out.push_back(std::make_shared<SelectiveCompressor>());
  return out;
}

}  // namespace

ShortTermMemorySystem::ShortTermMemorySystem(ShortTermMemorySystemOptions options)
    : options_(std::move(options)),
      buffer_(buffer_options(options_, options_.max_tokens)),
      contexts_(buffer_options(options_, std::max<std::int64_t>(1, options_.max_tokens / 2))),
      pipeline_(compressors_for(options_), options_.compression_threshold) {
  if (options_.attention_window_tokens <= 0)
    detail::invalid_argument("attention_window_tokens must be > 0");
}

void ShortTermMemorySystem::add_interaction(Message message, double importance,
                                            const std::optional<std::string>& context) {
  ShortTermMemoryBuffer* target = &buffer_;
  if (context) {
    contexts_.switch_context(*context);
    target = contexts_.active_buffer();
  }
  target->add(std::move(message), importance);
  pipeline_.compress_if_needed(buffer_);
}

std::vector<Message> ShortTermMemorySystem::context_for_llm(
    const std::optional<std::string>& query) {
  if (options_.enable_attention && query && options_.embedder)
    return attention_window(buffer_.entries(), *query, *options_.embedder,
                            options_.attention_window_tokens);
  return buffer_.context();
}

MemoryStats ShortTermMemorySystem::stats() const {
  MemoryStats s;
  s.total_entries = buffer_.entries().size();
  s.total_tokens = buffer_.current_tokens();
  s.max_tokens = buffer_.max_tokens();
  s.utilization = static_cast<double>(s.total_tokens) / static_cast<double>(s.max_tokens);
  s.active_context = contexts_.active_context();
  s.context_count = contexts_.context_count();
  return s;
}

}  // namespace sg
