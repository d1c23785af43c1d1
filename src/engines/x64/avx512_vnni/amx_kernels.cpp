// SPDX-License-Identifier: Apache-2.0
// The AMX blocks: 2 x 2 tiles of 16 pixels x 16 channels accumulated with tdpbusd (16 x 16 x 64
// multiply-adds each), two passes for a 64-channel panel. Built with AMX and AVX-512 flags: see
// kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

struct TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

// tmm0..3: sums (rows 0-15 and 16-(rows-1), channels +0 and +16 of the half panel); tmm4, 5:
// input rows (64 bytes of channels each); tmm6, 7: weights of the two 16-channel vectors. The
// configuration depends on the number of rows only; a thread keeps the one it loaded last.
TileConfig config_for(int rows) {
  TileConfig c;
  const int first = rows < 16 ? rows : 16;
  const int second = rows > 16 ? rows - 16 : 0;
  const int tile_rows[8] = {first, first, second, second, first, second, 16, 16};
  for (int i = 0; i < 8; ++i) {
    c.bytes_per_row[i] = tile_rows[i] > 0 ? 64 : 0;
    c.rows[i] = static_cast<std::uint8_t>(tile_rows[i]);
  }
  return c;
}

thread_local int loaded_rows = 0;  // the configuration this thread loaded (0: none)

inline std::int64_t window_sum(const std::uint8_t* p, std::int32_t count) {
  __m512i sums = _mm512_setzero_si512();
  for (std::int32_t c = 0; c < count; c += 64) {
    sums =
        _mm512_add_epi64(sums, _mm512_sad_epu8(_mm512_loadu_si512(p + c), _mm512_setzero_si512()));
  }
  return _mm512_reduce_add_epi64(sums);
}

template <bool kTwoBlocks>
void run_half(const AmxBlock& b, int half, const std::int32_t* init) {
  // Start each sum at −zx·Σ(w' − zw'): 16 rows of one 16-channel vector (stride 0).
  _tile_loadd(0, init + 32 * half, 0);
  _tile_loadd(1, init + 32 * half + 16, 0);
  if constexpr (kTwoBlocks) {
    _tile_loadd(2, init + 32 * half, 0);
    _tile_loadd(3, init + 32 * half + 16, 0);
  }
  const std::int64_t second = 16 * b.row_stride;
  // A K step of the panel: its lanes x 4 bytes (256 for a full panel, 128 for one of 32 lanes).
  const std::int64_t step = b.vectors == 2 ? 128 : 256;
  for (std::int32_t tap = 0; tap < b.taps; ++tap) {
    const std::uint8_t* a = b.input + (b.first_row + b.tap_offsets[tap]);
    const std::int8_t* w = b.weights + b.tap_steps[tap] * step + half * 128;
    for (std::int32_t k = 0; k < b.chunks; ++k) {
      _tile_loadd(4, a + 64 * k, b.row_stride);
      _tile_loadd(6, w + k * 16 * step, step);
      _tile_loadd(7, w + k * 16 * step + 64, step);
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      if constexpr (kTwoBlocks) {
        _tile_loadd(5, a + second + 64 * k, b.row_stride);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
      }
    }
  }
  _tile_stored(0, b.acc + 32 * half, 256);
  _tile_stored(1, b.acc + 32 * half + 16, 256);
  if constexpr (kTwoBlocks) {
    _tile_stored(2, b.acc + 16 * 64 + 32 * half, 256);
    _tile_stored(3, b.acc + 16 * 64 + 32 * half + 16, 256);
  }
}

}  // namespace

bool amx_available() {
#if defined(__linux__)
  constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
  static const bool granted = syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  return granted;
#else
  return false;
#endif
}

void amx_begin() { loaded_rows = 0; }

void amx_end() {
  if (loaded_rows != 0) _tile_release();
  loaded_rows = 0;
}

void amx_block(const AmxBlock& b) {
  if (b.rows != loaded_rows) {
    const TileConfig config = config_for(b.rows);
    _tile_loadconfig(&config);
    loaded_rows = b.rows;
  }
  alignas(64) std::int32_t init[64];
  const __m512i zx = _mm512_set1_epi32(b.input_zero_point);
  for (int j = 0; j < 4; ++j) {
    const __m512i v =
        b.zero_point_sums != nullptr
            ? _mm512_sub_epi32(
                  _mm512_setzero_si512(),
                  _mm512_mullo_epi32(zx, _mm512_loadu_si512(b.zero_point_sums + 16 * j)))
            : _mm512_setzero_si512();
    _mm512_store_si512(init + 16 * j, v);
  }
  for (int half = 0; half < (b.vectors == 2 ? 1 : 2); ++half) {
    if (b.rows > 16) {
      run_half<true>(b, half, init);
    } else {
      run_half<false>(b, half, init);
    }
  }
  if (b.window_sums == nullptr) return;
  for (std::int32_t i = 0; i < b.rows; ++i) {
    std::int64_t total = 0;
    for (std::int32_t tap = 0; tap < b.taps; ++tap) {
      total += window_sum(b.input + (b.first_row + b.tap_offsets[tap] + i * b.row_stride),
                          64 * b.chunks);
    }
    b.window_sums[i] = static_cast<std::int32_t>(total);
  }
}

}  // namespace qconv::detail::avx512_vnni
