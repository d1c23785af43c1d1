// SPDX-License-Identifier: Apache-2.0
// Planning and running the NCHW depthwise planes (depthwise_planes.hpp).
//
// Slots. An output plane's pixels, in order, are cut greedily into slots of up to 16, a slot
// ending early where one of its entries (kernel row r, kernel columns 4g .. 4g + 3) would read
// input bytes more than 64 apart: at stride 1 a slot runs on across output rows (consecutive
// output pixels read consecutive input bytes, so a 7x7 plane takes 4 slots, not 7), at stride 2
// it stops at a row's end unless the rows are narrow (14x14 to 7x7: two output rows and a bit in
// a slot). Each entry's 64 bytes start at the first input byte a lane reads; its vpermt2b index
// takes lane l's tap k from there, or from the second table (the zero point) where the tap falls
// in the padding, past the kernel's columns (weight 0) or past the slot's pixels. Index vectors
// repeat (every interior slot of a row has the same), so they are stored once each.
#include "engines/x64/avx512_vnni/depthwise_planes.hpp"

#include <array>
#include <map>
#include <sstream>

#include "core/cpu_features.hpp"
#include "core/parallel.hpp"
#include "engines/gemm/stage_view.hpp"

namespace qconv::detail::avx512_vnni {

int weight_parts_needed(const Problem& problem, const CanonicalWeights& weights) {
  std::int32_t lo = 0, hi = 0;
  for (std::int64_t o = 0; o < problem.desc().out_channels; ++o) {
    const std::int32_t zw = problem.weight_zero_point(o);
    for (std::int16_t w : weights.channel(o)) {
      lo = std::min(lo, w - zw);
      hi = std::max(hi, w - zw);
    }
  }
  return (lo >= -128 && hi <= 127) ? 1 : (lo >= -256 && hi <= 254 ? 2 : 3);
}

std::unique_ptr<DepthwisePlanePath> DepthwisePlanePath::plan(const Problem& problem,
                                                             const CanonicalWeights& weights,
                                                             int parts) {
  const auto& d = problem.desc();
  if (problem.transposed() || d.input_layout != Layout::NCHW || d.output_layout != Layout::NCHW) {
    return nullptr;
  }
  if ((host_cpu_features() & kAvx512vbmi) == 0) return nullptr;
  std::unique_ptr<DepthwisePlanePath> path(new DepthwisePlanePath());
  path->flip_ = d.input_dtype == DType::s8;
  path->stride_w_ = d.stride_w;
  path->in_channels_ = d.in_channels;
  path->out_channels_ = d.out_channels;
  path->multiplier_ = d.out_channels / d.in_channels;
  path->in_plane_ = d.in_height * d.in_width;
  path->out_plane_ = problem.out_height() * problem.out_width();
  path->element_ = static_cast<std::int64_t>(element_size(d.output_dtype));
  path->parts_ = parts;
  path->entries_ = static_cast<std::int32_t>(d.kernel_h * ((d.kernel_w + 3) / 4));
  path->in_width_ = static_cast<std::int32_t>(d.in_width);
  path->in_height_ = static_cast<std::int32_t>(d.in_height);
  path->out_width_ = static_cast<std::int32_t>(problem.out_width());
  path->out_height_ = static_cast<std::int32_t>(problem.out_height());
  path->pad_top_ = static_cast<std::int32_t>(d.pad_top);
  if (PlaneStrips::apply(problem)) {
    path->kernel_ =
        depthwise_plane_rows_kernel(d.scheme.kind, d.output_dtype, path->flip_, path->parts_);
    if (path->kernel_ == nullptr) return nullptr;
    path->strips_.plan(problem);
  } else {
    path->kernel_ = depthwise_plane_kernel(d.scheme.kind, d.output_dtype, path->flip_,
                                           path->entries_, path->parts_);
    if (path->kernel_ == nullptr || !path->slots_.plan(problem)) return nullptr;
  }
  pack_plane_weights(problem, weights, 1, path->parts_, path->weights_, path->weight_sums_);
  return path;
}

// Measured against the channels-in-lanes kernels with their transposes (MobileNetV2's and V1's
// 3x3 layers, AMD Zen 5): at stride 2 this path took 0.63-0.95x their time on one thread and
// 0.5-0.9x on two. At stride 1 in slots it took 1.07-1.33x on one thread (their input columns,
// interleaved once, serve three output pixels each) but 0.55-0.9x on two, where the transposes go
// in slabs that gain little from the second core; in rows mode (each input row permuted once for
// three output rows) 0.85x on one thread with 112-pixel rows, 0.89-1.02x with 56, 1.05-1.16x with
// 28, 0.95-1.12x with 14.
bool DepthwisePlanePath::faster_than_transposes(int threads) const {
  return stride_w_ >= 2 || threads > 1 || (!strips_.strips.empty() && out_width_ >= 64);
}

bool PlaneSlots::plan(const Problem& problem) {
  const auto& d = problem.desc();
  const std::int64_t out_w = problem.out_width();
  const std::int64_t groups = (d.kernel_w + 3) / 4;
  const std::int64_t in_plane = d.in_height * d.in_width;
  const std::int64_t out_plane = problem.out_height() * out_w;
  entries = static_cast<std::int32_t>(d.kernel_h * groups);
  slots.clear();
  entries_of_slots.clear();
  patterns.clear();
  // The input byte of output pixel q's tap (r, s) in the plane, or −1 in the padding.
  const auto offset = [&](std::int64_t q, std::int64_t r, std::int64_t s) -> std::int64_t {
    const std::int64_t iy = q / out_w * d.stride_h + r * d.dilation_h - d.pad_top;
    const std::int64_t ix = q % out_w * d.stride_w + s * d.dilation_w - d.pad_left;
    if (iy < 0 || iy >= d.in_height || ix < 0 || ix >= d.in_width) return -1;
    return iy * d.in_width + ix;
  };
  // Per entry, the lowest and highest byte the slot so far reads (lo > hi: none).
  std::vector<std::int64_t> lo(static_cast<std::size_t>(entries)),
      hi(static_cast<std::size_t>(entries));
  const auto add = [&](std::int64_t q, std::vector<std::int64_t>& l, std::vector<std::int64_t>& h) {
    bool fits = true;
    for (std::int64_t e = 0; e < entries; ++e) {
      const std::int64_t r = e / groups, g = e % groups;
      for (std::int64_t s = 4 * g; s < std::min<std::int64_t>(4 * g + 4, d.kernel_w); ++s) {
        const std::int64_t at = offset(q, r, s);
        if (at < 0) continue;
        const auto i = static_cast<std::size_t>(e);
        l[i] = std::min(l[i], at);
        h[i] = std::max(h[i], at);
        fits = fits && h[i] - l[i] < 64;
      }
    }
    return fits;
  };
  std::map<std::array<std::uint8_t, 64>, std::int32_t> seen;
  std::vector<std::int64_t> next_lo, next_hi;
  for (std::int64_t first = 0; first < out_plane;) {
    std::fill(lo.begin(), lo.end(), in_plane);
    std::fill(hi.begin(), hi.end(), -1);
    if (!add(first, lo, hi)) return false;  // one pixel alone reads more than 64 bytes
    std::int64_t count = 1;
    while (count < 16 && first + count < out_plane) {
      next_lo = lo;
      next_hi = hi;
      if (!add(first + count, next_lo, next_hi)) break;
      lo.swap(next_lo);
      hi.swap(next_hi);
      ++count;
    }
    slots.push_back({static_cast<std::int32_t>(first), static_cast<std::int32_t>(count)});
    for (std::int64_t e = 0; e < entries; ++e) {
      const std::int64_t r = e / groups, g = e % groups;
      const auto i = static_cast<std::size_t>(e);
      const bool reads = lo[i] <= hi[i];
      const std::int64_t base = reads ? lo[i] : 0;
      std::array<std::uint8_t, 64> index{};
      index.fill(64);  // the second table's byte 0: the zero point
      for (std::int64_t l = 0; l < count; ++l) {
        for (std::int64_t k = 0; k < 4 && 4 * g + k < d.kernel_w; ++k) {
          const std::int64_t at = offset(first + l, r, 4 * g + k);
          if (at >= 0) {
            index[static_cast<std::size_t>(4 * l + k)] = static_cast<std::uint8_t>(at - base);
          }
        }
      }
      auto [it, inserted] = seen.emplace(index, static_cast<std::int32_t>(patterns.size()));
      if (inserted) patterns.insert(patterns.end(), index.begin(), index.end());
      const std::int64_t inside = reads ? std::min<std::int64_t>(64, in_plane - base) : 0;
      const std::uint64_t mask =
          inside == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << inside) - 1;
      entries_of_slots.push_back({static_cast<std::int32_t>(base), it->second, mask});
    }
    first += count;
  }
  return true;
}

