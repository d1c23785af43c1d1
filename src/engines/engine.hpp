// The interface every engine implements. An engine says whether it can run a Problem on this CPU
// and, if so, packs the weights into its own form once (a PreparedKernel) and runs it many times.
// Engines know nothing of faces; the Plan (src/core/plan.cpp) does all checking before a run.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "output/output_stage.hpp"
#include "qconv/problem.hpp"
#include "qconv/tensor.hpp"

namespace qconv::detail {

// Weights in one logical order whatever layout they came in: value(o, c, r, s), where o is the
// output channel and c the input channel within o's group (for a transposed convolution too:
// the weight joining input channel c of o's group to output o).
class CanonicalWeights {
 public:
  CanonicalWeights(const Problem& problem, ConstTensorView weights);

  std::int32_t value(std::int64_t o, std::int64_t c, std::int64_t r, std::int64_t s) const {
    return values_[static_cast<std::size_t>(((o * in_per_group_ + c) * kernel_h_ + r) * kernel_w_ +
                                            s)];
  }
  // All values of output channel o, in (c, r, s) order.
  std::span<const std::int16_t> channel(std::int64_t o) const {
    const auto k = static_cast<std::size_t>(in_per_group_ * kernel_h_ * kernel_w_);
    return std::span<const std::int16_t>(values_).subspan(static_cast<std::size_t>(o) * k, k);
  }
  DType dtype() const { return dtype_; }

 private:
  std::vector<std::int16_t> values_;
  DType dtype_;
  std::int64_t in_per_group_;
  std::int64_t kernel_h_;
  std::int64_t kernel_w_;
};

// Everything one execution needs; all of it already checked.
struct RunContext {
  const Problem& problem;
  std::int64_t batch;
  std::int32_t input_zero_point;
  const void* input;
  void* output;
  const OutputStage& stage;
  int threads;
};

class PreparedKernel {
 public:
  virtual ~PreparedKernel() = default;
  virtual void run(const RunContext& context) const = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // Empty when this engine can run the problem on this CPU; otherwise the reason it cannot.
  virtual std::string unsupported_reason(const Problem& problem) const = 0;
  virtual std::unique_ptr<PreparedKernel> prepare(const Problem& problem,
                                                  const CanonicalWeights& weights) const = 0;
};

const Engine& reference_engine();

// Every engine built in, fastest first; the reference engine is last and runs everything.
std::span<const Engine* const> all_engines();

}  // namespace qconv::detail
