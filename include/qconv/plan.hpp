// SPDX-License-Identifier: Apache-2.0
// Plan: weights prepared once for one Problem and one CPU, immutable, shareable between threads.
//
// What a Plan fixes at preparation: every field of the Problem except the two below, the weight
// values, and the engine chosen for this CPU. What may change per call without re-preparing:
//   - the batch size (taken from the input tensor's N dimension),
//   - the input zero point (RunOptions::input_zero_point), re-checked against the overflow bound.
// Anything else that differs is refused with PreparedMismatch naming the field.
//
// Allocation: once a Plan has run with a given thread count (or on a given pool), executing it
// again into a caller's output allocates nothing on the heap, with no bias, or with a bias prepared
// once by prepare_bias(). A bias given as a BiasView is checked and folded into the output scheme's
// per-channel constants on every call, which allocates those constants.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qconv/problem.hpp"
#include "qconv/tensor.hpp"

// The handle of a pthreadpool (Debian's libpthreadpool-dev), declared as <pthreadpool.h> declares
// it, so that this header needs no include: a caller that has a pool includes that header itself.
typedef struct pthreadpool* pthreadpool_t;  // NOLINT(modernize-use-using): C's own declaration

namespace qconv {

namespace detail {
class OutputStage;
}  // namespace detail

class PreparedBias;

// An optional bias: s32 values for the schemes that add it to the accumulator, float values for
// the PyTorch schemes (takes_float_bias). One value per output channel.
class BiasView {
 public:
  BiasView() = default;
  BiasView(std::span<const std::int32_t> values) : s32_(values) {}  // NOLINT
  BiasView(std::span<const float> values) : f32_(values) {}         // NOLINT

  bool present() const { return s32_.data() != nullptr || f32_.data() != nullptr; }
  bool is_float() const { return f32_.data() != nullptr; }
  std::span<const std::int32_t> s32() const { return s32_; }
  std::span<const float> f32() const { return f32_; }
  std::size_t size() const { return is_float() ? f32_.size() : s32_.size(); }

 private:
  std::span<const std::int32_t> s32_;
  std::span<const float> f32_;
};

// An engine built into this library and whether this process can run it.
struct EngineInfo {
  std::string name;
  bool available = false;
  std::string reason;  // why not, when not available (e.g. "this CPU lacks avx512vnni")
};

// The built-in engines, in the order "auto" tries them (fastest first, "reference" last).
std::vector<EngineInfo> engines();

struct PrepareOptions {
  // "auto" picks the fastest engine that can run the problem on this CPU (or the one named by the
  // environment variable QCONV_ENGINE, when set); "reference" forces the oracle; an engine's name
  // ("avx512_vnni") forces it, and a CPU that lacks its features gets an error naming them.
  std::string engine = "auto";
};

struct RunOptions {
  int threads = 1;                                 // 0 = all hardware threads
  std::optional<std::int32_t> input_zero_point{};  // overrides the prepared one for this call
  // The caller's thread pool, for a host that already has one (as XNNPACK takes it): when set,
  // the call runs on that pool's threads (the calling thread among them, as pthreadpool does),
  // `threads` is not read (the pool's size decides), and qconv's own pool is neither started nor
  // woken, so the host's cores are not oversubscribed. Results are the same as with any thread
  // count. Calls from several threads may share one pool (pthreadpool runs them one at a time).
  // Null (the default): qconv's own pool with `threads` threads.
  pthreadpool_t pool = nullptr;
};

class Plan {
 public:
  // Checks the weight tensor against the problem (dtype, layout, shape, buffer size) and the
  // accumulator bound (OverflowRisk), then hands the weights to the chosen engine to pack.
  static Plan prepare(const Problem& problem, const ConstTensorView& weights,
                      const PrepareOptions& options = {});

  const Problem& problem() const;
  // The engine that runs this plan and why it was chosen (like oneDNN's verbose implementation
  // name).
  std::string_view engine() const;
  std::string describe() const;

  // Throws PreparedMismatch naming the first field where `call` differs from the prepared problem
  // (batch and input zero point excepted, see above).
  void require_compatible(const Problem& call) const;

  // Runs the convolution. Every argument is checked before anything is written: the input's and
  // output's dtype, layout, shape (batch free) and buffer size, the bias kind and length, the
  // input zero point. On any error the output is untouched.
  void execute(const ConstTensorView& input, const TensorView& output, BiasView bias = {},
               const RunOptions& options = {}) const;
  // As above with a bias prepared by this plan's prepare_bias(): no per-call derivation, no
  // allocation. A PreparedBias from another Plan is refused with PreparedMismatch.
  void execute(const ConstTensorView& input, const TensorView& output, const PreparedBias& bias,
               const RunOptions& options = {}) const;
  // As above, allocating the output.
  Tensor execute(const ConstTensorView& input, BiasView bias = {},
                 const RunOptions& options = {}) const;

  // Checks the bias as execute() does (kind, length; none when the plan has no bias) and folds it
  // into the output scheme's per-channel constants once. The values are copied into those
  // constants: the caller's buffer may change or go away afterwards.
  PreparedBias prepare_bias(BiasView bias) const;

  struct Impl;
  explicit Plan(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// A bias checked against one Plan and folded into its output stage (Plan::prepare_bias).
// Immutable: one PreparedBias may be used by many threads at once. It keeps the plan's prepared
// state alive. Only prepare_bias makes one (no default constructor, so that `execute(x, y, {})`
// still means "no bias"); a moved-from one belongs to no plan and every execute() refuses it.
class PreparedBias {
 private:
  friend class Plan;
  PreparedBias(std::shared_ptr<const Plan::Impl> plan,
               std::shared_ptr<const detail::OutputStage> stage)
      : plan_(std::move(plan)), stage_(std::move(stage)) {}

  std::shared_ptr<const Plan::Impl> plan_;
  std::shared_ptr<const detail::OutputStage> stage_;
};

}  // namespace qconv
