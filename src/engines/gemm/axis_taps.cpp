// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/axis_taps.hpp"

#include <algorithm>

namespace qconv::detail::gemm {

AxisWalk spread_axis(std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                     std::int64_t kernel, std::int64_t in_extent, std::int64_t out_extent) {
  const std::int64_t first = (kernel - 1) * dilation - pad;
  return {1,
          dilation,
          0,
          kernel,
          out_extent + (kernel - 1) * dilation,
          first,
          first + (in_extent - 1) * stride + 1,
          stride};
}

TapRange axis_taps(std::int64_t out, const AxisWalk& walk) {
  const std::int64_t low = std::max<std::int64_t>(0, walk.first);
  const std::int64_t high = std::min(walk.extent, walk.end);
  TapRange taps;
  std::int64_t last = -1, count = 0;
  for (std::int64_t r = 0; r < walk.kernel; ++r) {
    const std::int64_t at = out * walk.stride + r * walk.dilation - walk.pad;
    if (at < low || at >= high) continue;
    const std::int64_t offset = at - walk.first;  // >= 0: at >= first
    if (offset % walk.spacing != 0) continue;
    if (count == 0) taps.begin = r;
    if (count == 1) taps.step = r - taps.begin;
    last = r;
    ++count;
  }
  // The valid taps are those of a range on one residue class: equally spaced, so begin, step and
  // the last one describe them all.
  taps.end = count == 0 ? taps.begin : last + 1;
  return taps;
}

}  // namespace qconv::detail::gemm
