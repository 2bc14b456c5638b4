# SPDX-License-Identifier: MIT
# Debian packages with CPack (scripts/package): `stategraph`, the CLI (which holds every module
# for the graph libraries it loads) with its bash completion, man page and systemd unit; and
# `stategraph-dev`, the headers, static libraries and CMake package. Installed by the `runtime`
# and `dev` install components.
if(SG_BUILD_CLI)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/stategraph.service.in
                 ${PROJECT_BINARY_DIR}/packaging/stategraph.service @ONLY)
  # lib/systemd/system under the prefix: /usr/lib (a package) or /usr/local/lib (make install),
  # both where systemd looks.
  install(FILES ${PROJECT_BINARY_DIR}/packaging/stategraph.service
          DESTINATION lib/systemd/system COMPONENT runtime)
  install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/stategraph RENAME copyright
          COMPONENT runtime)
  install(FILES README.md CHANGELOG.md SECURITY.md docs/deploy.md docs/server.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/stategraph COMPONENT runtime)
endif()
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/stategraph-dev RENAME copyright
        COMPONENT dev)

set(CPACK_PACKAGE_NAME stategraph)
set(CPACK_PACKAGE_VENDOR "the stategraph authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(SG_PACKAGE_MAINTAINER "stategraph maintainers <maintainers@stategraph.invalid>"
    CACHE STRING "The Maintainer of the Debian packages: set it to whoever publishes them")
set(CPACK_PACKAGE_CONTACT "${SG_PACKAGE_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL dev)
if(SG_BUILD_CLI)
  list(PREPEND CPACK_COMPONENTS_ALL runtime)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME stategraph)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "${PROJECT_DESCRIPTION}\n"
    "The stategraph command: serve graphs over the LangGraph Server API (stategraph serve, with a\n"
    "systemd unit), chat on a thread, run the demo, inspect threads and the store, and build and\n"
    "serve graph libraries (stategraph new, stategraph dev; they need stategraph-dev).")
# The libraries the binary links, found by dpkg-shlibdeps (dpkg-dev).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "stategraph-dev, postgresql")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME stategraph-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_ARCHITECTURE_DEPENDENT ON)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "${PROJECT_DESCRIPTION} (development files)\n"
    "The headers, static libraries and CMake package (find_package(stategraph COMPONENTS ...)) of\n"
    "stategraph's modules, and stategraph_add_graph_library for the graph libraries that\n"
    "stategraph serve loads.")
# What find_package(stategraph) looks for (cmake/stategraphConfig.cmake.in), per module built.
set(sg_dev_depends "libboost-dev, nlohmann-json3-dev, libfmt-dev, librocksdb-dev, zlib1g-dev")
if(SG_WITH_MODELS)
  string(APPEND sg_dev_depends ", libcurl4-openssl-dev | libcurl-dev, libssl-dev")
endif()
if(SG_WITH_POSTGRES)
  string(APPEND sg_dev_depends ", libpq-dev")
endif()
if(SG_WITH_SERVER)
  string(APPEND sg_dev_depends ", libhowardhinnant-date-dev, libcli11-dev, libspdlog-dev")
  if(SG_WITH_GRAPHVIZ)
    string(APPEND sg_dev_depends ", libgraphviz-dev, pkg-config")
  endif()
endif()
if(SG_BUILD_CLI)
  # A graph library runs in the stategraph binary of the same version.
  string(APPEND sg_dev_depends ", stategraph (= ${PROJECT_VERSION}-1)")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${sg_dev_depends}")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake (>= 3.25), g++")
set(CPACK_PACKAGE_INSTALL_DIRECTORY stategraph)
include(CPack)
