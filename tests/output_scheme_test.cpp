// SPDX-License-Identifier: Apache-2.0
// The output schemes of SPEC §4, checked three ways:
//  1. hand-computed cases, each chosen so that the neighbouring scheme's rounding (or its place for
//     the zero point, or its precision) would give a different answer; the arithmetic is in the
//     comments, scales are powers of two or exact binary32 values written in hex-float;
//  2. one end-to-end problem per scheme through Plan with the reference engine;
//  3. a seeded randomized comparison with a literal re-implementation of each formula written
//     here, independently of src/output (exact integer arithmetic for the fixed-point schemes,
//     binary32 operations done as one binary64 operation rounded once — exact for +, −, ×, ÷ of
//     binary32 operands since 53 ≥ 2·24 + 2 — and long double for the ONNX product).
#include <gtest/gtest.h>

// The reference formulas below round after every operation; with FMA available (-march=native)
// GCC would narrow them to binary32 and fuse a multiply with the following add.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "output/output_stage.hpp"
#include "output/rounding.hpp"
#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "support/spec_output.hpp"

namespace {

using qconv::Activation;
using qconv::BiasView;
using qconv::DType;
using qconv::InvalidArgument;
using qconv::ProblemDesc;
using qconv::Rounding;
using qconv::SchemeKind;
using qconv::detail::OutputStage;
namespace spec = qconv::test::spec;

constexpr std::int32_t kMin32 = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();

// A 1x1 problem whose only interesting part is its output scheme: one weight scale per entry of
// `sw` (so more than one means per-channel), out_channels = sw.size().
ProblemDesc scheme_desc(SchemeKind kind, DType out, double sx, std::vector<double> sw, double sy,
                        std::int32_t zy, Rounding rounding = Rounding::upward) {
  ProblemDesc d;
  d.scheme.kind = kind;
  d.scheme.rounding = rounding;
  d.output_dtype = out;
  d.input_scale = sx;
  d.out_channels = static_cast<std::int64_t>(sw.size());
  d.weight_scale = std::move(sw);
  d.output_scale = sy;
  d.output_zero_point = zy;
  return d;
}

BiasView float_bias(const std::vector<float>& b) { return BiasView(std::span<const float>(b)); }
BiasView s32_bias(const std::vector<std::int32_t>& b) {
  return BiasView(std::span<const std::int32_t>(b));
}

std::int32_t apply(const ProblemDesc& d, std::int32_t acc, std::int64_t o = 0, BiasView bias = {}) {
  return OutputStage(d, bias).apply(acc, o);
}

// The problem must be refused with InvalidArgument, with a message naming `field`.
void expect_refused(const ProblemDesc& d, const std::string& field) {
  try {
    const qconv::Problem p(d);
    ADD_FAILURE() << "accepted; expected InvalidArgument naming " << field;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// The fixed-point primitives, against their gemmlowp definitions worked by hand.

TEST(OutputSchemePrimitives, SaturatingRoundingDoublingHighMul) {
  using qconv::detail::saturating_rounding_doubling_high_mul;
  // a·b / 2^31, ties toward +infinity (gemmlowp's nudge 1 − 2^30 plus truncating division):
  // 5·2^30 / 2^31 = 2.5 → 3;  −5·2^30 / 2^31 = −2.5 → (−5·2^30 + 1 − 2^30) / 2^31 = −2.99… → −2.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(5, 1 << 30), 3);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-5, 1 << 30), -2);
  // −1·2^30 / 2^31 = −0.5 → 0 (half away from zero would give −1).
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-1, 1 << 30), 0);
  // −1·3·2^29 / 2^31 = −0.75 → −1;  3·2^29 / 2^31 = 0.75 → 1;  −3·3·2^29 / 2^31 = −2.25 → −2.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-1, 3 << 29), -1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1, 3 << 29), 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-3, 3 << 29), -2);
  // The one overflow: (−2^31)·(−2^31)/2^31 = 2^31 does not fit; saturates.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin32, kMin32), kMax32);
  // (−2^31)·(2^31 − 1)/2^31 = −(2^31 − 1) exactly.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin32, kMax32), -kMax32);
  // (2^31 − 1)²/2^31 = 2^31 − 2 + 2^-31 → 2^31 − 2.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMax32, kMax32), kMax32 - 1);
}

TEST(OutputSchemePrimitives, RoundingDivideByPotRoundsHalfAwayFromZero) {
  using qconv::detail::rounding_divide_by_pot;
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);    //  2.5  →  3
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);  // −2.5  → −3 (half up would give −2)
  EXPECT_EQ(rounding_divide_by_pot(-4, 1), -2);  // −2    → −2
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // −1.5  → −2
  EXPECT_EQ(rounding_divide_by_pot(-5, 2), -1);  // −1.25 → −1
  EXPECT_EQ(rounding_divide_by_pot(-7, 2), -2);  // −1.75 → −2
  EXPECT_EQ(rounding_divide_by_pot(-1, 1), -1);  // −0.5  → −1
  EXPECT_EQ(rounding_divide_by_pot(-1, 2), 0);   // −0.25 →  0
  EXPECT_EQ(rounding_divide_by_pot(-2, 2), -1);  // −0.5  → −1
  EXPECT_EQ(rounding_divide_by_pot(7, 0), 7);
  EXPECT_EQ(rounding_divide_by_pot(-7, 0), -7);
  EXPECT_EQ(rounding_divide_by_pot(kMin32, 31), -1);         // −1
  EXPECT_EQ(rounding_divide_by_pot(-(1 << 30), 31), -1);     // −0.5 → −1
  EXPECT_EQ(rounding_divide_by_pot(-(1 << 30) + 1, 31), 0);  // just above −0.5 → 0
  EXPECT_EQ(rounding_divide_by_pot(1 << 30, 31), 1);         //  0.5 →  1
  EXPECT_EQ(rounding_divide_by_pot(kMax32, 31), 1);          //  0.99… → 1
}

TEST(OutputSchemePrimitives, QuantizeMultiplier) {
  using qconv::detail::quantize_multiplier;
  // 0.75 = 0.75·2^0: q31 = 0.75·2^31 = 3·2^29.
  EXPECT_EQ(quantize_multiplier(0.75).q31, 3 << 29);
  EXPECT_EQ(quantize_multiplier(0.75).exponent, 0);
  // 3 = 0.75·2^2.
  EXPECT_EQ(quantize_multiplier(3.0).q31, 3 << 29);
  EXPECT_EQ(quantize_multiplier(3.0).exponent, 2);
  // 1 − 2^-33 = (1 − 2^-33)·2^0: f·2^31 = 2^31 − 0.25 rounds to 2^31, which is no Q31 value:
  // q31 = 2^30 and the exponent goes up by one (1 = 2^30·2^(1−31)).
  EXPECT_EQ(quantize_multiplier(0x1.ffffffffp-1).q31, 1 << 30);
  EXPECT_EQ(quantize_multiplier(0x1.ffffffffp-1).exponent, 1);
  // 1 − 2^-31: f·2^31 = 2^31 − 1 exactly, the largest Q31 value; no carry.
  EXPECT_EQ(quantize_multiplier(0x1.fffffffcp-1).q31, kMax32);
  EXPECT_EQ(quantize_multiplier(0x1.fffffffcp-1).exponent, 0);
  // (2^32 − 1)/2^32 · 2^31 = 2^31 − 0.5: away from zero also gives 2^31.
  EXPECT_EQ(quantize_multiplier(0x1.fffffffep-1).q31, 1 << 30);
  // Half away from zero, not to even: f = 0.5 + 2^-32 → f·2^31 = 2^30 + 0.5 → 2^30 + 1.
  EXPECT_EQ(quantize_multiplier(0x1.00000002p-1).q31, (1 << 30) + 1);
  EXPECT_EQ(quantize_multiplier(0.0).q31, 0);
}

TEST(OutputSchemePrimitives, RoundHalfUpIsExact) {
  using qconv::detail::round_half_up;
  EXPECT_EQ(round_half_up(2.5), 3.0);
  EXPECT_EQ(round_half_up(-2.5), -2.0);
  EXPECT_EQ(round_half_up(-0.5), 0.0);
  // The largest double below 0.5: floor(v + 0.5) would round the sum up to 1.
  EXPECT_EQ(round_half_up(0x1.fffffffffffffp-2), 0.0);
}

// ---------------------------------------------------------------------------------------------
// int32: the accumulator plus the s32 bias; scales are metadata.

TEST(OutputSchemeInt32, AccumulatorPlusBias) {
  const ProblemDesc d = scheme_desc(SchemeKind::int32, DType::s32, 0.5, {0.25, 3.0}, 1.0, 0);
  EXPECT_EQ(apply(d, 7), 7);
  EXPECT_EQ(apply(d, kMin32), kMin32);
  EXPECT_EQ(apply(d, kMax32, 1), kMax32);
  const std::vector<std::int32_t> bias{-10, 5};
  EXPECT_EQ(apply(d, 7, 0, s32_bias(bias)), -3);
  EXPECT_EQ(apply(d, 7, 1, s32_bias(bias)), 12);
  // A 32-bit add wraps (TVM's int32 bias_add): (2^31 − 1) + 5 → −2^31 + 4.
  EXPECT_EQ(apply(d, kMax32, 1, s32_bias(bias)), kMin32 + 4);
}

TEST(OutputSchemeInt32, ReluRaisesTheLowBoundToZero) {
  ProblemDesc d = scheme_desc(SchemeKind::int32, DType::s32, 1.0, {1.0}, 1.0, 0);
  d.activation = Activation::relu();
  EXPECT_EQ(apply(d, -3), 0);
  EXPECT_EQ(apply(d, 3), 3);
}

// ---------------------------------------------------------------------------------------------
// fbgemm: t = f32(sx·sw), m = f32(t/sy), v = f32(acc) + f32(b/t), q = rne(f32(v·m)) + zy.

