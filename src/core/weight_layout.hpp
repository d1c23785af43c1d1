// SPDX-License-Identifier: Apache-2.0
// Where a conv2d weight layout keeps each logical dimension: the one layout switch that both the
// Problem (logical dimensions to a shape) and the TVM face (a given shape back to logical
// dimensions) use. HWOI ([kh, kw, C, multiplier], depthwise) splits the output channels over two
// axes and is handled beside it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "qconv/tensor.hpp"
#include "qconv/types.hpp"

namespace qconv::detail {

// The axis of the shape that holds the output channels (o), the input channels per group (i),
// the kernel rows (h) and the kernel columns (w).
struct WeightAxes {
  int o, i, h, w;
};

// OIHW, OHWI and HWIO; nothing for any other layout.
constexpr std::optional<WeightAxes> conv_weight_axes(Layout layout) {
  switch (layout) {
    case Layout::OIHW: return WeightAxes{0, 1, 2, 3};
    case Layout::OHWI: return WeightAxes{0, 3, 1, 2};
    case Layout::HWIO: return WeightAxes{3, 2, 0, 1};
    default: return std::nullopt;
  }
}

// The shape of a weight with these logical dimensions in `axes`' layout.
inline Shape weight_shape_of(const WeightAxes& axes, std::int64_t o, std::int64_t i,
                             std::int64_t kh, std::int64_t kw) {
  Shape shape(4);
  shape[static_cast<std::size_t>(axes.o)] = o;
  shape[static_cast<std::size_t>(axes.i)] = i;
  shape[static_cast<std::size_t>(axes.h)] = kh;
  shape[static_cast<std::size_t>(axes.w)] = kw;
  return shape;
}

}  // namespace qconv::detail
