// SPDX-License-Identifier: Apache-2.0
// The sum of each pixel's channel bytes (KernelSet::sum_pixels), for a weight zero point's
// correction zw'·Σx: once per call, where the GEMM tiles otherwise summed every window's widened
// values again for each panel, one by one. Built with AVX2 flags: see kernel_set.hpp.
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/ymm_gemm_tile.hpp"

namespace qconv::detail::avx2 {

void sum_pixels(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                std::int64_t channels, std::int32_t* out) {
  for (std::int64_t i = 0; i < pixels; ++i) {
    // Below 2^31 for any channel count a problem may have (its sums fit in s32).
    out[i] = static_cast<std::int32_t>(x64_ymm::sum_bytes(in + i * pixel_bytes, channels));
  }
}

}  // namespace qconv::detail::avx2
