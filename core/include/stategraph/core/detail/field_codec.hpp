// SPDX-License-Identifier: MIT
#pragma once

// The per-field codecs of a state type: how its fields, updates and task writes go to a
// checkpointer and come back (channel names: <stategraph/core/channels.hpp>). Internal to
// stategraph.
//
// A field whose reducer implements the list-edits hook (ListEditsReducer: add_messages, Concat)
// goes to savers that take deltas as a ListDelta against the version stored before, so a
// superstep stores only the elements it added (docs/checkpoint-format.md).

#include <stategraph/core/checkpointer.hpp>
#include <stategraph/core/detail/cbor.hpp>
#include <stategraph/core/detail/executor_core.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/list_origin.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/update.hpp>

#include <any>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace sg::detail {

/// A reducer whose cache tracks where each element of the list was in the last checkpointed
/// list (add_messages): its field is stored incrementally.
template <class R>
concept TrackedListReducer = CachedReducer<R> &&
    requires(typename R::Cache& c, const typename R::value_type& v) {
  c.track = true;
  c.origin;
  c.rebase(v);
};

/// A reducer whose cache tells how many items an update appends at the end of a list
/// (add_messages). A concept, not an inline requires-expression: clang before 16 takes a
/// missing R::Cache in such an expression's parameters for a hard error.
template <class R>
concept CountsAppends = requires(typename R::Cache& c, const typename R::value_type& list,
                                 const typename R::update_type& u) {
  c.appended_count(list, u);
};

/// One new element of a list for a ListDelta or a TaskWrite of kind `items`: its CBOR.
template <class T>
std::string tracked_element_cbor(const T& element) {
  std::string bytes;
  if constexpr (std::is_same_v<T, Message>) {
    bytes.reserve(element.content.is_string() ? element.content.str().size() + 64 : 256);
    message_to_cbor(element, bytes);
  } else {
    CborWriter<std::string>(bytes).value(nlohmann::json(element));
  }
  return bytes;
}

/// A field write for a saver: like write_to_json, but messages appended to a message list go
/// pre-encoded (a write of kind `items`).
template <Reducer R>
TaskWrite write_for_saver(std::string_view field, const Write<R>& write) {
  if constexpr (std::is_same_v<typename R::update_type, ListUpdate<Message>>) {
    if (const auto* update = std::get_if<0>(&write); update && !update->is_keep()) {
      TaskWrite out;
      out.channel = std::string(field);
      out.kind = TaskWrite::Kind::items;
      out.items.reserve(update->items().size());
      for (const auto& m : update->items()) out.items.push_back(tracked_element_cbor(m));
      return out;
    }
  }
  return TaskWrite(std::string(field), write_to_json<R>(write));
}

/// A tracked list as a ListDelta against the version stored as `base_version` (-1: none): the
/// unchanged runs of its origin are ranges of the base list, the rest new elements. O(changes).
template <class List>
ListDelta tracked_list_delta(const List& list, const ListOrigin& origin,
                             std::int64_t base_version) {
  ListDelta delta;
  if (base_version < 0 || origin.size() != list.size()) {
    delta.pieces.reserve(list.size());
    for (const auto& element : list) delta.pieces.push_back({0, 0, tracked_element_cbor(element)});
    return delta;
  }
  delta.base = base_version;
  std::int64_t run_from = origin.head_length() ? origin.head_from() : -1;
  std::int64_t run_to = run_from + static_cast<std::int64_t>(origin.head_length());
  auto close_run = [&] {
    if (run_from >= 0) {
      delta.pieces.push_back(
          {static_cast<std::uint64_t>(run_from), static_cast<std::uint64_t>(run_to), {}});
    }
    run_from = run_to = -1;
  };
  const auto tail = origin.tail();
  for (std::size_t t = 0; t < tail.size(); ++t) {
    const std::int64_t at = tail[t];
    if (at < 0) {
      close_run();
      delta.pieces.push_back({0, 0, tracked_element_cbor(list[origin.head_length() + t])});
    } else if (run_from >= 0 && at == run_to) {
      ++run_to;
    } else {
      close_run();
      run_from = at;
      run_to = at + 1;
    }
  }
  close_run();
  return delta;
}

/// The cache slot of a field whose reducer keeps none.
struct MonostateCache {
  struct Cache {};
};

