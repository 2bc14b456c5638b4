# SPDX-License-Identifier: MIT
# The two set-up commands (README): `make demo` and `make test`. Both install the Debian
# packages they need (scripts/install-deps), configure and build.
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
TSAN_TESTS ?= ^(graph|checkpoint|store|models|mcp|nodes|telemetry|server|postgres)/
JOBS ?= $(shell nproc)
WERROR ?= OFF
CMAKE_ARGS ?=

export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime

.PHONY: all deps build test test-asan test-tsan bench demo package docs format format-check tidy clean

all: build

# DEPS_TIER=--build: only what the build and the demo need (scripts/demo).
DEPS_TIER ?=
deps:
	@scripts/install-deps $(DEPS_TIER)

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSG_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Builds and runs every test suite.
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The same tests built with AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan: deps
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DSG_SANITIZE=address,undefined \
	  -DSG_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build $(ASAN_DIR) -j $(JOBS)
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  ctest --output-on-failure -j $(JOBS)

# The executor, checkpoint and store suites (TSAN_TESTS, a ctest regex) built with ThreadSanitizer.
test-tsan: deps
	cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DSG_SANITIZE=thread -DSG_BUILD_CLI=OFF \
	  -DSG_BUILD_EXAMPLES=OFF -DSG_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build $(TSAN_DIR) -j $(JOBS) --target sg_graph_tests sg_checkpoint_tests sg_store_tests sg_models_tests sg_mcp_tests \
	  sg-mcp-conformance-client sg_nodes_tests \
	  sg_telemetry_tests sg_server_tests sg_postgres_tests
	cd $(TSAN_DIR) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" ctest --output-on-failure -j $(JOBS) -R "$(TSAN_TESTS)"

# Builds the benchmarks (Release) into build-bench/.
bench: deps
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSG_BUILD_BENCH=ON -DSG_BUILD_TESTS=OFF \
	  -DSG_BUILD_EXAMPLES=OFF -DSG_BUILD_CLI=OFF $(CMAKE_ARGS)
	cmake --build build-bench -j $(JOBS) --target stategraph-bench

# Builds only what the main demo needs (the libraries and the CLI) and runs `stategraph demo`
# (flags in DEMO_ARGS, e.g. DEMO_ARGS=--fresh).
demo: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSG_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target stategraph
	$(BUILD_DIR)/cli/stategraph demo $(DEMO_ARGS)

# The Debian packages stategraph and stategraph-dev into dist/ (scripts/package, docs/install.md).
package:
	scripts/package $(CMAKE_ARGS)

# The API reference from the public headers (docs/Doxyfile) into $(BUILD_DIR)/docs/html; fails on
# a Doxygen warning.
docs:
	scripts/api-reference $(BUILD_DIR)/docs

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

# Fails when a tracked C++ file is not formatted as .clang-format says (CI runs it).
format-check: deps
	git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run -Werror

# The naming rules of .clang-tidy on the library sources (configures build-tidy/, per-file
# compile commands, without building). Not the files that include the executor's coroutine parts (async.hpp, through
# compiled_graph.hpp in the CLI): clang 14 does not give Boost.Asio its coroutine support.
TIDY_SKIP := core/src/executor/async.cpp cli/src/demo_command.cpp cli/src/chat_command.cpp \
  cli/src/builtin_graphs.cpp cli/src/graph_command.cpp cli/src/serve_command.cpp
tidy: deps
	cmake -S . -B build-tidy -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSG_UNITY_BUILD=OFF \
	  -DSG_BUILD_TESTS=OFF -DSG_BUILD_EXAMPLES=OFF $(CMAKE_ARGS) > /dev/null
	git ls-files 'core/src/*.cpp' 'reducers/src/*.cpp' 'kv/src/*.cpp' 'checkpoint/src/*.cpp' 'store/src/*.cpp' 'postgres/src/*.cpp' 'telemetry/src/*.cpp' \
	  'cli/src/*.cpp' | grep -v -F -x $(addprefix -e ,$(TIDY_SKIP)) | \
	  xargs -P $(JOBS) -n 1 clang-tidy -p build-tidy --quiet

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) build-bench build-tidy
