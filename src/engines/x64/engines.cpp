// SPDX-License-Identifier: Apache-2.0
// The x86-64 engines: the GEMM planner (src/engines/gemm) on each instruction set's kernels.
#include "engines/engine.hpp"
#include "engines/gemm/gemm_engine.hpp"
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/kernel_set.hpp"

namespace qconv::detail {
namespace {

constexpr CpuFeatures kAvx512Vnni = kAvx512f | kAvx512bw | kAvx512vl | kAvx512dq | kAvx512vnni;

}  // namespace

const Engine& avx512_vnni_engine() {
  static const auto engine =
      gemm::make_engine("avx512_vnni", kAvx512Vnni, avx512_vnni::kernel_set(), false);
  return *engine;
}

// The same kernels with AMX blocks (Intel Sapphire Rapids and later): the tiles multiply 16 x 16 x
// 64 at once, 8 times the multiply-adds per cycle of vpdpbusd.
const Engine& avx512_amx_engine() {
  static const auto engine = gemm::make_engine("avx512_amx", kAvx512Vnni | kAmxTile | kAmxInt8,
                                               avx512_vnni::kernel_set(), true);
  return *engine;
}

// 256-bit vpdpbusd (Intel Alder Lake and later, AMD Zen 5): the VEX encoding of AVX-VNNI. A CPU
// with only the EVEX form (AVX-512 VL + VNNI: Ice Lake, Zen 4) runs the avx512_vnni engine.
const Engine& avx2_vnni_engine() {
  static const auto engine =
      gemm::make_engine("avx2_vnni", kAvx2 | kAvxVnni, avx2_vnni::kernel_set(), false);
  return *engine;
}

// Any x86-64 with AVX2, exact (no saturating vpmaddubsw).
const Engine& avx2_engine() {
  static const auto engine = gemm::make_engine("avx2", kAvx2, avx2::kernel_set(), false);
  return *engine;
}

}  // namespace qconv::detail
