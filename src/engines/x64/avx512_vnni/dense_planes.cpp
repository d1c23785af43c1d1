// SPDX-License-Identifier: Apache-2.0
// Planning and running the dense NCHW planes (dense_planes.hpp). The slots are the depthwise
// planes' (PlaneSlots, depthwise_planes.cpp): every input plane of the layer has the same shape,
// so one slot's entries read the same bytes of each.
#include "engines/x64/avx512_vnni/dense_planes.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/parallel.hpp"
#include "engines/gemm/stage_view.hpp"
#include "engines/x64/avx512_vnni/depthwise_planes.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// Multiply-adds per thread below which a call uses fewer threads: waking a second thread costs
// microseconds (the depthwise path's measured threshold, 320K, rounded down: a slot here does
// more work per byte it reads).
constexpr std::int64_t kMinMacsPerThread = std::int64_t{256} << 10;

class DensePlanesKernel final : public PreparedKernel {
 public:
  DensePlanesKernel(const Problem& problem, std::unique_ptr<PreparedKernel> gemm, PlaneSlots slots,
                    DensePlaneKernel kernel, int parts, bool flip)
      : gemm_(std::move(gemm)),
        slots_(std::move(slots)),
        kernel_(kernel),
        in_channels_(static_cast<std::int32_t>(problem.desc().in_channels)),
        out_channels_(static_cast<std::int32_t>(problem.desc().out_channels)),
        in_plane_(problem.desc().in_height * problem.desc().in_width),
        out_plane_(problem.out_height() * problem.out_width()),
        macs_per_image_(out_plane_ * out_channels_ * in_channels_ * problem.desc().kernel_h *
                        problem.desc().kernel_w),
        element_(static_cast<std::int64_t>(element_size(problem.desc().output_dtype))),
        parts_(parts),
        flip_(flip) {}

  void pack(const Problem& problem, const CanonicalWeights& weights) {
    pack_plane_weights(problem, weights, in_channels_, parts_, weights_, weight_sums_);
  }

  void run(const RunContext& call) const override {
    const StageView stage = gemm::stage_view(call.stage.vectors());
    DensePlanes p{};
    p.in_plane = in_plane_;
    p.out_plane = out_plane_;
    p.in_channels = in_channels_;
    p.out_channels = out_channels_;
    p.slot = slots_.slots.data();
    p.entries = slots_.entries;
    p.entry = slots_.entries_of_slots.data();
    p.patterns = slots_.patterns.data();
    p.parts = parts_;
    p.weights = weights_.data();
    p.weight_sums = weight_sums_.data();
    p.zero_point = call.input_zero_point + (flip_ ? 128 : 0);
    p.stage = &stage;
    const auto* input = static_cast<const std::uint8_t*>(call.input);
    auto* output = static_cast<std::byte*>(call.output);
    const auto slots = static_cast<std::int64_t>(slots_.slots.size());
    const int threads = static_cast<int>(std::clamp<std::int64_t>(
        call.batch * macs_per_image_ / kMinMacsPerThread, 1, call.threads));
    // Tasks are (image, slot): a thread's run of them, cut at images, computes every output
    // channel of its slots, reading their input bytes once.
    parallel_for(threads, call.batch * slots, [&](std::int64_t begin, std::int64_t end) {
      DensePlanes run = p;
      while (begin < end) {
        const std::int64_t n = begin / slots;
        run.input = input + n * in_channels_ * in_plane_;
        run.output = output + n * out_channels_ * out_plane_ * element_;
        run.first_slot = static_cast<std::int32_t>(begin - n * slots);
        run.end_slot = static_cast<std::int32_t>(std::min(end - n * slots, slots));
        kernel_(run);
        begin = (n + 1) * slots;
      }
    });
  }

  std::vector<std::byte> packed() const override { return gemm_->packed(); }
  CanonicalWeights canonical_weights() const override { return gemm_->canonical_weights(); }
  std::vector<std::int64_t> take_abs_weight_sums() override {
    return gemm_->take_abs_weight_sums();
  }

  std::string describe() const override {
    const std::string gemm = gemm_->describe();
    std::ostringstream out;
    out << "avx512_vnni conv_planes_u8s8 (NCHW planes, no transposes: " << in_channels_
        << " input planes, pixels in lanes, " << slots_.slots.size()
        << " slots of up to 16 output pixels a plane, vpermt2b; packed as "
        << gemm.substr(0, gemm.find(" (")) << ")";
    return out.str();
  }

 private:
  std::unique_ptr<PreparedKernel> gemm_;  // its packed form is this kernel's
  PlaneSlots slots_;
  DensePlaneKernel kernel_;
  std::int32_t in_channels_, out_channels_;
  std::int64_t in_plane_, out_plane_, macs_per_image_, element_;
  std::int32_t parts_;
  bool flip_;
  std::vector<std::int32_t> weights_;      // [output channel][input channel][entry][part]
  std::vector<std::int32_t> weight_sums_;  // per output channel: Σ(w − zw)
};

}  // namespace

std::unique_ptr<PreparedKernel> with_dense_planes(const Problem& problem,
                                                  const CanonicalWeights& weights,
                                                  std::unique_ptr<PreparedKernel> gemm) {
  const auto& d = problem.desc();
  if (problem.transposed() || d.groups != 1 || d.in_channels > 4) return gemm;
  // A narrower kernel row leaves most bytes of each vpdpbusd empty (one tap a dword for 1x1),
  // where the GEMM paths put several channels' taps in it.
  if (d.kernel_w < 3) return gemm;
  if (d.input_layout != Layout::NCHW || d.output_layout != Layout::NCHW) return gemm;
  if ((host_cpu_features() & kAvx512vbmi) == 0) return gemm;
  const bool flip = d.input_dtype == DType::s8;
  const int parts = weight_parts_needed(problem, weights);
  const auto channels = static_cast<int>(d.in_channels);
  const auto entries = static_cast<int>(d.kernel_h * ((d.kernel_w + 3) / 4));
  const DensePlaneKernel kernel =
      dense_plane_kernel(d.scheme.kind, d.output_dtype, flip, channels, entries, parts);
  PlaneSlots slots;
  if (kernel == nullptr || !slots.plan(problem)) return gemm;
  auto planes = std::make_unique<DensePlanesKernel>(problem, std::move(gemm), std::move(slots),
                                                    kernel, parts, flip);
  planes->pack(problem, weights);
  return planes;
}

}  // namespace qconv::detail::avx512_vnni
