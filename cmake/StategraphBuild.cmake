# SPDX-License-Identifier: MIT
# Build helpers shared by every stategraph target.

# Built on its own without a build type: RelWithDebInfo, for this configuration only (the cache
# keeps what the user gave, and a parent project's build type is its own).
if(PROJECT_IS_TOP_LEVEL AND NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo)
endif()

find_program(SG_CCACHE ccache)
if(SG_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${SG_CCACHE})
endif()

set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
# RelWithDebInfo: line tables (-g1) for every target, not full debug information: backtraces,
# profilers and sanitizer reports keep file:line, and the build takes about three quarters of
# -g's compile time (docs/benchmarks.md, "Build time"). Debug keeps -g.
add_compile_options($<$<CONFIG:RelWithDebInfo>:-g1>)

# gold (binutils) links the large test and CLI binaries in half to two thirds of ld.bfd's time
# (docs/benchmarks.md, "Build time").
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=gold SG_HAS_GOLD)
if(SG_HAS_GOLD)
  add_link_options(-fuse-ld=gold)
endif()

if(SG_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SG_FUZZ needs clang (CXX=clang++; scripts/fuzz does it)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)  # coverage for libFuzzer in every library
  # Boost 1.74's Asio does not detect clang 14's C++20 coroutines (it has them).
  add_compile_definitions(BOOST_ASIO_HAS_CO_AWAIT BOOST_ASIO_HAS_STD_COROUTINE)
  add_compile_options(-Wno-unknown-warning-option)  # the g++-only warning flags
  # clang 14 fails to instrument coroutine frames ("Cannot represent a difference across
  # sections"): the coroutine sources build without sanitizers (set in their CMakeLists).
  set(SG_FUZZ_NO_COVERAGE -fno-sanitize=all)
endif()
if(SG_SANITIZE)
  add_compile_options(-fsanitize=${SG_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SG_SANITIZE})
  # Line tables are all a sanitizer report needs (file:line in its stacks): the libraries, the CLI
  # and the examples too, not only the tests (docs/benchmarks.md, "Build time").
  add_compile_options(-g1)
  if(SG_SANITIZE MATCHES "address" AND SG_SANITIZE MATCHES "undefined")
    # UBSan's null and alignment checks guard every memory access at -O0: a third of the ASan
    # build's compile time, half its code and 1.2 million check descriptors that ASan registers
    # as globals at each process start (docs/benchmarks.md, "Build time"). ASan reports a null
    # dereference itself (SEGV on address 0, with its stack), and the sources cast no pointer to
    # a type of stricter alignment.
    add_compile_options(-fno-sanitize=null,alignment)
  endif()
  if(SG_SANITIZE MATCHES "address")
    # A position-independent ASan executable carries millions of relative relocations (the
    # sanitizer's descriptors of every global), applied at each start: about 0.3 s per process,
    # for each of the ~930 test processes and every CLI a test spawns. Without PIE there are none.
    add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
  endif()
  if(SG_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # Boost.Asio uses std::atomic_thread_fence, which g++ warns TSan cannot check.
    add_compile_options(-Wno-tsan)
  endif()
endif()

# sg_add_module(<name> SOURCES ... [DEPS ...] [PRIVATE_DEPS ...])
# Creates library target sg_<name> with alias sg::<name>, public headers in
# <name>/include (identical include paths in build and install trees).
function(sg_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(sg_${name} ${ARG_SOURCES})
  add_library(sg::${name} ALIAS sg_${name})
  set_target_properties(sg_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME stategraph_${name}
                                              POSITION_INDEPENDENT_CODE ON)
  target_compile_features(sg_${name} PUBLIC cxx_std_20)
  target_include_directories(sg_${name} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
                                               $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(sg_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  sg_set_warnings(sg_${name})
  sg_set_unity(sg_${name})
  if(SG_INSTALL)
    install(TARGETS sg_${name} EXPORT stategraphTargets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
            RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
    install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
  endif()
endfunction()

# Batches the target's sources into unity translation units of 6 when SG_UNITY_BUILD is on (the
# libraries, the CLI and the test suites: about 2.4x less compile time for the libraries,
# docs/benchmarks.md "Build time"). The names in the anonymous namespaces of one target's sources
# must differ from file to file; shared helpers go in a header.
function(sg_set_unity target)
  if(SG_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
    # In a unity source every file is an included file, so g++ takes the state types of its
    # anonymous namespace inside coroutine frames for header types with internal linkage.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

# Test suites and examples: line tables only (backtraces and sanitizer reports keep file:line)
# and, in RelWithDebInfo, -O1: their code is mostly the executor's templates instantiated per
# state type, which -O2 takes about 1.7x as long to compile for no gain in a test (the libraries
# they test stay -O2). docs/benchmarks.md, "Build time".
# At -O1 g++ 12 inlines Boost.Asio's awaitable frames differently and reports their own operator
# delete as mismatched (GCC bug 109224, a false positive the libraries silence per file): tests
# turn the warning off; ASan checks real new/delete mismatches in the tests at run time.
function(sg_set_test_build_flags target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Debug,RelWithDebInfo>:-g1>
                                           $<$<CONFIG:RelWithDebInfo>:-O1>
                                           $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)
endfunction()

function(sg_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Woverloaded-virtual)
  if(SG_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
