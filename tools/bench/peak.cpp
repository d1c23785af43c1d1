// SPDX-License-Identifier: Apache-2.0
#include "peak.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <optional>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace qconv::bench {

namespace {

constexpr double kAssumedMacsPerCycle = 128.0;

#if defined(__x86_64__)
// Independent accumulators: enough to cover the latency (4 to 5 cycles) of two issues a cycle.
constexpr int kChains = 12;
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
  __m512i acc[kChains];
  for (auto& v : acc) v = _mm512_setzero_si512();
  const double start = thread_seconds();
  for (std::int64_t i = 0; i < kIterations; ++i) {
#pragma GCC unroll 12
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

// Each chain's accumulator is also its u8 operand: with a constant one the products would be
// loop-invariant, computed once.
__attribute__((target("avx2"))) double time_vpmaddubsw_ymm() {
  const __m256i b = _mm256_set1_epi32(operand_b);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_epi32(operand_a + c);
  const double start = thread_seconds();
  for (std::int64_t i = 0; i < kIterations; ++i) {
#pragma GCC unroll 12
    for (auto& v : acc) {
      v = _mm256_add_epi32(v, _mm256_madd_epi16(_mm256_maddubs_epi16(v, b), ones));
    }
  }
  const double seconds = thread_seconds() - start;
  for (const auto& v : acc) sink = sink + _mm256_extract_epi32(v, 0);
  return seconds;
}

// The best of a few tries (time lost to interrupts discarded), in MACs per cycle.
double macs_per_cycle(double (*timed)(), double macs_per_instruction, double clock_ghz) {
  double best = 0.0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const double seconds = timed();
    if (seconds <= 0.0) continue;
    const double macs = macs_per_instruction * kChains * static_cast<double>(kIterations);
    best = std::max(best, macs / seconds / (clock_ghz * 1e9));
  }
  return best;
}

// The CPU's best int8 multiply-add: its name, its timing loop and its MACs per instruction (or
// per sequence).
struct Instruction {
  const char* name;
  double (*timed)();
  double macs;
};

std::optional<Instruction> best_instruction() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) {
    return Instruction{"vpdpbusd zmm", &time_vpdpbusd_zmm, 64};
  }
  if (__builtin_cpu_supports("avxvnni")) {
    return Instruction{"vpdpbusd ymm (AVX-VNNI)", &time_vpdpbusd_ymm, 32};
  }
  if (__builtin_cpu_supports("avx2")) {
    return Instruction{"vpmaddubsw + vpmaddwd + vpaddd ymm (AVX2)", &time_vpmaddubsw_ymm, 32};
  }
  return std::nullopt;
}
#endif

}  // namespace

PeakRate peak_rate(double clock_ghz) {
#if defined(__x86_64__)
  if (const auto instruction = best_instruction(); instruction && clock_ghz > 0.0) {
    const double rate = macs_per_cycle(instruction->timed, instruction->macs, clock_ghz);
    // Outside this range the loop was disturbed or emulated: not trusted.
    if (rate >= 1.0 && rate <= 1024.0) return {rate, std::string(instruction->name) + ", measured"};
  }
#else
  (void)clock_ghz;
#endif
  return {kAssumedMacsPerCycle, "assumed (AVX-512 VNNI: two vpdpbusd zmm a cycle), not measured"};
}

}  // namespace qconv::bench
