// SPDX-License-Identifier: Apache-2.0
// The benchmark layers: the rows of layers.csv (network facts, compiled in at build time) and what
// the bench derives from them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qconv/problem.hpp"

namespace qconv::bench {

// One row of layers.csv, column for column.
struct LayerRow {
  std::string_view network;
  std::string_view layer;
  std::string_view op;  // "conv" or "transposed"
  std::int64_t in_channels, out_channels, in_height, in_width, groups;
  std::int64_t kernel_h, kernel_w, stride_h, stride_w;
  std::int64_t pad_top, pad_bottom, pad_left, pad_right;
  std::int64_t count;        // how often the layer occurs in its network
  std::int64_t macs_batch1;  // multiply-accumulates of one image, as the table states them
};

// The table's rows: the compiled-in layers.csv, or the file load_layer_table read.
std::span<const LayerRow> layer_rows();

// Replaces the compiled-in table with the rows of a CSV file of layers.csv's columns, under the
// same header (--table: a user's own layers, timed the same way). macs_batch1 may be left empty: it
// is then computed from the geometry. Throws UsageError naming the file, the line and the column
// of a row it cannot read.
void load_layer_table(const std::string& path);

// Network names in table order.
std::vector<std::string_view> network_names();

// The row's geometry (op, channels, sizes, kernel, stride, padding, groups; no output padding:
// the table has none) with everything else left at ProblemDesc's defaults, except the output
// dtype (s32, as the default scheme int32 needs) and, for a transposed row, the weight layout
// (IOHW).
ProblemDesc geometry(const LayerRow& row);

// Multiply-accumulates of a problem at its batch size. A convolution does C_in/groups·kh·kw of
// them per output element; a transposed convolution scatters every input element through
// C_out/groups·kh·kw taps, counting the taps that land in the cropped padding too (the
// frameworks' convention, and the table's).
std::int64_t macs(const Problem& problem);

// The problem as oneDNN's benchdnn spells a convolution, so a row can be re-run there:
// "mb1_g1ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1" (dilation d written as d - 1, as
// benchdnn does; "deconv:" before a transposed problem).
std::string benchdnn_problem(const Problem& problem);

// Checks every row: a known op, a valid problem, a positive count, and MACs computed from the
// geometry equal to the table's macs_batch1. Throws std::runtime_error naming the row otherwise.
void check_layer_table();

}  // namespace qconv::bench
