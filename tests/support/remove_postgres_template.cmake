# SPDX-License-Identifier: MIT
# Removes the PostgreSQL template cluster whose directory PATH_FILE names, and PATH_FILE
# (cmake -DPATH_FILE=... -P remove_postgres_template.cmake; tests/CMakeLists.txt).
if(NOT EXISTS "${PATH_FILE}")
  return()
endif()
file(STRINGS "${PATH_FILE}" template_dir LIMIT_COUNT 1)
if(template_dir MATCHES "^/tmp/sg-pg-template-[A-Za-z0-9]+$")
  file(REMOVE_RECURSE "${template_dir}")
endif()
file(REMOVE "${PATH_FILE}")
