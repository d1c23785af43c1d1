// SPDX-License-Identifier: Apache-2.0
// The avx2 GEMM tiles, exact on any AVX2 CPU: up to 4 output pixels x 16 channels of a panel per
// pass. vpmaddubsw would be one instruction per 4 bytes as with vpdpbusd, but it saturates its
// 16-bit pair sums (255·127·2 > 32767): the numbers would differ from the reference. Instead both
// sides are 16-bit: the input is read from a copy zero-extended to u16 (KernelSet::input_widening,
// made per call: a row's 4 values are two 32-bit broadcasts, (x0, x1) and (x2, x3)), the weights
// from this kernel set's own form of the panels, (w0, w1) and (w2, w3) as s16 pairs widened at
// preparation, and vpmaddwd sums x0·w0 + x1·w1 and x2·w2 + x3·w3 exactly in s32: two vpmaddwd and
// two vpaddd per 4 bytes and 8 lanes, no other work in the loop. (Measured on ResNet-50 against
// widening in the loop — 85 to 86 ms — and against splitting the input into nibbles so that
// vpmaddubsw cannot saturate — two vpmaddubsw and two vpmaddwd per 4 bytes, 124 ms.) Built with
// AVX2 flags: see kernel_set.hpp.
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/widened_dot.hpp"
#include "engines/x64/ymm_gemm_tile.hpp"

namespace qconv::detail::avx2 {
namespace {

using Dot = Widened;

}  // namespace

// Each 32 bytes of the common form (8 lanes x w0..w3) as 64: (w0, w1) of the 8 lanes as s16
// pairs, then (w2, w3).
void widen_weights(const std::int8_t* packed, std::int64_t bytes, std::int8_t* out) {
  auto* wide = reinterpret_cast<std::int16_t*>(out);
  for (std::int64_t chunk = 0; chunk < bytes; chunk += 32) {
    for (int lane = 0; lane < 8; ++lane) {
      const std::int8_t* w = packed + chunk + lane * 4;
      std::int16_t* even = wide + chunk + lane * 2;  // 32 s16 per chunk: 16 even, 16 odd
      even[0] = w[0];
      even[1] = w[1];
      even[16] = w[2];
      even[17] = w[3];
    }
  }
}

void narrow_weights(const std::int8_t* widened, std::int64_t packed_bytes, std::int8_t* out) {
  const auto* wide = reinterpret_cast<const std::int16_t*>(widened);
  for (std::int64_t chunk = 0; chunk < packed_bytes; chunk += 32) {
    for (int lane = 0; lane < 8; ++lane) {
      const std::int16_t* even = wide + chunk + lane * 2;
      std::int8_t* w = out + chunk + lane * 4;
      w[0] = static_cast<std::int8_t>(even[0]);
      w[1] = static_cast<std::int8_t>(even[1]);
      w[2] = static_cast<std::int8_t>(even[16]);
      w[3] = static_cast<std::int8_t>(even[17]);
    }
  }
}

gemm::GemmTileKernel gemm_tile_kernel(int rows, int /*vectors*/) {
  switch (rows) {
    case 1: return &x64_ymm::gemm_tile<Dot, 1>;
    case 2: return &x64_ymm::gemm_tile<Dot, 2>;
    case 3: return &x64_ymm::gemm_tile<Dot, 3>;
    default: return &x64_ymm::gemm_tile<Dot, 4>;
  }
}

}  // namespace qconv::detail::avx2