TEST(OutputSchemeFbgemm, TiesRoundHalfToEvenThenAddTheZeroPoint) {
  // sx = sw = sy = 0.5: t = 0.25, m = 0.5.
  const ProblemDesc d = scheme_desc(SchemeKind::fbgemm, DType::s8, 0.5, {0.5}, 0.5, 0);
  EXPECT_EQ(apply(d, 5), 2);    //  2.5 →  2 (away or up: 3)
  EXPECT_EQ(apply(d, -5), -2);  // −2.5 → −2 (away: −3)
  EXPECT_EQ(apply(d, 7), 4);    //  3.5 →  4
  EXPECT_EQ(apply(d, -7), -4);  // −3.5 → −4 (up: −3)
  EXPECT_EQ(apply(d, 3), 2);    //  1.5 →  2
  // Odd zero point, added after rounding: rne(2.5) + 1 = 3 (rne(2.5 + 1) would be 4);
  // rne(1.5) + 1 = 3 (rne(2.5) = 2).
  const ProblemDesc odd = scheme_desc(SchemeKind::fbgemm, DType::s8, 0.5, {0.5}, 0.5, 1);
  EXPECT_EQ(apply(odd, 5), 3);
  EXPECT_EQ(apply(odd, 3), 3);
  EXPECT_EQ(apply(odd, -5), -1);  // rne(−2.5) + 1 = −1
}

TEST(OutputSchemeFbgemm, AccumulatorIsRoundedToBinary32First) {
  // sx = 2^-10, sw = 2^-10, sy = 2^5: m = 2^-25. acc = 2^24 + 1 becomes f32 2^24 (0x1p24), so
  // v·m = 0.5 → rne 0; the exact product 0.5000000298 would round to 1.
  const ProblemDesc d = scheme_desc(SchemeKind::fbgemm, DType::u8, 0x1p-10, {0x1p-10}, 0x1p5, 0);
  EXPECT_EQ(apply(d, (1 << 24) + 1), 0);
  EXPECT_EQ(apply(d, (1 << 24) + 3), 1);  // f32(2^24 + 3) = 2^24 + 4 → 0.50000012 → 1
}

TEST(OutputSchemeFbgemm, FloatBiasIsDividedByTheInputTimesWeightScale) {
  // Per channel: sw = {0.5, 0.25}, sx = 0.5, sy = 0.5 → t = {0.25, 0.125}, m = {0.5, 0.25}.
  const ProblemDesc d = scheme_desc(SchemeKind::fbgemm, DType::s8, 0.5, {0.5, 0.25}, 0.5, 0);
  const std::vector<float> bias{0.125f, 0.0625f};  // b/t = 0.5 for both channels
  // ch0: (4 + 0.5)·0.5 = 2.25 → 2;  (5 + 0.5)·0.5 = 2.75 → 3.
  EXPECT_EQ(apply(d, 4, 0, float_bias(bias)), 2);
  EXPECT_EQ(apply(d, 5, 0, float_bias(bias)), 3);
  // ch1: (5 + 0.5)·0.25 = 1.375 → 1;  (9 + 0.5)·0.25 = 2.375 → 2;  (−11 + 0.5)·0.25 = −2.625 → −3.
  EXPECT_EQ(apply(d, 5, 1, float_bias(bias)), 1);
  EXPECT_EQ(apply(d, 9, 1, float_bias(bias)), 2);
  EXPECT_EQ(apply(d, -11, 1, float_bias(bias)), -3);
  // Without bias, ch1: 10·0.25 = 2.5 → 2 (even).
  EXPECT_EQ(apply(d, 10, 1), 2);
}

TEST(OutputSchemeFbgemm, SaturatesAtBothEnds) {
  const ProblemDesc u8 = scheme_desc(SchemeKind::fbgemm, DType::u8, 1.0, {1.0}, 1.0, 10);
  EXPECT_EQ(apply(u8, 245), 255);
  EXPECT_EQ(apply(u8, 246), 255);  // 256 → 255
  EXPECT_EQ(apply(u8, -10), 0);
  EXPECT_EQ(apply(u8, -11), 0);  // −1 → 0
  const ProblemDesc s8 = scheme_desc(SchemeKind::fbgemm, DType::s8, 1.0, {1.0}, 1.0, -1);
  EXPECT_EQ(apply(s8, 200), 127);
  EXPECT_EQ(apply(s8, -127), -128);
  EXPECT_EQ(apply(s8, -128), -128);  // −129 → −128
  // m = 4: 2^30·4 = 2^32 and −2^32 leave s32.
  const ProblemDesc s32 = scheme_desc(SchemeKind::fbgemm, DType::s32, 2.0, {2.0}, 1.0, 0);
  EXPECT_EQ(apply(s32, 1 << 30), kMax32);
  EXPECT_EQ(apply(s32, -(1 << 30)), kMin32);
  EXPECT_EQ(apply(s32, kMin32), kMin32);
}

