// Loading graph libraries (graph_library.hpp): dlopen, the ABI check, the registration.
#include <stategraph/server/graph_library.hpp>

#include <dlfcn.h>
#include <fmt/format.h>

namespace sg {

std::map<std::string, std::shared_ptr<const ServedGraph>> load_graph_library(
    const std::string& path) {
  // Every symbol is bound now: a library built against another version fails here, naming a
  // symbol this program lacks, rather than at a call. The handle is never closed: the graphs'
  // code lives in the library.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    const std::string why = error != nullptr ? error : "dlopen failed";
    throw Error(errc::kInvalidArgument,
                fmt::format("cannot load graph library '{}': {}{}", path, why,
                            why.find("undefined symbol") != std::string::npos
                                ? " (was it built against another stategraph version? rebuild it)"
                                : ""));
  }
  using Register = std::uint32_t (*)(std::uint32_t, GraphRegistry*);
  auto* const symbol = dlsym(handle, SG_GRAPH_LIBRARY_SYMBOL);
  if (symbol == nullptr) {
    throw Error(errc::kInvalidArgument,
                fmt::format("'{}' is not a graph library: it has no {} function (define its "
                            "graphs in a SG_GRAPH_LIBRARY block, <stategraph/server/"
                            "graph_library.hpp>)",
                            path, SG_GRAPH_LIBRARY_SYMBOL));
  }
  const auto register_graphs = reinterpret_cast<Register>(symbol);
  GraphRegistry registry;
  std::uint32_t abi = 0;
  try {
    abi = register_graphs(kGraphLibraryAbi, &registry);
  } catch (const std::exception& e) {
    throw Error(
        errc::kInvalidArgument,
        fmt::format("graph library '{}' failed to register its graphs: {}", path, e.what()));
  }
  if (abi != kGraphLibraryAbi) {
    const auto describe = [](std::uint32_t v) {
      return fmt::format("stategraph {}.{}.{}, g++ {}, {} std::string", v >> 24U,
                         (v >> 16U) & 0xFFU, (v >> 8U) & 0xFFU, (v >> 1U) & 0x7FU,
                         (v & 1U) != 0 ? "C++11" : "old");
    };
    throw Error(errc::kInvalidArgument,
                fmt::format("graph library '{}' was built for {}; this server is {}: rebuild the "
                            "library against this stategraph",
                            path, describe(abi), describe(kGraphLibraryAbi)));
  }
  return registry.graphs();
}

}  // namespace sg
