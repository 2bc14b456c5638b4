// SPDX-License-Identifier: MIT
#include <stategraph/core/error.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/reducers/add_messages.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace sg {
namespace {

// Below this many messages in an update, the uncached form looks ids up by scanning the list (no
// allocation); above it, through a temporary hash index.
constexpr std::size_t kLinearLookupMaxUpdate = 8;

/// Finds the index of the last message with an id, as LangGraph's id->index map: by scanning,
/// through a temporary index, or through a run's cache.
class IdLookup {
 public:
  /// Scanning or a temporary index over `messages`.
  IdLookup(const std::vector<Message>& messages, bool hashed)
      : messages_(messages), index_(hashed ? &own_ : nullptr) {
    if (!index_) return;
    own_.reserve(messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i) own_[messages[i].id] = i;
  }
  /// A cache's index (already built).
  IdLookup(const std::vector<Message>& messages,
           std::unordered_map<std::string, std::size_t>& index)
      : messages_(messages), index_(&index) {}

  [[nodiscard]] std::optional<std::size_t> find(const std::string& id) const {
    if (index_) {
      auto it = index_->find(id);
      if (it == index_->end()) return std::nullopt;
      return it->second;
    }
    for (std::size_t i = messages_.size(); i-- > 0;) {
      if (messages_[i].id == id) return i;
    }
    return std::nullopt;
  }

  /// Records that a message with `id` was appended at `index`.
  void appended(const std::string& id, std::size_t index) {
    if (index_) (*index_)[id] = index;
  }

 private:
  const std::vector<Message>& messages_;
  std::unordered_map<std::string, std::size_t>* index_;
  std::unordered_map<std::string, std::size_t> own_;
};

/// Throws unless every RemoveMessage in `right` targets an id present in `left` or in an earlier
/// non-remove message of `right` (checked before anything is merged, so that a failing update
/// changes nothing).
void check_removals(const IdLookup& left, const std::vector<Message>& right) {
  std::unordered_set<std::string_view> added;
  const bool hashed = right.size() > kLinearLookupMaxUpdate;
  for (std::size_t i = 0; i < right.size(); ++i) {
    const Message& m = right[i];
    if (m.type != MessageType::remove) {
      if (hashed) added.insert(m.id);
      continue;
    }
    if (left.find(m.id)) continue;
    bool earlier = false;
    if (hashed) {
      earlier = added.contains(m.id);
    } else {
      for (std::size_t j = 0; j < i && !earlier; ++j) {
        earlier = right[j].type != MessageType::remove && right[j].id == m.id;
      }
    }
    if (!earlier) {
      throw InvalidUpdateError(
          "Attempting to delete a message with an ID that doesn't exist ('" + m.id + "')",
          errc::kUnknownMessageId);
    }
  }
}

/// Assigns ids to the update's messages; returns the position of its last REMOVE_ALL marker.
std::optional<std::size_t> prepare_update(std::vector<Message>& right) {
  std::optional<std::size_t> remove_all_at;
  for (std::size_t i = 0; i < right.size(); ++i) {
    if (right[i].id.empty()) right[i].id = new_uuid4();
    if (right[i].is_remove_all()) remove_all_at = i;
  }
  return remove_all_at;
}

/// LangGraph's merge of `right` into `messages` (after the REMOVE_ALL case). `origin`, when
/// given, follows the list: -1 for replaced and appended messages. Returns true when messages
/// were removed (positions changed).
bool merge(std::vector<Message>& messages, std::vector<Message>& right, IdLookup& lookup,
           ListOrigin* origin) {
  check_removals(lookup, right);
  std::unordered_set<std::string> to_remove;
  for (Message& m : right) {
    if (auto at = lookup.find(m.id)) {
      if (m.type == MessageType::remove) {
        to_remove.insert(m.id);
      } else {
        to_remove.erase(m.id);
        messages[*at] = std::move(m);
        if (origin) origin->mark_new(*at);
      }
    } else {
      lookup.appended(m.id, messages.size());
      messages.push_back(std::move(m));
      if (origin) origin->push_new();
    }
  }
  if (to_remove.empty()) return false;
  if (origin) {
    const auto first = std::find_if(messages.begin(), messages.end(),
                                    [&](const Message& m) { return to_remove.contains(m.id); });
    origin->erase_if(static_cast<std::size_t>(first - messages.begin()),
                     [&](std::size_t i) { return to_remove.contains(messages[i].id); });
  }
  std::erase_if(messages, [&](const Message& m) { return to_remove.contains(m.id); });
  return true;
}

}  // namespace

