# SPDX-License-Identifier: Apache-2.0
# Replays every input the fuzzers once failed on (fuzz/regressions/), and their seed corpora
# (fuzz/corpus/), through the same checks the fuzzers run (fuzz/checks.hpp), in qconv_tests.
target_sources(qconv_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/fuzz/fuzz_case.cpp
  ${PROJECT_SOURCE_DIR}/fuzz/problem_check.cpp
  ${PROJECT_SOURCE_DIR}/fuzz/load_check.cpp)
target_include_directories(qconv_tests PRIVATE ${PROJECT_SOURCE_DIR}/fuzz)
target_compile_definitions(qconv_tests PRIVATE
  QCONV_FUZZ_DIR="${PROJECT_SOURCE_DIR}/fuzz")
