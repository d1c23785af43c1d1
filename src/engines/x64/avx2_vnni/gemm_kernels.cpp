// SPDX-License-Identifier: Apache-2.0
// The avx2_vnni GEMM tiles: up to 6 output pixels x 16 channels of a panel per pass (12 ymm
// accumulators, 2 weight vectors and one broadcast of 4 input bytes out of 16 registers), the
// VEX-encoded vpdpbusd of AVX-VNNI (u8 input x s8 weights, exact in s32). Built with AVX2 and
// AVX-VNNI flags: see kernel_set.hpp.
#include "engines/x64/avx2_vnni/kernels.hpp"
#include "engines/x64/ymm_gemm_tile.hpp"

namespace qconv::detail::avx2_vnni {
namespace {

struct Vnni {
  static constexpr int kWidening = 1;
  using Input = __m256i;
  using Weights = __m256i;
  static constexpr int kInputWidening = 1;
  static Input input(const std::uint8_t* p) {
    return _mm256_set1_epi32(static_cast<int>(x64_ymm::load_u32(p)));
  }
  static Input input_tail(const std::uint8_t* p, std::int32_t n) {  // reads nothing past them
    return _mm256_set1_epi32(static_cast<int>(x64_ymm::load_tail(p, n)));
  }
  static Weights weights(const std::int8_t* p) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  }
  static __m256i add(__m256i acc, Input x, Weights w) { return _mm256_dpbusd_avx_epi32(acc, x, w); }
};

}  // namespace

gemm::GemmTileKernel gemm_tile_kernel(int rows, int /*vectors*/) {
  switch (rows) {
    case 1: return &x64_ymm::gemm_tile<Vnni, 1>;
    case 2: return &x64_ymm::gemm_tile<Vnni, 2>;
    case 3: return &x64_ymm::gemm_tile<Vnni, 3>;
    case 4: return &x64_ymm::gemm_tile<Vnni, 4>;
    case 5: return &x64_ymm::gemm_tile<Vnni, 5>;
    default: return &x64_ymm::gemm_tile<Vnni, 6>;
  }
}

}  // namespace qconv::detail::avx2_vnni
