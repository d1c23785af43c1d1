# SPDX-License-Identifier: Apache-2.0
# Finds pthreadpool (Debian's libpthreadpool-dev ships a header and a library, and neither a
# pkg-config nor a CMake file) and defines the imported target pthreadpool::pthreadpool.
# Installed beside qconvConfig.cmake, which finds it again for a consumer of a static qconv.
include(FindPackageHandleStandardArgs)
find_path(pthreadpool_INCLUDE_DIR pthreadpool.h)
find_library(pthreadpool_LIBRARY pthreadpool)
find_package_handle_standard_args(pthreadpool
  REQUIRED_VARS pthreadpool_LIBRARY pthreadpool_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install libpthreadpool-dev (scripts/install-deps.sh does)")
if(pthreadpool_FOUND AND NOT TARGET pthreadpool::pthreadpool)
  add_library(pthreadpool::pthreadpool UNKNOWN IMPORTED)
  set_target_properties(pthreadpool::pthreadpool PROPERTIES
    IMPORTED_LOCATION "${pthreadpool_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${pthreadpool_INCLUDE_DIR}")
endif()
mark_as_advanced(pthreadpool_INCLUDE_DIR pthreadpool_LIBRARY)