TEST(OutputSchemeFbgemm, HugeFloatBiasSaturates) {
  // b/t = 2^127/2^-2 overflows binary32 to +inf; the formula then gives the high bound.
  const ProblemDesc d = scheme_desc(SchemeKind::fbgemm, DType::u8, 0.5, {0.5}, 0.5, 0);
  const std::vector<float> up{0x1p127f};
  const std::vector<float> down{-0x1p127f};
  EXPECT_EQ(apply(d, -100, 0, float_bias(up)), 255);
  EXPECT_EQ(apply(d, 100, 0, float_bias(down)), 0);
  const std::vector<float> nan{std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(OutputStage(d, float_bias(nan)), InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// qnnpack: m = f32(f32(sw·sx)·f32(1/sy)); bq = clamp_s32(rne(b·f32(1/f32(sw·sx))));
// v = f32(f32(s32(acc + bq))·m); |v| ≥ 2^31 → INT32_MIN; q = clamp(rne(v) + zy).

TEST(OutputSchemeQnnpack, TiesRoundHalfToEvenThenAddTheZeroPoint) {
  const ProblemDesc d = scheme_desc(SchemeKind::qnnpack, DType::s8, 0.5, {0.5}, 0.5, 1);  // m = 0.5
  EXPECT_EQ(apply(d, 5), 3);    // rne(2.5) + 1 = 3 (zero point first: rne(3.5) = 4)
  EXPECT_EQ(apply(d, -5), -1);  // rne(−2.5) + 1 = −1 (away: −2)
  EXPECT_EQ(apply(d, 7), 5);    // rne(3.5) + 1 = 5
  EXPECT_EQ(apply(d, -3), -1);  // rne(−1.5) + 1 = −1
}

TEST(OutputSchemeQnnpack, BiasIsRoundedToS32BeforeTheAdd) {
  // m = 1 and bias scale 1/(sw·sx) = 1: bq = rne(b).
  const ProblemDesc d = scheme_desc(SchemeKind::qnnpack, DType::s8, 1.0, {1.0}, 1.0, 0);
  const std::vector<float> half{0.5f};
  const std::vector<float> one_and_half{1.5f};
  // bq = rne(0.5) = 0: 1 + 0 = 1 (fbgemm: rne(1 + 0.5) = 2).
  EXPECT_EQ(apply(d, 1, 0, float_bias(half)), 1);
  // bq = rne(1.5) = 2: 1 + 2 = 3 (fbgemm: rne(2.5) = 2).
  EXPECT_EQ(apply(d, 1, 0, float_bias(one_and_half)), 3);
  // Per channel, sw = {0.5, 0.25}, sx = 0.5, sy = 0.5: m = {0.5, 0.25}, bias scale 1/(sw·sx) =
  // {4, 8}; b = 0.3125 → bq = {rne(1.25), rne(2.5)} = {1, 2}.
  ProblemDesc pc = scheme_desc(SchemeKind::qnnpack, DType::s8, 0.5, {0.5, 0.25}, 0.5, 0);
  const std::vector<float> bias{0.3125f, 0.3125f};
  EXPECT_EQ(apply(pc, 4, 0, float_bias(bias)), 2);  // (4 + 1)·0.5 = 2.5 → 2
  EXPECT_EQ(apply(pc, 4, 1, float_bias(bias)), 2);  // (4 + 2)·0.25 = 1.5 → 2
  EXPECT_EQ(apply(pc, 8, 1, float_bias(bias)), 2);  // (8 + 2)·0.25 = 2.5 → 2
  // A bias beyond s32 saturates: bq = −2^31; 0 + bq = −2^31 → v = −2^31 → INT32_MIN → low bound.
  const std::vector<float> huge{-1e30f};
  EXPECT_EQ(apply(d, 0, 0, float_bias(huge)), -128);
}

TEST(OutputSchemeQnnpack, HugePositiveValueGivesTheLowBound) {
  // m = f32(2·2)·f32(1/1) = 4. acc = 2^29 → v = 2^31 → INT32_MIN → the LOW clamp.
  const ProblemDesc u8 = scheme_desc(SchemeKind::qnnpack, DType::u8, 2.0, {2.0}, 1.0, 0);
  const ProblemDesc s8 = scheme_desc(SchemeKind::qnnpack, DType::s8, 2.0, {2.0}, 1.0, 0);
  const ProblemDesc s32 = scheme_desc(SchemeKind::qnnpack, DType::s32, 2.0, {2.0}, 1.0, 0);
  EXPECT_EQ(apply(u8, 1 << 29), 0);
  EXPECT_EQ(apply(s8, 1 << 29), -128);
  EXPECT_EQ(apply(s32, 1 << 29), kMin32);
  // 2^29 − 1 is 0x1p29 in binary32 (spacing 32 there): also 2^31 after ×4.
  EXPECT_EQ(apply(s32, (1 << 29) - 1), kMin32);
  // 2^29 − 64 is exact; ×4 = 2^31 − 256 < 2^31: an ordinary value, saturating high for u8.
  EXPECT_EQ(apply(s32, (1 << 29) - 64), kMax32 - 255);
  EXPECT_EQ(apply(u8, (1 << 29) - 64), 255);
  EXPECT_EQ(apply(u8, -(1 << 29)), 0);  // −2^31 → INT32_MIN as well
  // The ordinary range still saturates normally: 100·4 = 400 → 255; −100·4 → −128.
  EXPECT_EQ(apply(u8, 100), 255);
  EXPECT_EQ(apply(s8, -100), -128);
}

TEST(OutputSchemeQnnpack, ReluUsesTheZeroPoint) {
  ProblemDesc d = scheme_desc(SchemeKind::qnnpack, DType::u8, 0.5, {0.5}, 0.5, 100);
  d.activation = Activation::relu();
  EXPECT_EQ(apply(d, -10), 100);  // −5 + 100 = 95 → lo = 100
  EXPECT_EQ(apply(d, 10), 105);
}

TEST(OutputSchemeQnnpack, BiasScaleWhoseReciprocalOverflowsIsRefusedOnlyWithABias) {
  // sw·sx = 2^-140 is a binary32 subnormal; 1/2^-140 = 2^140 overflows to +inf. The multiplier
  // m = 2^-140·2^126 = 2^-14 is fine, so only a bias makes the scheme meaningless (0·inf = NaN).
  ProblemDesc d = scheme_desc(SchemeKind::qnnpack, DType::u8, 0x1p-70, {0x1p-70}, 0x1p-126, 0);
  EXPECT_EQ(apply(d, 1 << 14), 1);  // 2^14·2^-14 = 1
  d.has_bias = true;
  expect_refused(d, "1/(weight_scale*input_scale)[0]");
}

// ---------------------------------------------------------------------------------------------
// onednn: reciprocals first; v = f32(f32(f32(acc) + bb)·os); q = rne(clamp(f32(v + zy))).

TEST(OutputSchemeOnednn, ZeroPointIsAddedBeforeRounding) {
  // sx = sw = sy = 0.5: rx = rw = ry = 2, bs = 4, os = 2/4 = 0.5.
  const ProblemDesc d = scheme_desc(SchemeKind::onednn, DType::s8, 0.5, {0.5}, 0.5, 1);
  EXPECT_EQ(apply(d, 5), 4);    // rne(2.5 + 1 = 3.5) = 4 (fbgemm: rne(2.5) + 1 = 3)
  EXPECT_EQ(apply(d, 3), 2);    // rne(1.5 + 1 = 2.5) = 2 (fbgemm: 3)
  EXPECT_EQ(apply(d, -5), -2);  // rne(−2.5 + 1 = −1.5) = −2 (fbgemm: −1)
  const ProblemDesc even = scheme_desc(SchemeKind::onednn, DType::s8, 0.5, {0.5}, 0.5, 0);
  EXPECT_EQ(apply(even, -5), -2);  // rne(−2.5) = −2 (away: −3)
  EXPECT_EQ(apply(even, 5), 2);
}

TEST(OutputSchemeOnednn, FloatBiasIsMultipliedByTheReciprocalScale) {
  // Per channel sw = {0.5, 0.25}: rw = {2, 4}, bs = {4, 8}, os = {0.5, 0.25}; b = 0.125 →
  // bb = {0.5, 1}.
  const ProblemDesc d = scheme_desc(SchemeKind::onednn, DType::s8, 0.5, {0.5, 0.25}, 0.5, 1);
  const std::vector<float> bias{0.125f, 0.125f};
  EXPECT_EQ(apply(d, 5, 0, float_bias(bias)), 4);    // (5.5)·0.5 + 1 = 3.75 → 4
  EXPECT_EQ(apply(d, -5, 0, float_bias(bias)), -1);  // (−4.5)·0.5 + 1 = −1.25 → −1
  EXPECT_EQ(apply(d, 5, 1, float_bias(bias)), 2);    // (6)·0.25 + 1 = 2.5 → 2
  EXPECT_EQ(apply(d, 1, 1, float_bias(bias)), 2);    // (2)·0.25 + 1 = 1.5 → 2
}

TEST(OutputSchemeOnednn, PerChannelReciprocalIsTakenInBinary32) {
  // sw = 0x1.2265b1f236eb0p+0 is no binary32 value (f32(sw) = 0x1.2265b2p+0).
  // Per tensor: rw = f32(1/sw) = 0x1.c35aaap-1; per channel: rw = 1.0f/f32(sw) = 0x1.c35aa8p-1.
  // sx = 0.625: rx = f32(1.6) = 0x1.99999ap+0; bs = rx·rw = 0x1.691556p+0 vs 0x1.691554p+0;
  // sy = 0.5: ry = 2; os = 2/bs = 0x1.6aff1cp+0 vs 0x1.6aff1ep+0.
  // acc = 3492: v = 3492·os = 4951.49951171875 → 4951 vs exactly 4951.5 → 4952 (even).
  const double sw = 0x1.2265b1f236eb0p+0;
  const ProblemDesc tensor = scheme_desc(SchemeKind::onednn, DType::s32, 0.625, {sw}, 0.5, 0);
  const ProblemDesc channel = scheme_desc(SchemeKind::onednn, DType::s32, 0.625, {sw, sw}, 0.5, 0);
  EXPECT_EQ(OutputStage(tensor, {}).channel(0).scale_f32, 0x1.6aff1cp+0f);
  EXPECT_EQ(OutputStage(channel, {}).channel(1).scale_f32, 0x1.6aff1ep+0f);
  EXPECT_EQ(apply(tensor, 3492), 4951);
  EXPECT_EQ(apply(channel, 3492, 1), 4952);
}

TEST(OutputSchemeOnednn, ReluClampsTheRealValueAtZero) {
  ProblemDesc d = scheme_desc(SchemeKind::onednn, DType::u8, 0.5, {0.5}, 0.5, 10);
  EXPECT_EQ(apply(d, -3), 8);  // −1.5 + 10 = 8.5 → 8
  d.activation = Activation::relu();
  EXPECT_EQ(apply(d, -3), 10);  // max(−1.5, 0) + 10 = 10
  EXPECT_EQ(apply(d, 3), 12);   // 1.5 + 10 = 11.5 → 12
}

TEST(OutputSchemeOnednn, SaturatesAtBothEnds) {
  const ProblemDesc u8 = scheme_desc(SchemeKind::onednn, DType::u8, 1.0, {1.0}, 1.0, 0);
  EXPECT_EQ(apply(u8, 256), 255);
  EXPECT_EQ(apply(u8, -1), 0);
  const ProblemDesc s32 = scheme_desc(SchemeKind::onednn, DType::s32, 0.5, {0.5}, 1.0, 0);
  // rx = rw = 2, bs = 4, ry = 1, os = 0.25: kMax32·0.25 fits; make it exceed with a bias.
  const std::vector<float> up{0x1p40f};  // bb = 2^42, v = 2^40 > 2^31 − 1
  const std::vector<float> down{-0x1p40f};
  EXPECT_EQ(apply(s32, 0, 0, float_bias(up)), kMax32);
  EXPECT_EQ(apply(s32, 0, 0, float_bias(down)), kMin32);
}

// ---------------------------------------------------------------------------------------------
// onnx: m = f32(f32(sx·sw)/sy); R = f64(acc·m) + zy; q = rne(clip(R)).

TEST(OutputSchemeOnnx, ZeroPointIsAddedBeforeRounding) {
  const ProblemDesc d = scheme_desc(SchemeKind::onnx, DType::s8, 0.5, {0.5}, 0.5, 1);  // m = 0.5
  EXPECT_EQ(apply(d, 5), 4);   // rne(3.5) = 4 (round then add: 3)
  EXPECT_EQ(apply(d, 3), 2);   // rne(2.5) = 2 (round then add: 3)
  EXPECT_EQ(apply(d, -1), 0);  // rne(0.5) = 0 (round then add: 1)
  const ProblemDesc neg = scheme_desc(SchemeKind::onnx, DType::s8, 0.5, {0.5}, 0.5, -1);
  EXPECT_EQ(apply(neg, -5), -4);  // rne(−3.5) = −4 (round then add: −3)
}

TEST(OutputSchemeOnnx, ProductIsTakenInBinary64) {
  // sx = 1.5, sw = 0.5, sy = 1: m = 0.75. acc = 2^24 + 1: f64 product 12582912.75 → 12582913;
  // a binary32 product of f32(acc) = 2^24 would give 12582912.
  const ProblemDesc d = scheme_desc(SchemeKind::onnx, DType::s32, 1.5, {0.5}, 1.0, 0);
  EXPECT_EQ(apply(d, (1 << 24) + 1), 12582913);
}

TEST(OutputSchemeOnnx, S32BiasIsAddedToTheAccumulator) {
  const ProblemDesc d = scheme_desc(SchemeKind::onnx, DType::s8, 0.5, {0.5, 0.25}, 0.5, 0);
  const std::vector<std::int32_t> bias{1, -1};
  EXPECT_EQ(apply(d, 4, 0, s32_bias(bias)), 2);    // (4 + 1)·0.5 = 2.5 → 2
  EXPECT_EQ(apply(d, 6, 0, s32_bias(bias)), 4);    // 3.5 → 4
  EXPECT_EQ(apply(d, 11, 1, s32_bias(bias)), 2);   // (11 − 1)·0.25 = 2.5 → 2
  EXPECT_EQ(apply(d, -9, 1, s32_bias(bias)), -2);  // −2.5 → −2
}

TEST(OutputSchemeOnnx, SaturatesAtBothEnds) {
  const ProblemDesc u8 = scheme_desc(SchemeKind::onnx, DType::u8, 1.0, {1.0}, 1.0, 128);
  EXPECT_EQ(apply(u8, 127), 255);
  EXPECT_EQ(apply(u8, 128), 255);
  EXPECT_EQ(apply(u8, -129), 0);
  const ProblemDesc s32 = scheme_desc(SchemeKind::onnx, DType::s32, 2.0, {2.0}, 1.0, 0);  // m = 4
  EXPECT_EQ(apply(s32, 1 << 29), kMax32);  // 2^31 (qnnpack would give INT32_MIN here)
  EXPECT_EQ(apply(s32, -(1 << 29)), kMin32);
}

// ---------------------------------------------------------------------------------------------
// onnxruntime: m = f32(f32(sx·sw)/sy); v = f32(f32(acc + B)·m); q = clamp(rne(v) + zy).

TEST(OutputSchemeOnnxRuntime, ZeroPointIsAddedAfterRounding) {
  // The onnx cases above, with the other answer: m = 0.5, zy = 1.
  const ProblemDesc d = scheme_desc(SchemeKind::onnxruntime, DType::s8, 0.5, {0.5}, 0.5, 1);
  EXPECT_EQ(apply(d, 5), 3);   // rne(2.5) = 2, + 1 (onnx: rne(3.5) = 4)
  EXPECT_EQ(apply(d, 3), 3);   // rne(1.5) = 2, + 1 (onnx: rne(2.5) = 2)
  EXPECT_EQ(apply(d, -1), 1);  // rne(−0.5) = 0, + 1 (onnx: rne(0.5) = 0)
  EXPECT_EQ(apply(d, 7), 5);   // rne(3.5) = 4, + 1 (onnx agrees: rne(4.5) = 4)
  const ProblemDesc neg = scheme_desc(SchemeKind::onnxruntime, DType::s8, 0.5, {0.5}, 0.5, -1);
  EXPECT_EQ(apply(neg, -5), -3);  // rne(−2.5) = −2, − 1 (onnx: rne(−3.5) = −4)
  EXPECT_EQ(apply(neg, -3), -3);  // rne(−1.5) = −2, − 1 (onnx: rne(−2.5) = −2)
}

TEST(OutputSchemeOnnxRuntime, AccumulatorIsConvertedToBinary32) {
  // m = 0.75, acc = 2^24 + 1: f32(acc) = 2^24, v = 12582912 (onnx, in double: 12582913).
  const ProblemDesc d = scheme_desc(SchemeKind::onnxruntime, DType::s32, 1.5, {0.5}, 1.0, 0);
  EXPECT_EQ(apply(d, (1 << 24) + 1), 12582912);
  EXPECT_EQ(apply(d, -(1 << 24) - 1), -12582912);
  // The s32 bias is added before the conversion: f32(2^24 + 2 + 1) = 2^24 + 4 (a tie, to even).
  const ProblemDesc one = scheme_desc(SchemeKind::onnxruntime, DType::s32, 1.0, {1.0}, 1.0, 0);
  const std::vector<std::int32_t> bias{1};
  EXPECT_EQ(apply(one, (1 << 24) + 2, 0, s32_bias(bias)), (1 << 24) + 4);
}

TEST(OutputSchemeOnnxRuntime, ProductIsRoundedToBinary32BeforeRounding) {
  // m = 1 + 2^-23 (sw = 0x1.000002p0), acc = 2^22 + 2: the exact product 2^22 + 2.5 + 2^-22
  // rounds to nearest as 2^22 + 3 (onnx); in binary32 (ulp 0.5) it becomes the tie 2^22 + 2.5,
  // and rne gives 2^22 + 2.
  const ProblemDesc d =
      scheme_desc(SchemeKind::onnxruntime, DType::s32, 1.0, {0x1.000002p0}, 1.0, 0);
  EXPECT_EQ(apply(d, (1 << 22) + 2), (1 << 22) + 2);
  const ProblemDesc onnx = scheme_desc(SchemeKind::onnx, DType::s32, 1.0, {0x1.000002p0}, 1.0, 0);
  EXPECT_EQ(apply(onnx, (1 << 22) + 2), (1 << 22) + 3);
}

TEST(OutputSchemeOnnxRuntime, SaturatesAtBothEnds) {
  const ProblemDesc u8 = scheme_desc(SchemeKind::onnxruntime, DType::u8, 1.0, {1.0}, 1.0, 128);
  EXPECT_EQ(apply(u8, 127), 255);
  EXPECT_EQ(apply(u8, 128), 255);
  EXPECT_EQ(apply(u8, -128), 0);
  EXPECT_EQ(apply(u8, -129), 0);
  EXPECT_EQ(apply(u8, kMin32), 0);
  const ProblemDesc s32 =
      scheme_desc(SchemeKind::onnxruntime, DType::s32, 2.0, {2.0}, 1.0, 0);  // m = 4
  EXPECT_EQ(apply(s32, 1 << 29), kMax32);
  EXPECT_EQ(apply(s32, -(1 << 29)), kMin32);
  EXPECT_EQ(apply(s32, kMax32), kMax32);
}

// ---------------------------------------------------------------------------------------------
// tvm: M = f64(f32(sx·sw))/sy, (q31, e) = frexp; p = (acc << max(e, 0))·q31;
// r = (p + rounding) >> (31 + max(−e, 0)); q = clamp(r + zy).

TEST(OutputSchemeTvm, UpwardRoundsHalfTowardPlusInfinity) {
  // M = 0.5 → q31 = 2^30, e = 0, T = 31: r = (acc·2^30 + 2^30) >> 31 = floor((acc + 1)/2).
  const ProblemDesc d = scheme_desc(SchemeKind::tvm, DType::s8, 0.5, {0.5}, 0.5, 0);
  EXPECT_EQ(apply(d, 5), 3);    //  2.5 →  3 (rne: 2)
  EXPECT_EQ(apply(d, -5), -2);  // −2.5 → −2 (away: −3)
  EXPECT_EQ(apply(d, -3), -1);  // −1.5 → −1
  EXPECT_EQ(apply(d, 3), 2);
}

TEST(OutputSchemeTvm, TonearestRoundsHalfAwayFromZero) {
  const ProblemDesc d =
      scheme_desc(SchemeKind::tvm, DType::s8, 0.5, {0.5}, 0.5, 0, Rounding::tonearest);
  EXPECT_EQ(apply(d, 5), 3);  //  2.5 →  3
  EXPECT_EQ(apply(d, -5), -3);  // −2.5: p = −5·2^30, + (2^30 − 1) → floor((−4·2^30 − 1)/2^31) = −3
  EXPECT_EQ(apply(d, -3), -2);  // −1.5 → −2 (upward: −1)
  EXPECT_EQ(apply(d, 4), 2);    // exact
}

TEST(OutputSchemeTvm, ZeroPointIsAddedAfterRounding) {
  // acc = −1, M = 0.5, zy = 1, TONEAREST: away(−0.5) + 1 = 0. (tvm_f32 rounds −0.5 + 1 = 0.5 → 1.)
  const ProblemDesc d =
      scheme_desc(SchemeKind::tvm, DType::s8, 0.5, {0.5}, 0.5, 1, Rounding::tonearest);
  EXPECT_EQ(apply(d, -1), 0);
}

TEST(OutputSchemeTvm, MultiplierAboveOne) {
  // si = 1.5, sy = 1: M = 1.5 = 0.75·2^1 → q31 = 3·2^29, e = 1, T = 31:
  // p = (acc << 1)·3·2^29 = acc·3·2^30 → acc·1.5.
  const ProblemDesc up = scheme_desc(SchemeKind::tvm, DType::s32, 1.5, {1.0}, 1.0, 0);
  const ProblemDesc near =
      scheme_desc(SchemeKind::tvm, DType::s32, 1.5, {1.0}, 1.0, 0, Rounding::tonearest);
  EXPECT_EQ(OutputStage(up, {}).channel(0).q31, 3 << 29);
  EXPECT_EQ(OutputStage(up, {}).channel(0).shift, 1);
  EXPECT_EQ(apply(up, 1), 2);                //  1.5 →  2
  EXPECT_EQ(apply(up, -1), -1);              // −1.5 → −1
  EXPECT_EQ(apply(near, -1), -2);            // −1.5 → −2
  EXPECT_EQ(apply(up, 1 << 30), 3 << 29);    // 1.5·2^30 = 3·2^29 still fits
  EXPECT_EQ(apply(up, 1500000000), kMax32);  // 2.25e9 > 2^31 − 1
  EXPECT_EQ(apply(up, kMin32), kMin32);
  // M = 2^50 (e = 51, far beyond the 64-bit product TVM itself would use): any non-zero value
  // saturates, zero stays the zero point.
  const ProblemDesc huge = scheme_desc(SchemeKind::tvm, DType::u8, 0x1p20, {0x1p20}, 0x1p-10, 7);
  EXPECT_EQ(apply(huge, 1), 255);
  EXPECT_EQ(apply(huge, -1), 0);
  EXPECT_EQ(apply(huge, 0), 7);
}

TEST(OutputSchemeTvm, ShiftBoundaryAtExponent32WithAZeroPoint) {
  // M = 2^31 = 0.5·2^32: q31 = 2^30, e = 32, the largest exponent whose product is still formed
  // (|acc·M| can stay inside s32 only for |acc| = 1). acc = −1 gives −2^31, and the zero point 7
  // brings it back inside s32: −2^31 + 7. Treating e = 32 as "beyond every output range" would
  // saturate it to −2^31 first.
  const ProblemDesc d = scheme_desc(SchemeKind::tvm, DType::s32, 0x1p31, {1.0}, 1.0, 7);
  EXPECT_EQ(OutputStage(d, {}).channel(0).shift, 32);
  EXPECT_EQ(apply(d, -1), kMin32 + 7);
  EXPECT_EQ(apply(d, 1), kMax32);  // 2^31 + 7
  EXPECT_EQ(apply(d, 0), 7);
  spec::Params p;
  p.kind = SchemeKind::tvm;
  p.out = DType::s32;
  p.sx = 0x1p31;
  p.zy = 7;
  EXPECT_EQ(spec::output(p, -1), kMin32 + 7);
  // e = 33: every non-zero value lies beyond s32 even with the zero point.
  const ProblemDesc beyond = scheme_desc(SchemeKind::tvm, DType::s32, 0x1p32, {1.0}, 1.0, 7);
  EXPECT_EQ(OutputStage(beyond, {}).channel(0).shift, 33);
  EXPECT_EQ(apply(beyond, -1), kMin32);
}

TEST(OutputSchemeTvm, TinyMultipliers) {
  // M = 2^-32 → q31 = 2^30, e = −31, T = 62: acc = −2^31 → −0.5 exactly.
  // UPWARD: (−2^61 + 2^61) >> 62 = 0; TONEAREST: (−2^61 + 2^61 − 1) >> 62 = −1.
  const ProblemDesc up = scheme_desc(SchemeKind::tvm, DType::s8, 0x1p-16, {0x1p-16}, 1.0, 0);
  const ProblemDesc near =
      scheme_desc(SchemeKind::tvm, DType::s8, 0x1p-16, {0x1p-16}, 1.0, 0, Rounding::tonearest);
  EXPECT_EQ(apply(up, kMin32), 0);
  EXPECT_EQ(apply(near, kMin32), -1);
  EXPECT_EQ(apply(up, kMax32), 0);  // 0.49999… → 0
  EXPECT_EQ(apply(near, kMax32), 0);
  // M = 2^-40: T = 70, beyond 64-bit shifts; every s32 value gives 0.
  const ProblemDesc tiny = scheme_desc(SchemeKind::tvm, DType::s8, 0x1p-20, {0x1p-20}, 1.0, 5);
  EXPECT_EQ(apply(tiny, kMin32), 5);
  EXPECT_EQ(apply(tiny, kMax32), 5);
  // M = 2^-100 · 2^-100 / 2^0 … si = f32(2^-50·2^-50) = 2^-100, T = 130.
  const ProblemDesc tinier = scheme_desc(SchemeKind::tvm, DType::s8, 0x1p-50, {0x1p-50}, 1.0, -3);
  EXPECT_EQ(apply(tinier, kMin32), -3);
}

TEST(OutputSchemeTvm, RequantizeWideValuesSaturateInsteadOfWrapping) {
  // qnn.requantize with a 64-bit value near 2^32 and M just below 2^32 (e = 32): the product
  // needs 95 bits and the quotient 64; it must clamp, not wrap.
  const std::vector<double> si{0x1.fffffep31};
  const OutputStage stage =
      OutputStage::for_requantize(SchemeKind::tvm, Rounding::upward, si, 1.0, 0, DType::s32);
  EXPECT_EQ(stage.apply_wide((std::int64_t{1} << 32) - 1, 0), kMax32);
  EXPECT_EQ(stage.apply_wide(-(std::int64_t{1} << 32) + 1, 0), kMin32);
  EXPECT_EQ(stage.apply_wide(0, 0), 0);
}

TEST(OutputSchemeTvm, PerChannelConstants) {
  // sx = 0.5, sw = {0.5, 0.25, 3}, sy = 0.5: M = {0.5, 0.25, 3}.
  const ProblemDesc d = scheme_desc(SchemeKind::tvm, DType::s8, 0.5, {0.5, 0.25, 3.0}, 0.5, 0);
  const OutputStage stage(d, {});
  EXPECT_EQ(stage.channel(0).q31, 1 << 30);
  EXPECT_EQ(stage.channel(0).shift, 0);
  EXPECT_EQ(stage.channel(1).q31, 1 << 30);
  EXPECT_EQ(stage.channel(1).shift, -1);
  EXPECT_EQ(stage.channel(2).q31, 3 << 29);
  EXPECT_EQ(stage.channel(2).shift, 2);
  EXPECT_EQ(stage.apply(5, 0), 3);    // 2.5 → 3
  EXPECT_EQ(stage.apply(6, 1), 2);    // 1.5 → 2
  EXPECT_EQ(stage.apply(-6, 1), -1);  // −1.5 → −1
  EXPECT_EQ(stage.apply(-7, 2), -21);
  EXPECT_EQ(stage.apply(50, 2), 127);  // 150 → 127
}

TEST(OutputSchemeTvm, S32BiasIsAddedToTheAccumulator) {
  const ProblemDesc d = scheme_desc(SchemeKind::tvm, DType::u8, 0.5, {0.5}, 0.5, 0);
  const std::vector<std::int32_t> bias{-2};
  EXPECT_EQ(apply(d, 7, 0, s32_bias(bias)), 3);  // (7 − 2)·0.5 = 2.5 → 3
}

// ---------------------------------------------------------------------------------------------
// tvm_f32: v = f32(f32(acc)·f32(M)) + zy in binary32; UPWARD floor(v + 0.5), TONEAREST away.

TEST(OutputSchemeTvmF32, RoundingModesAndTheZeroPointBeforeRounding) {
  const ProblemDesc up = scheme_desc(SchemeKind::tvm_f32, DType::s8, 0.5, {0.5}, 0.5, 0);
  const ProblemDesc near =
      scheme_desc(SchemeKind::tvm_f32, DType::s8, 0.5, {0.5}, 0.5, 0, Rounding::tonearest);
  EXPECT_EQ(apply(up, -3), -1);    // floor(−1.5 + 0.5) = −1
  EXPECT_EQ(apply(near, -3), -2);  // away(−1.5) = −2
  EXPECT_EQ(apply(up, 5), 3);
  EXPECT_EQ(apply(near, 5), 3);
  // zy = 1, acc = −1: v = −0.5 + 1 = 0.5 → 1 either way (tvm, integer path, TONEAREST: 0).
  const ProblemDesc near_odd =
      scheme_desc(SchemeKind::tvm_f32, DType::s8, 0.5, {0.5}, 0.5, 1, Rounding::tonearest);
  EXPECT_EQ(apply(near_odd, -1), 1);
}

TEST(OutputSchemeTvmF32, HalfIsAddedInBinary32) {
  // sx = 2^-12, sw = 2^-13, sy = 1: M = 2^-25. acc = 2^24 − 1 (exact in binary32):
  // v = (2^24 − 1)·2^-25 = 0.5 − 2^-25 = 0x1.fffffep-2. v + 0.5 = 1 − 2^-25 is a binary32 tie
  // between 1 − 2^-24 and 1, rounding to 1: UPWARD gives floor(1) = 1, where the exact
  // floor(v + 0.5) and the integer path give 0. TONEAREST: away(v) = 0.
  const ProblemDesc up = scheme_desc(SchemeKind::tvm_f32, DType::s8, 0x1p-12, {0x1p-13}, 1.0, 0);
  const ProblemDesc near =
      scheme_desc(SchemeKind::tvm_f32, DType::s8, 0x1p-12, {0x1p-13}, 1.0, 0, Rounding::tonearest);
  const ProblemDesc integer = scheme_desc(SchemeKind::tvm, DType::s8, 0x1p-12, {0x1p-13}, 1.0, 0);
  EXPECT_EQ(apply(up, (1 << 24) - 1), 1);
  EXPECT_EQ(apply(near, (1 << 24) - 1), 0);
  EXPECT_EQ(apply(integer, (1 << 24) - 1), 0);
}

TEST(OutputSchemeTvmF32, SaturatesAtBothEnds) {
  const ProblemDesc s32 = scheme_desc(SchemeKind::tvm_f32, DType::s32, 2.0, {2.0}, 1.0, 0);
  EXPECT_EQ(apply(s32, 1 << 30), kMax32);
  EXPECT_EQ(apply(s32, -(1 << 30)), kMin32);
  const ProblemDesc u8 = scheme_desc(SchemeKind::tvm_f32, DType::u8, 1.0, {1.0}, 1.0, 0);
  EXPECT_EQ(apply(u8, 256), 255);
  EXPECT_EQ(apply(u8, -1), 0);
}

// ---------------------------------------------------------------------------------------------
// tflite: y = RoundingDivideByPOT(SRDHM(acc·2^max(shift, 0), q31), max(−shift, 0)); q = y + zy.

TEST(OutputSchemeTflite, DoubleRounding) {
  // M = 0.25 = 0.5·2^-1 → q31 = 2^30, shift = −1. SRDHM(acc, 2^30) = acc/2 rounded half up, then
  // RoundingDivideByPOT(·, 1) halves again rounding half away from zero.
  const ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 0.5, {0.5}, 1.0, 0);
  EXPECT_EQ(OutputStage(d, {}).channel(0).q31, 1 << 30);
  EXPECT_EQ(OutputStage(d, {}).channel(0).shift, -1);
  EXPECT_EQ(apply(d, 5), 2);    // 2.5 → 3, 1.5 → 2 (exact 1.25 → 1; single rounding: 1)
  EXPECT_EQ(apply(d, -6), -2);  // −3 → −3, −1.5 → −2 (single rounding: −1)
  EXPECT_EQ(apply(d, -5), -1);  // −2.5 → −2, −1 → −1
  EXPECT_EQ(apply(d, -7), -2);  // −3.5 → −3, −1.5 → −2
  EXPECT_EQ(apply(d, 3), 1);    // 1.5 → 2, 1 → 1
}

TEST(OutputSchemeTflite, HighMulTiesGoTowardPlusInfinity) {
  // M = 0.5 → q31 = 2^30, shift = 0: y = SRDHM(acc, 2^30) = acc/2 rounded half up.
  const ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 0.5, {1.0}, 1.0, 0);
  EXPECT_EQ(apply(d, 5), 3);    //  2.5 →  3
  EXPECT_EQ(apply(d, -5), -2);  // −2.5 → −2 (half away from zero would give −3)
  EXPECT_EQ(apply(d, -1), 0);   // −0.5 →  0
}

TEST(OutputSchemeTflite, GivenMultipliersPerChannel) {
  ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 1.0, {1.0, 1.0, 1.0}, 1.0, 0);
  // ch0: q31 = 3·2^29, shift = 1 → M = 1.5: acc·2 then SRDHM(·, 3·2^29) = acc·1.5 half up.
  // ch1: q31 = 2^30, shift = −31 → M = 2^-32. ch2: q31 = 2^30, shift = 30 → M = 2^29.
  d.scheme.multiplier_q31 = {3 << 29, 1 << 30, 1 << 30};
  d.scheme.shift = {1, -31, 30};
  EXPECT_EQ(apply(d, -1, 0), -1);  // −1.5 → −1
  EXPECT_EQ(apply(d, 3, 0), 5);    //  4.5 →  5
  // ch1: SRDHM(−2^31, 2^30) = −2^30; RDBP(−2^30, 31) = −0.5 → −1 (single rounding: 0).
  EXPECT_EQ(apply(d, kMin32, 1), -1);
  // SRDHM(2^31 − 1, 2^30) = 2^30 − 0.5 → 2^30; RDBP(2^30, 31) = 0.5 → 1 (exact 0.49999… → 0).
  EXPECT_EQ(apply(d, kMax32, 1), 1);
  // ch2: acc·2^30 in 32 bits: 1 → 2^30 → SRDHM(2^30, 2^30) = 2^29; 2 → 2^31 wraps to −2^31
  // (TFLite's int32 arithmetic) → SRDHM(−2^31, 2^30) = −2^30 → −128.
  EXPECT_EQ(apply(d, 1, 2), 127);
  EXPECT_EQ(apply(d, 2, 2), -128);
}

