// SPDX-License-Identifier: Apache-2.0
// The CPU features the engines' kernels may need, detected once with cpuid. A prepared-weights
// file records the features its packed form was made for, as this bitmask.
#pragma once

#include <cstdint>
#include <string>

namespace qconv::detail {

using CpuFeatures = std::uint64_t;

// Bit values are part of the prepared-weights file format: never renumber them. Bits 0-31 hold
// x86 features, bits 32-63 are reserved for ARM features (NEON dot product, I8MM, SVE, ...), so
// that neither architecture's additions can collide with the other's.
inline constexpr CpuFeatures kX86FeatureBits = 0x00000000ffffffffull;
inline constexpr CpuFeatures kArmFeatureBits = 0xffffffff00000000ull;

enum CpuFeature : CpuFeatures {
  kAvx2 = 1u << 0,
  kAvx512f = 1u << 1,
  kAvx512bw = 1u << 2,
  kAvx512vnni = 1u << 3,
  kAvx512vl = 1u << 4,
  kAvx512dq = 1u << 5,
  kAmxTile = 1u << 6,  // AMX tiles (the OS saves their state; Linux also asks a process to
  kAmxInt8 = 1u << 7,  // request it: see the AMX kernels)
  kAvxVnni = 1u << 8,  // 256-bit vpdpbusd, VEX-encoded (cpuid 7.1 eax bit 4)
  kFma = 1u << 9,
  kAvx512vbmi = 1u << 10,  // byte permutes across the whole vector (vpermb, vpermt2b)
};

// ARM features (Linux's HWCAP bits): Advanced SIMD, its dot product (ARMv8.2 sdot/udot) and the
// int8 matrix multiply (ARMv8.6 I8MM: usdot, smmla). Named on every architecture, so that a file
// packed on ARM says what it needs wherever it is loaded.
enum ArmCpuFeature : CpuFeatures {
  kNeon = 1ull << 32,
  kNeonDot = 1ull << 33,
  kI8mm = 1ull << 34,
};
inline constexpr CpuFeatures kKnownArmCpuFeatures = kNeon | kNeonDot | kI8mm;

// Every bit this library knows; a file naming any other bit was written by a newer library.
inline constexpr CpuFeatures kKnownCpuFeatures =
    kAvx2 | kAvx512f | kAvx512bw | kAvx512vnni | kAvx512vl | kAvx512dq | kAmxTile | kAmxInt8 |
    kAvxVnni | kFma | kAvx512vbmi | kKnownArmCpuFeatures;

// The features of the CPU this process runs on, usable by user code: the instruction set is
// present (cpuid) and the operating system saves the registers it needs (xgetbv); on ARM, what
// the kernel reports in AT_HWCAP and AT_HWCAP2.
CpuFeatures host_cpu_features();

// "avx2,avx512f" (known bits by name, unknown ones as "bit<N>"); "none" when empty.
std::string to_string_features(CpuFeatures features);

}  // namespace qconv::detail
