// SPDX-License-Identifier: Apache-2.0
// The interface every engine implements. An engine says whether it can run a Problem on this CPU
// and, if so, packs the weights into its own form once (a PreparedKernel) and runs it many times.
// A packed form can be turned into bytes and back (prepared-weights files, src/core/serialize.cpp).
// Engines know nothing of faces; the Plan (src/core/plan.cpp) does all checking before a run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpu_features.hpp"
#include "output/output_stage.hpp"
#include "qconv/problem.hpp"
#include "qconv/tensor.hpp"

namespace qconv::detail {

// Weights in one logical order whatever layout they came in: value(o, c, r, s), where o is the
// output channel and c the input channel within o's group (for a transposed convolution too:
// the weight joining input channel c of o's group to output o).
class CanonicalWeights {
 public:
  // From a weight tensor already checked against the problem (dtype, layout, shape, size).
  CanonicalWeights(const Problem& problem, const ConstTensorView& weights);
  // From bytes() of weights for the same problem, read from a file: throws FormatError naming
  // `field` when the byte count is not the problem's weight count.
  static CanonicalWeights from_bytes(const Problem& problem, std::span<const std::byte> bytes,
                                     std::string_view field);

  // One byte per value (the weight dtype's own bits), in (o, c, r, s) order.
  std::vector<std::byte> bytes() const;

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
  explicit CanonicalWeights(const Problem& problem);  // sized, zero values

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
  // Must not allocate: Plan::execute promises an allocation-free call (the thread pool does not).
  virtual void run(const RunContext& context) const = 0;
  // The packed form as bytes, for a file; the same engine's unpack() rebuilds an equal kernel.
  virtual std::vector<std::byte> packed() const = 0;
  // The weight values back in canonical order. Packing is exact, so these are the values the
  // kernel was prepared from: a file may carry them to re-pack elsewhere, and a loaded plan
  // recomputes its accumulator bound from them instead of trusting the file.
  virtual CanonicalWeights canonical_weights() const = 0;
  // The path and kernel this plan runs, e.g. "avx512_vnni igemm 6x64 k3x3 s1" (Plan::describe).
  virtual std::string describe() const { return {}; }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // Empty when this engine can run the problem on this CPU; otherwise the reason it cannot.
  virtual std::string unsupported_reason(const Problem& problem) const = 0;
  virtual std::unique_ptr<PreparedKernel> prepare(const Problem& problem,
                                                  const CanonicalWeights& weights) const = 0;
  // Rebuilds a kernel from packed() bytes made by this engine for this problem. Throws
  // FormatError naming what is wrong when the bytes are not such a packed form; never reads
  // outside them.
  virtual std::unique_ptr<PreparedKernel> unpack(const Problem& problem,
                                                 std::span<const std::byte> packed) const = 0;
  // The CPU features the packed form and its kernels need (a file records them; a CPU lacking
  // any of them cannot load the packed form).
  virtual CpuFeatures required_cpu_features() const = 0;
  // The version of this engine's packed form. A prepared-weights file records it; a file whose
  // packed form has another version is re-packed from its original weights, or refused. Bump it
  // whenever packed() changes, so that only this engine's files are affected. Every engine's first
  // packed form is version 1 (format 1 files, which did not record it, are read as 1).
  virtual std::uint32_t packing_version() const { return 1; }
};

const Engine& reference_engine();
#if defined(__x86_64__)
const Engine& avx512_vnni_engine();
const Engine& avx512_amx_engine();
#endif
#if defined(__aarch64__)
const Engine& neon_dot_engine();  // ARMv8.2 dot product (sdot)
const Engine& neon_engine();      // plain NEON
#endif

// Every engine built in, fastest first; the reference engine is last and runs everything.
std::span<const Engine* const> all_engines();

}  // namespace qconv::detail
