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
