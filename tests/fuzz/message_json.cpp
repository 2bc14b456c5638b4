// SPDX-License-Identifier: MIT
// Fuzz target: messages from JSON (see fuzz_targets.hpp).
#include <stategraph/stategraph.hpp>

#include <cstdlib>

#include "fuzz_targets.hpp"

int sg::fuzz::message_json(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json value = nlohmann::json::parse(data, data + size, nullptr, false);
  if (value.is_discarded()) return 0;
  std::vector<Message> messages;
  try {
    messages = messages_from_json(value);
  } catch (const Error&) {
    return 0;  // refused with the documented error
  }
  // What is written reads back the same.
  const nlohmann::json written = messages;
  std::vector<Message> again;
  try {
    again = messages_from_json(written);
  } catch (const Error&) {
    std::abort();  // the library refused its own output
  }
  if (again.size() != messages.size()) std::abort();
  if (nlohmann::json(again) != written) std::abort();
  // Merged into a conversation (ids matched, RemoveMessage applied), with the documented errors.
  std::vector<Message> conversation{human("hello"), ai("hi")};
  conversation[0].id = "a";
  conversation[1].id = "b";
  try {
    (void)add_messages(conversation, messages);
  } catch (const Error&) {
  }
  return 0;
}

SG_FUZZ_ENTRY(sg::fuzz::message_json)
