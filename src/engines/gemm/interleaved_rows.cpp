// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/interleaved_rows.hpp"

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "engines/gemm/activation_copies.hpp"

namespace qconv::detail::gemm {
namespace {

// Channels of a pixel in the copy: the layer's padded to one dword.
constexpr std::int64_t kPixelBytes = 4;
constexpr std::int64_t kMaxChannels = kPixelBytes;
// Each input row lands in at most this many groups (R / stride_h): the copy's size.
constexpr std::int64_t kMaxRowCopies = 4;
// The interleaved problem multiplies more (whole 64-byte runs per kernel row group) than im2col
// (the window's bytes, rounded up to 64), but gathers nothing: it is taken up to this factor
// more tile multiplies (ResNet's 7x7: 4 against 3; MobileNet's 3x3: 1 against 1).
constexpr std::int64_t kMaxMultiplyFactor = 2;

// Tile multiplies per 16 pixels x 16 channels for a run (or window) of `bytes` bytes: one chunk of
// 32 bytes, or chunks of 64 (about the same cost each).
std::int64_t multiplies(std::int64_t bytes) { return bytes <= 32 ? 1 : (bytes + 63) / 64; }

// A run's bytes as the AMX block reads them: 32, or whole chunks of 64.
std::int64_t run_bytes(std::int64_t bytes) { return bytes <= 32 ? 32 : (bytes + 63) / 64 * 64; }

class InterleavedRowsKernel final : public PreparedKernel {
 public:
  InterleavedRowsKernel(std::unique_ptr<PreparedKernel> inner, const Problem& problem,
                        const Problem& interleaved, const RowInterleaving& interleaving,
                        const CanonicalWeights& weights, const KernelSet& kernels)
      : inner_(std::move(inner)),
        problem_(problem),
        interleaved_(interleaved),
        interleaving_(interleaving),
        weights_(weights.bytes()),
        kernels_(kernels) {}

  void run(const RunContext& context) const override {
    const auto& d = problem_.desc();
    const auto& id = interleaved_.desc();
    const auto* input = static_cast<const std::uint8_t*>(context.input);
    if (d.input_layout == Layout::NCHW) {
      input = nhwc_from_nchw(input, context.batch, d.in_channels, d.in_height, d.in_width,
                             context.threads);
    }
    // An input of the other signedness than the interleaved problem's is copied as x ± 128.
    const bool flip = d.input_dtype != id.input_dtype;
    const std::int32_t zero_point =
        context.input_zero_point + (flip ? id.input_zero_point - d.input_zero_point : 0);
    const std::int64_t groups = context.batch * id.in_height;
    const std::int64_t group_bytes = id.in_width * id.in_channels;
    std::uint8_t* copy = thread_scratch(static_cast<std::size_t>(groups * group_bytes), 5);
    parallel_for(context.threads, groups, [&](std::int64_t begin, std::int64_t end) {
      kernels_.interleave_rows({input, copy, d.in_height, d.in_width, d.in_channels,
                                interleaving_.rows, d.stride_h, id.in_height, id.in_width,
                                d.pad_top, d.pad_left, begin, end - begin, flip,
                                static_cast<std::uint8_t>(zero_point)});
    });
    inner_->run({interleaved_, context.batch, zero_point, copy, context.output, context.stage,
                 context.threads});
  }
  // The weights the interleaved problem adds are its zero point: they add |zw − zw| = 0.
  std::vector<std::int64_t> take_abs_weight_sums() override {
    return inner_->take_abs_weight_sums();
  }
  std::vector<std::byte> packed() const override { return weights_; }
  CanonicalWeights canonical_weights() const override {
    return CanonicalWeights::from_bytes(problem_, weights_, "packed_weights");
  }
  std::string describe() const override {
    const auto& d = problem_.desc();
    const std::int64_t run = interleaving_.run_positions * interleaving_.rows * kPixelBytes;
    return inner_->describe() + " (first layer k" + std::to_string(d.kernel_h) + "x" +
           std::to_string(d.kernel_w) + " s" + std::to_string(d.stride_h) + ": " +
           std::to_string(interleaving_.rows) + " padded input rows interleaved per pixel in a " +
           "copy, " + std::to_string(interleaving_.row_groups) + " kernel row groups of " +
           std::to_string(run) + "-byte runs, no im2col)";
  }

