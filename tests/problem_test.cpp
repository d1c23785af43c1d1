// SPDX-License-Identifier: Apache-2.0
// Problem: derived sizes and shapes, and validation that costs nothing proportional to the
// problem's size (a Problem is checked before any tensor exists).
#include "qconv/problem.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

using qconv::Layout;

// conv2d: OH = floor((H + t + b − ((kh−1)·dh + 1)) / sh) + 1 = floor((7 + 1 + 2 − 5) / 2) + 1 = 3;
// OW = floor((5 + 0 + 1 − 3) / 3) + 1 = 2.
TEST(Problem, ConvOutputSizeAndShapes) {
  qconv::ProblemDesc d;
  d.batch = 2;
  d.in_channels = 4;
  d.out_channels = 6;
  d.groups = 2;
  d.in_height = 7;
  d.in_width = 5;
  d.kernel_h = 3;
  d.kernel_w = 3;
  d.dilation_h = 2;
  d.stride_h = 2;
  d.stride_w = 3;
  d.pad_top = 1;
  d.pad_bottom = 2;
  d.pad_right = 1;
  d.weight_layout = Layout::HWIO;
  d.output_layout = Layout::NCHW;
  const qconv::Problem p(d);
  EXPECT_EQ(p.out_height(), 3);
  EXPECT_EQ(p.out_width(), 2);
  EXPECT_EQ(p.reduction_size(), 2 * 3 * 3);
  EXPECT_EQ(p.input_shape(), (qconv::Shape{2, 7, 5, 4}));
  EXPECT_EQ(p.weight_shape(), (qconv::Shape{3, 3, 2, 6}));
  EXPECT_EQ(p.output_shape(5), (qconv::Shape{5, 6, 3, 2}));
}

// conv2d_transpose: OH = sh·(H−1) + (kh−1)·dh + 1 − t − b + oph = 2·3 + 2 + 1 − 1 − 0 + 1 = 9.
TEST(Problem, TransposedOutputSize) {
  qconv::ProblemDesc d;
  d.op = qconv::OpKind::conv2d_transpose;
  d.in_height = 4;
  d.in_width = 4;
  d.kernel_h = 3;
  d.kernel_w = 1;
  d.stride_h = 2;
  d.pad_top = 1;
  d.output_pad_h = 1;
  d.weight_layout = Layout::IOHW;
  const qconv::Problem p(d);
  EXPECT_EQ(p.out_height(), 9);
  EXPECT_EQ(p.out_width(), 4);
}

// The largest channel count is validated in no time: nothing per channel is built when the
// scales are per tensor (a table of 2^31 entries would take tens of gigabytes).
TEST(Problem, HugeChannelCountsValidateWithoutPerChannelTables) {
  qconv::ProblemDesc d;
  d.out_channels = 2147483647;
  d.scheme.kind = qconv::SchemeKind::fbgemm;
  const auto start = std::chrono::steady_clock::now();
  const qconv::Problem p(d);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(p.output_shape()[3], 2147483647);
  EXPECT_LT(elapsed, std::chrono::seconds(1));
}

}  // namespace
