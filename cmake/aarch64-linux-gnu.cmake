# SPDX-License-Identifier: Apache-2.0
# Cross-compiling for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu (scripts/install-deps.sh
# --arm64); the tests run under qemu-user (scripts/test-arm64.sh):
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Libraries and headers come from the target's root (/usr/aarch64-linux-gnu) only, never the
# host's x86-64 ones; programs (cmake, python3) from the host. GoogleTest is built from its sources
# for the target (tests/CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(QCONV_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${QCONV_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${QCONV_CROSS_TRIPLE}-g++)

set(CMAKE_FIND_ROOT_PATH /usr/${QCONV_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# add_test and gtest_discover_tests run the target's programs through this. `-cpu max` has every
# extension qemu emulates (the dot product, I8MM, ...); QCONV_QEMU_CPU picks another model, e.g.
# cortex-a53 (plain ARMv8.0 NEON, no dot product).
if(NOT DEFINED QCONV_QEMU_CPU)
  set(QCONV_QEMU_CPU max)
endif()
find_program(QCONV_QEMU_AARCH64 qemu-aarch64)
if(QCONV_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${QCONV_QEMU_AARCH64} -cpu ${QCONV_QEMU_CPU}
      -L /usr/${QCONV_CROSS_TRIPLE})
endif()
