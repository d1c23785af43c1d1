// SPDX-License-Identifier: Apache-2.0
// The ARM output stage (4-lane NEON, src/engines/arm64/neon/epilogue_kernels.cpp) against the
// scalar OutputStage::apply, the oracle, as vector_output_stage_test.cpp tests the AVX-512 one:
// every scheme, its tie rule (multipliers of 2^-j make exact halves common), its saturation
// (multipliers up to 2^34, accumulators at the ends of s32), odd output zero points, ReLU and
// clamp, u8, s8 and s32 outputs, per-tensor and per-channel constants, partial 16-channel groups,
// and the weight-zero-point correction before it. Built and run for aarch64 only (under qemu).
#include <gtest/gtest.h>

#if defined(__aarch64__)
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engines/arm64/kernels.hpp"
#include "engines/gemm/stage_view.hpp"
#include "output/output_stage.hpp"
#include "qconv/error.hpp"

namespace qconv {
namespace {

using detail::OutputStage;
namespace arm = detail::arm64;
namespace gemm = detail::gemm;

constexpr int kRows = arm::kMaxRows;

// Accumulators where schemes disagree if a rule is wrong: a dense run around 0 (ties under 2^-j
// multipliers), powers of two and their neighbours, the ends of s32.
std::vector<std::int32_t> probe_accumulators() {
  std::vector<std::int32_t> v;
  for (std::int32_t a = -600; a <= 600; ++a) v.push_back(a);
  for (int k = 10; k < 31; ++k) {
    for (std::int32_t d : {-1, 0, 1}) {
      v.push_back((1 << k) + d);
      v.push_back(-(1 << k) + d);
    }
  }
  v.push_back(std::numeric_limits<std::int32_t>::min());
  v.push_back(std::numeric_limits<std::int32_t>::min() + 1);
  v.push_back(std::numeric_limits<std::int32_t>::max());
  v.push_back(std::numeric_limits<std::int32_t>::max() - 1);
  return v;
}

// Runs every probe accumulator through the vector stage and the scalar one, channel by channel.
// With `window`, the tile carries window sums and per-channel weight zero points: the kernel
// subtracts zw·Σx first (wrapping), and the oracle gets that difference.
void expect_same(const ProblemDesc& d, BiasView bias, const std::string& label, bool window) {
  const OutputStage stage(d, bias);
  const gemm::EpilogueKernel kernel = arm::neon::epilogue_kernel(d.scheme.kind, d.output_dtype);
  ASSERT_NE(kernel, nullptr) << label;
  const gemm::StageView view = gemm::stage_view(stage.vectors());
  const std::vector<std::int32_t> accs = probe_accumulators();
  const std::int64_t channels = d.out_channels;
  const std::size_t element = element_size(d.output_dtype);
  std::int32_t zero_points[64];
  for (int c = 0; c < 64; ++c) zero_points[c] = c % 7 - 3;
  int compared = 0;
  for (std::size_t first = 0; first < accs.size(); first += kRows) {
    const int rows = static_cast<int>(std::min<std::size_t>(kRows, accs.size() - first));
    std::int32_t sums[kRows];
    for (int i = 0; i < rows; ++i) sums[i] = static_cast<std::int32_t>(first % 1000) - 500 + i;
    for (std::int64_t panel = 0; panel * 64 < channels; ++panel) {
      alignas(64) std::int32_t acc[kRows * 64] = {};
      alignas(64) std::int32_t want_acc[kRows * 64] = {};
      for (int i = 0; i < rows; ++i) {
        for (int c = 0; c < 64; ++c) {
          const std::int32_t a = accs[first + static_cast<std::size_t>(i)];
          acc[i * 64 + c] = a;
          want_acc[i * 64 + c] =
              window ? static_cast<std::int32_t>(static_cast<std::uint32_t>(a) -
                                                 static_cast<std::uint32_t>(zero_points[c]) *
                                                     static_cast<std::uint32_t>(sums[i]))
                     : a;
        }
      }
      const auto width =
          static_cast<std::int32_t>(std::min<std::int64_t>(64, channels - panel * 64));
      // One element of slack after the row: the kernel must not write it.
      std::vector<std::byte> out(static_cast<std::size_t>(rows * width + 1) * element,
                                 std::byte{0x5a});
      const gemm::TileOutput tile{acc,
                                  rows,
                                  width,
                                  panel * 64,
                                  window ? sums : nullptr,
                                  window ? zero_points : nullptr,
                                  false,
                                  out.data(),
                                  width};
      kernel(tile, view);
      for (int i = 0; i < rows; ++i) {
        for (std::int32_t c = 0; c < width; ++c) {
          const std::int32_t a = want_acc[i * 64 + c];
          const std::int32_t want = stage.apply(a, panel * 64 + c);
          const std::size_t at = static_cast<std::size_t>(i * width + c) * element;
          std::int32_t got = 0;
          if (d.output_dtype == DType::u8) got = std::to_integer<std::uint8_t>(out[at]);
          if (d.output_dtype == DType::s8) got = static_cast<std::int8_t>(out[at]);
          if (d.output_dtype == DType::s32) std::memcpy(&got, &out[at], 4);
          ASSERT_EQ(got, want) << label << ": acc " << a << ", channel " << panel * 64 + c;
          ++compared;
        }
      }
      ASSERT_EQ(out.back(), std::byte{0x5a}) << label << ": wrote past the tile";
    }
  }
  EXPECT_GT(compared, 1000);
}

ProblemDesc tie_problem(SchemeKind kind, DType output, std::int64_t channels, int exponent_base) {
  ProblemDesc d;
  d.in_channels = 1;
  d.out_channels = channels;
  d.scheme.kind = kind;
  d.output_dtype = output;
  d.input_scale = 1.0;
  d.output_scale = 1.0;
  d.output_zero_point = kind == SchemeKind::int32 ? 0 : (output == DType::u8 ? 3 : -5);
  d.weight_scale.clear();
  // Channel o multiplies by 2^(exponent_base − o % 24): exact powers of two make exact ties.
  for (std::int64_t o = 0; o < channels; ++o) {
    d.weight_scale.push_back(std::ldexp(1.0, exponent_base - static_cast<int>(o % 24)));
  }
  return d;
}

class NeonOutputStage : public ::testing::TestWithParam<SchemeKind> {};

TEST_P(NeonOutputStage, TiesAndSaturationMatchTheScalarStage) {
  const SchemeKind kind = GetParam();
  const std::vector<DType> outputs = kind == SchemeKind::int32
                                         ? std::vector<DType>{DType::s32}
                                         : std::vector<DType>{DType::u8, DType::s8};
  for (DType output : outputs) {
    for (int base : {0, 8, 20, 34}) {  // multipliers from 2^-23 up to 2^34 (tvm shifts above 32)
      for (int activation = 0; activation < 3; ++activation) {
        for (bool per_channel : {false, true}) {
          for (bool biased : {false, true}) {
            // 70 channels: a full panel and a partial one of 6 (a partial 16-channel group).
            ProblemDesc d = tie_problem(kind, output, per_channel ? 70 : 19, base);
            if (!per_channel) d.weight_scale.resize(1);
            if (activation == 1) d.activation = Activation::relu();
            if (activation == 2 && kind != SchemeKind::int32) {
              d.activation = Activation::clamp(-40.5, 37.5);
            }
            if (kind == SchemeKind::tvm || kind == SchemeKind::tvm_f32) {
              d.scheme.rounding = (base / 8) % 2 == 0 ? Rounding::upward : Rounding::tonearest;
            }
            const bool float_bias = takes_float_bias(kind);
            std::vector<std::int32_t> s32(static_cast<std::size_t>(d.out_channels));
            std::vector<float> f32(static_cast<std::size_t>(d.out_channels));
            for (std::size_t o = 0; o < s32.size(); ++o) {
              s32[o] = static_cast<std::int32_t>(o * 37) - 1000;
              f32[o] = static_cast<float>(o) * 0.75f - 9.0f;
            }
            d.has_bias = biased;
            BiasView bias;
            if (biased) {
              bias = float_bias ? BiasView(std::span<const float>(f32))
                                : BiasView(std::span<const std::int32_t>(s32));
            }
            const std::string label =
                std::string(to_string(kind)) + "/" + std::string(to_string(output)) + " base " +
                std::to_string(base) + " activation " + std::to_string(activation) +
                (per_channel ? " per-channel" : " per-tensor") + (biased ? " bias" : "");
            try {
              (void)OutputStage(d, bias);
            } catch (const Error&) {
              continue;  // scales the scheme refuses (e.g. a TFLite shift above 30)
            }
            expect_same(d, bias, label, activation == 0 && biased);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, NeonOutputStage,
                         ::testing::Values(SchemeKind::int32, SchemeKind::fbgemm,
                                           SchemeKind::qnnpack, SchemeKind::onednn,
                                           SchemeKind::onnx, SchemeKind::tvm, SchemeKind::tvm_f32,
                                           SchemeKind::tflite, SchemeKind::tflite_single,
                                           SchemeKind::onnxruntime),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// The correction alone (no vector form: the scalar stage follows), uniform and per channel.
TEST(NeonCorrectTile, SubtractsWeightZeroPointTimesWindowSum) {
  for (bool uniform : {false, true}) {
    alignas(64) std::int32_t acc[kRows * 64];
    std::int32_t sums[kRows] = {7, -300, std::numeric_limits<std::int32_t>::max(), 0};
    std::int32_t zero_points[64];
    for (int c = 0; c < 64; ++c) zero_points[c] = uniform ? 9 : c - 30;
    for (int i = 0; i < kRows * 64; ++i) acc[i] = i * 1000 - 70000;
    const gemm::TileOutput tile{acc, kRows, 37, 0, sums, zero_points, uniform, nullptr, 0};
    arm::neon::correct_tile(tile);
    for (int i = 0; i < kRows; ++i) {
      for (int c = 0; c < 37; ++c) {
        const auto want = static_cast<std::int32_t>(
            static_cast<std::uint32_t>((i * 64 + c) * 1000 - 70000) -
            static_cast<std::uint32_t>(zero_points[c]) * static_cast<std::uint32_t>(sums[i]));
        ASSERT_EQ(acc[i * 64 + c], want) << "row " << i << " channel " << c;
      }
    }
  }
}

}  // namespace
}  // namespace qconv
#endif