template <State S, class Seq>
struct FieldCachesOf;
template <State S, std::size_t... I>
struct FieldCachesOf<S, std::index_sequence<I...>> {
  using type = std::tuple<
      typename std::conditional_t<CachedReducer<typename field_t<S, I>::reducer_type>,
                                  typename field_t<S, I>::reducer_type, MonostateCache>::Cache...>;
};
/// The reducer caches of a run, one per field (see CachedReducer).
template <State S>
using FieldCaches = typename FieldCachesOf<S, std::make_index_sequence<field_count_v<S>>>::type;

/// The state's field names in schema order.
template <State S>
std::span<const std::string_view> field_names() {
  static const auto names = [] {
    std::array<std::string_view, field_count_v<S>> out{};
    for_each_field<S>([&](auto i) { out[i] = field_t<S, i>::name; });
    return out;
  }();
  return names;
}

/// Calls fn(std::integral_constant<size_t, I>) for field I == index.
template <State S, class Fn>
void visit_field(std::size_t index, Fn&& fn) {
  for_each_field<S>([&](auto i) {
    if (i == index) fn(i);
  });
}

/// How the fields of S go to checkpoints and come back. Stateless; the functions that read or
/// write a run's reducer caches take them.
template <State S>
struct FieldCodec {
  using Caches = FieldCaches<S>;

  /// Enables tracking in the caches of fields stored incrementally (with a checkpointer).
  static void track_lists(Caches& caches) {
    for_each_field<S>([&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      if constexpr (ListEditsReducer<R>) std::get<i>(caches).track = true;
    });
  }

  /// Loads the fields (and their caches) from a checkpoint's values. Throws CheckpointError for a
  /// value that does not fit its field.
  static void restore(S& state, Caches& caches, const CheckpointTuple& tuple) {
    if constexpr (kJsonState<S>) {
      const auto& values = tuple.checkpoint.channel_values;
      state = S{};
      for_each_field<S>([&](auto i) {
        const std::string name(field_t<S, i>::name);
        if (auto it = values.find(name); it != values.end()) {
          try {
            field_value<i>(state) = json_to<typename field_t<S, i>::value_type>(*it);
          } catch (const std::exception& e) {
            throw CheckpointError(errc::kCheckpointCorrupt,
                                  "thread '" + tuple.config.thread_id + "', checkpoint '" +
                                      tuple.config.checkpoint_id + "': field '" + name +
                                      "' does not fit the state: " + e.what());
          }
        }
        using R = typename field_t<S, i>::reducer_type;
        if constexpr (CachedReducer<R>) {
          auto& cache = std::get<i>(caches);
          cache.overwritten(field_value<i>(state));
          if constexpr (ListEditsReducer<R>) cache.rebase(field_value<i>(state));
        }
      });
    }
  }

  /// Appends the writes of `update` as saved, field by field. `for_saver`: messages appended to
  /// a message list go pre-encoded (write_for_saver), for savers that take deltas. `appendable`
  /// (with `state` and `caches` before the update applies): the writes go with the step's
  /// checkpoint, which their task alone produces: messages it only appends are sent as a write
  /// of kind `appended` and a last value as one of kind `stored`, so the saver keeps one copy.
  static void append_writes(const Update<S>& update, ChannelWrites& writes, bool for_saver = false,
                            bool appendable = false, const S* state = nullptr,
                            Caches* caches = nullptr) {
    if constexpr (kJsonState<S>) {
      for_each_field<S>([&](auto i) {
        using R = typename field_t<S, i>::reducer_type;
        if constexpr (!kManagedValue<typename field_t<S, i>::value_type>) {
          const auto& slot = update.template slot<i>();
          if (!slot) return;
          if (appendable) {
            if (auto k = pure_append<i>(*slot, *state, *caches)) {
              auto& w = writes.emplace_back();
              w.channel = std::string(field_t<S, i>::name);
              w.kind = TaskWrite::Kind::appended;
              w.count = *k;
              return;
            }
            if constexpr (kSingleWriter<R>) {
              if (slot->index() == 0) {
                writes.emplace_back(std::string(field_t<S, i>::name), write_to_json<R>(*slot))
                    .kind = TaskWrite::Kind::stored;
                return;
              }
            }
          }
          if (for_saver) {
            writes.push_back(write_for_saver<R>(field_t<S, i>::name, *slot));
          } else {
            writes.emplace_back(std::string(field_t<S, i>::name), write_to_json<R>(*slot));
          }
        }
      });
    }
  }

