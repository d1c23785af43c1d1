// SPDX-License-Identifier: Apache-2.0
// The int8 multiply-add peak the share of peak is computed with: measured on the machine at hand,
// with the best int8 instruction (sequence) its CPU has, so that the share means the same on an
// AVX-512 VNNI core and on one with AVX2 alone.
#pragma once

#include <string>

namespace qconv::bench {

struct PeakRate {
  double macs_per_cycle = 0.0;  // per core, at the bench's core clock
  std::string how;              // e.g. "vpdpbusd zmm, measured"
};

// On x86-64: the fastest of the int8 multiply-add loops the CPU runs — independent chains of
// vpdpbusd zmm (AVX-512 VNNI: 64 MACs each), vpdpbusd ymm (AVX-VNNI: 32), and with AVX2
// vpmaddubsw + vpmaddwd + vpaddd (oneDNN's sequence there: 32) or two vpmaddwd + vpaddd on 16-bit
// operands (qconv's exact one: 32) — the best of a few timed tries, in MACs per cycle of
// `clock_ghz`. Elsewhere, or where the measurement is implausible, 128 MACs per cycle (AVX-512
// VNNI's two vpdpbusd zmm a cycle) as an assumption, said so in `how`.
PeakRate peak_rate(double clock_ghz);

}  // namespace qconv::bench
