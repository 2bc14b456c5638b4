// SPDX-License-Identifier: MIT
// Shared by the two halves of LangGraph's test_time_travel.py port (test_time_travel_a.cpp,
// test_time_travel_b.cpp): the state, the call log and the node builders both use. Each
// includer is one test binary, so the anonymous namespace gives each its own copy.
#pragma once

#include <algorithm>
#include <atomic>
#include <mutex>
#include <ostream>
#include <set>
#include <stdexcept>

#include "parity.hpp"

using json = nlohmann::json;
using sg::parity::at;
using sg::parity::Strings;
using sg::parity::thread;

namespace {

/// A list of strings that doctest prints on failure.
struct List {
  Strings items{};
  List() = default;
  List(std::initializer_list<std::string> list) : items(list) {}
  List(Strings list) : items(std::move(list)) {}  // NOLINT: implicit by design
  friend bool operator==(const List&, const List&) = default;
  friend std::ostream& operator<<(std::ostream& os, const List& l) {
    os << "{";
    for (std::size_t i = 0; i < l.items.size(); ++i)
      os << (i ? ", " : "") << '"' << l.items[i] << '"';
    return os << "}";
  }
};

inline std::string joined(const Strings& v, const char* open, const char* close) {
  std::string out = open;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + close;
}
/// "(a, b)": a snapshot's `next` tuple.
inline std::string paren(const Strings& v) {
  return joined(v, "(", ")");
}

inline bool contains(const Strings& v, const std::string& item) {
  return std::find(v.begin(), v.end(), item) != v.end();
}

/// What the nodes did, in order (LangGraph's `called` / `observed` lists); safe from any thread.
class Log {
 public:
  void add(std::string entry) {
    std::lock_guard lock(mu_);
    entries_.push_back(std::move(entry));
  }
  [[nodiscard]] bool has(const std::string& entry) const {
    std::lock_guard lock(mu_);
    return contains(entries_, entry);
  }
  [[nodiscard]] int count(const std::string& entry) const {
    std::lock_guard lock(mu_);
    return static_cast<int>(std::count(entries_.begin(), entries_.end(), entry));
  }
  [[nodiscard]] List all() const {
    std::lock_guard lock(mu_);
    return entries_;
  }
  /// The entries starting with `prefix`.
  [[nodiscard]] List starting_with(const std::string& prefix) const {
    std::lock_guard lock(mu_);
    Strings out;
    for (const auto& e : entries_)
      if (e.rfind(prefix, 0) == 0) out.push_back(e);
    return out;
  }
  /// The i-th entry ("<none>" when there are fewer).
  [[nodiscard]] std::string at(std::size_t i) const {
    std::lock_guard lock(mu_);
    return i < entries_.size() ? entries_[i] : std::string("<none>");
  }
  /// The last entry ("<none>" when empty).
  [[nodiscard]] std::string last() const {
    std::lock_guard lock(mu_);
    return entries_.empty() ? std::string("<none>") : entries_.back();
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }
  void clear() {
    std::lock_guard lock(mu_);
    entries_.clear();
  }

 private:
  mutable std::mutex mu_;
  Strings entries_;
};

/// LangGraph's `State`: value: Annotated[list[str], operator.add]. Also the subgraph state of
/// the tests whose SubState is one such list (value, sub_trail, a_trail, ...).
struct State {
  std::vector<std::string> value{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"value">(&State::value, sg::concat)};
  }
};

/// ParentState: results: Annotated[list[str], operator.add].
struct Results {
  std::vector<std::string> results{};
  static constexpr auto schema() {
    return std::tuple{sg::field<"results">(&Results::results, sg::concat)};
  }
};

using Graph = sg::CompiledGraph<State>;
template <class S>
using History = std::vector<sg::StateSnapshot<S>>;

inline sg::Update<State> val(std::vector<std::string> v) {
  return sg::Update<State>{}.set<&State::value>(std::move(v));
}

template <class S>
inline sg::Command<S> resume_with(json value) {
  return sg::Command<S>{.resume = std::move(value)};
}

/// The first interrupt's value ("<no interrupt>" when the run was not interrupted).
template <class S>
inline std::string first_interrupt(const sg::RunResult<S>& r) {
  if (r.interrupts.empty()) return "<no interrupt>";
  const auto& v = r.interrupts.front().value;
  return v.is_string() ? v.template get<std::string>() : v.dump();
}

/// A node that records `name` in `calls` and appends `out` to value.
inline auto step(Log& calls, std::string name, std::string out) {
  return [&calls, name = std::move(name), out = std::move(out)](const State&) {
    calls.add(name);
    return val({out});
  };
}

/// A node that records `name`, asks `question` with interrupt() and appends prefix + answer.
inline auto ask(Log& calls, std::string name, std::string question, std::string prefix) {
  return [&calls, name = std::move(name), question = std::move(question),
          prefix = std::move(prefix)](const State&) {
    calls.add(name);
    const auto answer = sg::interrupt(question).get<std::string>();
    return val({prefix + answer});
  };
}
}  // namespace
