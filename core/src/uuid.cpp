// SPDX-License-Identifier: MIT
#include <stategraph/core/uuid.hpp>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <array>
#include <random>

namespace sg {
namespace {

/// A Mersenne Twister seeded from the OS (std::random_device) with its full state size. Boost's
/// basic_random_generator does not seed a std:: engine itself: without this every process would
/// produce the same ids.
std::mt19937_64 seeded_engine() {
  std::random_device device;
  std::array<std::uint32_t, std::mt19937_64::state_size * 2> words{};
  for (auto& w : words) w = device();
  std::seed_seq seq(words.begin(), words.end());
  return std::mt19937_64(seq);
}

}  // namespace

std::string new_uuid4() {
  // Per thread: ids need uniqueness, not secrecy, and reading OS entropy for each id costs a
  // system call.
  thread_local std::mt19937_64 engine = seeded_engine();
  thread_local boost::uuids::basic_random_generator<std::mt19937_64> generator(engine);
  return boost::uuids::to_string(generator());
}

}  // namespace sg
