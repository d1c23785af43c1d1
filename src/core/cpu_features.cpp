// SPDX-License-Identifier: Apache-2.0
#include "core/cpu_features.hpp"

#include <array>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>  // getauxval, and the HWCAP bits
#endif

namespace qconv::detail {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// XCR0: which register states the operating system saves on a context switch.
std::uint64_t read_xcr0() {
  std::uint32_t eax = 0;
  std::uint32_t edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (std::uint64_t{edx} << 32) | eax;
}

CpuFeatures detect() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return 0;
  const unsigned ecx1 = ecx;
  const bool osxsave = (ecx & bit_OSXSAVE) != 0;
  const bool avx = (ecx & bit_AVX) != 0;
  if (!osxsave || !avx) return 0;
  const std::uint64_t xcr0 = read_xcr0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return 0;
  CpuFeatures features = 0;
  if (ymm_saved && (ebx & bit_AVX2) != 0) features |= kAvx2;
  if (ymm_saved && (ecx1 & bit_FMA) != 0) features |= kFma;
  if (zmm_saved && (ebx & bit_AVX512F) != 0) {
    features |= kAvx512f;
    if ((ebx & bit_AVX512BW) != 0) features |= kAvx512bw;
    if ((ecx & bit_AVX512VNNI) != 0) features |= kAvx512vnni;
    if ((ebx & bit_AVX512VL) != 0) features |= kAvx512vl;
    if ((ebx & bit_AVX512DQ) != 0) features |= kAvx512dq;
    if ((ecx & bit_AVX512VBMI) != 0) features |= kAvx512vbmi;
  }
  const bool tiles_saved = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  if (tiles_saved && (edx & (1u << 24)) != 0) {
    features |= kAmxTile;
    if ((edx & (1u << 25)) != 0) features |= kAmxInt8;
  }
  // Leaf 7 subleaf 1 (leaf 7 subleaf 0's eax: the last subleaf): AVX-VNNI in eax bit 4.
  if (ymm_saved && eax >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 &&
      (eax & (1u << 4)) != 0) {
    features |= kAvxVnni;
  }
  return features;
}
#elif defined(__aarch64__) && defined(__linux__)
// Linux reports what the CPU has and the kernel supports (ASIMD is always there on ARMv8 Linux).
CpuFeatures detect() {
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  CpuFeatures features = 0;
  if ((hwcap & HWCAP_ASIMD) == 0) return 0;
  features |= kNeon;
  if ((hwcap & HWCAP_ASIMDDP) != 0) features |= kNeonDot;
  if ((hwcap2 & HWCAP2_I8MM) != 0) features |= kI8mm;
  return features;
}
#else
CpuFeatures detect() { return 0; }
#endif

constexpr std::array<std::pair<CpuFeatures, const char*>, 14> kNames{{
    {kAvx2, "avx2"},
    {kAvx512f, "avx512f"},
    {kAvx512bw, "avx512bw"},
    {kAvx512vnni, "avx512vnni"},
    {kAvx512vl, "avx512vl"},
    {kAvx512dq, "avx512dq"},
    {kAmxTile, "amx-tile"},
    {kAmxInt8, "amx-int8"},
    {kAvxVnni, "avx-vnni"},
    {kFma, "fma"},
    {kAvx512vbmi, "avx512vbmi"},
    {kNeon, "neon"},
    {kNeonDot, "neon-dot"},
    {kI8mm, "i8mm"},
}};

}  // namespace

CpuFeatures host_cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string to_string_features(CpuFeatures features) {
  std::string out;
  for (int bit = 0; bit < 64; ++bit) {
    const CpuFeatures mask = CpuFeatures{1} << bit;
    if ((features & mask) == 0) continue;
    if (!out.empty()) out += ',';
    const char* name = nullptr;
    for (const auto& [value, n] : kNames) {
      if (value == mask) name = n;
    }
    out += name != nullptr ? std::string(name) : "bit" + std::to_string(bit);
  }
  return out.empty() ? "none" : out;
}

}  // namespace qconv::detail