TEST(OutputSchemeTflite, DerivedMultiplierRoundingUpTo2To31) {
  // sx = 0x1.ffe892p-1, sw = 0x1.ffd476p-1, sy = 0x1.ffbd0ap-1 (binary32 values):
  // M = f64(f64(sx·sw)/sy) = 0x1.fffffffe0d64dp-1, frexp fraction f = M, f·2^31 = 2^31 − 0.24…
  // rounds to 2^31 → q31 = 2^30, shift = 1 (M is taken as exactly 1).
  const ProblemDesc d =
      scheme_desc(SchemeKind::tflite, DType::s32, 0x1.ffe892p-1, {0x1.ffd476p-1}, 0x1.ffbd0ap-1, 0);
  EXPECT_EQ(OutputStage(d, {}).channel(0).q31, 1 << 30);
  EXPECT_EQ(OutputStage(d, {}).channel(0).shift, 1);
  EXPECT_EQ(apply(d, 100), 100);
  EXPECT_EQ(apply(d, -12345), -12345);
}

TEST(OutputSchemeTflite, ShiftBelowMinus31FlushesToZero) {
  // M = 2^-33 = 0.5·2^-32 → shift −32 < −31 → q31 = 0, shift = 0: the output is the zero point.
  const ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 0x1p-20, {0x1p-13}, 1.0, 9);
  EXPECT_EQ(OutputStage(d, {}).channel(0).q31, 0);
  EXPECT_EQ(OutputStage(d, {}).channel(0).shift, 0);
  EXPECT_EQ(apply(d, kMin32), 9);
  EXPECT_EQ(apply(d, kMax32), 9);
}

