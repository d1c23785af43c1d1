// The inside of a Plan, shared by the files that prepare, run and serialize one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/engine.hpp"
#include "output/output_stage.hpp"
#include "qconv/plan.hpp"

namespace qconv {

struct Plan::Impl {
  // Derives everything below the kernel from the problem and the weight values, so that a plan
  // loaded from a file carries exactly what a freshly prepared one does. Throws OverflowRisk when
  // the weights break the accumulator bound for the prepared input zero point.
  Impl(Problem problem, const detail::Engine& engine, std::string reason,
       std::unique_ptr<detail::PreparedKernel> kernel, const detail::CanonicalWeights& weights);

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

// Chooses the engine (PrepareOptions::engine) and packs `weights` for it: Plan::prepare once the
// weight tensor is checked and in canonical order, and a file's original weights when re-packing.
// `context` is put before the reason the engine was chosen (Plan::describe).
Plan prepare_plan(const Problem& problem, const CanonicalWeights& weights,
                  const PrepareOptions& options, std::string_view context = {});

}  // namespace detail
}  // namespace qconv