  /// The number of messages a write of message-list field I appends at the end of the list,
  /// when that is all it does (new ids, no removals; checked before it is applied); nullopt
  /// otherwise.
  template <std::size_t I, class W>
  static std::optional<std::size_t> pure_append(const W& write, const S& state, Caches& caches) {
    using R = typename field_t<S, I>::reducer_type;
    if constexpr (ListEditsReducer<R> &&
                  std::is_same_v<typename R::update_type, ListUpdate<Message>> &&
                  CountsAppends<R>) {
      auto& cache = std::get<I>(caches);
      const auto* update = std::get_if<0>(&write);
      if (!update || !cache.track) return std::nullopt;
      return cache.appended_count(field_value<I>(state), *update);
    } else {
      (void)write;
      (void)state;
      (void)caches;
      return std::nullopt;
    }
  }

  /// A saved write of field `field` as an update.
  static Update<S> saved_write(std::size_t field, const nlohmann::json& value) {
    Update<S> update;
    if constexpr (kJsonState<S>) {
      visit_field<S>(field, [&](auto i) {
        update.template slot<i>() = write_from_json<typename field_t<S, i>::reducer_type>(value);
      });
    }
    return update;
  }

  /// Rebuilds a finished task's Command from its saved (or cached) writes; a field written twice
  /// (several Commands) adds an update to `more`. `read_goto` turns a saved goto into a Goto.
  template <class ReadGoto>
  static Command<S> restore_command(const std::vector<PendingWrite>& writes,
                                    std::vector<Update<S>>& more, const ReadGoto& read_goto) {
    Command<S> command;
    if constexpr (kJsonState<S>) {
      for (const auto& w : writes) {
        if (w.channel == kGotoWrite) {
          for (const auto& go : w.value) command.go_to.push_back(read_goto(go));
          continue;
        }
        if (!is_finished_write(w.channel) || w.channel == kNoWrites) continue;
        detail::visit_field_named<S>(w.channel, [&](auto i) {
          auto& slot = command.update.template slot<i>();
          auto write = write_from_json<typename field_t<S, i>::reducer_type>(w.value);
          if (!slot) {
            slot = std::move(write);
            return;
          }
          Update<S> extra;
          extra.template slot<i>() = std::move(write);
          more.push_back(std::move(extra));
        });
      }
    }
    return command;
  }

  /// The value of field `field` for a checkpoint.
  static nlohmann::json field_json(const S& state, std::size_t field) {
    nlohmann::json value;
    if constexpr (kJsonState<S>) {
      visit_field<S>(field, [&](auto i) { value = nlohmann::json(field_value<i>(state)); });
    }
    return value;
  }

  /// A tracked list field as a delta against its version `base` (-1: none); false for a field
  /// that is not a tracked list.
  static bool list_delta(const S& state, const Caches& caches, std::size_t field, std::int64_t base,
                         ListDelta& delta) {
    bool tracked = false;
    visit_field<S>(field, [&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      if constexpr (ListEditsReducer<R> && kJsonState<S>) {
        delta = tracked_list_delta(field_value<i>(state), std::get<i>(caches).origin, base);
        tracked = true;
      }
    });
    return tracked;
  }

  /// After field `field` was stored: a tracked list takes the stored list as its base.
  static void stored(const S& state, Caches& caches, std::size_t field) {
    visit_field<S>(field, [&](auto i) {
      using R = typename field_t<S, i>::reducer_type;
      if constexpr (ListEditsReducer<R>) std::get<i>(caches).rebase(field_value<i>(state));
    });
  }

  /// The state as JSON, managed values left out (null for a state without JSON).
  static nlohmann::json state_json(const S& state) {
    if constexpr (kJsonState<S>) {
      nlohmann::json out = state_to_json(state);
      for_each_field<S>([&](auto i) {
        if constexpr (kManagedValue<typename field_t<S, i>::value_type>)
          out.erase(std::string(field_t<S, i>::name));
      });
      return out;
    }
    return nullptr;
  }

  /// A Send argument as JSON. Throws sg::Error when it does not convert.
  static nlohmann::json send_arg_json(
      const std::string& node, const std::any& arg,
      const std::function<nlohmann::json(const std::any&)>& to_json) {
    if constexpr (kJsonState<S>) {
      if (const S* state = std::any_cast<S>(&arg)) return state_to_json(*state);
    }
    if (to_json) return to_json(arg);
    throw Error(errc::kInvalidRun,
                "the argument of a Send to node '" + node +
                    "' cannot be checkpointed: its type does not convert to JSON");
  }
};

}  // namespace sg::detail
