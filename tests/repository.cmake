# SPDX-License-Identifier: Apache-2.0
# Checks on the repository's own files (tests/repository_check.py, standard library Python): no
# Markdown or source file names a .md document the repository lacks, and every source file
# carries its SPDX licence line.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  foreach(check references spdx)
    add_test(NAME repository_${check}
      COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/repository_check.py ${check}
              ${PROJECT_SOURCE_DIR})
  endforeach()
endif()
