// SPDX-License-Identifier: MIT
// fuzz/replay: every input of the fuzz corpora (tests/fuzz/corpus/<target>/, the seeds and every
// input a fuzzer found worth keeping, crashes fixed included) through its target once, in the
// test build (ASan+UBSan in CI). scripts/fuzz runs the fuzzers themselves.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

std::size_t replay(const std::string& name, Target target) {
  const std::filesystem::path dir = std::filesystem::path(SG_FUZZ_CORPUS_DIR) / name;
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    INFO(entry.path().string());
    CHECK(target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) == 0);
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("fuzz corpus: message_json") {
  CHECK(replay("message_json", sg::fuzz::message_json) > 5);
}

TEST_CASE("fuzz corpus: store_filter") {
  CHECK(replay("store_filter", sg::fuzz::store_filter) > 5);
}

TEST_CASE("fuzz corpus: checkpoint_record") {
  CHECK(replay("checkpoint_record", sg::fuzz::checkpoint_record) > 5);
}

TEST_CASE("fuzz corpus: state_update_json") {
  CHECK(replay("state_update_json", sg::fuzz::state_update_json) > 5);
}

TEST_CASE("fuzz corpus: sse_parser") {
  CHECK(replay("sse_parser", sg::fuzz::sse_parser) > 5);
}

TEST_CASE("fuzz corpus: anthropic_stream") {
  CHECK(replay("anthropic_stream", sg::fuzz::anthropic_stream) > 5);
}

TEST_CASE("fuzz corpus: http_request") {
  CHECK(replay("http_request", sg::fuzz::http_request) > 5);
}

TEST_CASE("fuzz corpus: cli_messages") {
  CHECK(replay("cli_messages", sg::fuzz::cli_messages) > 5);
}