void AddMessages::apply(std::vector<Message>& messages, ListUpdate<Message>&& update) const {
  if (update.is_keep()) {
    apply_keep(messages, update.keep());
    return;
  }
  std::vector<Message>& right = update.items();
  for (Message& m : messages) {
    if (m.id.empty()) m.id = new_uuid4();
  }
  if (auto remove_all_at = prepare_update(right)) {
    right.erase(right.begin(), right.begin() + static_cast<std::ptrdiff_t>(*remove_all_at + 1));
    messages = std::move(right);
    return;
  }
  if (right.empty()) return;
  IdLookup lookup(messages, right.size() > kLinearLookupMaxUpdate);
  merge(messages, right, lookup, nullptr);
}

void AddMessages::apply(std::vector<Message>& messages, ListUpdate<Message>&& update,
                        Cache& cache) const {
  if (cache.track && cache.origin.size() != messages.size()) cache.origin.all_new(messages.size());
  if (update.is_keep()) {
    if (cache.track) cache.origin.keep(update.keep());
    apply_keep(messages, update.keep());
    cache.indexed = false;
    return;
  }
  if (!cache.indexed) {
    cache.index.clear();
    cache.index.reserve(messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (messages[i].id.empty()) messages[i].id = new_uuid4();
      cache.index[messages[i].id] = i;
    }
    cache.indexed = true;
  }
  std::vector<Message>& right = update.items();
  if (auto remove_all_at = prepare_update(right)) {
    right.erase(right.begin(), right.begin() + static_cast<std::ptrdiff_t>(*remove_all_at + 1));
    messages = std::move(right);
    cache.overwritten(messages);
    return;
  }
  if (right.empty()) return;
  IdLookup lookup(messages, cache.index);
  if (merge(messages, right, lookup, cache.track ? &cache.origin : nullptr)) cache.indexed = false;
}

void AddMessages::Cache::rebase(const std::vector<Message>& messages) {
  if (!track) return;
  origin.rebase(messages.size());
}

void AddMessages::Cache::overwritten(const std::vector<Message>& messages) {
  indexed = false;
  if (track) origin.all_new(messages.size());
}

std::optional<std::size_t> AddMessages::Cache::appended_count(const std::vector<Message>& messages,
                                                              const ListUpdate<Message>& update,
                                                              std::size_t limit) {
  if (update.is_keep()) return std::nullopt;
  if (!indexed) {
    // apply() would give the messages without an id one; this must not change the list.
    if (std::any_of(messages.begin(), messages.end(),
                    [](const Message& m) { return m.id.empty(); }))
      return std::nullopt;
    index.clear();
    index.reserve(messages.size());
    for (std::size_t k = 0; k < messages.size(); ++k) index[messages[k].id] = k;
    indexed = true;
  }
  const auto& items = update.items();
  if (items.empty() || items.size() > limit) return std::nullopt;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Message& m = items[k];
    if (m.id.empty() || m.type == MessageType::remove || index.count(m.id)) return std::nullopt;
    for (std::size_t j = 0; j < k; ++j) {
      if (items[j].id == m.id) return std::nullopt;
    }
  }
  return items.size();
}

std::vector<Message> remove(std::initializer_list<std::string_view> ids) {
  std::vector<Message> out;
  out.reserve(ids.size());
  for (auto id : ids) out.push_back(remove_message(std::string(id)));
  return out;
}

std::vector<Message> remove(std::span<const std::string> ids) {
  std::vector<Message> out;
  out.reserve(ids.size());
  for (const auto& id : ids) out.push_back(remove_message(id));
  return out;
}

std::vector<Message> remove_all() {
  return {remove_message(std::string(kRemoveAllMessages))};
}

}  // namespace sg
