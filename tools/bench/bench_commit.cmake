# SPDX-License-Identifier: Apache-2.0
# Writes the source's commit for the bench's JSON context to OUT, at every build (not only when
# CMake configures, which left the records naming a commit long gone):
#   cmake -DSOURCE=<source dir> -DOUT=<bench_commit.inc> -P bench_commit.cmake
# `git describe --always --dirty`: the abbreviated commit, "-dirty" when the tree has changes that
# the commit does not hold; "unknown" outside a git checkout. The file is rewritten only when its
# text changes, so an unchanged commit rebuilds nothing.
if(NOT DEFINED SOURCE OR NOT DEFINED OUT)
  message(FATAL_ERROR "bench_commit.cmake needs -DSOURCE=<source dir> -DOUT=<output .inc>")
endif()
execute_process(COMMAND git describe --always --dirty --abbrev=7
  WORKING_DIRECTORY "${SOURCE}" RESULT_VARIABLE status OUTPUT_VARIABLE commit
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT status EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#define QCONV_BENCH_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
