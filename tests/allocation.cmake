# SPDX-License-Identifier: Apache-2.0
# Counts heap allocations by replacing the global operator new and delete, so it is a program of
# its own rather than part of qconv_tests.
add_executable(qconv_allocation_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/allocation/execute_allocations_test.cpp)
target_link_libraries(qconv_allocation_tests PRIVATE qconv::qconv GTest::gtest GTest::gtest_main
  pthreadpool::pthreadpool)
target_compile_options(qconv_allocation_tests PRIVATE -Wall -Wextra)
gtest_discover_tests(qconv_allocation_tests DISCOVERY_TIMEOUT 120)
