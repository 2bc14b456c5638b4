# SPDX-License-Identifier: MIT
# ctest -P script, one STEP per test: `install` installs this build into WORK_DIR/prefix (the
# fixture of the others); `consumers`, `server` and `new_project` build projects against it and
# run what they built; `add_subdirectory` and `FetchContent` build stategraph's core inside a
# project (tests/package/subproject).
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

# Runs the consumer and storage_consumer built in DIR (tests/package/consumer), the latter on a
# new directory DATA.
function(check_consumer_runs dir data)
  run(${dir}/consumer)
  if(NOT last_output MATCHES "Human: hello\nAI: hi there")
    message(FATAL_ERROR "unexpected consumer output: ${last_output}")
  endif()
  message(STATUS "consumer printed: ${last_output}")
  file(REMOVE_RECURSE ${data})
  file(MAKE_DIRECTORY ${data})
  run(${dir}/storage_consumer ${data})
  if(NOT last_output MATCHES "checkpoints 1 1, store Ann Ann")
    message(FATAL_ERROR "unexpected storage_consumer output: ${last_output}")
  endif()
  message(STATUS "storage_consumer printed: ${last_output}")
endfunction()

# Builds and runs tests/package/core_consumer in BUILD (find_package with the core's components
# alone), then checks that asking for COMPONENT too fails with MESSAGE.
function(check_core_package build component message)
  build_consumer(${SOURCE_DIR}/tests/package/core_consumer ${build}/core)
  run(${build}/core/core_consumer)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/core_consumer -B ${build}/missing
            -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DSG_MISSING_COMPONENT=${component}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "${message}")
    message(FATAL_ERROR "component '${component}' did not fail as it should (${rc}): ${out}${err}")
  endif()
endfunction()

# Each step removes only what it makes: the subproject steps run beside the install.
if(STEP STREQUAL "install")
file(REMOVE_RECURSE ${prefix})
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
# The core, and the savers and stores in memory and in RocksDB.
check_consumer_runs(${WORK_DIR}/build ${WORK_DIR}/data)

# The model client: its archive brings libcurl along.
run(${WORK_DIR}/build/models_consumer)
if(NOT last_output MATCHES "models model.config")
  message(FATAL_ERROR "unexpected models_consumer output: ${last_output}")
endif()
message(STATUS "models_consumer printed: ${last_output}")

# Components: the core alone looks for no system library past the headers'; an unknown component
# fails; the server (examples/serve_graph) and the memory nodes link with what their components
# find (PostgreSQL, libgvc, CLI11, libdate-tz, libcurl, RocksDB).
check_core_package(${WORK_DIR} nope "stategraph has no component 'nope'")
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

if(STEP STREQUAL "add_subdirectory" OR STEP STREQUAL "FetchContent")
  set(work ${WORK_DIR}/${STEP})
  file(REMOVE_RECURSE ${work})
  # Unoptimized and without the sanitizers even in a sanitizer build: the project builds its own
  # copy of the core (the code the other tests check), and only has to configure, build, link
  # and install as a subproject.
  set(via -DSG_VIA=${STEP} -DSG_SOURCE=${SOURCE_DIR})
  if(STEP STREQUAL "FetchContent")
    # The tracked files of the source tree, as they are now, in one archive.
    execute_process(COMMAND git -C ${SOURCE_DIR} ls-files --cached --others --exclude-standard
                    OUTPUT_VARIABLE files RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "git ls-files failed in ${SOURCE_DIR}")
    endif()
    string(REPLACE "\n" ";" files "${files}")
    set(present "")
    foreach(file IN LISTS files)
      if(EXISTS ${SOURCE_DIR}/${file} AND NOT IS_DIRECTORY ${SOURCE_DIR}/${file})
        string(APPEND present "stategraph/${file}\n")
      endif()
    endforeach()
    file(MAKE_DIRECTORY ${work})
    file(CREATE_LINK ${SOURCE_DIR} ${work}/stategraph SYMBOLIC)
    file(WRITE ${work}/files.txt "${present}")
    run(${CMAKE_COMMAND} -E chdir ${work} ${CMAKE_COMMAND} -E tar czf ${work}/stategraph.tar.gz
        --files-from=${work}/files.txt)
    file(REMOVE ${work}/stategraph)
    list(APPEND via -DSG_ARCHIVE=${work}/stategraph.tar.gz)
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/subproject -B ${work}/build -G ${GENERATOR}
      -DCMAKE_CXX_COMPILER=${COMPILER} ${via})
  run(${CMAKE_COMMAND} --build ${work}/build)
  check_consumer_runs(${work}/build ${work}/data)
  run(${CMAKE_COMMAND} --install ${work}/build --prefix ${work}/prefix)
  check_consumer_runs(${work}/prefix/bin ${work}/data-installed)
  if(STEP STREQUAL "add_subdirectory")
    # SG_INSTALL is off for a subproject: the project installs its own targets only.
    if(EXISTS ${work}/prefix/include/stategraph OR EXISTS ${work}/prefix/lib/cmake/stategraph)
      message(FATAL_ERROR "a subproject with SG_INSTALL off installed stategraph")
    endif()
  else()
    # SG_INSTALL on: the core package, which find_package finds with the core's components, and
    # which refuses a component the build did not have.
    set(prefix ${work}/prefix)
    check_core_package(${work} server "stategraph was built without its 'server' component")
  endif()
endif()
