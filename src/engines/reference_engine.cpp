// SPDX-License-Identifier: Apache-2.0
// The reference engine: SPEC §3 as plain loops, the oracle every other engine is tested against.
// Simple and slow on purpose: one output element at a time, an exact 64-bit sum, then the output
// stage. Do not optimise it; correctness here is what makes the fast engines' tests mean anything.
#include <cstring>

#include "core/parallel.hpp"
#include "engines/engine.hpp"
#include "output/rounding.hpp"

namespace qconv::detail {
namespace {

// Element strides of an activation tensor, so that (n, c, h, w) → n·sn + c·sc + h·sh + w·sw.
struct ActivationStrides {
  std::int64_t n, c, h, w;
};

ActivationStrides strides_of(Layout layout, std::int64_t channels, std::int64_t height,
                             std::int64_t width) {
  if (layout == Layout::NCHW) return {channels * height * width, height * width, width, 1};
  return {height * width * channels, 1, width * channels, channels};  // NHWC
}

std::int32_t load(const void* data, DType dtype, std::int64_t i) {
  if (dtype == DType::u8) return static_cast<const std::uint8_t*>(data)[i];
  return static_cast<const std::int8_t*>(data)[i];
}

void store(void* data, DType dtype, std::int64_t i, std::int32_t v) {
  switch (dtype) {
    case DType::u8: static_cast<std::uint8_t*>(data)[i] = static_cast<std::uint8_t>(v); break;
    case DType::s8: static_cast<std::int8_t*>(data)[i] = static_cast<std::int8_t>(v); break;
    default: static_cast<std::int32_t*>(data)[i] = v; break;
  }
}

class ReferenceKernel final : public PreparedKernel {
 public:
  ReferenceKernel(const Problem& problem, const CanonicalWeights& weights)
      : weights_(weights), zero_points_(static_cast<std::size_t>(problem.desc().out_channels)) {
    for (std::int64_t o = 0; o < problem.desc().out_channels; ++o) {
      zero_points_[static_cast<std::size_t>(o)] = problem.weight_zero_point(o);
    }
  }

  // The packed form is the canonical weights, one byte each: the reference engine does not reorder.
  std::vector<std::byte> packed() const override { return weights_.bytes(); }
  CanonicalWeights canonical_weights() const override { return weights_; }

  void run(const RunContext& ctx) const override {
    const auto& d = ctx.problem.desc();
    const std::int64_t out_channels = d.out_channels;
    parallel_for(ctx.threads, ctx.batch * out_channels, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i)
        run_channel(ctx, i / out_channels, i % out_channels);
    });
  }

 private:
  // All output pixels of image n, output channel o.
  void run_channel(const RunContext& ctx, std::int64_t n, std::int64_t o) const {
    const Problem& p = ctx.problem;
    const auto& d = p.desc();
    const auto in = strides_of(d.input_layout, d.in_channels, d.in_height, d.in_width);
    const auto out = strides_of(d.output_layout, d.out_channels, p.out_height(), p.out_width());
    const std::int64_t ipg = p.in_channels_per_group();
    const std::int64_t first_input_channel = (o / p.out_channels_per_group()) * ipg;
    const std::int32_t zx = ctx.input_zero_point;
    const std::int32_t zw = zero_points_[static_cast<std::size_t>(o)];

    for (std::int64_t y = 0; y < p.out_height(); ++y) {
      for (std::int64_t x = 0; x < p.out_width(); ++x) {
        std::int64_t acc = 0;  // exact: the order of the sum does not matter
        for (std::int64_t r = 0; r < d.kernel_h; ++r) {
          std::int64_t h = 0;
          if (!input_index(p.transposed(), y, r, d.stride_h, d.dilation_h, d.pad_top, d.in_height,
                           h)) {
            continue;
          }
          for (std::int64_t s = 0; s < d.kernel_w; ++s) {
            std::int64_t w = 0;
            if (!input_index(p.transposed(), x, s, d.stride_w, d.dilation_w, d.pad_left, d.in_width,
                             w)) {
              continue;  // padding: X̂ = zx, so (X̂ − zx) = 0
            }
            const std::int64_t pixel = n * in.n + first_input_channel * in.c + h * in.h + w * in.w;
            for (std::int64_t c = 0; c < ipg; ++c) {
              const std::int64_t xv = load(ctx.input, d.input_dtype, pixel + c * in.c) - zx;
              const std::int64_t wv = weights_.value(o, c, r, s) - zw;
              acc += xv * wv;
            }
          }
        }
        const std::int64_t at = n * out.n + o * out.c + y * out.h + x * out.w;
        store(ctx.output, d.output_dtype, at, ctx.stage.apply(wrap_s32(acc), o));
      }
    }
  }

  // The input row (or column) that kernel tap k reads for output position `out`; false when the
  // tap falls in the padding (conv2d) or on no input element (conv2d_transpose).
  static bool input_index(bool transposed, std::int64_t out, std::int64_t k, std::int64_t stride,
                          std::int64_t dilation, std::int64_t pad, std::int64_t extent,
                          std::int64_t& index) {
    if (!transposed) {
      index = out * stride + k * dilation - pad;  // y·sh + r·dh − top
    } else {
      const std::int64_t t = out + pad - k * dilation;  // h·sh = y + top − r·dh
      if (t < 0 || t % stride != 0) return false;
      index = t / stride;
    }
    return index >= 0 && index < extent;
  }

  CanonicalWeights weights_;
  std::vector<std::int32_t> zero_points_;
};

class ReferenceEngine final : public Engine {
 public:
  std::string_view name() const override { return "reference"; }
  std::string unsupported_reason(const Problem&) const override { return {}; }
  std::unique_ptr<PreparedKernel> prepare(const Problem& problem,
                                          const CanonicalWeights& weights) const override {
    return std::make_unique<ReferenceKernel>(problem, weights);
  }
  std::unique_ptr<PreparedKernel> unpack(const Problem& problem,
                                         std::span<const std::byte> packed) const override {
    return std::make_unique<ReferenceKernel>(
        problem, CanonicalWeights::from_bytes(problem, packed, "packed_weights"));
  }
  CpuFeatures required_cpu_features() const override { return 0; }  // plain C++
  std::uint32_t packing_version() const override { return 1; }
};

}  // namespace

const Engine& reference_engine() {
  static const ReferenceEngine engine;
  return engine;
}

}  // namespace qconv::detail
