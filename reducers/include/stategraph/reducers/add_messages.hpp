// SPDX-License-Identifier: MIT
#pragma once

#include <stategraph/core/list_origin.hpp>
#include <stategraph/core/list_update.hpp>
#include <stategraph/core/message.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sg {

/// LangGraph's `add_messages` reducer for message lists, with its exact semantics:
/// - messages without an id get a random UUID v4, on both sides (the state's own messages too);
/// - a message whose id is already present replaces it in place (the last occurrence when the
///   list holds duplicates), even when its type differs;
/// - a RemoveMessage deletes every message with its id; its id must exist in the list or earlier
///   in the same update, otherwise the whole update fails with InvalidUpdateError (code
///   "message.unknown_id") naming the id, and nothing but the assigned ids changes;
/// - removing then re-adding an id in one update keeps the message (at its old position);
/// - a RemoveMessage with id kRemoveAllMessages drops everything before it: the result is the
///   rest of the update, verbatim;
/// - a KeepSlice update keeps a slice (JS slice semantics).
/// Stateless; thread-safe (each call works on its own arguments).
struct AddMessages {
  using value_type = std::vector<Message>;
  using update_type = ListUpdate<Message>;

  /// What the executor keeps per message-list field and run (see CachedReducer): an id index, so
  /// that appending is O(1) whatever the list's length, and, with `track`, the position of each
  /// message in the last checkpointed list (`origin`, -1 for a message added or replaced since)
  /// so a checkpoint stores only what changed. Not synchronized.
  struct Cache {
    bool track = false;
    ListOrigin origin;
    std::unordered_map<std::string, std::size_t> index;  // id -> last position
    bool indexed = false;

    /// Makes `messages` the base list: every message at its own position.
    void rebase(const std::vector<Message>& messages);
    /// The list was replaced wholesale: every message is new.
    void overwritten(const std::vector<Message>& messages);
    /// How many messages `update` appends to the end of `messages` when that is all it does (1
    /// to `limit` messages with new, distinct ids; no removal); nullopt otherwise, also when a
    /// message of the list has no id. Builds the id index the next apply() would build.
    [[nodiscard]] std::optional<std::size_t> appended_count(const std::vector<Message>& messages,
                                                            const ListUpdate<Message>& update,
                                                            std::size_t limit = 8);
  };

  /// Merges `update` into `messages` in place. Throws InvalidUpdateError as described above.
  void apply(std::vector<Message>& messages, ListUpdate<Message>&& update) const;
  /// The same, using and maintaining `cache`, which must have followed every change of
  /// `messages` since it was built (the executor guarantees that).
  void apply(std::vector<Message>& messages, ListUpdate<Message>&& update, Cache& cache) const;

  /// Functional form: the merged list of `left` and `right`.
  [[nodiscard]] std::vector<Message> operator()(std::vector<Message> left,
                                                std::vector<Message> right) const {
    apply(left, ListUpdate<Message>(std::move(right)));
    return left;
  }
};

/// The add_messages reducer (use in a schema, or call: `sg::add_messages(left, right)`).
inline constexpr AddMessages add_messages{};

/// RemoveMessages for each id, to return from a node: `sg::remove({"a", "b"})`. (There is no
/// single-string overload: unqualified `remove("x")` would call the C library's `::remove`.)
[[nodiscard]] std::vector<Message> remove(std::initializer_list<std::string_view> ids);
/// RemoveMessages for each id in `ids`.
[[nodiscard]] std::vector<Message> remove(std::span<const std::string> ids);
/// A one-message update that clears the list: `[remove_message(kRemoveAllMessages)]`; append
/// messages after it to replace the list.
[[nodiscard]] std::vector<Message> remove_all();

}  // namespace sg
