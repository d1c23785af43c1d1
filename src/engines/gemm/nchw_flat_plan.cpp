// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/nchw_flat_plan.hpp"

#include <algorithm>

#include "core/parallel.hpp"
#include "core/worker_scratch.hpp"
#include "engines/gemm/activation_copies.hpp"
#include "engines/gemm/weight_symmetry.hpp"

namespace qconv::detail::gemm {
namespace {

constexpr std::int64_t kBlockPixels = 64;
// Tasks a call is cut into at least, where its blocks are fewer: each block's output channels
// split into chunks (each interleaving the block's input again), so that two threads share a
// small image evenly. A large image's blocks are tasks whole: its input interleaved once.
constexpr std::int64_t kMinTasks = 8;

}  // namespace

NchwFlatKernel NchwFlatPlan::kernel_for(const Problem& problem, const KernelSet& kernels) {
  const auto& d = problem.desc();
  if (kernels.nchw_flat_run == nullptr || problem.transposed() || d.groups != 1) return nullptr;
  if (d.input_layout != Layout::NCHW || d.output_layout != Layout::NCHW) return nullptr;
  if (d.kernel_h != 1 || d.kernel_w != 1 || d.stride_h != 1 || d.stride_w != 1) return nullptr;
  if (d.pad_top != 0 || d.pad_bottom != 0 || d.pad_left != 0 || d.pad_right != 0) return nullptr;
  if (!symmetric_weights(problem)) return nullptr;
  // A partial last block multiplies its empty lanes too. Where they would be over a tenth of the
  // lanes (a 14x14 image: 4 blocks for 196 pixels; 7x7: 64 lanes for 49) the transposes around the
  // NHWC tiles measured faster; at 112x112, 56x56 and 28x28 this plan was (MobileNetV2: b2.expand
  // 146.7 -> 94.4 us with NCHW tensors, 109.5 with NHWC ones).
  const std::int64_t pixels = d.in_height * d.in_width;
  const std::int64_t lanes = (pixels + kBlockPixels - 1) / kBlockPixels * kBlockPixels;
  if (10 * lanes > 11 * pixels) return nullptr;
  return kernels.nchw_flat_run(d.scheme.kind, d.output_dtype);
}

NchwFlatPlan::NchwFlatPlan(const Problem& problem, const CanonicalWeights& weights,
                           std::int32_t shift, NchwFlatKernel kernel, int input_widening)
    : kernel_(kernel),
      input_widening_(input_widening),
      channels_(problem.desc().in_channels),
      out_channels_(problem.desc().out_channels),
      pixels_(problem.desc().in_height * problem.desc().in_width) {
  const std::int64_t row = (channels_ + 3) / 4 * 4;
  weights_.assign(static_cast<std::size_t>(out_channels_ * row), 0);
  for (std::int64_t o = 0; o < out_channels_; ++o) {
    for (std::int64_t c = 0; c < channels_; ++c) {
      weights_[static_cast<std::size_t>(o * row + c)] =
          static_cast<std::int8_t>(weights.value(o, c, 0, 0) - shift);
    }
  }
}

void NchwFlatPlan::run(const RunContext& ctx, const StageView& stage, std::int32_t input_zero_point,
                       bool flip_input, const std::int32_t* zero_point_sums) const {
  const std::int64_t row = (channels_ + 3) / 4 * 4;
  const std::int64_t blocks = (pixels_ + kBlockPixels - 1) / kBlockPixels;
  const std::int64_t wanted = (kMinTasks + ctx.batch * blocks - 1) / (ctx.batch * blocks);
  const std::int64_t chunk_channels = ((out_channels_ + wanted - 1) / wanted + 3) / 4 * 4;
  const std::int64_t chunks = (out_channels_ + chunk_channels - 1) / chunk_channels;
  const int slots = parallel_participants(ctx.threads);
  const auto slot_bytes = static_cast<std::size_t>(row * kBlockPixels * input_widening_);
  // Scratch slot 1 (an NCHW input's NHWC copy, which this plan never makes).
  WorkerScratch scratch(thread_scratch(WorkerScratch::bytes(slot_bytes, slots), 1), slot_bytes,
                        slots);
  const auto* input = static_cast<const std::uint8_t*>(ctx.input);
  auto* output = static_cast<std::int8_t*>(ctx.output);
  parallel_for(ctx.threads, ctx.batch * blocks * chunks, [&](std::int64_t begin, std::int64_t end) {
    const WorkerScratch::Claim slot(scratch);
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t n = task / (blocks * chunks);
      const std::int64_t block = task / chunks % blocks, chunk = task % chunks;
      const std::int64_t first_pixel = block * kBlockPixels;
      const std::int64_t first_channel = chunk * chunk_channels;
      kernel_({input + n * channels_ * pixels_ + first_pixel, pixels_,
               static_cast<std::int32_t>(std::min(kBlockPixels, pixels_ - first_pixel)),
               static_cast<std::int32_t>(channels_), flip_input, slot.data(),
               weights_.data() + first_channel * row,
               static_cast<std::int32_t>(std::min(chunk_channels, out_channels_ - first_channel)),
               first_channel, zero_point_sums, input_zero_point,
               output + (n * out_channels_ + first_channel) * pixels_ + first_pixel},
              stage);
    }
  });
}

}  // namespace qconv::detail::gemm
