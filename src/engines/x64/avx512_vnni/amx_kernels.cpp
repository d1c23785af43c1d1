// SPDX-License-Identifier: Apache-2.0
// The AMX blocks: 2 x 2 tiles of 16 pixels x 16 channels accumulated with tdpbusd (16 x 16 x 64
// multiply-adds each, or x 32 with 32-byte chunks), two passes for a 64-channel panel. Built with
// AMX and AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
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
// input rows (a chunk of 64 or 32 bytes of channels each); tmm6, 7: weights of the two
// 16-channel vectors (a K step of 16 lanes x 4 bytes per row, chunk / 4 rows). The configuration
// depends on the number of rows and the chunk only; a thread keeps the one it loaded last.
TileConfig config_for(int rows, int chunk) {
  TileConfig c;
  const int first = rows < 16 ? rows : 16;
  const int second = rows > 16 ? rows - 16 : 0;
  const int tile_rows[8] = {first, first, second, second, first, second, chunk / 4, chunk / 4};
  const int row_bytes[8] = {64, 64, 64, 64, chunk, chunk, 64, 64};
  for (int i = 0; i < 8; ++i) {
    c.bytes_per_row[i] = static_cast<std::uint16_t>(tile_rows[i] > 0 ? row_bytes[i] : 0);
    c.rows[i] = static_cast<std::uint8_t>(tile_rows[i]);
  }
  return c;
}

// The configuration this thread loaded: rows * 128 + chunk bytes (0: none).
thread_local int loaded_config = 0;

// 32 lanes of the panel (half 0 or 1), or with kTwoVectors false its last 16: tmm1, 3 and 7 idle.
template <bool kTwoBlocks, bool kTwoVectors>
void run_half(const AmxBlock& b, int half) {
  // The sums start at 0 (the constant term goes to b.terms).
  _tile_zero(0);
  if constexpr (kTwoVectors) _tile_zero(1);
  if constexpr (kTwoBlocks) {
    _tile_zero(2);
    if constexpr (kTwoVectors) _tile_zero(3);
  }
  const std::int64_t second = 16 * b.row_stride;
  // A K step of the panel: its lanes x 4 bytes (256 for a full panel).
  const std::int64_t step = std::int64_t{b.vectors} * 64;
  const std::int64_t chunk_steps = b.chunk_bytes / 4;  // K steps (B tile rows) per chunk
  for (std::int32_t tap = 0; tap < b.taps; ++tap) {
    const std::uint8_t* a = b.input + (b.first_row + b.tap_offsets[tap]);
    const std::int8_t* w = b.weights + b.tap_steps[tap] * step + half * 128;
    for (std::int32_t k = 0; k < b.chunks; ++k) {
      _tile_loadd(4, a + b.chunk_bytes * k, b.row_stride);
      _tile_loadd(6, w + k * chunk_steps * step, step);
      if constexpr (kTwoVectors) _tile_loadd(7, w + k * chunk_steps * step + 64, step);
      _tile_dpbusd(0, 4, 6);
      if constexpr (kTwoVectors) _tile_dpbusd(1, 4, 7);
      if constexpr (kTwoBlocks) {
        _tile_loadd(5, a + second + b.chunk_bytes * k, b.row_stride);
        _tile_dpbusd(2, 5, 6);
        if constexpr (kTwoVectors) _tile_dpbusd(3, 5, 7);
      }
    }
  }
  _tile_stored(0, b.acc + 32 * half, 256);
  if constexpr (kTwoVectors) _tile_stored(1, b.acc + 32 * half + 16, 256);
  if constexpr (kTwoBlocks) {
    _tile_stored(2, b.acc + 16 * 64 + 32 * half, 256);
    if constexpr (kTwoVectors) _tile_stored(3, b.acc + 16 * 64 + 32 * half + 16, 256);
  }
}

template <bool kTwoBlocks>
void run_halves(const AmxBlock& b) {
  for (int half = 0; 2 * half < b.vectors; ++half) {
    if (b.vectors - 2 * half >= 2) {
      run_half<kTwoBlocks, true>(b, half);
    } else {
      run_half<kTwoBlocks, false>(b, half);
    }
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

void amx_begin() { loaded_config = 0; }

void amx_end() {
  if (loaded_config != 0) _tile_release();
  loaded_config = 0;
}

void amx_block(const AmxBlock& b) {
  if (b.rows * 128 + b.chunk_bytes != loaded_config) {
    const TileConfig config = config_for(b.rows, b.chunk_bytes);
    _tile_loadconfig(&config);
    loaded_config = b.rows * 128 + b.chunk_bytes;
  }
  if (b.zero_point_sums != nullptr) {  // −zx·Σ(w' − zw'), for the output stage
    const __m512i zx = _mm512_set1_epi32(b.input_zero_point);
    for (int j = 0; j < b.vectors; ++j) {
      _mm512_storeu_si512(
          b.terms + 16 * j,
          _mm512_sub_epi32(_mm512_setzero_si512(),
                           _mm512_mullo_epi32(zx, _mm512_loadu_si512(b.zero_point_sums + 16 * j))));
    }
  }
  if (b.rows > 16) {
    run_halves<true>(b);
  } else {
    run_halves<false>(b);
  }
}

}  // namespace qconv::detail::avx512_vnni
