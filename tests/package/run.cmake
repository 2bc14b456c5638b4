# SPDX-License-Identifier: MIT
# ctest -P script, one STEP per test: `install` installs this build into WORK_DIR/prefix (the
# fixture of the others); `consumers`, `server` and `new_project` build projects against it and
# run what they built.
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# Configures and builds the consumer project SOURCE in BUILD against the installed prefix.
function(build_consumer source build)
  file(REMOVE_RECURSE ${build})
  run(${CMAKE_COMMAND} -S ${source} -B ${build} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${COMPILER}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DSOURCE_DIR=${SOURCE_DIR}
      "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
  run(${CMAKE_COMMAND} --build ${build})
endfunction()

if(STEP STREQUAL "install")
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The internal kv module installs its archive, never its headers, and no installed header needs
# them.
if(EXISTS ${prefix}/include/stategraph/kv)
  message(FATAL_ERROR "the internal kv headers were installed")
endif()
file(GLOB_RECURSE installed_headers ${prefix}/include/stategraph/*.hpp)
foreach(header ${installed_headers})
  file(STRINGS ${header} kv_includes REGEX "#include <stategraph/kv/")
  if(kv_includes)
    message(FATAL_ERROR "${header} includes an internal kv header: ${kv_includes}")
  endif()
endforeach()

endif()

if(STEP STREQUAL "consumers")
build_consumer(${SOURCE_DIR}/tests/package/consumer ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
if(NOT last_output MATCHES "Human: hello\nAI: hi there")
  message(FATAL_ERROR "unexpected consumer output: ${last_output}")
endif()
message(STATUS "consumer printed: ${last_output}")

# The savers and stores, in memory and in RocksDB.
file(MAKE_DIRECTORY ${WORK_DIR}/data)
run(${WORK_DIR}/build/storage_consumer ${WORK_DIR}/data)
if(NOT last_output MATCHES "checkpoints 1 1, store Ann Ann")
  message(FATAL_ERROR "unexpected storage_consumer output: ${last_output}")
endif()
message(STATUS "storage_consumer printed: ${last_output}")

# The model client: its archive brings libcurl along.
run(${WORK_DIR}/build/models_consumer)
if(NOT last_output MATCHES "models model.config")
  message(FATAL_ERROR "unexpected models_consumer output: ${last_output}")
endif()
message(STATUS "models_consumer printed: ${last_output}")

# Components: the core alone looks for no system library past the headers'; an unknown component
# fails; the server (examples/serve_graph) and the memory nodes link with what their components
# find (PostgreSQL, libgvc, CLI11, libdate-tz, libcurl, RocksDB).
build_consumer(${SOURCE_DIR}/tests/package/core_consumer ${WORK_DIR}/core)
run(${WORK_DIR}/core/core_consumer)
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/core_consumer -B ${WORK_DIR}/missing
          -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DSG_MISSING_COMPONENT=ON
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "stategraph has no component 'nope'")
  message(FATAL_ERROR "an unknown component did not fail as it should (${rc}): ${out}${err}")
endif()
endif()

if(STEP STREQUAL "server")
build_consumer(${SOURCE_DIR}/tests/package/server_consumer ${WORK_DIR}/server)
run(${WORK_DIR}/server/nodes_consumer)
if(NOT last_output MATCHES "window Human: three\nAI: re: three")
  message(FATAL_ERROR "unexpected nodes_consumer output: ${last_output}")
endif()
run(${WORK_DIR}/server/serve_graph --help)
if(NOT last_output MATCHES "--db")
  message(FATAL_ERROR "unexpected serve_graph --help: ${last_output}")
endif()
message(STATUS "the server and nodes components built examples/serve_graph and a memory node")

endif()

# A project from the installed `stategraph new`, built against the package (its graph library
# and its test), tested, and served by the installed binary with its stategraph.json, where
# real clients drive its graph: a useStream page on another origin in chromium and LangGraph.js's
# RemoteGraph (tests/ui/run-ui.sh; tests/cli serves a graph library over HTTP too).
if(STEP STREQUAL "new_project")
file(REMOVE_RECURSE ${WORK_DIR}/myagent)
run(${prefix}/bin/stategraph new ${WORK_DIR}/myagent)
run(${CMAKE_COMMAND} -S ${WORK_DIR}/myagent -B ${WORK_DIR}/myagent/build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${COMPILER} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_MODULE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/myagent/build)
run(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR}/myagent/build --output-on-failure)
# Its graph "agent" answers "you said: TEXT" without a model.
run(${CMAKE_COMMAND} -E env UI_ASSISTANT_ID=agent "UI_REPLY_PREFIX=you said: " UI_SLOW_INPUT=
    ${SOURCE_DIR}/tests/ui/run-ui.sh ${prefix}/bin/stategraph
    --config ${WORK_DIR}/myagent/stategraph.json)
message(STATUS "real clients drove the new project served by the installed stategraph: ${last_output}")
# `stategraph dev` on the same project: an edit of its graph rebuilds it and restarts the server.
run(${SOURCE_DIR}/tests/package/dev.sh ${prefix}/bin/stategraph ${WORK_DIR}/myagent)
message(STATUS "${last_output}")
endif()
