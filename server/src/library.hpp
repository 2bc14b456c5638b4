// SPDX-License-Identifier: MIT
#pragma once
// Loading the shared libraries `stategraph serve` takes (graph and auth libraries): dlopen, the
// set-up function, the ABI check.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace sg::server {

/// Loads the library at `path` (it stays loaded for the life of the process), finds `symbol`
/// and passes it to `call`, which calls it and returns the ABI the library was built for.
/// `kind` names the library in errors ("graph library"), `block` says how to define the symbol.
/// Throws sg::Error (kInvalidArgument) when the file cannot be loaded, lacks the symbol, `call`
/// throws, or the ABI is not kGraphLibraryAbi. Thread-safe.
void call_library_function(const std::string& path, const char* symbol, std::string_view kind,
                           std::string_view block, const std::function<std::uint32_t(void*)>& call);

}  // namespace sg::server
