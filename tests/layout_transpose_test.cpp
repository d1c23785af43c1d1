// SPDX-License-Identifier: Apache-2.0
// The NCHW <-> NHWC transposes against the definition, on shapes around the 16 x 16 and 16 x 64
// blocks and the rows past them, four at a time (tails of rows and of columns, columns past the
// last 16 of 64-row blocks, strides wider than the matrix) and for every value size.
#include "engines/layout_transpose.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace qconv::detail {
namespace {

// Bytes of value (r, c) for a matrix of `element`-byte values: distinct for every (r, c, byte).
std::vector<std::uint8_t> pattern(std::int64_t rows, std::int64_t stride, std::size_t element,
                                  std::mt19937& rng) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(rows * stride) * element);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  return bytes;
}

TEST(LayoutTranspose, EveryShapeAroundTheBlocksAndEveryValueSize) {
  std::mt19937 rng(2026);
  for (std::size_t element : {1u, 2u, 4u, 8u}) {
    for (std::int64_t rows : {0, 1, 2, 3, 4, 5, 15, 16, 17, 19, 20, 32, 47, 64, 129, 192}) {
      for (std::int64_t cols : {0, 1, 5, 16, 31, 33, 48, 63, 64, 65, 70, 130}) {
        const std::int64_t in_stride = cols + (rows % 3), out_stride = rows + (cols % 5);
        const std::vector<std::uint8_t> in = pattern(rows, in_stride, element, rng);
        // Bytes the transpose must not touch (the stride's slack) keep this value.
        std::vector<std::uint8_t> out(static_cast<std::size_t>(cols * out_stride) * element, 0xa5);
        std::vector<std::uint8_t> want = out;
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            std::memcpy(&want[static_cast<std::size_t>(c * out_stride + r) * element],
                        &in[static_cast<std::size_t>(r * in_stride + c) * element], element);
          }
        }
        transpose_values(in.data(), in_stride, out.data(), out_stride, rows, cols, element);
        ASSERT_EQ(out, want) << rows << " x " << cols << " values of " << element << " bytes";
      }
    }
  }
}

// Input lines a multiple of 1 KiB apart take 16-row blocks where other strides take 64-row ones
// (layout_transpose.cpp): the same bytes either way, around both blocks' tails.
TEST(LayoutTranspose, StridesOfWholeKibibytes) {
  std::mt19937 rng(1024);
  for (std::int64_t in_stride : {1024, 2048, 1040}) {
    for (std::int64_t rows : {63, 64, 65, 130, 196}) {
      for (std::int64_t cols : {16, 70, 1024}) {
        if (cols > in_stride) continue;
        const std::int64_t out_stride = rows + 3;
        const std::vector<std::uint8_t> in = pattern(rows, in_stride, 1, rng);
        std::vector<std::uint8_t> out(static_cast<std::size_t>(cols * out_stride), 0xa5);
        std::vector<std::uint8_t> want = out;
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            want[static_cast<std::size_t>(c * out_stride + r)] =
                in[static_cast<std::size_t>(r * in_stride + c)];
          }
        }
        transpose_bytes(in.data(), in_stride, out.data(), out_stride, rows, cols);
        ASSERT_EQ(out, want) << rows << " x " << cols << ", input lines " << in_stride << " apart";
      }
    }
  }
}

}  // namespace
}  // namespace qconv::detail
