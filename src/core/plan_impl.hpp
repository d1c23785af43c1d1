// SPDX-License-Identifier: Apache-2.0
// The inside of a Plan, shared by the files that prepare, run and serialize one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engines/engine.hpp"
#include "output/output_stage.hpp"
#include "qconv/plan.hpp"

namespace qconv {

struct Plan::Impl {
  // Derives everything below the kernel from the problem and the weight values, so that a plan
  // loaded from a file carries exactly what a freshly prepared one does (abs_weight_sums: as the
  // kernel's packing summed them, or empty: summed here). Throws OverflowRisk when the weights
  // break the accumulator bound for the prepared input zero point.
  Impl(Problem problem, const detail::Engine& engine, std::string reason,
       std::unique_ptr<detail::PreparedKernel> kernel, const detail::CanonicalWeights& weights,
       std::vector<std::int64_t> abs_weight_sums = {});

  Problem problem;
  // Σ_k |w[o,k] − zw[o]| per output channel: the accumulator bound is max|x − zx| times this.
  std::vector<std::int64_t> abs_weight_sums;
  std::int64_t max_abs_weight_sum = 0;
  const detail::Engine* engine = nullptr;
  std::string reason;  // why this engine was chosen
  std::unique_ptr<detail::PreparedKernel> kernel;
  // What execute() compares and uses on every call, derived once so that a call allocates nothing:
  // the activation shapes for a batch of 1 (the batch is the first dimension of NCHW and NHWC) and
  // the output stage without a bias.
  Shape input_shape_batch1;
  Shape output_shape_batch1;
  detail::OutputStage no_bias_stage;
};

namespace detail {

// Throws PreparedMismatch naming the first field where `given` differs from `prepared`, with both
// values; the batch size and the input zero point are not compared (they may change per call).
// `prepared_object` names what must be prepared again ("weights", "bias"). Compares plain
// descriptions so that a face can check a call before the call's own Problem is built.
void require_same_problem(const ProblemDesc& prepared, const ProblemDesc& given,
                          std::string_view prepared_object);

// Chooses the engine (PrepareOptions::engine) and packs `weights` for it: Plan::prepare once the
// weight tensor is checked and in canonical order, and a file's original weights when re-packing.
// `context` is put before the reason the engine was chosen (Plan::describe).
Plan prepare_plan(const Problem& problem, const CanonicalWeights& weights,
                  const PrepareOptions& options, std::string_view context = {});

}  // namespace detail
}  // namespace qconv
