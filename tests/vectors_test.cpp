// SPDX-License-Identifier: Apache-2.0
// The external test vectors (tests/data/vectors, see its README): cases produced by other
// projects' own tools with their exact expected outputs. Every file must be reproduced bit for bit.
//   tvm_*      u8 x u8 -> s32 accumulator, through the TVM face (qnn::conv2d).
//   cmsisnn_*  s8 x s8 -> s8 with s32 bias and the files' own per-channel (multiplier, shift),
//              through a Problem with scheme tflite; conv_transpose2d files take IOHW weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "qconv/faces/qnn.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using qconv::DType;
using qconv::Layout;

fs::path vector_dir() { return fs::path(QCONV_TEST_DATA) / "vectors"; }

std::vector<std::string> vector_files() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(vector_dir())) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A vector file: its JSON with every "data" array replaced by an index into `arrays`.
// nlohmann/json builds one node per number and, unoptimised, needs a second per megabyte; the
// 5 MB TVM file holds a million weights. The integer arrays are therefore read with from_chars
// and only the small remainder goes through the JSON parser.
struct VectorFile {
  json meta;
  std::vector<std::vector<std::int32_t>> arrays;

  const std::vector<std::int32_t>& values(const json& array) const {
    return arrays.at(array.at("data").get<std::size_t>());
  }
};

// Reads the integers of an array starting just after its '['; returns the position after its
// ']', or nullptr when the array holds anything but integers (left to the JSON parser).
const char* read_integers(const char* p, const char* end, std::vector<std::int32_t>& values) {
  while (true) {
    while (p < end && (*p == ' ' || *p == '\n')) ++p;
    if (p < end && *p == ']') return p + 1;
    std::int32_t v = 0;
    const auto [next, error] = std::from_chars(p, end, v);
    if (error != std::errc()) return nullptr;
    values.push_back(v);
    p = next;
    while (p < end && *p == ' ') ++p;
    if (p < end && *p == ',') {
      ++p;
    } else if (p >= end || *p != ']') {
      return nullptr;  // a float such as 0.5 stops from_chars at the '.'
    }
  }
}

VectorFile load(const std::string& name) {
  std::ifstream in(vector_dir() / name, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const char* const end = text.data() + text.size();
  const std::string marker = "\"data\": [";
  VectorFile file;
  std::string rest;  // the text with the integer arrays replaced by their index
  std::size_t pos = 0;
  for (std::size_t found; (found = text.find(marker, pos)) != std::string::npos;) {
    std::vector<std::int32_t> values;
    const char* after = read_integers(text.data() + found + marker.size(), end, values);
    const std::size_t next = found + marker.size();
    if (after == nullptr) {
      rest.append(text, pos, next - pos);
      pos = next;
      continue;
    }
    rest.append(text, pos, found - pos);
    rest += "\"data\": " + std::to_string(file.arrays.size());
    file.arrays.push_back(std::move(values));
    pos = static_cast<std::size_t>(after - text.data());
  }
  rest.append(text, pos);
  file.meta = json::parse(rest);
  return file;
}

qconv::Shape shape_of(const json& array) { return array.at("shape").get<qconv::Shape>(); }

// An array's values as 8-bit elements of `dtype` (uint8 or int8), each checked to fit.
std::vector<std::uint8_t> bytes_of(const VectorFile& f, const json& array, DType dtype) {
  const auto& values = f.values(array);
  std::vector<std::uint8_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] < qconv::dtype_min(dtype) || values[i] > qconv::dtype_max(dtype)) {
      throw std::runtime_error("value out of range for " + std::string(to_string(dtype)));
    }
    out[i] = static_cast<std::uint8_t>(values[i]);  // two's complement for int8
  }
  return out;
}

qconv::ConstTensorView view_of(const std::vector<std::uint8_t>& bytes, DType dtype, Layout layout,
                               qconv::Shape shape) {
  return {bytes.data(), bytes.size(), dtype, layout, std::move(shape)};
}

