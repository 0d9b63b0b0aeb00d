# SPDX-License-Identifier: Apache-2.0
# cmake -DARCHIVE=libmyrewrite_pure.a -P check_pure.cmake
# Fails when any object of the pure archive refers to a pthread_* symbol.
execute_process(COMMAND nm -A ${ARCHIVE} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${ARCHIVE}")
endif()
string(REGEX MATCHALL "[^\n]*[ \t]pthread_[A-Za-z_]*" hits "${syms}")
if(hits)
  string(REPLACE ";" "\n" hits "${hits}")
  message(FATAL_ERROR "the pure library uses threads or locks:\n${hits}")
endif()
message(STATUS "pure library: no pthread symbol")
