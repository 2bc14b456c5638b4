// SPDX-License-Identifier: MIT
#pragma once
// The fuzz targets (tests/fuzz/*.cpp): each takes arbitrary bytes, must never crash, leak or
// trip a sanitizer, and throws nothing but the library's documented errors (they are caught
// inside). libFuzzer runs them in build-fuzz (scripts/fuzz); fuzz/replay runs their corpora in
// the test build.
#include <cstddef>
#include <cstdint>

namespace sg::fuzz {

/// Bytes as JSON, read as messages (messages_from_json), written back and read again (the same
/// messages), then merged with add_messages into a fixed conversation.
int message_json(const std::uint8_t* data, std::size_t size);
/// Bytes as a JSON object {"filter": ..., "value": ..., "path": ...}: validate_filter, then
/// matches_filter against the value, and texts_at_path of the value at the path.
int store_filter(const std::uint8_t* data, std::size_t size);
/// A thread as the savers store it (every key space, written by the library: records with
/// inline values, views and parent writes, blobs, log messages, pending writes and bundles, a
/// subgraph namespace), edited as the bytes say, then read and written through KvCheckpointer:
/// get_tuple, list, threads, put_all with list deltas on stored versions, put_writes, fork,
/// copy, prune, delete. Each edit: a byte (low 6 bits: the entry, in key order, or past the
/// last a new key of space index % 4 whose length and bytes lead the data; high 2 bits: 0 raw
/// bytes, 1 an intact envelope of kind data[0] around the CBOR data[1..], 2 the same around
/// JSON text data[1..] as CBOR, 3 erase), a 2-byte little-endian length, the data. A corrupt
/// store is refused only with sg::Error (CheckpointError); an unedited one reads without error.
int checkpoint_record(const std::uint8_t* data, std::size_t size);
/// Bytes as a JSON object {"state", "update", "as_node", "command", "input"} for a state with
/// messages, a string, a sum, two lists, an optional and a JSON value: the state and the update
/// read (state_from_json, update_from_json), written and read again to the same JSON, the
/// update applied; then as the server does on a thread stopped at an interrupt: the update as
/// a node (update_state), the command ({resume, update, goto}) or input checked and run.
/// Refused only with sg::Error.
int state_update_json(const std::uint8_t* data, std::size_t size);
/// The first byte chooses how the rest, a streamed chat completion, is cut into pieces for
/// SseParser (the same events, last event id and retry time whole or in pieces); the events go
/// through ChatStreamAccumulator as the OpenAI client reads them (refused only with ModelError);
/// the reply is the chunks' content put together and reads back as the same message.
int sse_parser(const std::uint8_t* data, std::size_t size);
/// The first byte's bits choose text as blocks (1) and a structured-output tool "answer" (2);
/// the rest, a streamed Messages API reply, goes through SseParser and its events through
/// AnthropicStreamAccumulator as the Anthropic client reads them (refused only with ModelError;
/// an error event with a status from 400 to 599). With one message_start and each content block
/// started once, the reply's blocks are what their chunks carried (text, thinking, tool input,
/// a server tool call's input, never a tool call; other blocks kept whole); the reply reads back
/// as the same message.
int anthropic_stream(const std::uint8_t* data, std::size_t size);
/// Up to 8 requests to the server's handler (server/src/api.hpp, no sockets), all in memory,
/// after a thread was created and run to an interrupt: a method byte, a route byte (the API's
/// routes with the thread, its run, checkpoint and the graph's assistant filled in, or none),
/// the rest of the target to a newline (a tab starts a Last-Event-ID header), the body;
/// "\n--\n" between requests. Runs are followed to their end as a client does. Any 2xx-4xx
/// answer is fine; a 5xx or an exception is a bug.
int http_request(const std::uint8_t* data, std::size_t size);
/// `stategraph messages` with the first line's words as its arguments and the rest on stdin:
/// refused only with a parse error (bad usage) or sg::Error; what it writes is JSON, messages
/// that read back for add, trim, filter and merge.
int cli_messages(const std::uint8_t* data, std::size_t size);

}  // namespace sg::fuzz

/// In the fuzz build (SG_FUZZ_MAIN), makes `function` the binary's libFuzzer entry point.
#ifdef SG_FUZZ_MAIN
#define SG_FUZZ_ENTRY(function)                                                       \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    return function(data, size);                                                      \
  }
#else
#define SG_FUZZ_ENTRY(function)
#endif