std::array<std::int64_t, 2> pair(const json& j, const char* key) {
  const auto v = j.at(key).get<std::vector<std::int64_t>>();
  return {v.at(0), v.at(1)};
}

// Compares element by element; returns how many were compared and reports the first mismatches.
template <class T>
std::size_t expect_equal(const qconv::Tensor& got, const VectorFile& f) {
  const json& expected = f.meta.at("expected");
  EXPECT_EQ(got.shape(), shape_of(expected));
  const auto& want = f.values(expected);
  EXPECT_EQ(static_cast<std::size_t>(got.elements()), want.size());
  const std::size_t n = std::min(want.size(), static_cast<std::size_t>(got.elements()));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t value = got.as<T>()[i];
    if (value != want[i] && ++mismatches <= 5) {
      ADD_FAILURE() << "element " << i << ": got " << value << ", expected " << want[i];
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << n << " elements";
  return n;
}

// TVM: qnn.conv2d with the test's own arguments; NCHW data, OIHW kernel, one zero point each.
std::size_t run_tvm(const VectorFile& f) {
  const json& j = f.meta;
  const DType x_dtype = qconv::parse_dtype(j.at("x_dtype").get<std::string>(), "x_dtype");
  const DType w_dtype = qconv::parse_dtype(j.at("w_dtype").get<std::string>(), "w_dtype");
  const auto x = bytes_of(f, j.at("x"), x_dtype);
  const auto w = bytes_of(f, j.at("w"), w_dtype);
  const qconv::Shape w_shape = shape_of(j.at("w"));
  qconv::qnn::Conv2DAttrs attrs;
  attrs.strides = j.at("strides").get<std::vector<std::int64_t>>();
  attrs.padding = j.at("pads").get<std::vector<std::int64_t>>();  // (top, left, bottom, right)
  attrs.dilation = j.at("dilations").get<std::vector<std::int64_t>>();
  attrs.groups = j.at("groups").get<std::int64_t>();
  const qconv::Tensor y = qconv::qnn::conv2d(view_of(x, x_dtype, Layout::NCHW, shape_of(j.at("x"))),
                                             view_of(w, w_dtype, Layout::OIHW, w_shape),
                                             j.at("x_zero_point").get<std::int32_t>(),
                                             {j.at("w_zero_point").get<std::int32_t>()}, 1.0, {1.0},
                                             {w_shape[2], w_shape[3]}, w_shape[0], attrs);
  EXPECT_EQ(y.dtype(), DType::s32);
  return expect_equal<std::int32_t>(y, f);
}

// CMSIS-NN / TFLite: the files' (multiplier, shift) are used as given, so the scales only need to
// be valid. The clamp [act_min, act_max] is integral: with output scale 1, the real bound
// act_min - zy quantizes (round half away, + zy) back to exactly act_min, and likewise act_max.
std::size_t run_cmsisnn(const VectorFile& f) {
  const json& j = f.meta;
  const bool transposed = j.at("op").get<std::string>() == "conv_transpose2d";
  const auto x = bytes_of(f, j.at("x"), DType::s8);
  const auto w = bytes_of(f, j.at("w"), DType::s8);
  const qconv::Shape x_shape = shape_of(j.at("x"));
  const qconv::Shape w_shape = shape_of(j.at("w"));
  const auto bias = f.values(j.at("bias"));

  qconv::ProblemDesc d;
  d.op = transposed ? qconv::OpKind::conv2d_transpose : qconv::OpKind::conv2d;
  d.batch = x_shape[0];
  d.in_channels = x_shape[1];
  d.in_height = x_shape[2];
  d.in_width = x_shape[3];
  d.groups = j.at("groups").get<std::int64_t>();
  // conv: OIHW [C_out, C_in/g, kh, kw]; transposed: IOHW [C_in, C_out/g, kh, kw].
  d.out_channels = transposed ? w_shape[1] * d.groups : w_shape[0];
  d.kernel_h = w_shape[2];
  d.kernel_w = w_shape[3];
  const auto strides = pair(j, "strides");
  const auto dilations = pair(j, "dilations");
  d.stride_h = strides[0];
  d.stride_w = strides[1];
  d.dilation_h = dilations[0];
  d.dilation_w = dilations[1];
  const auto pads = j.at("pads").get<std::vector<std::int64_t>>();  // [top, left, bottom, right]
  d.pad_top = pads.at(0);
  d.pad_left = pads.at(1);
  d.pad_bottom = pads.at(2);
  d.pad_right = pads.at(3);
  if (transposed) {
    const auto output_padding = pair(j, "output_padding");
    d.output_pad_h = output_padding[0];
    d.output_pad_w = output_padding[1];
  }
  d.input_dtype = DType::s8;
  d.weight_dtype = DType::s8;
  d.output_dtype = DType::s8;
  d.input_layout = Layout::NCHW;
  d.weight_layout = transposed ? Layout::IOHW : Layout::OIHW;
  d.output_layout = Layout::NCHW;
  d.input_zero_point = j.at("x_zero_point").get<std::int32_t>();
  d.weight_zero_point = {j.at("w_zero_point").get<std::int32_t>()};
  d.output_zero_point = j.at("y_zero_point").get<std::int32_t>();
  d.output_scale = 1.0;
  d.scheme.kind = qconv::SchemeKind::tflite;
  d.scheme.multiplier_q31 = f.values(j.at("output_multiplier_q31"));
  d.scheme.shift = f.values(j.at("output_shift"));
  const int act_min = j.at("act_min").get<int>();
  const int act_max = j.at("act_max").get<int>();
  d.activation =
      qconv::Activation::clamp(act_min - d.output_zero_point, act_max - d.output_zero_point);
  d.has_bias = true;

  const qconv::Problem problem(d);
  const auto plan = qconv::Plan::prepare(problem, view_of(w, DType::s8, d.weight_layout, w_shape));
  const qconv::Tensor y =
      plan.execute(view_of(x, DType::s8, Layout::NCHW, x_shape), std::span(bias));
  return expect_equal<std::int8_t>(y, f);
}

class ExternalVector : public testing::TestWithParam<std::string> {};

TEST_P(ExternalVector, ReproducedBitExactly) {
  const VectorFile f = load(GetParam());
  const json& j = f.meta;
  ASSERT_TRUE(j.contains("source"));
  const std::string out = j.at("out").get<std::string>();
  std::size_t compared = 0;
  if (GetParam().rfind("tvm_", 0) == 0) {
    ASSERT_EQ(out, "int32_accumulator");
    compared = run_tvm(f);
  } else {
    ASSERT_EQ(GetParam().rfind("cmsisnn_", 0), 0u) << "a vector file of unknown origin";
    ASSERT_EQ(out, "int8_requantized");
    compared = run_cmsisnn(f);
  }
  EXPECT_GT(compared, 0u);
  RecordProperty("elements_compared", static_cast<int>(compared));
  std::cout << "[ vectors  ] " << GetParam() << ": " << compared << " elements compared\n";
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, ExternalVector, testing::ValuesIn(vector_files()), test_name);

// Guards against a file silently going missing (the suite would just be shorter).
TEST(ExternalVectors, AllThirtyNineFilesArePresent) {
  const auto names = vector_files();
  EXPECT_EQ(names.size(), 39u);
  EXPECT_EQ(std::count_if(names.begin(), names.end(),
                          [](const std::string& n) { return n.rfind("cmsisnn_", 0) == 0; }),
            36);
  EXPECT_EQ(std::count_if(names.begin(), names.end(),
                          [](const std::string& n) { return n.rfind("tvm_", 0) == 0; }),
            3);
}

}  // namespace