bool PlaneStrips::apply(const Problem& problem) {
  const auto& d = problem.desc();
  return d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 &&
         d.kernel_h == 3 && d.kernel_w <= 4 && problem.out_width() >= 12;
}

// Strip s: output columns [16s, 16s + count). Lane l's tap c reads input column 16s + l + c −
// pad_left of a row, from the strip's 64 bytes at `base` (the first column any lane reads), or the
// zero point (the second table) where that column is padding or c is past the kernel.
void PlaneStrips::plan(const Problem& problem) {
  const auto& d = problem.desc();
  const std::int64_t out_w = problem.out_width();
  strips.clear();
  patterns.clear();
  std::map<std::array<std::uint8_t, 64>, std::int32_t> seen;
  for (std::int64_t first = 0; first < out_w; first += 16) {
    const std::int64_t count = std::min<std::int64_t>(16, out_w - first);
    const std::int64_t lo = std::max<std::int64_t>(0, first - d.pad_left);
    const std::int64_t hi =
        std::min<std::int64_t>(d.in_width - 1, first + count - 1 + d.kernel_w - 1 - d.pad_left);
    const std::int64_t base = lo <= hi ? lo : 0;  // no column read: every tap is padding
    std::array<std::uint8_t, 64> index{};
    index.fill(64);
    for (std::int64_t l = 0; l < count; ++l) {
      for (std::int64_t c = 0; c < d.kernel_w; ++c) {
        const std::int64_t column = first + l + c - d.pad_left;
        if (column >= 0 && column < d.in_width) {
          index[static_cast<std::size_t>(4 * l + c)] = static_cast<std::uint8_t>(column - base);
        }
      }
    }
    auto [it, inserted] = seen.emplace(index, static_cast<std::int32_t>(patterns.size()));
    if (inserted) patterns.insert(patterns.end(), index.begin(), index.end());
    const std::int64_t inside = lo <= hi ? std::min<std::int64_t>(64, d.in_width - base) : 0;
    const std::uint64_t mask = inside == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << inside) - 1;
    strips.push_back({static_cast<std::int32_t>(first), static_cast<std::int32_t>(count),
                      static_cast<std::int32_t>(base), it->second, mask});
  }
}

