// SPDX-License-Identifier: Apache-2.0
// The x86-64 engines: the GEMM planner (src/engines/gemm) on each instruction set's kernels; the
// AVX-512 ones run depthwise problems on their own kernel (avx512_vnni/depthwise_plan.cpp), and
// first layers with NCHW tensors on their planes (avx512_vnni/dense_planes.cpp).
#include <utility>

#include "engines/engine.hpp"
#include "engines/gemm/gemm_engine.hpp"
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/dense_planes.hpp"
#include "engines/x64/avx512_vnni/depthwise_plan.hpp"
#include "engines/x64/avx512_vnni/kernel_set.hpp"

namespace qconv::detail {
namespace {

constexpr CpuFeatures kAvx512Vnni = kAvx512f | kAvx512bw | kAvx512vl | kAvx512dq | kAvx512vnni;

// A GEMM engine whose depthwise problems (those avx512_vnni::depthwise_takes) run on the AVX-512
// depthwise kernel, four taps per vpdpbusd, and, with `dense_planes`, whose first layers with NCHW
// tensors run on their planes (avx512_vnni::with_dense_planes, around the GEMM engine's kernel);
// everything else is the GEMM engine's. The packed form is the canonical weights for all of them,
// so files and packing_version() are the GEMM engine's.
class WithDepthwise final : public Engine {
 public:
  WithDepthwise(std::unique_ptr<Engine> gemm, bool dense_planes)
      : gemm_(std::move(gemm)), dense_planes_(dense_planes) {}

  std::string_view name() const override { return gemm_->name(); }
  std::string unsupported_reason(const Problem& problem) const override {
    if (!avx512_vnni::depthwise_takes(problem)) return gemm_->unsupported_reason(problem);
    const CpuFeatures missing = required_cpu_features() & ~host_cpu_features();
    if (missing != 0) return "this CPU lacks " + to_string_features(missing);
    return {};
  }
  std::unique_ptr<PreparedKernel> prepare(const Problem& problem,
                                          const CanonicalWeights& weights) const override {
    if (!avx512_vnni::depthwise_takes(problem)) {
      std::unique_ptr<PreparedKernel> gemm = gemm_->prepare(problem, weights);
      if (!dense_planes_) return gemm;
      return avx512_vnni::with_dense_planes(problem, weights, std::move(gemm));
    }
    return avx512_vnni::make_depthwise_kernel(problem, weights);
  }
  std::unique_ptr<PreparedKernel> unpack(const Problem& problem,
                                         std::span<const std::byte> packed) const override {
    if (!avx512_vnni::depthwise_takes(problem)) {
      std::unique_ptr<PreparedKernel> gemm = gemm_->unpack(problem, packed);
      if (!dense_planes_) return gemm;
      const CanonicalWeights weights = gemm->canonical_weights();
      return avx512_vnni::with_dense_planes(problem, weights, std::move(gemm));
    }
    // As the GEMM engine: the canonical weights, checked for size, packed again.
    return avx512_vnni::make_depthwise_kernel(
        problem, CanonicalWeights::from_bytes(problem, packed, "packed_weights"));
  }
  CpuFeatures required_cpu_features() const override { return gemm_->required_cpu_features(); }
  std::uint32_t packing_version() const override { return gemm_->packing_version(); }

 private:
  std::unique_ptr<Engine> gemm_;
  bool dense_planes_;
};

}  // namespace

const Engine& avx512_vnni_engine() {
  static const WithDepthwise engine(
      gemm::make_engine("avx512_vnni", kAvx512Vnni, avx512_vnni::kernel_set(), false), true);
  return engine;
}

// The same kernels with AMX blocks (Intel Sapphire Rapids and later): the tiles multiply 16 x 16 x
// 64 at once, 8 times the multiply-adds per cycle of vpdpbusd. First layers stay on them with NCHW
// tensors too (the planes' vpdpbusd were measured only against the vpdpbusd tiles).
const Engine& avx512_amx_engine() {
  static const WithDepthwise engine(
      gemm::make_engine("avx512_amx", kAvx512Vnni | kAmxTile | kAmxInt8, avx512_vnni::kernel_set(),
                        true),
      false);
  return engine;
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
