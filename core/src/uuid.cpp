#include <stategraph/core/uuid.hpp>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <random>

namespace sg {

std::string new_uuid4() {
  // A per-thread Mersenne Twister, seeded once from the OS by Boost: ids need uniqueness, not
  // secrecy, and reading OS entropy for each id costs a system call.
  thread_local boost::uuids::basic_random_generator<std::mt19937_64> generator;
  return boost::uuids::to_string(generator());
}

}  // namespace sg
