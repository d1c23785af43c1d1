// SPDX-License-Identifier: Apache-2.0
// Bit-exact verification of a layer's output against the reference engine.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "qconv/plan.hpp"
#include "workload.hpp"

namespace qconv::bench {

// An engine's output differs from the reference engine's; the bench exits with status 1.
class VerificationFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The same problem on a smaller input height and width (stepping down by the stride, so the
// edge pattern at the bottom and right stays the same) whose MACs do not exceed max_macs, or
// the smallest such problem with at least two output rows and columns when none fits.
// Channels, kernel, stride, padding, groups, scales and weights are unchanged.
Problem reduced_problem(const Problem& problem, std::int64_t max_macs);

struct VerifyOptions {
  std::int64_t max_macs = 0;    // larger layers are verified on reduced_problem
  int threads = 1;              // for the engine under test, as the bench runs it
  std::string_view layer_name;  // for the message
};

// Checks `output`, computed by `plan` from the workload's input, against the reference engine.
// When the layer exceeds max_macs, checks instead `plan`'s engine on reduced_problem (same
// weights, a fresh random input) against the reference engine on it. Returns what was checked:
// "exact" or "exact@HxW" (the input size verified). Throws VerificationFailure on any difference.
std::string verify_against_reference(const Workload& workload, const Plan& plan,
                                     const Tensor& output, const VerifyOptions& options);

}  // namespace qconv::bench