TEST(OutputSchemeTflite, SaturatesAtBothEnds) {
  // Through the zero point: M = 0.5, zy = 2^31 − 10: 100·0.5 + zy > 2^31 − 1.
  const ProblemDesc hi = scheme_desc(SchemeKind::tflite, DType::s32, 0.5, {1.0}, 1.0, kMax32 - 10);
  EXPECT_EQ(apply(hi, 100), kMax32);
  const ProblemDesc lo = scheme_desc(SchemeKind::tflite, DType::s32, 0.5, {1.0}, 1.0, kMin32 + 10);
  EXPECT_EQ(apply(lo, -100), kMin32);
  const ProblemDesc u8 = scheme_desc(SchemeKind::tflite, DType::u8, 0.5, {1.0}, 1.0, 128);
  EXPECT_EQ(apply(u8, 256), 255);  // 128 + 128
  EXPECT_EQ(apply(u8, -258), 0);   // −129 + 128
  const ProblemDesc s8 = scheme_desc(SchemeKind::tflite, DType::s8, 0.5, {1.0}, 1.0, 0);
  EXPECT_EQ(apply(s8, 256), 127);
  EXPECT_EQ(apply(s8, -258), -128);
}

TEST(OutputSchemeTflite, S32Bias) {
  const ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 0.5, {1.0}, 1.0, 0);
  const std::vector<std::int32_t> bias{-10};
  EXPECT_EQ(apply(d, 5, 0, s32_bias(bias)), -2);  // SRDHM(−5, 2^30) = −2.5 → −2
}

