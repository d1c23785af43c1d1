// SPDX-License-Identifier: Apache-2.0
// Preparation and execution: the one place where tensors are checked against the problem, the
// accumulator bound is enforced, an engine is chosen and a prepared object refuses a mismatch.
#include "qconv/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>

#include "core/allocation.hpp"
#include "core/check.hpp"
#include "core/parallel.hpp"
#include "core/plan_impl.hpp"
#include "core/problem_fields.hpp"
#include "engines/engine.hpp"
#include "output/output_stage.hpp"
#include "qconv/error.hpp"

namespace qconv {

using detail::fail;
using detail::require;

namespace {

// dtype and layout; messages are built only on failure, so a call that passes allocates nothing.
// (Templates, so that a TensorView is not copied into a ConstTensorView with its Shape.)
template <class View>
void check_kind(const View& view, std::string_view field, DType dtype, Layout layout) {
  if (view.empty()) fail<ShapeMismatch>(field, "empty view", "a tensor is required");
  if (view.dtype() != dtype) {
    fail<ShapeMismatch>(std::string(field) + ".dtype", to_string(view.dtype()),
                        "the problem needs " + std::string(to_string(dtype)));
  }
  if (view.layout() != layout) {
    fail<ShapeMismatch>(std::string(field) + ".layout", to_string(view.layout()),
                        "the problem needs " + std::string(to_string(layout)));
  }
}

template <class View>
void check_shape(const View& view, std::string_view field, const Shape& expected) {
  if (view.shape() != expected) {
    fail<ShapeMismatch>(std::string(field) + ".shape", to_string(view.shape()),
                        "the problem needs " + to_string(expected));
  }
}

// An activation tensor for `batch` images, compared with the problem's shape for one image so that
// no Shape is built unless the check fails.
template <class View>
void check_activation(const View& view, std::string_view field, DType dtype, Layout layout,
                      const Shape& shape_batch1, std::int64_t batch) {
  check_kind(view, field, dtype, layout);
  const Shape& given = view.shape();
  if (given.size() == shape_batch1.size() && given[0] == batch &&
      std::equal(given.begin() + 1, given.end(), shape_batch1.begin() + 1)) {
    return;
  }
  Shape expected = shape_batch1;
  expected[0] = batch;
  check_shape(view, field, expected);
}

// max |x − zx| over every value of the input dtype.
std::int64_t max_input_offset(DType dtype, std::int32_t zero_point) {
  return std::max(zero_point - dtype_min(dtype), dtype_max(dtype) - zero_point);
}

void check_accumulator_bound(const Problem& p, std::int64_t max_abs_weight_sum,
                             std::int32_t input_zero_point) {
  if (p.desc().allow_wraparound) return;
  const std::int64_t mx = max_input_offset(p.desc().input_dtype, input_zero_point);
  const std::int64_t limit = std::numeric_limits<std::int32_t>::max();
  if (mx * max_abs_weight_sum <= limit) return;
  std::ostringstream rule;
  rule << "with K = C_in/groups*kh*kw = " << p.reduction_size() << ", max|x - zx| = " << mx
       << " (input_zero_point " << input_zero_point
       << ") and max over channels of sum|w - zw| = " << max_abs_weight_sum
       << ", the accumulator can reach " << mx * max_abs_weight_sum
       << " > 2^31 - 1 (the rule: max|x - zx| * max_o sum_k |w[o,k] - zw[o]| <= 2^31 - 1, "
          "which K*max|x-zx|*max|w-zw| bounds). Set allow_wraparound to accept "
          "two's-complement wrap-around";
  fail<OverflowRisk>("accumulator", "K = " + std::to_string(p.reduction_size()), rule.str());
}

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

void check_bias(const Problem& p, BiasView bias) {
  const auto& d = p.desc();
  if (!d.has_bias) {
    if (bias.present()) {
      throw PreparedMismatch("has_bias: prepared for false, given a bias; prepare with has_bias");
    }
    return;
  }
  require(bias.present(), "bias", "none", "the plan was prepared with has_bias = true");
  const bool want_float = takes_float_bias(d.scheme.kind);
  if (bias.is_float() != want_float) {
    fail<ShapeMismatch>("bias.dtype", bias.is_float() ? "f32" : "s32",
                        "scheme " + std::string(to_string(d.scheme.kind)) + " takes a " +
                            (want_float ? "float" : "s32") + " bias");
  }
  if (static_cast<std::int64_t>(bias.size()) != d.out_channels) {
    fail<ShapeMismatch>("bias.size", bias.size(),
                        "needs out_channels = " + std::to_string(d.out_channels));
  }
}

}  // namespace

Plan::Impl::Impl(Problem problem_, const detail::Engine& engine_, std::string reason_,
                 std::unique_ptr<detail::PreparedKernel> kernel_,
                 const detail::CanonicalWeights& weights, std::vector<std::int64_t> sums)
    : problem(std::move(problem_)),
      abs_weight_sums(std::move(sums)),
      engine(&engine_),
      reason(std::move(reason_)),
      kernel(std::move(kernel_)),
      input_shape_batch1(problem.input_shape(1)),
      output_shape_batch1(problem.output_shape(1)),
      no_bias_stage(problem.desc(), BiasView{}) {
  const auto& d = problem.desc();
  if (abs_weight_sums.empty()) {
    abs_weight_sums.resize(static_cast<std::size_t>(d.out_channels));
    for (std::int64_t o = 0; o < d.out_channels; ++o) {
      abs_weight_sums[static_cast<std::size_t>(o)] =
          weights.abs_difference_sum(o, problem.weight_zero_point(o));
    }
  }
  for (const std::int64_t sum : abs_weight_sums) {
    max_abs_weight_sum = std::max(max_abs_weight_sum, sum);
  }
  check_accumulator_bound(problem, max_abs_weight_sum, d.input_zero_point);
}

namespace {

// PrepareOptions::engine, or QCONV_ENGINE when the options leave it at "auto".
std::string requested_engine(const PrepareOptions& options) {
  if (options.engine != "auto") return options.engine;
  const char* forced = std::getenv("QCONV_ENGINE");
  return forced != nullptr && *forced != '\0' ? std::string(forced) : options.engine;
}

// QCONV_VERBOSE=1: one line per prepared plan on stderr, as ONEDNN_VERBOSE does.
void report_prepared(const Plan& plan, double milliseconds) {
  static const bool verbose = [] {
    const char* v = std::getenv("QCONV_VERBOSE");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  if (!verbose) return;
  std::fprintf(stderr, "qconv_verbose,prepare,%.3f ms,%s\n", milliseconds, plan.describe().c_str());
}

}  // namespace

Plan detail::prepare_plan(const Problem& problem, const CanonicalWeights& weights,
                          const PrepareOptions& options, std::string_view context) {
  const auto started = std::chrono::steady_clock::now();
  const std::string wanted = requested_engine(options);
  std::string refusals;
  const Engine* chosen = nullptr;
  std::string reason;
  for (const Engine* engine : all_engines()) {
    if (wanted != "auto" && engine->name() != wanted) continue;
    const std::string why_not = engine->unsupported_reason(problem);
    if (!why_not.empty()) {
      refusals += std::string(engine->name()) + ": " + why_not + "; ";
      continue;
    }
    chosen = engine;
    reason = std::string(context) + (refusals.empty() ? "first engine able to run the problem"
                                                      : "faster engines declined: " + refusals);
    break;
  }
  if (chosen == nullptr) {
    std::string known;
    for (const Engine* engine : all_engines()) known += ", \"" + std::string(engine->name()) + "\"";
    require(!refusals.empty(), "engine", wanted, "unknown engine (\"auto\"" + known + ")");
    fail("engine", wanted, "cannot run this problem: " + refusals);
  }
  // The bound is checked once the weights are packed: packing reads every weight anyway, and the
  // GEMM engines sum |w − zw| on the way (one pass over the weights, not two).
  std::unique_ptr<PreparedKernel> kernel = chosen->prepare(problem, weights);
  std::vector<std::int64_t> abs_weight_sums = kernel->take_abs_weight_sums();
  Plan plan(std::make_shared<Plan::Impl>(problem, *chosen, std::move(reason), std::move(kernel),
                                         weights, std::move(abs_weight_sums)));
  report_prepared(
      plan, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count());
  return plan;
}

Plan Plan::prepare(const Problem& problem, const ConstTensorView& weights,
                   const PrepareOptions& options) {
  const auto& d = problem.desc();
  check_kind(weights, "weight", d.weight_dtype, d.weight_layout);
  check_shape(weights, "weight", problem.weight_shape());
  return detail::prepare_plan(problem, detail::CanonicalWeights(problem, weights), options);
}

std::vector<EngineInfo> engines() {
  const Problem plain{ProblemDesc{}};  // the simplest valid problem: what any engine takes
  std::vector<EngineInfo> out;
  for (const detail::Engine* engine : detail::all_engines()) {
    std::string why_not = engine->unsupported_reason(plain);
    out.push_back({std::string(engine->name()), why_not.empty(), std::move(why_not)});
  }
  return out;
}

const Problem& Plan::problem() const { return impl_->problem; }
std::string_view Plan::engine() const { return impl_->engine->name(); }

std::string Plan::describe() const {
  const std::string kernel = impl_->kernel != nullptr ? impl_->kernel->describe() : std::string();
  return (kernel.empty() ? std::string(engine()) : kernel) + " (" + impl_->reason + ") for " +
         impl_->problem.summary();
}

void Plan::require_compatible(const Problem& call) const {
  detail::require_same_problem(impl_->problem.desc(), call.desc(), "weights");
}

void detail::require_same_problem(const ProblemDesc& a, const ProblemDesc& b,
                                  std::string_view prepared_object) {
  detail::for_each_field(
      [prepared_object](const detail::FieldInfo& field, const auto& prepared, const auto& given) {
        if (!field.fixed_at_preparation || prepared == given) return;
        throw PreparedMismatch(std::string(field.name) + ": prepared for " +
                               detail::field_text(prepared) + ", given " +
                               detail::field_text(given) + "; prepare the " +
                               std::string(prepared_object) + " again for this problem");
      },
      a, b);
}

namespace {

// Everything execute() checks apart from the bias. Returns the batch and the input zero point.
struct CheckedCall {
  std::int64_t batch;
  std::int32_t input_zero_point;
};

CheckedCall check_call(const Plan::Impl& impl, const ConstTensorView& input,
                       const TensorView& output, const RunOptions& options) {
  const Problem& p = impl.problem;
  const auto& d = p.desc();
  if (input.empty() || input.shape().size() != 4) {
    fail<ShapeMismatch>("input.shape", to_string(input.shape()),
                        "an activation tensor has 4 dimensions");
  }
  const std::int64_t batch = input.dim(0);
  check_activation(input, "input", d.input_dtype, d.input_layout, impl.input_shape_batch1, batch);
  check_activation(output, "output", d.output_dtype, d.output_layout, impl.output_shape_batch1,
                   batch);
  require(!overlaps(input.data(), input.bytes(), output.data(), output.bytes()), "output.data",
          "overlapping the input", "the output buffer must not overlap the input buffer");
  require(options.threads >= 0, "threads", options.threads, "must be 0 (all) or positive");
  const std::int32_t zx = options.input_zero_point.value_or(d.input_zero_point);
  if (zx < dtype_min(d.input_dtype) || zx > dtype_max(d.input_dtype)) {
    fail("input_zero_point", zx,
         "must lie in the range of " + std::string(to_string(d.input_dtype)));
  }
  check_accumulator_bound(p, impl.max_abs_weight_sum, zx);
  return {batch, zx};
}

void run(const Plan::Impl& impl, const CheckedCall& call, const ConstTensorView& input,
         const TensorView& output, const detail::OutputStage& stage, const RunOptions& options) {
  // With the caller's pool, every parallel_for of this call runs on it and the engine sizes its
  // work for the pool's threads.
  const detail::HostPoolScope pool(options.pool);
  const int threads = options.pool != nullptr ? detail::host_pool_threads(options.pool)
                                              : detail::resolve_threads(options.threads);
  const detail::RunContext context{
      impl.problem, call.batch, call.input_zero_point, input.data(), output.data(), stage, threads};
  impl.kernel->run(context);
}

}  // namespace

void Plan::execute(const ConstTensorView& input, const TensorView& output, BiasView bias,
                   const RunOptions& options) const {
  const CheckedCall call = check_call(*impl_, input, output, options);
  check_bias(impl_->problem, bias);
  if (!bias.present()) {
    run(*impl_, call, input, output, impl_->no_bias_stage, options);
    return;
  }
  const detail::OutputStage stage(impl_->problem.desc(), bias);  // prepare_bias() saves this
  run(*impl_, call, input, output, stage, options);
}

void Plan::execute(const ConstTensorView& input, const TensorView& output, const PreparedBias& bias,
                   const RunOptions& options) const {
  const CheckedCall call = check_call(*impl_, input, output, options);
  if (bias.plan_ != impl_) {
    throw PreparedMismatch(
        "bias: prepared for another plan (or moved from); prepare it with this plan's "
        "prepare_bias()");
  }
  run(*impl_, call, input, output, *bias.stage_, options);
}

Tensor Plan::execute(const ConstTensorView& input, BiasView bias, const RunOptions& options) const {
  const Problem& p = impl_->problem;
  if (input.empty() || input.shape().size() != 4) {
    fail<ShapeMismatch>("input.shape", to_string(input.shape()),
                        "an activation tensor has 4 dimensions");
  }
  const Shape shape = p.output_shape(input.dim(0));
  Tensor output = [&] {
    try {
      return Tensor(p.desc().output_dtype, p.desc().output_layout, shape);
    } catch (const std::bad_alloc& e) {
      throw detail::AllocationFailure(std::string("output: ") + e.what() +
                                      " (the output of this call; a smaller batch needs less)");
    }
  }();
  execute(input, output.view(), bias, options);
  return output;
}

PreparedBias Plan::prepare_bias(BiasView bias) const {
  check_bias(impl_->problem, bias);
  if (!bias.present()) {
    // Shares the plan's own no-bias stage (aliasing: the plan's state owns it).
    return {impl_, std::shared_ptr<const detail::OutputStage>(impl_, &impl_->no_bias_stage)};
  }
  return {impl_, std::make_shared<const detail::OutputStage>(impl_->problem.desc(), bias)};
}

}  // namespace qconv