void pack_plane_weights(const Problem& problem, const CanonicalWeights& weights, int channels,
                        int parts, std::vector<std::int32_t>& words,
                        std::vector<std::int32_t>& sums) {
  const auto& d = problem.desc();
  const std::int64_t groups = (d.kernel_w + 3) / 4, entries = d.kernel_h * groups;
  words.assign(static_cast<std::size_t>(d.out_channels * channels * entries * parts), 0);
  sums.assign(static_cast<std::size_t>(d.out_channels), 0);
  for (std::int64_t o = 0; o < d.out_channels; ++o) {
    const std::int32_t zw = problem.weight_zero_point(o);
    std::uint32_t sum = 0;  // modulo 2^32, as the sums wrap
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t r = 0; r < d.kernel_h; ++r) {
        for (std::int64_t s = 0; s < d.kernel_w; ++s) {
          const std::int32_t v = weights.value(o, c, r, s) - zw;
          sum += static_cast<std::uint32_t>(v);
          const std::int64_t input = (o * channels + c) * entries + r * groups + s / 4;
          for (int k = 0; k < parts; ++k) {
            const auto byte = static_cast<std::uint8_t>(weight_part(v, k));
            auto& word = words[static_cast<std::size_t>(input * parts + k)];
            word = static_cast<std::int32_t>(static_cast<std::uint32_t>(word) |
                                             (std::uint32_t{byte} << (8 * (s % 4))));
          }
        }
      }
    }
    sums[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(sum);
  }
}