// ---------------------------------------------------------------------------------------------
// tflite_single: y = (acc·q31 + 2^(30 − shift)) >> (31 − shift).

TEST(OutputSchemeTfliteSingle, SingleRoundingHalfUp) {
  const ProblemDesc d = scheme_desc(SchemeKind::tflite_single, DType::s8, 0.5, {0.5}, 1.0, 0);
  // M = 0.25: q31 = 2^30, shift = −1: y = (acc·2^30 + 2^31) >> 32 = floor((acc + 2)/4).
  EXPECT_EQ(apply(d, 5), 1);    //  1.25 →  1 (double rounding: 2)
  EXPECT_EQ(apply(d, -6), -1);  // −1.5  → −1 (double rounding: −2)
  EXPECT_EQ(apply(d, 6), 2);    //  1.5  →  2
  EXPECT_EQ(apply(d, -7), -2);  // −1.75 → −2
}

TEST(OutputSchemeTfliteSingle, ShiftAtBothLimits) {
  ProblemDesc d = scheme_desc(SchemeKind::tflite_single, DType::s32, 1.0, {1.0, 1.0, 1.0}, 1.0, 0);
  d.scheme.multiplier_q31 = {1 << 30, 1, kMax32};
  d.scheme.shift = {-31, 30, 30};
  // shift −31: y = (acc·2^30 + 2^61) >> 62. −2^31 → (−2^61 + 2^61) >> 62 = 0 (tflite: −1);
  // 2^31 − 1 → (2^62 − 2^30) >> 62 = 0 (tflite: 1).
  EXPECT_EQ(apply(d, kMin32, 0), 0);
  EXPECT_EQ(apply(d, kMax32, 0), 0);
  // shift 30, q31 = 1: y = (acc + 1) >> 1: 5 → 3 (2.5 up), −5 → −2 (−2.5 up), −6 → −3.
  EXPECT_EQ(apply(d, 5, 1), 3);
  EXPECT_EQ(apply(d, -5, 1), -2);
  EXPECT_EQ(apply(d, -6, 1), -3);
  // shift 30, q31 = 2^31 − 1: (2^31 − 1)²/2 ≈ 2^61 saturates; −2^31·(2^31 − 1)/2 too.
  EXPECT_EQ(apply(d, kMax32, 2), kMax32);
  EXPECT_EQ(apply(d, kMin32, 2), kMin32);
  EXPECT_EQ(apply(d, 1, 2), 1 << 30);  // (2^31 − 1 + 1) >> 1 = 2^30
}

// ---------------------------------------------------------------------------------------------
// Fused activations: clamp bounds quantized with the scheme's own rounding, then intersected.

struct ClampCase {
  SchemeKind kind;
  Rounding rounding;
  std::int64_t lo;
  std::int64_t hi;
};

TEST(OutputSchemeClamp, BoundsFollowEachSchemesRounding) {
  // sy = 0.5, zy = −3, clamp(−0.25, 1.25): a/sy = −0.5, b/sy = 2.5.
  //   round then add zy:       rne: 0 − 3, 2 − 3;   away: −1 − 3, 3 − 3;   up: 0 − 3, 3 − 3.
  //   add zy then round (onnx, onednn, tvm_f32): a: −3.5, b: −0.5;
  //     rne: −4, 0;   floor(x + 0.5): −3, 0;   away: −4, −1.
  const std::vector<ClampCase> cases{
      {SchemeKind::fbgemm, Rounding::upward, -3, -1},
      {SchemeKind::qnnpack, Rounding::upward, -3, -1},
      {SchemeKind::onednn, Rounding::upward, -4, 0},
      {SchemeKind::onnx, Rounding::upward, -4, 0},
      {SchemeKind::onnxruntime, Rounding::upward, -3, -1},
      {SchemeKind::tvm, Rounding::upward, -3, 0},
      {SchemeKind::tvm, Rounding::tonearest, -4, 0},
      {SchemeKind::tvm_f32, Rounding::upward, -3, 0},
      {SchemeKind::tvm_f32, Rounding::tonearest, -4, -1},
      {SchemeKind::tflite, Rounding::upward, -4, 0},
      {SchemeKind::tflite_single, Rounding::upward, -4, 0},
  };
  for (const ClampCase& c : cases) {
    ProblemDesc d = scheme_desc(c.kind, DType::s8, 1.0, {1.0}, 0.5, -3, c.rounding);
    d.activation = Activation::clamp(-0.25, 1.25);
    const OutputStage stage(d, {});
    EXPECT_EQ(stage.lo(), c.lo) << qconv::to_string(c.kind) << " " << qconv::to_string(c.rounding);
    EXPECT_EQ(stage.hi(), c.hi) << qconv::to_string(c.kind) << " " << qconv::to_string(c.rounding);
  }
}

TEST(OutputSchemeClamp, OutputsAreClampedToTheQuantizedBounds) {
  ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 0.5, {1.0}, 0.5, -3);  // M = 1
  d.activation = Activation::clamp(-0.25, 1.25);                                    // [−4, 0]
  EXPECT_EQ(apply(d, -100), -4);
  EXPECT_EQ(apply(d, 2), -1);
  EXPECT_EQ(apply(d, 100), 0);
}

TEST(OutputSchemeClamp, TfliteDividesTheBoundInBinary32) {
  // sy = 0x1.3911fp-4: 6/sy = 78.49999883… in reals, but f32(6/sy) = 78.5 exactly, which TFLite
  // (zy + round(f / scale) in float) rounds away to 79; a binary64 quotient would give 78.
  ProblemDesc d = scheme_desc(SchemeKind::tflite, DType::s8, 1.0, {1.0}, 0x1.3911fp-4, 0);
  d.activation = Activation::clamp(0.0, 6.0);
  EXPECT_EQ(OutputStage(d, {}).hi(), 79);
  EXPECT_EQ(OutputStage(d, {}).lo(), 0);
}

TEST(OutputSchemeClamp, IntersectsWithTheDtypeRangeAndRelu) {
  ProblemDesc d = scheme_desc(SchemeKind::fbgemm, DType::u8, 1.0, {1.0}, 1.0, 10);
  d.activation = Activation::clamp(-1000.0, 1000.0);
  EXPECT_EQ(OutputStage(d, {}).lo(), 0);
  EXPECT_EQ(OutputStage(d, {}).hi(), 255);
  d.activation = Activation::relu();
  EXPECT_EQ(OutputStage(d, {}).lo(), 10);
  d.activation = Activation::clamp(-std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::infinity());
  EXPECT_EQ(OutputStage(d, {}).lo(), 0);
  EXPECT_EQ(OutputStage(d, {}).hi(), 255);
}

TEST(OutputSchemeClamp, EmptyRangeIsRefused) {
  // u8, zy = 10, sy = 1: clamp(−20, −15) quantizes to [−10, −5], entirely below 0.
  ProblemDesc d = scheme_desc(SchemeKind::fbgemm, DType::u8, 1.0, {1.0}, 1.0, 10);
  d.activation = Activation::clamp(-20.0, -15.0);
  expect_refused(d, "activation");
  EXPECT_THROW(OutputStage(d, {}), InvalidArgument);
  // s8, zy = 0, sy = 1: clamp(200, 300) lies above 127.
  ProblemDesc s8 = scheme_desc(SchemeKind::tflite, DType::s8, 1.0, {1.0}, 1.0, 0);
  s8.activation = Activation::clamp(200.0, 300.0);
  expect_refused(s8, "activation");
}

// ---------------------------------------------------------------------------------------------
// Derived constants that do not exist in the scheme's precision are refused, naming the field.

