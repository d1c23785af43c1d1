// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over check_load_input (checks.hpp); a broken promise aborts, which libFuzzer
// reports with the input that caused it.
#include <cstdio>
#include <cstdlib>

#include "checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)qconv::fuzz::check_load_input({data, size});
  } catch (const qconv::fuzz::Failure& failure) {
    std::fprintf(stderr, "qconv load_fuzzer: %s\n", failure.what());
    std::abort();
  }
  return 0;
}
