// SPDX-License-Identifier: MIT
// Loading graph libraries (graph_library.hpp) and the code every served library shares
// (library.hpp): dlopen, the ABI check, the registration.
#include <stategraph/server/graph_library.hpp>

#include <dlfcn.h>
#include <fmt/format.h>

#include "library.hpp"

namespace sg {

namespace server {

void call_library_function(const std::string& path, const char* symbol, std::string_view kind,
                           std::string_view block,
                           const std::function<std::uint32_t(void*)>& call) {
  // Every symbol is bound now: a library built against another version fails here, naming a
  // symbol this program lacks, rather than at a call. The handle is never closed: the code of
  // the graphs and handlers lives in the library.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    const std::string why = error != nullptr ? error : "dlopen failed";
    throw Error(errc::kInvalidArgument,
                fmt::format("cannot load {} '{}': {}{}", kind, path, why,
                            why.find("undefined symbol") != std::string::npos
                                ? " (was it built against another stategraph version? rebuild it)"
                                : ""));
  }
  void* const function = dlsym(handle, symbol);
  if (function == nullptr) {
    throw Error(errc::kInvalidArgument, fmt::format("{} '{}' has no {} function: define it in a {}",
                                                    kind, path, symbol, block));
  }
  std::uint32_t abi = 0;
  try {
    abi = call(function);
  } catch (const std::exception& e) {
    throw Error(errc::kInvalidArgument,
                fmt::format("{} '{}' failed to set up: {}", kind, path, e.what()));
  }
  if (abi != kGraphLibraryAbi) {
    const auto describe = [](std::uint32_t v) {
      return fmt::format("stategraph {}.{}.{}, g++ {}, {} std::string", v >> 24U,
                         (v >> 16U) & 0xFFU, (v >> 8U) & 0xFFU, (v >> 1U) & 0x7FU,
                         (v & 1U) != 0 ? "C++11" : "old");
    };
    throw Error(errc::kInvalidArgument,
                fmt::format("{} '{}' was built for {}; this server is {}: rebuild the library "
                            "against this stategraph",
                            kind, path, describe(abi), describe(kGraphLibraryAbi)));
  }
}

}  // namespace server

std::map<std::string, std::shared_ptr<const ServedGraph>> load_graph_library(
    const std::string& path) {
  GraphRegistry registry;
  server::call_library_function(
      path, SG_GRAPH_LIBRARY_SYMBOL, "graph library",
      "SG_GRAPH_LIBRARY block, <stategraph/server/graph_library.hpp>", [&](void* symbol) {
        using Register = std::uint32_t (*)(std::uint32_t, GraphRegistry*);
        return reinterpret_cast<Register>(symbol)(kGraphLibraryAbi, &registry);
      });
  return registry.graphs();
}

}  // namespace sg
