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
// the weight joining input channel c of o's group to output o). Preparation reads the caller's
// tensor in place, through strides, instead of copying it: packing from an OHWI tensor reads each
// (o, tap) run of channels contiguously, the order the GEMM panels want. A copy owns its bytes.
class CanonicalWeights {
 public:
  // Reads a weight tensor already checked against the problem (dtype, layout, shape, size), which
  // must outlive this object (not its copies).
  CanonicalWeights(const Problem& problem, const ConstTensorView& weights);
  // Owns `bytes`: the problem's weights in its weight layout (out_channels * K of them).
  CanonicalWeights(const Problem& problem, std::vector<std::uint8_t> bytes);
  // From bytes() of weights for the same problem, read from a file: throws FormatError naming
  // `field` when the byte count is not the problem's weight count.
  static CanonicalWeights from_bytes(const Problem& problem, std::span<const std::byte> bytes,
                                     std::string_view field);
  CanonicalWeights(const CanonicalWeights& other);
  CanonicalWeights& operator=(const CanonicalWeights& other);
  CanonicalWeights(CanonicalWeights&&) noexcept = default;  // owned bytes keep their address
  CanonicalWeights& operator=(CanonicalWeights&&) noexcept = default;

  // One byte per value (the weight dtype's own bits), in (o, c, r, s) order.
  std::vector<std::byte> bytes() const;

  std::int32_t value(std::int64_t o, std::int64_t c, std::int64_t r, std::int64_t s) const {
    return widen(data_[channel_offset(o) + c * step_c_ + (r * kernel_w_ + s) * step_tap_]);
  }

  // The values of output channel o, in (c, r, s) order.
  class Channel;
  Channel channel(std::int64_t o) const;

  // Where value (o, c, tap) lies in data(): channel_offset(o) + c * step_c() + tap * step_tap(),
  // tap = r * kernel_w + s. step_c() is 1 for an OHWI tensor: the channels of one tap in a row.
  const std::uint8_t* data() const { return data_; }
  std::int64_t channel_offset(std::int64_t o) const {
    if (step_channel_ >= 0) return o * step_channel_;
    const std::int64_t g = o / out_per_group_;
    return g * step_group_ + (o - g * out_per_group_) * step_o_;
  }
  std::int64_t step_c() const { return step_c_; }
  std::int64_t step_tap() const { return step_tap_; }
  // Whether each channel's values are one run in (tap, c) order (OHWI, and any layout with one
  // value per channel): what the GEMM panels take, read in place.
  bool in_tap_order() const {
    return (step_c_ == 1 || in_per_group_ == 1) &&
           (step_tap_ == in_per_group_ || kernel_h_ * kernel_w_ == 1);
  }
  // Σ |w − zero_point| over output channel o's values.
  std::int64_t abs_difference_sum(std::int64_t o, std::int32_t zero_point) const;

  DType dtype() const { return dtype_; }
  // A stored byte as the value it encodes.
  std::int32_t widen(std::uint8_t byte) const {
    return dtype_ == DType::u8 ? std::int32_t{byte} : std::int32_t{static_cast<std::int8_t>(byte)};
  }

 private:
  CanonicalWeights(const Problem& problem, const std::uint8_t* data);  // sizes; strides all 0
  void own();  // copies the bytes data_ points to into owned_, in the same layout
  void find_strides(const Problem& problem);  // of the problem's weight layout
  void find_channel_step();
  // Whether each channel's values are one run in (c, tap) order (OIHW, a file's bytes).
  bool in_channel_order() const {
    return (step_tap_ == 1 || kernel_h_ * kernel_w_ == 1) &&
           (step_c_ == kernel_h_ * kernel_w_ || in_per_group_ == 1);
  }

  const std::uint8_t* data_ = nullptr;
  std::vector<std::uint8_t> owned_;  // empty while data_ points into the caller's tensor
  DType dtype_;
  std::int64_t count_;  // values: out_channels * in_per_group * kernel_h * kernel_w
  std::int64_t groups_, in_per_group_, out_per_group_, kernel_h_, kernel_w_;
  std::int64_t step_group_ = 0, step_o_ = 0, step_c_ = 0, step_tap_ = 0;
  // One step from every output channel to the next (every layout but a grouped IOHW), or −1.
  std::int64_t step_channel_ = -1;
};

// A channel's values as a range, for loops that read every value once.
class CanonicalWeights::Channel {
 public:
  class iterator {
   public:
    std::int16_t operator*() const {
      return static_cast<std::int16_t>(
          w_->widen(w_->data_[at_ + c_ * w_->step_c_ + tap_ * w_->step_tap_]));
    }
    iterator& operator++() {
      if (++tap_ == taps_) {
        tap_ = 0;
        ++c_;
      }
      return *this;
    }
    bool operator!=(const iterator& other) const { return c_ != other.c_ || tap_ != other.tap_; }

   private:
    friend class Channel;
    iterator(const CanonicalWeights* w, std::int64_t at, std::int64_t c, std::int64_t taps)
        : w_(w), at_(at), c_(c), taps_(taps) {}
    const CanonicalWeights* w_;
    std::int64_t at_, c_, tap_ = 0, taps_;
  };
  iterator begin() const { return {w_, at_, 0, w_->kernel_h_ * w_->kernel_w_}; }
  iterator end() const { return {w_, at_, w_->in_per_group_, w_->kernel_h_ * w_->kernel_w_}; }

 private:
  friend class CanonicalWeights;
  Channel(const CanonicalWeights* w, std::int64_t at) : w_(w), at_(at) {}
  const CanonicalWeights* w_;
  std::int64_t at_;
};

inline CanonicalWeights::Channel CanonicalWeights::channel(std::int64_t o) const {
  return Channel(this, channel_offset(o));
}

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
  // Σ_k |w[o,k] − zw[o]| per output channel where packing summed them on its way through the
  // weights (the plan's accumulator bound; called once, right after Engine::prepare), or nothing:
  // the plan then sums the weights itself.
  virtual std::vector<std::int64_t> take_abs_weight_sums() { return {}; }
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
const Engine& avx2_vnni_engine();
const Engine& avx2_engine();
#endif
#if defined(__aarch64__)
const Engine& neon_dot_engine();  // ARMv8.2 dot product (sdot)
const Engine& neon_engine();      // plain NEON
#endif

// Every engine built in, fastest first; the reference engine is last and runs everything.
std::span<const Engine* const> all_engines();

}  // namespace qconv::detail
