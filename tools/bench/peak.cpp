// SPDX-License-Identifier: Apache-2.0
#include "peak.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace qconv::bench {

namespace {

constexpr double kAssumedMacsPerCycle = 128.0;

#if defined(__x86_64__)
// Independent accumulators: enough to cover the latency (4 to 5 cycles) of two issues a cycle.
constexpr int kChains = 12;
// The zmm loop's (32 registers): on an Intel Xeon of the Sapphire/Emerald Rapids line 12 chains
// ran vpdpbusd zmm at 1.77 a cycle and 10 at 1.52, as if each took 6.6 cycles; 16 ran it at 2.
constexpr int kZmmChains = 16;
constexpr std::int64_t kIterations = 200'000;

double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Operands the compiler cannot see through.
volatile std::int32_t operand_a = 0x01020304;
volatile std::int32_t operand_b = 0x05060708;
volatile std::int32_t sink = 0;

// Each times kIterations x kChains of its instruction (sequence) and returns the seconds taken;
// the sums go to `sink` so that none of the work can be dropped.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double time_vpdpbusd_zmm() {
  const __m512i a = _mm512_set1_epi32(operand_a), b = _mm512_set1_epi32(operand_b);
  __m512i acc[kZmmChains];
  for (auto& v : acc) v = _mm512_setzero_si512();
  const double start = thread_seconds();
  for (std::int64_t i = 0; i < kIterations; ++i) {
#pragma GCC unroll 16
    for (auto& v : acc) v = _mm512_dpbusd_epi32(v, a, b);
  }
  const double seconds = thread_seconds() - start;
  alignas(64) std::int32_t lanes[16];
  for (const auto& v : acc) {
    _mm512_store_si512(lanes, v);
    sink = sink + lanes[0];
  }
  return seconds;
}

__attribute__((target("avx2,avxvnni"))) double time_vpdpbusd_ymm() {
  const __m256i a = _mm256_set1_epi32(operand_a), b = _mm256_set1_epi32(operand_b);
  __m256i acc[kChains];
  for (auto& v : acc) v = _mm256_setzero_si256();
  const double start = thread_seconds();
  for (std::int64_t i = 0; i < kIterations; ++i) {
#pragma GCC unroll 12
    for (auto& v : acc) v = _mm256_dpbusd_avx_epi32(v, a, b);
  }
  const double seconds = thread_seconds() - start;
  for (const auto& v : acc) sink = sink + _mm256_extract_epi32(v, 0);
  return seconds;
}

// AVX2 without VNNI: the products of u8 vectors `a` and `a2` (changed, as far as the compiler
// knows, every iteration: constant operands would make the products loop-invariant) by kWideChains
// s8 vectors, each into its own accumulator (the registers hold 2 x kWideChains + 3 vectors). The
// two products of qconv's sequence take different inputs, as the tile's (x0, x1) and (x2, x3)
// do: with the same operands the compiler computed one product and added it twice, and the
// loop timed half the multiplies it was credited with (11.4 "MACs a cycle" on a Zen 1 core whose
// vpmaddwd ymm issues every other cycle: 8).
constexpr int kWideChains = 6;

// kOneDnn: oneDNN's sequence, vpmaddubsw (u8 x s8 pairs to s16), vpmaddwd by ones (to s32) and
// vpaddd; otherwise qconv's exact one on 16-bit operands (src/engines/x64/avx2/widened_dot.hpp),
// two vpmaddwd and two vpaddd per 4 u8 x s8 products of 8 lanes.
template <bool kOneDnn>
__attribute__((target("avx2"))) double time_avx2_sequence() {
  __m256i a = _mm256_set1_epi32(operand_a), a2 = _mm256_set1_epi32(operand_b);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kWideChains], b[kWideChains];
  for (int c = 0; c < kWideChains; ++c) {
    acc[c] = _mm256_setzero_si256();
    b[c] = _mm256_set1_epi32(operand_b + c);
  }
  const double start = thread_seconds();
  for (std::int64_t i = 0; i < kIterations; ++i) {
    asm volatile("" : "+x"(a), "+x"(a2));
#pragma GCC unroll 6
    for (int c = 0; c < kWideChains; ++c) {
      if constexpr (kOneDnn) {
        acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b[c]), ones));
      } else {
        acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(a, b[c]));
        acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(a2, b[c]));
      }
    }
  }
  const double seconds = thread_seconds() - start;
  for (const auto& v : acc) sink = sink + _mm256_extract_epi32(v, 0);
  return seconds;
}

// The best of tries spread over about 50 ms, in MACs per cycle: each try takes well under a
// millisecond and a pause of 2 ms follows it, so that neither time lost to interrupts nor a slow
// spell of a shared core counts (five tries back to back once all fell in one: 92.9 multiply-adds
// a cycle, where the runs before and after measured 127-135, and layers came out above "peak").
double macs_per_cycle(double (*timed)(), double macs_per_iteration, double clock_ghz) {
  constexpr int kTries = 20;
  double best = 0.0;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    if (attempt > 0) {
      const timespec pause{0, 2'000'000};
      nanosleep(&pause, nullptr);
    }
    const double seconds = timed();
    if (seconds <= 0.0) continue;
    const double macs = macs_per_iteration * static_cast<double>(kIterations);
    best = std::max(best, macs / seconds / (clock_ghz * 1e9));
  }
  return best;
}

// An int8 multiply-add loop: its name, its timing and the MACs of one iteration.
struct Instruction {
  const char* name;
  double (*timed)();
  double macs;
};

// The loops this CPU can run.
std::vector<Instruction> instructions() {
  __builtin_cpu_init();
  std::vector<Instruction> out;
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) {
    out.push_back({"vpdpbusd zmm", &time_vpdpbusd_zmm, 64.0 * kZmmChains});
  }
  if (__builtin_cpu_supports("avxvnni")) {
    out.push_back({"vpdpbusd ymm (AVX-VNNI)", &time_vpdpbusd_ymm, 32.0 * kChains});
  }
  if (__builtin_cpu_supports("avx2")) {
    out.push_back({"vpmaddubsw + vpmaddwd + vpaddd ymm (AVX2)", &time_avx2_sequence<true>,
                   32.0 * kWideChains});
    out.push_back({"2 x (vpmaddwd + vpaddd) ymm on u16 x s16 (AVX2)", &time_avx2_sequence<false>,
                   32.0 * kWideChains});
  }
  return out;
}
#endif

}  // namespace

PeakRate peak_rate(double clock_ghz) {
#if defined(__x86_64__)
  PeakRate best;
  for (const Instruction& instruction : instructions()) {
    if (clock_ghz <= 0.0) break;
    const double rate = macs_per_cycle(instruction.timed, instruction.macs, clock_ghz);
    if (rate > best.macs_per_cycle) best = {rate, std::string(instruction.name) + ", measured"};
  }
  // Outside this range the loops were disturbed or emulated: not trusted.
  if (best.macs_per_cycle >= 1.0 && best.macs_per_cycle <= 1024.0) return best;
#else
  (void)clock_ghz;
#endif
  return {kAssumedMacsPerCycle, "assumed (AVX-512 VNNI: two vpdpbusd zmm a cycle), not measured"};
}

}  // namespace qconv::bench
