// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/nchw_depthwise_plan.hpp"

#include <cstring>

#include "core/parallel.hpp"
#include "core/worker_scratch.hpp"
#include "engines/gemm/activation_copies.hpp"

namespace qconv::detail::gemm {
namespace {

// Bytes after each padded row's last: a kernel's vector loads read up to 63 past its last tap.
constexpr std::int64_t kRowSlack = 64;
// Output rows narrower than this go to the transposes around the channels-in-lanes tiles: a
// plane's copy and call, and the lanes past a row's end, cost more than the transposes there.
// MobileNets' 3x3 layers on one core of a Zen 1, with the transposes: 112 and 56 output pixels a
// row 0.60-0.72x their time, 28 0.99-1.03x, 14 1.22-1.31x (s1) and 1.8x (s2), 7 1.8x.
constexpr std::int64_t kMinWidth = 28;

}  // namespace

std::unique_ptr<NchwDepthwisePlan> NchwDepthwisePlan::make(const Problem& problem,
                                                           const CanonicalWeights& weights,
                                                           const KernelSet& kernels) {
  const auto& d = problem.desc();
  if (kernels.nchw_depthwise_row == nullptr || problem.transposed()) return nullptr;
  if (d.groups != d.in_channels || d.out_channels != d.in_channels) return nullptr;
  if (d.input_layout != Layout::NCHW || d.output_layout != Layout::NCHW) return nullptr;
  if (d.dilation_h != 1 || d.dilation_w != 1 || d.kernel_w > kMaxKernelWidth) return nullptr;
  if (problem.out_width() < kMinWidth) return nullptr;
  const NchwDepthwiseKernel kernel =
      kernels.nchw_depthwise_row(d.scheme.kind, d.output_dtype, static_cast<int>(d.stride_w));
  if (kernel == nullptr) return nullptr;
  std::unique_ptr<NchwDepthwisePlan> plan(new NchwDepthwisePlan());
  NchwDepthwisePlan& p = *plan;
  p.kernel_ = kernel;
  p.channels_ = d.in_channels;
  p.in_h_ = d.in_height;
  p.in_w_ = d.in_width;
  p.out_h_ = problem.out_height();
  p.out_w_ = problem.out_width();
  p.kernel_h_ = d.kernel_h;
  p.pairs_ = (d.kernel_w + 1) / 2;
  p.stride_h_ = d.stride_h;
  p.pad_top_ = d.pad_top;
  p.pad_left_ = d.pad_left;
  p.padded_h_ = d.in_height + d.pad_top + d.pad_bottom;
  p.padded_w_ = d.in_width + d.pad_left + d.pad_right + kRowSlack;
  p.flip_ = d.input_dtype == DType::s8;
  p.weights_.assign(static_cast<std::size_t>(p.channels_ * p.kernel_h_ * p.pairs_), 0);
  p.weight_sums_.assign(static_cast<std::size_t>(p.channels_), 0);
  for (std::int64_t c = 0; c < p.channels_; ++c) {
    const std::int32_t zw = problem.weight_zero_point(c);
    std::int32_t sum = 0;
    for (std::int64_t r = 0; r < d.kernel_h; ++r) {
      for (std::int64_t s = 0; s < d.kernel_w; ++s) {
        const std::int32_t w = weights.value(c, 0, r, s) - zw;  // |w − zw| ≤ 255: an s16
        sum += w;
        auto& pair = p.weights_[static_cast<std::size_t>((c * p.kernel_h_ + r) * p.pairs_ + s / 2)];
        const auto half = static_cast<std::uint32_t>(static_cast<std::uint16_t>(w));
        pair = static_cast<std::int32_t>(static_cast<std::uint32_t>(pair) |
                                         (s % 2 == 0 ? half : half << 16));
      }
    }
    p.weight_sums_[static_cast<std::size_t>(c)] = sum;
  }
  return plan;
}

void NchwDepthwisePlan::run(const RunContext& ctx, const StageView& stage) const {
  // The zero point of the bytes the kernels read (u8), which fills the padding.
  const std::int32_t zx = ctx.input_zero_point + (flip_ ? 128 : 0);
  const auto fill = static_cast<std::uint8_t>(zx);
  const auto plane_bytes = static_cast<std::size_t>(padded_h_ * padded_w_);
  const int slots = parallel_participants(ctx.threads);
  // Scratch slot 1 (an NCHW input's NHWC copy, which this plan never makes).
  WorkerScratch scratch(thread_scratch(WorkerScratch::bytes(plane_bytes, slots), 1), plane_bytes,
                        slots);
  const auto* input = static_cast<const std::uint8_t*>(ctx.input);
  auto* output = static_cast<std::uint8_t*>(ctx.output);
  const std::int64_t in_plane = in_h_ * in_w_, out_plane = out_h_ * out_w_;
  parallel_for(ctx.threads, ctx.batch * channels_, [&](std::int64_t begin, std::int64_t end) {
    const WorkerScratch::Claim slot(scratch);
    std::uint8_t* const padded = slot.data();
    // The padding and slack: the zero point, in every plane of this body (the planes' copies
    // write the same bytes of their rows alone).
    std::memset(padded, fill, plane_bytes);
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t c = task % channels_;
      const std::uint8_t* plane = input + task * in_plane;
      std::uint8_t* to = padded + pad_top_ * padded_w_ + pad_left_;
      for (std::int64_t y = 0; y < in_h_; ++y, to += padded_w_) {
        const std::uint8_t* from = plane + y * in_w_;
        if (flip_) {
          for (std::int64_t x = 0; x < in_w_; ++x) to[x] = from[x] ^ 0x80;
        } else {
          std::memcpy(to, from, static_cast<std::size_t>(in_w_));
        }
      }
      const std::int32_t start = zero_point_term(zx, weight_sums_[static_cast<std::size_t>(c)]);
      kernel_({padded, padded_w_, stride_h_ * padded_w_, static_cast<std::int32_t>(kernel_h_),
               static_cast<std::int32_t>(pairs_), static_cast<std::int32_t>(out_w_),
               static_cast<std::int32_t>(out_h_), weights_.data() + c * kernel_h_ * pairs_, start,
               c, output + task * out_plane},
              stage);
    }
  });
}

}  // namespace qconv::detail::gemm
