# SPDX-License-Identifier: Apache-2.0
# The installed-package test: qconv installed into a prefix is found by find_package(qconv) and
# used by linking qconv::qconv. Skipped in sanitizer builds (the consumer is built without them).
if(NOT QCONV_SANITIZE)
  add_test(NAME installed_package_consumer
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer -DGENERATOR=${CMAKE_GENERATOR}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/check.cmake)
endif()