TEST(OutputSchemeInvalid, DerivedConstantsOutOfRange) {
  // f32(2^100·2^100) overflows binary32.
  expect_refused(scheme_desc(SchemeKind::fbgemm, DType::u8, 0x1p100, {0x1p100}, 1.0, 0),
                 "input_scale*weight_scale[0]");
  expect_refused(scheme_desc(SchemeKind::tvm, DType::u8, 0x1p100, {0x1p100}, 1.0, 0),
                 "input_scale*weight_scale[0]");
  // f32(2^-100·2^-100) underflows to 0.
  expect_refused(scheme_desc(SchemeKind::fbgemm, DType::u8, 0x1p-100, {0x1p-100}, 1.0, 0),
                 "input_scale*weight_scale[0]");
  expect_refused(scheme_desc(SchemeKind::qnnpack, DType::u8, 0x1p-100, {0x1p-100}, 1.0, 0),
                 "output_multiplier[0]");
  expect_refused(scheme_desc(SchemeKind::onnx, DType::u8, 0x1p-100, {0x1p-100}, 1.0, 0),
                 "output_multiplier[0]");
  // Per channel: only channel 1 is out of range.
  expect_refused(scheme_desc(SchemeKind::onnx, DType::u8, 0x1p100, {1.0, 0x1p100}, 1.0, 0),
                 "output_multiplier[1]");
  expect_refused(scheme_desc(SchemeKind::onnxruntime, DType::u8, 0x1p-100, {0x1p-100}, 1.0, 0),
                 "output_multiplier[0]");
  expect_refused(scheme_desc(SchemeKind::onnxruntime, DType::u8, 0x1p100, {1.0, 0x1p100}, 1.0, 0),
                 "output_multiplier[1]");
  // onednn: rx = rw = 2^-127 (binary32 subnormals), bs = 2^-254 underflows to 0.
  expect_refused(scheme_desc(SchemeKind::onednn, DType::u8, 0x1p127, {0x1p127}, 1.0, 0),
                 "1/(input_scale*weight_scale)[0]");
  // tvm_f32: M = 2^-120/2^100 = 2^-220 is a fine double but 0 in binary32; the integer path
  // accepts it (every output is the zero point).
  expect_refused(scheme_desc(SchemeKind::tvm_f32, DType::u8, 0x1p-60, {0x1p-60}, 0x1p100, 0),
                 "output_multiplier[0]");
  const ProblemDesc integer =
      scheme_desc(SchemeKind::tvm, DType::u8, 0x1p-60, {0x1p-60}, 0x1p100, 4);
  EXPECT_EQ(apply(integer, kMax32), 4);
  // tflite: M = 2^30 needs shift 31.
  expect_refused(scheme_desc(SchemeKind::tflite, DType::u8, 0x1p15, {0x1p15}, 1.0, 0),
                 "output_multiplier[0]");
  expect_refused(scheme_desc(SchemeKind::tflite_single, DType::u8, 0x1p15, {0x1p15}, 1.0, 0),
                 "output_multiplier[0]");
}

// ---------------------------------------------------------------------------------------------
// One problem per scheme through Plan and the reference engine: 1x1 conv, one input channel, two
// output channels (per-channel weight scales {0.5, 0.25}), sx = 0.5, sy = 0.5 → M = {0.5, 0.25};
// input zero point 128, inputs 128 + {5, −5, 3, −6}, weights {1, 1}: acc = {5, −5, 3, −6} in
// both channels. Output s8 with zy = 1 (int32: s32, zy = 0).

struct EndToEnd {
  SchemeKind kind;
  Rounding rounding;
  std::vector<float> float_bias;
  std::vector<std::int32_t> s32_bias;
  std::vector<std::int32_t> channel0;  // outputs for the four pixels
  std::vector<std::int32_t> channel1;
};

std::vector<std::int32_t> run_end_to_end(const EndToEnd& c) {
  ProblemDesc d = scheme_desc(c.kind, c.kind == SchemeKind::int32 ? DType::s32 : DType::s8, 0.5,
                              {0.5, 0.25}, 0.5, c.kind == SchemeKind::int32 ? 0 : 1, c.rounding);
  d.in_width = 4;
  d.input_zero_point = 128;
  d.has_bias = !c.float_bias.empty() || !c.s32_bias.empty();
  const qconv::Problem problem(d);
  const std::vector<std::int8_t> w{1, 1};
  const std::vector<std::uint8_t> x{133, 123, 131, 122};
  const qconv::Plan plan = qconv::Plan::prepare(
      problem, {std::span<const std::int8_t>(w), DType::s8, qconv::Layout::OHWI, {2, 1, 1, 1}},
      qconv::PrepareOptions{"reference"});
  BiasView bias;
  if (!c.float_bias.empty()) bias = float_bias(c.float_bias);
  if (!c.s32_bias.empty()) bias = s32_bias(c.s32_bias);
  const qconv::Tensor y = plan.execute(
      {std::span<const std::uint8_t>(x), DType::u8, qconv::Layout::NHWC, {1, 1, 4, 1}}, bias);
  std::vector<std::int32_t> out;  // NHWC {1, 1, 4, 2}: pixel-major, channel-minor
  for (std::int64_t i = 0; i < 8; ++i) {
    out.push_back(y.dtype() == DType::s32 ? y.as<std::int32_t>()[i] : y.as<std::int8_t>()[i]);
  }
  return out;
}

