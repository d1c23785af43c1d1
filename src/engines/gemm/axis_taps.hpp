// SPDX-License-Identifier: Apache-2.0
// Which kernel taps of one axis an output position reads from real input pixels, as the GEMM
// planner's tiles walk the input (gemm_engine.cpp). In an ordinary convolution these are the taps
// that do not fall in the padding: a contiguous range. A transposed convolution walks its input
// spread out at the stride (zeros between the pixels, in effect), and an output position reads
// real pixels only with every (stride / gcd(stride, dilation))-th tap: its phase. Listing only
// those taps splits the layer into stride_h·stride_w dense sub-convolutions, one per output
// phase, and multiplies no inserted zero.
#pragma once

#include <compare>
#include <cstdint>

namespace qconv::detail::gemm {

// One axis of the tensor the tiles walk: output position `out` reads position
// out·stride + r·dilation − pad for tap r of `kernel`; a position holds a real input pixel when it
// lies in [0, extent) and in [first, end), a multiple of `spacing` past `first`.
struct AxisWalk {
  std::int64_t stride, dilation, pad, kernel, extent;
  std::int64_t first, end, spacing;
};

// The taps r = begin, begin + step, ... below end (none when begin == end).
struct TapRange {
  std::int64_t begin = 0, end = 0, step = 1;
  auto operator<=>(const TapRange&) const = default;
  std::int64_t count() const { return begin >= end ? 0 : (end - begin + step - 1) / step; }
};

// An ordinary convolution's axis: every position of [0, extent) is a pixel (or, in a padded copy,
// holds the zero point).
inline AxisWalk dense_axis(std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                           std::int64_t kernel, std::int64_t extent) {
  return {stride, dilation, pad, kernel, extent, 0, extent, 1};
}

// A transposed convolution's axis over its input spread out at `stride` (pixel i at
// i·stride + (kernel − 1)·dilation − pad, an output of `out_extent` positions): walked at stride 1
// with no padding, the flipped kernel's tap r at out + r·dilation.
AxisWalk spread_axis(std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                     std::int64_t kernel, std::int64_t in_extent, std::int64_t out_extent);

// The taps output position `out` reads real pixels with. They are an arithmetic progression: the
// positions lie in a range and on one residue modulo the spacing.
TapRange axis_taps(std::int64_t out, const AxisWalk& walk);

}  // namespace qconv::detail::gemm
