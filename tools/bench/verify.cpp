// SPDX-License-Identifier: Apache-2.0
#include "verify.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "layer_table.hpp"
#include "qconv/error.hpp"

namespace qconv::bench {

namespace {

// The reference engine's result does not depend on the thread count; use every core for it.
constexpr int kReferenceThreads = 0;
constexpr std::uint64_t kReducedInputSeed = 0x7e57ab1e;

Tensor run_reference(const Problem& problem, const Tensor& weights, const std::vector<float>& bias,
                     const Tensor& input) {
  const Plan reference = Plan::prepare(problem, weights, {.engine = "reference"});
  return reference.execute(input, std::span<const float>(bias), on_threads(kReferenceThreads));
}

// Throws VerificationFailure naming the first differing element (NHWC) and how many differ.
void require_identical(const Tensor& got, const Tensor& want, std::string_view engine,
                       std::string_view layer_name, std::string_view where) {
  const auto* a = got.as<std::uint8_t>();
  const auto* b = want.as<std::uint8_t>();
  const auto n = static_cast<std::size_t>(got.elements());
  if (got.shape() == want.shape() && std::memcmp(a, b, n) == 0) return;
  std::size_t differing = 0;
  std::size_t first = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    if (first == n) first = i;
    ++differing;
  }
  const Shape& s = got.shape();  // {N, H, W, C}
  const auto channels = static_cast<std::size_t>(s[3]);
  const auto width = static_cast<std::size_t>(s[2]);
  const auto height = static_cast<std::size_t>(s[1]);
  std::ostringstream message;
  message << layer_name << ": engine " << engine << " differs from the reference engine at "
          << differing << " of " << n << " outputs (" << where
          << "); first at n=" << first / channels / width / height
          << " y=" << first / channels / width % height << " x=" << first / channels % width
          << " c=" << first % channels << ": got " << int{a[first]} << ", reference "
          << int{b[first]};
  throw VerificationFailure(message.str());
}

std::string size_text(const ProblemDesc& d) {
  return std::to_string(d.in_height) + "x" + std::to_string(d.in_width);
}

// Whether the problem with this input size is valid and keeps at least `min_out` output rows
// and columns.
bool usable(ProblemDesc d, std::int64_t height, std::int64_t width, std::int64_t min_out) {
  d.in_height = height;
  d.in_width = width;
  if (height < 1 || width < 1) return false;
  try {
    const Problem p(d);
    return p.out_height() >= min_out && p.out_width() >= min_out;
  } catch (const qconv::Error&) {
    return false;
  }
}

}  // namespace

Problem reduced_problem(const Problem& problem, std::int64_t max_macs) {
  ProblemDesc d = problem.desc();
  const std::int64_t min_out =
      std::min<std::int64_t>(2, std::min(problem.out_height(), problem.out_width()));
  for (std::int64_t step = 1;; ++step) {
    const std::int64_t height = problem.desc().in_height - step * d.stride_h;
    const std::int64_t width = problem.desc().in_width - step * d.stride_w;
    if (!usable(d, height, width, min_out)) break;  // d keeps the last usable size
    d.in_height = height;
    d.in_width = width;
    if (macs(Problem(d)) <= max_macs) break;
  }
  return Problem(d);
}

std::string verify_against_reference(const Workload& workload, const Plan& plan,
                                     const Tensor& output, const VerifyOptions& options) {
  const Problem& problem = workload.problem;
  if (macs(problem) <= options.max_macs) {
    const Tensor want = run_reference(problem, workload.weights, workload.bias, workload.input);
    require_identical(output, want, plan.engine(), options.layer_name,
                      "full size " + size_text(problem.desc()));
    return "exact";
  }
  const Problem reduced = reduced_problem(problem, options.max_macs);
  const Tensor input = random_input(reduced, kReducedInputSeed);
  PrepareOptions same_engine;
  same_engine.engine = std::string(plan.engine());
  const Plan fast = Plan::prepare(reduced, workload.weights, same_engine);
  const Tensor got =
      fast.execute(input, std::span<const float>(workload.bias), on_threads(options.threads));
  const Tensor want = run_reference(reduced, workload.weights, workload.bias, input);
  require_identical(got, want, fast.engine(), options.layer_name,
                    "verified at the reduced input size " + size_text(reduced.desc()));
  return "exact@" + size_text(reduced.desc());
}

}  // namespace qconv::bench