 private:
  std::unique_ptr<PreparedKernel> inner_;
  Problem problem_;
  Problem interleaved_;
  RowInterleaving interleaving_;
  std::vector<std::byte> weights_;  // the layer's canonical weights (its packed form)
  const KernelSet& kernels_;
};

}  // namespace

RowInterleaving row_interleaving(const Problem& problem) {
  const auto& d = problem.desc();
  if (problem.transposed() || d.groups != 1 || d.in_channels > kMaxChannels || d.dilation_h != 1 ||
      d.dilation_w != 1 || d.kernel_h * d.kernel_w == 1) {
    return {};
  }
  // The copy kernel addresses an image with s32 offsets, and reads whole dwords of it.
  const std::int64_t image_bytes = d.in_height * d.in_width * d.in_channels;
  if (image_bytes < kPixelBytes || image_bytes > std::numeric_limits<std::int32_t>::max() / 2) {
    return {};
  }
  RowInterleaving best;
  std::int64_t best_multiplies = std::numeric_limits<std::int64_t>::max();
  for (const std::int64_t rows : {2, 4, 8, 16}) {  // R·4 bytes divide a 32-byte chunk or 64
    if (rows % d.stride_h != 0 || rows / d.stride_h > kMaxRowCopies) continue;
    const std::int64_t run = run_bytes(d.kernel_w * rows * kPixelBytes);
    const std::int64_t row_groups = (d.kernel_h + rows - 1) / rows;
    const std::int64_t cost = row_groups * multiplies(run);
    if (cost < best_multiplies) {  // ties: fewer rows, the smaller copy
      best_multiplies = cost;
      best = {rows, run / (rows * kPixelBytes), row_groups};
    }
  }
  const std::int64_t im2col = multiplies(d.in_channels * d.kernel_h * d.kernel_w);
  if (best.rows == 0 || best_multiplies > kMaxMultiplyFactor * im2col) return {};
  return best;
}

Problem interleaved_problem(const Problem& problem, const RowInterleaving& interleaving,
                            bool u8_input) {
  const auto& d = problem.desc();
  ProblemDesc desc = d;
  desc.in_channels = interleaving.rows * kPixelBytes;
  // Output row y reads groups y + i·R / stride_h (its kernel row group i).
  desc.dilation_h = interleaving.rows / d.stride_h;
  desc.dilation_w = 1;
  desc.kernel_h = interleaving.row_groups;
  desc.kernel_w = interleaving.run_positions;
  desc.stride_h = 1;
  desc.in_height = problem.out_height() + desc.dilation_h * (desc.kernel_h - 1);
  desc.in_width = d.stride_w * (problem.out_width() - 1) + desc.kernel_w;
  desc.pad_top = desc.pad_bottom = desc.pad_left = desc.pad_right = 0;
  desc.input_layout = Layout::NHWC;
  desc.weight_layout = Layout::OHWI;
  if (u8_input && d.input_dtype == DType::s8) {  // the copy holds x + 128
    desc.input_dtype = DType::u8;
    desc.input_zero_point = d.input_zero_point + 128;
  }
  // The layer's accumulator bound holds (the added weights add exactly 0); the interleaved K
  // alone must not refuse it.
  desc.allow_wraparound = true;
  return Problem(desc);
}

CanonicalWeights interleaved_weights(const Problem& problem, const Problem& interleaved,
                                     const RowInterleaving& interleaving,
                                     const CanonicalWeights& weights) {
  const auto& d = problem.desc();
  const auto& id = interleaved.desc();
  const std::int64_t rows = interleaving.rows;
  // OHWI: [o][row group][position][row j][channel c], tap (group·R + j, position) of the layer.
  std::vector<std::uint8_t> bytes(
      static_cast<std::size_t>(d.out_channels * id.kernel_h * id.kernel_w * id.in_channels));
  std::size_t i = 0;
  for (std::int64_t o = 0; o < d.out_channels; ++o) {
    const auto zero_point = static_cast<std::uint8_t>(problem.weight_zero_point(o));
    const std::uint8_t* channel = weights.data() + weights.channel_offset(o);
    for (std::int64_t group = 0; group < id.kernel_h; ++group) {
      for (std::int64_t s = 0; s < id.kernel_w; ++s) {
        for (std::int64_t j = 0; j < rows; ++j) {
          const std::int64_t r = group * rows + j;
          for (std::int64_t c = 0; c < kPixelBytes; ++c) {
            const bool tap = r < d.kernel_h && s < d.kernel_w && c < d.in_channels;
            bytes[i++] =
                tap ? channel[c * weights.step_c() + (r * d.kernel_w + s) * weights.step_tap()]
                    : zero_point;
          }
        }
      }
    }
  }
  return CanonicalWeights(interleaved, std::move(bytes));
}

std::unique_ptr<PreparedKernel> with_interleaved_rows(std::unique_ptr<PreparedKernel> inner,
                                                      const Problem& problem,
                                                      const Problem& interleaved,
                                                      const RowInterleaving& interleaving,
                                                      const CanonicalWeights& weights,
                                                      const KernelSet& kernels) {
  return std::make_unique<InterleavedRowsKernel>(std::move(inner), problem, interleaved,
                                                 interleaving, weights, kernels);
}

}  // namespace qconv::detail::gemm
