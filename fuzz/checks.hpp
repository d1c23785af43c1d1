// SPDX-License-Identifier: Apache-2.0
// What each fuzzer checks for one input, as functions: the libFuzzer targets call them, and
// tests/fuzz_regression_test.cpp replays every input that once broke them (fuzz/regressions/).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>

namespace qconv::fuzz {

// A broken promise: engines disagree, an output was written before a refusal, a loaded plan does
// not behave. (Crashes and sanitizer reports need no exception: they end the process.)
class Failure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The input decodes (fuzz_case.hpp) to a call that every engine refuses with the same kind of
// qconv::Error, writing nothing, or runs with bit-exact the reference engine's output, for any
// thread count and after a round trip through the file format. Returns whether the call ran (true)
// or was refused (false), so that a replay can tell which inputs reached the comparisons.
bool check_problem_input(std::span<const std::uint8_t> bytes);

// The input, after its first (steering) byte, is a prepared-weights file: loading it gives a plan
// that runs and re-serializes to a loadable file, or a FormatError; nothing else. Steering bits:
// 0 writes the true size into file_size, 1 recomputes the checksum (so mutations reach the fields
// behind it), 2 loads as a CPU without features, 3 re-serializes with the original weights.
// Returns whether the file loaded (true) or was refused with FormatError (false).
bool check_load_input(std::span<const std::uint8_t> bytes);

}  // namespace qconv::fuzz
