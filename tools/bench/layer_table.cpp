// SPDX-License-Identifier: Apache-2.0
#include "layer_table.hpp"

#include <charconv>
#include <deque>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "options.hpp"
#include "qconv/error.hpp"

namespace qconv::bench {

namespace {

// Generated at build time from layers.csv by embed_layers.cmake.
constexpr LayerRow kRows[] = {
#include "layers_table.inc"
};

constexpr std::string_view kHeader =
    "network,layer,op,in_channels,out_channels,in_height,in_width,groups,kernel_h,kernel_w,"
    "stride_h,stride_w,pad_top,pad_bottom,pad_left,pad_right,count,macs_batch1";
constexpr int kColumns = 18;

// A table read by load_layer_table: its rows, the lines their names view, and the file's name.
// Held by pointer: the views stay valid however the table is handed over.
struct LoadedTable {
  std::vector<LayerRow> rows;
  std::deque<std::string> text;
  std::string name;
};
std::unique_ptr<LoadedTable>& loaded() {
  static std::unique_ptr<LoadedTable> table;
  return table;
}

std::string table_name() { return loaded() ? loaded()->name : "layers.csv"; }

std::string row_name(const LayerRow& row) {
  return std::string(row.network) + "/" + std::string(row.layer);
}

std::vector<std::string_view> split_columns(std::string_view line) {
  std::vector<std::string_view> columns;
  for (std::size_t at = 0;;) {
    const std::size_t comma = line.find(',', at);
    columns.push_back(line.substr(at, comma == std::string_view::npos ? comma : comma - at));
    if (comma == std::string_view::npos) return columns;
    at = comma + 1;
  }
}

std::string column_name(int column) {
  return std::string(split_columns(kHeader)[static_cast<std::size_t>(column)]);
}

}  // namespace

std::span<const LayerRow> layer_rows() {
  if (loaded()) return loaded()->rows;
  return kRows;
}

void load_layer_table(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw UsageError("--table " + path + ": cannot be read");
  auto table = std::make_unique<LoadedTable>();
  table->name = path;
  std::string line;
  int number = 0;
  bool header = false;
  while (std::getline(file, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = "--table " + path + ", line " + std::to_string(number);
    if (!header) {
      if (line != kHeader)
        throw UsageError(where + ": the header must be layers.csv's: " + std::string(kHeader));
      header = true;
      continue;
    }
    const std::string& text = table->text.emplace_back(line);
    const std::vector<std::string_view> c = split_columns(text);
    if (c.size() != kColumns) {
      throw UsageError(where + ": " + std::to_string(c.size()) + " columns, " +
                       std::to_string(kColumns) + " expected");
    }
    const auto number_at = [&](int column) {
      const std::string_view v = c[static_cast<std::size_t>(column)];
      std::int64_t value = 0;
      const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (v.empty() || error != std::errc() || end != v.data() + v.size()) {
        throw UsageError(where + ": " + column_name(column) + " = '" + std::string(v) +
                         "': not an integer");
      }
      return value;
    };
    for (int column = 0; column < 3; ++column) {
      if (c[static_cast<std::size_t>(column)].empty())
        throw UsageError(where + ": " + column_name(column) + " is empty");
    }
    LayerRow row{
        c[0],          c[1],          c[2],          number_at(3),  number_at(4),  number_at(5),
        number_at(6),  number_at(7),  number_at(8),  number_at(9),  number_at(10), number_at(11),
        number_at(12), number_at(13), number_at(14), number_at(15), number_at(16), 0};
    if (c[17].empty()) {
      try {
        row.macs_batch1 = macs(Problem(geometry(row)));
      } catch (const qconv::Error& e) {
        throw UsageError(where + ": not a valid problem: " + e.what());
      } catch (const std::runtime_error& e) {
        throw UsageError(where + ": " + e.what());
      }
    } else {
      row.macs_batch1 = number_at(17);
    }
    table->rows.push_back(row);
  }
  if (!header) throw UsageError("--table " + path + ": empty (layers.csv's header and rows)");
  if (table->rows.empty()) throw UsageError("--table " + path + ": a header and no rows");
  loaded() = std::move(table);
}

std::vector<std::string_view> network_names() {
  std::vector<std::string_view> names;
  for (const LayerRow& row : layer_rows()) {
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
    throw std::runtime_error(table_name() + ", " + row_name(row) + ": op = " + std::string(row.op) +
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
  for (const LayerRow& row : layer_rows()) {
    const std::string name = row_name(row);
    std::int64_t computed = 0;
    try {
      computed = macs(Problem(geometry(row)));
    } catch (const qconv::Error& e) {
      throw std::runtime_error(table_name() + ", " + name + ": not a valid problem: " + e.what());
    }
    if (row.count < 1) {
      throw std::runtime_error(table_name() + ", " + name +
                               ": count = " + std::to_string(row.count) + ": must be at least 1");
    }
    if (computed != row.macs_batch1) {
      throw std::runtime_error(
          table_name() + ", " + name + ": macs_batch1 = " + std::to_string(row.macs_batch1) +
          " but the geometry gives " + std::to_string(computed) + " MACs per image");
    }
  }
}

std::string benchdnn_problem(const Problem& problem) {
  const ProblemDesc& d = problem.desc();
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  return std::string(problem.transposed() ? "deconv:" : "") + "mb" + n(d.batch) + "_g" +
         n(d.groups) + "ic" + n(d.in_channels) + "oc" + n(d.out_channels) + "_ih" + n(d.in_height) +
         "oh" + n(problem.out_height()) + "kh" + n(d.kernel_h) + "sh" + n(d.stride_h) + "dh" +
         n(d.dilation_h - 1) + "ph" + n(d.pad_top) + "_iw" + n(d.in_width) + "ow" +
         n(problem.out_width()) + "kw" + n(d.kernel_w) + "sw" + n(d.stride_w) + "dw" +
         n(d.dilation_w - 1) + "pw" + n(d.pad_left);
}

}  // namespace qconv::bench