void DepthwisePlanePath::run(const RunContext& call, int threads) const {
  const StageView stage = gemm::stage_view(call.stage.vectors());
  DepthwisePlanes p{};
  p.in_plane = in_plane_;
  p.out_plane = out_plane_;
  p.multiplier = multiplier_;
  p.slots = static_cast<std::int32_t>(slots_.slots.size());
  p.slot = slots_.slots.data();
  p.entries = entries_;
  p.entry = slots_.entries_of_slots.data();
  p.patterns = strips_.strips.empty() ? slots_.patterns.data() : strips_.patterns.data();
  p.strips = static_cast<std::int32_t>(strips_.strips.size());
  p.strip = strips_.strips.data();
  p.in_width = in_width_;
  p.in_height = in_height_;
  p.out_width = out_width_;
  p.out_height = out_height_;
  p.pad_top = pad_top_;
  p.parts = parts_;
  p.weights = weights_.data();
  p.weight_sums = weight_sums_.data();
  p.zero_point = call.input_zero_point + (flip_ ? 128 : 0);
  p.stage = &stage;
  const auto* input = static_cast<const std::uint8_t*>(call.input);
  auto* output = static_cast<std::byte*>(call.output);
  // A load reads up to 63 bytes past its plane's end: the input planes that many bytes from the
  // tensor's end, counted across images, are read with masked loads.
  const std::int64_t first_masked = call.batch * in_channels_ - (63 + in_plane_ - 1) / in_plane_;
  // Tasks are (image, output channel) planes; a thread's run of them is cut at images.
  parallel_for(threads, call.batch * out_channels_, [&](std::int64_t begin, std::int64_t end) {
    DepthwisePlanes run = p;
    while (begin < end) {
      const std::int64_t n = begin / out_channels_;
      run.input = input + n * in_channels_ * in_plane_;
      run.output = output + n * out_channels_ * out_plane_ * element_;
      run.first = begin - n * out_channels_;
      run.end = std::min(end - n * out_channels_, out_channels_);
      const std::int64_t masked =
          std::clamp<std::int64_t>(first_masked - n * in_channels_, 0, in_channels_);
      run.masked_from = masked * multiplier_;
      kernel_(run);
      begin = (n + 1) * out_channels_;
    }
  });
}

std::string DepthwisePlanePath::describe() const {
  std::ostringstream out;
  out << " (NCHW planes, no transposes: pixels in lanes, ";
  if (strips_.strips.empty()) {
    out << slots_.slots.size() << " slots of up to 16 output pixels a plane";
  } else {
    out << "rows in " << strips_.strips.size()
        << " strips of up to 16 output columns, each input row permuted once for 3 output rows";
  }
  out << ", vpermt2b"
      << (faster_than_transposes(1) ? ")" : "; on one thread whole-tensor transposes instead)");
  return out.str();
}

}  // namespace qconv::detail::avx512_vnni
