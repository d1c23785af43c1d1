# SPDX-License-Identifier: Apache-2.0
# Runs a command and checks its exit status, for CTest tests of command-line programs:
#   cmake -DEXPECT=<status> [-DEXPECT_FILE=<path> -DEXPECT_FILE_REGEX=<regex>] -P expect_exit.cmake -- <command> <args...>
# Fails when the status differs, or when EXPECT_FILE is given and does not exist or does not
# match EXPECT_FILE_REGEX. The command's output is shown either way.

set(command "")
set(after_separator FALSE)
foreach(i RANGE ${CMAKE_ARGC})
  if(after_separator AND DEFINED CMAKE_ARGV${i})
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command OR NOT DEFINED EXPECT)
  message(FATAL_ERROR "usage: cmake -DEXPECT=<status> -P expect_exit.cmake -- <command> <args...>")
endif()

if(DEFINED EXPECT_FILE)
  file(REMOVE "${EXPECT_FILE}")
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT status STREQUAL "${EXPECT}")
  message(FATAL_ERROR "exit status ${status}, expected ${EXPECT}")
endif()
if(DEFINED EXPECT_FILE)
  if(NOT EXISTS "${EXPECT_FILE}")
    message(FATAL_ERROR "${EXPECT_FILE} was not written")
  endif()
  file(READ "${EXPECT_FILE}" content)
  if(NOT content MATCHES "${EXPECT_FILE_REGEX}")
    message(FATAL_ERROR "${EXPECT_FILE} does not match '${EXPECT_FILE_REGEX}':\n${content}")
  endif()
endif()
