# SPDX-License-Identifier: MIT
# cmake -P script (cli/CMakeLists.txt): the files the packages install beside the CLI, made by
# running it. CLI: the stategraph binary; OUT: the output directory; HELP2MAN, GZIP: the tools
# (HELP2MAN empty: no man page).
#   stategraph.bash   `stategraph completion bash`
#   stategraph.1.gz   the man page: help2man's from --help and --version, with a COMMANDS
#                     section of each command's --help
function(run_cli)
  execute_process(COMMAND ${CLI} ${ARGN} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CLI} ${ARGN} failed (${rc})")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

run_cli(completion bash)
file(WRITE ${OUT}/stategraph.bash "${out}")

if(NOT HELP2MAN)
  return()
endif()
run_cli(--help)
string(REGEX MATCH "Subcommands:\n.*" listed "${out}")
string(REGEX MATCHALL "\n  [a-z]+ " names "${listed}")
set(include "[COMMANDS]\n")
foreach(name IN LISTS names)
  string(STRIP "${name}" name)
  run_cli(${name} --help)
  # Backslashes and leading dots would be roff requests.
  string(REPLACE "\\" "\\e" out "${out}")
  string(REGEX REPLACE "\n\\." "\n\\\\&." out "${out}")
  string(APPEND include ".SS ${name}\n.nf\n${out}.fi\n")
endforeach()
string(APPEND include "[SEE ALSO]\nThe documentation in /usr/share/doc/stategraph and at the "
       "project's repository: the README, docs/deploy.md (stategraph.json, graph libraries) and "
       "docs/server.md (the endpoints).\n")
file(WRITE ${OUT}/stategraph.h2m "${include}")
execute_process(
  COMMAND ${HELP2MAN} --no-info --section=1 "--name=state graphs for LLM agents"
          --include=${OUT}/stategraph.h2m --output=${OUT}/stategraph.1 ${CLI}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${GZIP} -9nf ${OUT}/stategraph.1 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip failed (${rc})")
endif()
