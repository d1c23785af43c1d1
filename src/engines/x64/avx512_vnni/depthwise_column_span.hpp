// SPDX-License-Identifier: Apache-2.0
// Where a column buffer's build (depthwise_columns.cpp, depthwise_columns_vbmi.cpp) reads its
// input: each group's rows at the buffer's first column, and the buffer columns outside the input.
#pragma once

#include <cstdint>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

// Buffer columns [0, left) and [right, c.columns) lie outside the input: the zero point.
struct ColumnSpan {
  std::int32_t left, right;
  explicit ColumnSpan(const DepthwiseColumns& c) {
    const std::int64_t left64 = c.first_column < 0 ? -c.first_column : 0;
    left = left64 < c.columns ? static_cast<std::int32_t>(left64) : c.columns;
    std::int64_t right64 = c.in_width - c.first_column;
    if (right64 > c.columns) right64 = c.columns;
    right = right64 < left ? left : static_cast<std::int32_t>(right64);
  }
};

// Group g's 4 rows at the block's channels and the buffer's column 0 (null rows stay null).
inline void group_rows(const DepthwiseColumns& c, std::int32_t g, const std::uint8_t* (&row)[4]) {
  for (int i = 0; i < 4; ++i) {
    const std::uint8_t* r = c.rows[g * 4 + i];
    row[i] = r != nullptr ? r + c.channel_offset + c.first_column * c.pixel_bytes : nullptr;
  }
}

}  // namespace qconv::detail::avx512_vnni
