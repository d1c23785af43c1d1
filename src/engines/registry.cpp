// SPDX-License-Identifier: Apache-2.0
#include "engines/engine.hpp"

namespace qconv::detail {

std::span<const Engine* const> all_engines() {
  static const Engine* const engines[] = {
#if defined(__x86_64__)
    &avx512_amx_engine(),
    &avx512_vnni_engine(),
#endif
#if defined(__aarch64__)
    &neon_dot_engine(),
    &neon_engine(),
#endif
    &reference_engine()
  };
  return engines;
}

}  // namespace qconv::detail
