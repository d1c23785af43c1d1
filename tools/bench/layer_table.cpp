// SPDX-License-Identifier: Apache-2.0
#include "layer_table.hpp"

#include <stdexcept>
#include <string>

#include "qconv/error.hpp"

namespace qconv::bench {

namespace {

// Generated at build time from layers.csv by embed_layers.cmake.
constexpr LayerRow kRows[] = {
#include "layers_table.inc"
};

std::string row_name(const LayerRow& row) {
  return std::string(row.network) + "/" + std::string(row.layer);
}

}  // namespace

std::span<const LayerRow> layer_rows() { return kRows; }

std::vector<std::string_view> network_names() {
  std::vector<std::string_view> names;
  for (const LayerRow& row : kRows) {
    if (names.empty() || names.back() != row.network) names.push_back(row.network);
  }
  return names;
}

ProblemDesc geometry(const LayerRow& row) {
  ProblemDesc d;
  if (row.op == "conv") {
    d.op = OpKind::conv2d;
  } else if (row.op == "transposed") {
    d.op = OpKind::conv2d_transpose;
    d.weight_layout = Layout::IOHW;  // the frameworks' transposed layout; OHWI is conv-only
  } else {
    throw std::runtime_error("layers.csv, " + row_name(row) + ": op = " + std::string(row.op) +
                             ": the bench knows \"conv\" and \"transposed\"");
  }
  d.in_channels = row.in_channels;
  d.out_channels = row.out_channels;
  d.in_height = row.in_height;
  d.in_width = row.in_width;
  d.groups = row.groups;
  d.kernel_h = row.kernel_h;
  d.kernel_w = row.kernel_w;
  d.stride_h = row.stride_h;
  d.stride_w = row.stride_w;
  d.pad_top = row.pad_top;
  d.pad_bottom = row.pad_bottom;
  d.pad_left = row.pad_left;
  d.pad_right = row.pad_right;
  d.output_dtype = DType::s32;  // what the default scheme (int32) outputs, so the desc is valid
  return d;
}

std::int64_t macs(const Problem& problem) {
  const ProblemDesc& d = problem.desc();
  const std::int64_t taps = d.kernel_h * d.kernel_w;
  if (problem.transposed()) {
    return d.batch * d.in_height * d.in_width * d.in_channels * problem.out_channels_per_group() *
           taps;
  }
  return d.batch * problem.out_height() * problem.out_width() * d.out_channels *
         problem.in_channels_per_group() * taps;
}

void check_layer_table() {
  for (const LayerRow& row : kRows) {
    const std::string name = row_name(row);
    std::int64_t computed = 0;
    try {
      computed = macs(Problem(geometry(row)));
    } catch (const qconv::Error& e) {
      throw std::runtime_error("layers.csv, " + name + ": not a valid problem: " + e.what());
    }
    if (row.count < 1) {
      throw std::runtime_error("layers.csv, " + name + ": count = " + std::to_string(row.count) +
                               ": must be at least 1");
    }
    if (computed != row.macs_batch1) {
      throw std::runtime_error(
          "layers.csv, " + name + ": macs_batch1 = " + std::to_string(row.macs_batch1) +
          " but the geometry gives " + std::to_string(computed) + " MACs per image");
    }
  }
}

}  // namespace qconv::bench