TEST(OutputSchemeEndToEnd, OneProblemPerScheme) {
  const std::vector<EndToEnd> cases{
      // acc + {10, −10}.
      {SchemeKind::int32, Rounding::upward, {}, {10, -10}, {15, 5, 13, 4}, {-5, -15, -7, -16}},
      // b = 0.125: b/t = {0.5, 1}. ch0 (a + 0.5)·0.5 = 2.75, −2.25, 1.75, −2.75 → 3, −2, 2, −3;
      // ch1 (a + 1)·0.25 = 1.5, −1, 1, −1.25 → 2, −1, 1, −1; then + 1.
      {SchemeKind::fbgemm, Rounding::upward, {0.125f, 0.125f}, {}, {4, -1, 3, -2}, {3, 0, 2, 0}},
      // bq = {rne(0.125·4), rne(0.125·8)} = {0, 1}. ch0 a·0.5 = 2.5, −2.5, 1.5, −3 → 2, −2, 2, −3;
      // ch1 (a + 1)·0.25 → 2, −1, 1, −1; then + 1.
      {SchemeKind::qnnpack, Rounding::upward, {0.125f, 0.125f}, {}, {3, -1, 3, -2}, {3, 0, 2, 0}},
      // bb = {0.5, 1}. ch0 2.75 + 1, −2.25 + 1, 1.75 + 1, −2.75 + 1 → 4, −1, 3, −2;
      // ch1 1.5 + 1, −1 + 1, 1 + 1, −1.25 + 1 → rne(2.5) = 2, 0, 2, 0.
      {SchemeKind::onednn, Rounding::upward, {0.125f, 0.125f}, {}, {4, -1, 3, -2}, {2, 0, 2, 0}},
      // s32 bias {1, −1}. ch0 (a + 1)·0.5 + 1 = 4, −1, 3, −1.5 → 4, −1, 3, −2;
      // ch1 (a − 1)·0.25 + 1 = 2, −0.5, 1.5, −0.75 → 2, 0, 2, −1.
      {SchemeKind::onnx, Rounding::upward, {}, {1, -1}, {4, -1, 3, -2}, {2, 0, 2, -1}},
      // Round first: ch0 (a + 1)·0.5 = 3, −2, 2, −2.5 → 3, −2, 2, −2; ch1 (a − 1)·0.25 = 1,
      // −1.5, 0.5, −1.75 → 1, −2, 0, −2; then + 1.
      {SchemeKind::onnxruntime, Rounding::upward, {}, {1, -1}, {4, -1, 3, -1}, {2, -1, 1, -1}},
      // ch0 2.5, −2.5, 1.5, −3 → up: 3, −2, 2, −3; ch1 1.25, −1.25, 0.75, −1.5 → 1, −1, 1, −1.
      {SchemeKind::tvm, Rounding::upward, {}, {}, {4, -1, 3, -2}, {2, 0, 2, 0}},
      // away: ch0 3, −3, 2, −3; ch1 1, −1, 1, −2.
      {SchemeKind::tvm, Rounding::tonearest, {}, {}, {4, -2, 3, -2}, {2, 0, 2, -1}},
      // zero point first: ch0 3.5, −1.5, 2.5, −2; ch1 2.25, −0.25, 1.75, −0.5.
      {SchemeKind::tvm_f32, Rounding::upward, {}, {}, {4, -1, 3, -2}, {2, 0, 2, 0}},
      {SchemeKind::tvm_f32, Rounding::tonearest, {}, {}, {4, -2, 3, -2}, {2, 0, 2, -1}},
      // ch0 SRDHM = a/2 half up: 3, −2, 2, −3. ch1 then RDBP(·, 1): 2, −1, 1, −2.
      {SchemeKind::tflite, Rounding::upward, {}, {}, {4, -1, 3, -2}, {3, 0, 2, -1}},
      // ch1 floor((a + 2)/4): 1, −1, 1, −1.
      {SchemeKind::tflite_single, Rounding::upward, {}, {}, {4, -1, 3, -2}, {2, 0, 2, 0}},
  };
  for (const EndToEnd& c : cases) {
    const std::vector<std::int32_t> out = run_end_to_end(c);
    for (std::size_t px = 0; px < 4; ++px) {
      EXPECT_EQ(out[2 * px], c.channel0[px])
          << qconv::to_string(c.kind) << " " << qconv::to_string(c.rounding) << " pixel " << px;
      EXPECT_EQ(out[2 * px + 1], c.channel1[px])
          << qconv::to_string(c.kind) << " " << qconv::to_string(c.rounding) << " pixel " << px;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Randomized: OutputStage against SPEC §4 re-written in support/spec_output.hpp, literally and
// independently.

struct Variant {
  const char* name;
  SchemeKind kind;
  Rounding rounding;
  bool given;
};

class OutputSchemeRandom : public testing::TestWithParam<Variant> {};

// A binary32 scale in [2^e, 2^(e+1)): half of them with a short significand (1–4 bits), so that
// products land on exact ties often; one in eight a binary64 value that is no binary32 value.
double random_scale(std::mt19937_64& rng, int e_lo, int e_hi) {
  const int e = std::uniform_int_distribution<int>(e_lo, e_hi)(rng);
  const int kind = std::uniform_int_distribution<int>(0, 7)(rng);
  if (kind == 0) return std::ldexp(1.0 + std::uniform_real_distribution<double>(0, 1)(rng), e);
  const int bits = kind <= 3 ? 24 : std::uniform_int_distribution<int>(1, 4)(rng);
  const auto mantissa = std::uniform_int_distribution<std::int64_t>(
      std::int64_t{1} << (bits - 1), (std::int64_t{1} << bits) - 1)(rng);
  return std::ldexp(static_cast<double>(mantissa), e - bits + 1);
}

std::int64_t random_accumulator(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
  const auto uniform = [&](std::int64_t a, std::int64_t b) {
    return std::uniform_int_distribution<std::int64_t>(std::max(a, lo), std::min(b, hi))(rng);
  };
  if (kind == 0) return std::uniform_int_distribution<int>(0, 1)(rng) ? lo : hi;
  if (kind <= 3) return uniform(lo, hi);
  if (kind <= 6) return uniform(-(1 << 12), 1 << 12);
  return uniform(-(1 << 22), 1 << 22);
}

TEST_P(OutputSchemeRandom, MatchesTheSpecFormula) {
  const Variant variant = GetParam();
  constexpr int kSets = 1000;
  constexpr int kPerSet = 100;  // 100,000 samples
  constexpr std::int64_t kChannels = 3;
  std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(variant.kind) * 16u +
                      static_cast<unsigned>(variant.rounding) * 2u + (variant.given ? 1u : 0u));
  const auto coin = [&](int one_in) {
    return std::uniform_int_distribution<int>(1, one_in)(rng) == 1;
  };
  const bool float_bias_scheme = qconv::takes_float_bias(variant.kind);
  spec::g_ties = 0;
  std::int64_t mismatches = 0;

  for (int set = 0; set < kSets; ++set) {
    spec::Params p;
    p.kind = variant.kind;
    p.rounding = variant.rounding;
    p.given = variant.given;
    const DType dtypes[] = {DType::u8, DType::s8, DType::s32};
    p.out = variant.kind == SchemeKind::int32 ? DType::s32 : dtypes[rng() % 3];
    p.relu = coin(4);
    p.has_bias = coin(2);
    p.sx = random_scale(rng, -10, -2);
    p.sy = random_scale(rng, -25, 20);  // M = sx·sw/sy spans about 2^-41 … 2^27
    if (p.out != DType::s32) {
      p.zy = static_cast<std::int32_t>(std::uniform_int_distribution<std::int64_t>(
          qconv::dtype_min(p.out), qconv::dtype_max(p.out))(rng));
    } else if (variant.kind != SchemeKind::int32) {
      p.zy = coin(8) ? static_cast<std::int32_t>(rng())
                     : std::uniform_int_distribution<std::int32_t>(-(1 << 20), 1 << 20)(rng);
    }

    ProblemDesc d = scheme_desc(variant.kind, p.out, p.sx, {1.0}, p.sy, p.zy, variant.rounding);
    const bool per_channel = coin(2);
    d.out_channels = kChannels;
    d.weight_scale.clear();
    for (std::int64_t o = 0; o < (per_channel ? kChannels : 1); ++o) {
      d.weight_scale.push_back(random_scale(rng, -10, 0));
    }
    if (p.relu) d.activation = Activation::relu();
    d.has_bias = p.has_bias;
    std::vector<float> fbias(kChannels);
    std::vector<std::int32_t> sbias(kChannels);
    for (std::int64_t o = 0; o < kChannels; ++o) {
      const auto i = static_cast<std::size_t>(o);
      const double t = p.sx * d.weight_scale[per_channel ? i : 0];
      fbias[i] =
          coin(2)
              ? static_cast<float>(std::uniform_int_distribution<int>(-4096, 4096)(rng)) / 16.0f *
                    static_cast<float>(t)
              : static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng) * t * 0x1p20);
      sbias[i] = coin(8) ? static_cast<std::int32_t>(rng())
                         : std::uniform_int_distribution<std::int32_t>(-(1 << 20), 1 << 20)(rng);
    }
    if (variant.given) {
      for (std::int64_t o = 0; o < (per_channel ? kChannels : 1); ++o) {
        d.scheme.multiplier_q31.push_back(
            coin(2)
                ? static_cast<std::int32_t>(rng() >> 33)
                : static_cast<std::int32_t>(std::uniform_int_distribution<int>(1, 15)(rng) << 27));
        d.scheme.shift.push_back(std::uniform_int_distribution<int>(-31, 30)(rng));
      }
    }
    BiasView bias;
    if (p.has_bias) bias = float_bias_scheme ? float_bias(fbias) : s32_bias(sbias);
    const OutputStage stage(d, bias);

    for (int k = 0; k < kPerSet; ++k) {
      const auto o = std::uniform_int_distribution<std::int64_t>(0, kChannels - 1)(rng);
      const std::size_t i = per_channel ? static_cast<std::size_t>(o) : 0;
      p.sw = d.weight_scale[i];
      p.per_channel = per_channel;
      p.fbias = fbias[static_cast<std::size_t>(o)];
      p.sbias = sbias[static_cast<std::size_t>(o)];
      if (variant.given) {
        p.q31 = d.scheme.multiplier_q31[i];
        p.shift = d.scheme.shift[i];
      }
      std::int32_t acc = 0;
      if (!coin(2) || !spec::tie_accumulator(spec::effective_multiplier(p), rng, acc)) {
        acc = static_cast<std::int32_t>(random_accumulator(rng, kMin32, kMax32));
      }
      const std::int64_t expected = spec::output(p, acc);
      const std::int32_t got = stage.apply(acc, o);
      if (got != expected && ++mismatches <= 5) {
        ADD_FAILURE() << variant.name << ": acc " << acc << " channel " << o << " sx " << p.sx
                      << " sw " << p.sw << " sy " << p.sy << " zy " << p.zy << " bias "
                      << (p.has_bias ? (float_bias_scheme ? p.fbias : p.sbias) : 0) << " relu "
                      << p.relu << " q31 " << p.q31 << " shift " << p.shift << ": got " << got
                      << ", the formula gives " << expected;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << variant.name;
  // The samples must have met exact ties in the rounding steps, or the test proves little.
  // (int32 has no rounding.)
  if (variant.kind != SchemeKind::int32) {
    EXPECT_GE(spec::g_ties, 3000) << variant.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryScheme, OutputSchemeRandom,
    testing::Values(
        Variant{"int32", SchemeKind::int32, Rounding::upward, false},
        Variant{"fbgemm", SchemeKind::fbgemm, Rounding::upward, false},
        Variant{"qnnpack", SchemeKind::qnnpack, Rounding::upward, false},
        Variant{"onednn", SchemeKind::onednn, Rounding::upward, false},
        Variant{"onnx", SchemeKind::onnx, Rounding::upward, false},
        Variant{"onnxruntime", SchemeKind::onnxruntime, Rounding::upward, false},
        Variant{"tvm_upward", SchemeKind::tvm, Rounding::upward, false},
        Variant{"tvm_tonearest", SchemeKind::tvm, Rounding::tonearest, false},
        Variant{"tvm_f32_upward", SchemeKind::tvm_f32, Rounding::upward, false},
        Variant{"tvm_f32_tonearest", SchemeKind::tvm_f32, Rounding::tonearest, false},
        Variant{"tflite_derived", SchemeKind::tflite, Rounding::upward, false},
        Variant{"tflite_given", SchemeKind::tflite, Rounding::upward, true},
        Variant{"tflite_single_derived", SchemeKind::tflite_single, Rounding::upward, false},
        Variant{"tflite_single_given", SchemeKind::tflite_single, Rounding::upward, true}),
    [](const testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

// qnn.requantize: the 64-bit path (value − input zero point spans 33 bits).
TEST(OutputSchemeRandomRequantize, WideValuesMatchTheSpecFormula) {
  std::mt19937_64 rng(0x5eedf00d);
  const std::int64_t wide = (std::int64_t{1} << 32) - 1;
  for (const SchemeKind kind : {SchemeKind::tvm, SchemeKind::tvm_f32}) {
    for (const Rounding rounding : {Rounding::upward, Rounding::tonearest}) {
      std::int64_t mismatches = 0;
      for (int set = 0; set < 1000; ++set) {
        spec::Params p;
        p.kind = kind;
        p.rounding = rounding;
        p.out = DType::s32;
        p.sx = random_scale(rng, -20, 20);
        p.sy = random_scale(rng, -20, 20);
        p.zy = std::uniform_int_distribution<std::int32_t>(-1000, 1000)(rng);
        const std::vector<double> si{p.sx};
        const OutputStage stage =
            OutputStage::for_requantize(kind, rounding, si, p.sy, p.zy, DType::s32);
        for (int k = 0; k < 100; ++k) {
          const std::int64_t value = random_accumulator(rng, -wide, wide);
          // The spec formula with sw = 1: si = f32(sx·1) = f32(sx), on the 64-bit value.
          const std::int64_t expected = [&] {
            if (kind == SchemeKind::tvm_f32) {
              const double m = static_cast<double>(spec::f32(p.sx)) / spec::f32(p.sy);
              const float v =
                  spec::add(spec::mul(spec::from_int(value), spec::f32(m)), spec::f32(p.zy));
              return spec::clamp_real(p, rounding == Rounding::upward
                                             ? std::floor(spec::add(v, 0.5f))
                                             : spec::round_real(v, spec::Mode::half_away));
            }
            const spec::Q31 fp =
                spec::quantize(static_cast<double>(spec::f32(p.sx)) / spec::f32(p.sy));
            const spec::Mode mode =
                rounding == Rounding::upward ? spec::Mode::half_up : spec::Mode::half_away;
            const spec::Int r = fp.e > 40
                                    ? (value > 0   ? spec::Int{1} << 50
                                       : value < 0 ? -(spec::Int{1} << 50)
                                                   : 0)
                                    : spec::round_ratio(spec::Int{value} * fp.q, 31 - fp.e, mode);
            return spec::clamp_int(p, r + p.zy);
          }();
          const std::int32_t got = stage.apply_wide(value, 0);
          if (got != expected && ++mismatches <= 5) {
            ADD_FAILURE() << qconv::to_string(kind) << " " << qconv::to_string(rounding)
                          << ": value " << value << " si " << p.sx << " sy " << p.sy << " zy "
                          << p.zy << ": got " << got << ", the formula gives " << expected;
          }
        }
      }
      EXPECT_EQ(mismatches, 0) << qconv::to_string(kind) << " " << qconv::to_string(rounding);
    }
  }
}

}  // namespace
