# SPDX-License-Identifier: MIT
# stategraph_add_graph_library(<name> <source>...)
# Builds a graph library, <name>.so, for `stategraph serve` (the "graphs" of stategraph.json):
# sources that define their graphs in a STATEGRAPH_GRAPHS block
# (<stategraph/server/graph_library.hpp>). The library links none of stategraph's archives: it
# uses the code of the `stategraph` binary that loads it (built from the same version).
function(stategraph_add_graph_library name)
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE sg::graph_api)
  set_target_properties(${name} PROPERTIES PREFIX "")
endfunction()
