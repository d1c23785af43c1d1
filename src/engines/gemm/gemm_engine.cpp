// SPDX-License-Identifier: Apache-2.0
// The GEMM engines (avx512_amx, avx512_vnni, avx2_vnni, avx2, and any ISA plugged in through a
// KernelSet: kernel_set.hpp): convolution and transposed convolution as a GEMM over output pixels —
// register tiles of up to max_rows pixels x a 64-channel panel, AMX blocks of up to 32 pixels,
// depthwise tiles with channels in lanes, the output stage in vector lanes, all of them the kernel
// set's; the per-call copies of the input (activation_copies.cpp). This file plans and packs at
// preparation and walks the tiles at run time; it is built for the baseline ISA, knows no ISA, and
// calls the kernels only on a CPU that has them.
//
// The arithmetic. vpdpbusd (and tdpbusd) multiply u8 by s8; sdot s8 by s8. The input is of the
// kernel set's signedness (an input of the other kind is read from a copy as x ± 128, its zero
// point ± 128 with it), and the weights are packed as s8 w' (u8 weights as w − 128; otherwise
// w' = w). With zw' = zw − (w − w') the exact sum of SPEC §3 is
//     Σ (x − zx)(w − zw) = P − zw'[o]·Σx − zx·Σ(w' − zw'[o]),    P = Σ x·w',
// every sum over the same valid taps, all of it exact modulo 2^32 (the s32 wrap the reference
// applies). Σx (the window sum of a pixel) is needed only when some zw' ≠ 0 and comes from the
// same tile pass; Σ(w' − zw') depends only on which taps are valid, so it is precomputed per
// padding pattern and starts the accumulators. A padded tap is skipped, never multiplied — except
// where a copy of the input holds the zero point in the padding (AMX, transposed) or a pixel tile
// points the tap at a row of zero-point bytes (narrow outputs: run_pixels), which adds
// (zx − zx)·w = 0 once corrected and keeps every tap valid. Groups narrower than a panel share one
// (grouped tiles: each lane reads its own group's input). Depthwise tiles compute (x − zx)(w − zw)
// directly.
#include "engines/gemm/gemm_engine.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "core/aligned.hpp"
#include "core/parallel.hpp"
#include "core/worker_scratch.hpp"
#include "engines/engine.hpp"
#include "engines/gemm/activation_copies.hpp"
#include "engines/gemm/axis_taps.hpp"
#include "engines/gemm/derived_stage.hpp"
#include "engines/gemm/interleaved_rows.hpp"
#include "engines/gemm/kernel_set.hpp"
#include "engines/gemm/merged_groups.hpp"
#include "engines/gemm/nchw_depthwise_plan.hpp"
#include "engines/gemm/nchw_flat_plan.hpp"
#include "engines/gemm/panel_packing.hpp"
#include "engines/gemm/stage_view.hpp"
#include "engines/gemm/weight_symmetry.hpp"
#include "engines/layout_transpose.hpp"
#include "output/rounding.hpp"

namespace qconv::detail::gemm {
namespace {
// Below this many input channels a tap is too short to keep the tile busy: gather each output
// pixel's whole window into one row (im2col of a tile, K padded to 4) instead.
constexpr std::int64_t kIm2colBelowChannels = 8;
// Precomputed Σ(w' − zw') per padding pattern: refuse a geometry that would need more than this.
constexpr std::int64_t kMaxPatternEntries = std::int64_t{1} << 24;
constexpr std::int64_t kMaxPatternWork = std::int64_t{1} << 28;
// Outputs taller or wider than this run on the reference engine (see unsupported_reason).
constexpr std::int64_t kMaxOutputExtent = std::int64_t{1} << 20;
// AMX blocks: up to 32 pixels (two 16-row tiles), and none below this many.
constexpr int kMaxAmxBlock = 32;
constexpr int kMinAmxRows = 4;
// Groups with fewer output channels than this share panels (grouped tiles).
constexpr std::int64_t kGroupedTileBelow = 64;
// Outputs up to this wide run in pixel tiles (plan_patterns) where a tile has at least
// kMinPixelTileSteps K steps.
constexpr std::int64_t kMaxPixelTileWidth = 32;
constexpr std::int64_t kMinPixelTileSteps = 32;
// Output pixels per task of a 1x1 stride-1 layer run as one flat GEMM, in register tiles.
constexpr std::int64_t kFlatChunkTiles = 16;
// Multiply-adds a thread needs before a layer whose panels are fewer than the threads cuts its
// pixel tiles into more chunks than kFlatChunkTiles asks for, so that every thread has some: in one
// chunk, late layers of 64 channels or fewer ran on one thread of two (an AMD Zen 4: a 3x3 64->64
// at 7x7 8.3 us at both thread counts, 5.4 us split; 128->40 at 9x9 20.1 -> 10.8 us; 0.64-0.86x
// oneDNN's two-thread time before, 1.14-1.27x after).
constexpr std::int64_t kMinSplitMacs = std::int64_t{256} << 10;
// Below this many tasks a thread, pixel tiles are cut into a multiple of the threads' count of
// tasks (beyond it the last uneven task is a small part of a thread's work).
constexpr std::int64_t kMaxBalancedTasks = 4;
// Full panels (4 vectors) run as flat runs (KernelSet::flat_run) below this K only: a flat run's
// tile is shorter than the GEMM tile (its output stage needs registers), which costs more than the
// fixed costs it saves once K is long. ResNet-50's 1x1 layers on an AMD Zen 5, flat runs against
// GEMM tiles at one thread / two: K = 64 3-20 % faster; K = 256 1-3 % / 8-14 % faster; K = 512
// 0-9 % / 5-12 % faster (the runs' longer tasks split the layer more evenly); K = 1024 4-6 %
// slower / even. Narrower panels gain at any K (the GEMM tile stays 6 pixels high).
constexpr std::int64_t kFlatRunFullPanelBelowK = 1024;
// Output pixels per task of a layer with flat runs: one call each, so longer than the tiles' (the
// call's fixed costs, 1-5 % of 96 pixels of a 16-channel layer), and short enough that 2 threads
// still share a 28x28 layer evenly.
constexpr std::int64_t kFlatRunChunk = 192;

// Calls tile(first, rows) for [begin, end) cut into as few tiles of at most max_rows as there can
// be, their lengths differing by one at most (49 pixels at 6: 5s and 6s, not eight 6s and a 1,
// whose few accumulators wait on vpdpbusd's latency and which streams a panel's weights for one
// pixel).
template <class Tile>
void even_tiles(std::int64_t begin, std::int64_t end, int max_rows, const Tile& tile) {
  const std::int64_t n = end - begin;
  if (n <= 0) return;
  const std::int64_t tiles = (n + max_rows - 1) / max_rows;
  for (std::int64_t t = 0, at = begin; t < tiles; ++t) {
    const auto rows = static_cast<int>(n / tiles + (t < n % tiles ? 1 : 0));
    tile(at, rows);
    at += rows;
  }
}

// Tiles covering [begin, end): with AMX, blocks of up to 32 pixels, as even as possible (56 →
// 28,28: a thread reloads the tile configuration whenever the block height changes, which cost
// 6 % of a 56-wide layer split 32,24); otherwise tiles of at most max_rows pixels, as even as
// possible too (26 → 6,5,5,5,5).
void split_tiles(std::int64_t begin, std::int64_t end, bool amx, int max_rows,
                 std::vector<std::pair<std::int64_t, int>>& out) {
  if (amx && end - begin >= kMinAmxRows) {  // every block then has at least kMinAmxRows
    const std::int64_t n = end - begin;
    const std::int64_t blocks = (n + kMaxAmxBlock - 1) / kMaxAmxBlock;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const auto rows = static_cast<int>(n / blocks + (b < n % blocks ? 1 : 0));
      out.emplace_back(begin, rows);
      begin += rows;
    }
    return;
  }
  even_tiles(begin, end, max_rows, [&](std::int64_t at, int rows) { out.emplace_back(at, rows); });
}

enum class Path : std::uint8_t { flat, rows, im2col };

// A flat run's kernel rows (FlatRun::kernel_rows): their count and the bytes from one to the next
// (as in the unwidened input).
struct KernelRows {
  std::int32_t count = 1;
  std::int64_t row_bytes = 0;
};

class GemmKernel final : public PreparedKernel {
 public:
  // `amx`: run blocks of 16 and 32 pixels on AMX tiles where the problem allows (a u8 input whose
  // channels are a multiple of 64, full panels), register tiles elsewhere.
  GemmKernel(const Problem& problem, const CanonicalWeights& weights, const KernelSet& kernels,
             bool amx)
      : kernels_(kernels), max_rows_(kernels.max_rows), problem_(problem) {
    const auto& d = problem.desc();
    channels_ = d.in_channels;
    pixel_bytes_ = channels_;
    groups_ = d.groups;
    group_in_ = d.in_channels / d.groups;
    group_out_ = d.out_channels / d.groups;
    panels_per_group_ = (group_out_ + kPanelWidth - 1) / kPanelWidth;
    out_channels_ = d.out_channels;
    // An input of the other signedness than the kernels take is read from a copy as x ± 128 (an
    // xor of the sign bit; the zero point ± 128 with it): the sum (x − zx)(w − zw) is the same.
    flip_input_ = d.input_dtype != (kernels.u8_input ? DType::u8 : DType::s8);
    out_h_ = problem.out_height();
    out_w_ = problem.out_width();
    const bool one_by_one = d.kernel_h == 1 && d.kernel_w == 1;
    const bool strided = d.stride_h != 1 || d.stride_w != 1;
    // Depthwise (multiplier 1): channels in lanes, the kernel set's depthwise tile (the AVX-512
    // engines have a kernel of their own instead: avx512_vnni/depthwise_plan.cpp).
    depthwise_ = depthwise(problem);
    // Depthwise tiles through the output stage take longer runs of pixels where their kernel set
    // says so (a 4-pixel tile's calls and set-up took 8 % of a MobileNet depthwise layer).
    if (depthwise_ && kernels.depthwise_output_rows > max_rows_ &&
        kernels.depthwise_output_tile != nullptr &&
        kernels.depthwise_output_tile(d.scheme.kind, d.output_dtype) != nullptr) {
      max_rows_ = kernels.depthwise_output_rows;
    }
    // A transposed convolution runs as the convolution of its zero-inserted input with the
    // flipped kernel. With stride 1 that is a convolution of the input itself (flipped_convolution:
    // its padding taps skipped as any convolution's), or, where the padding exceeds the kernel's
    // span, one of the input placed into scratch, the padding holding zx (which adds
    // (zx − zx)·w = 0). With a larger stride each output phase lists only the taps that land on
    // input pixels (axis_taps.hpp), and the tiles read the input itself: no zero is inserted or
    // multiplied.
    transposed_ = problem.transposed();
    phased_ = phased(problem);
    placed_ = transposed_ && !phased_ && !flipped_convolution(problem);
    stride_h_ = transposed_ ? 1 : d.stride_h;
    stride_w_ = transposed_ ? 1 : d.stride_w;
    // AMX blocks take a weight zero point's window sums from sum_pixels (kernel_set.hpp).
    const bool amx_kernels = amx && kernels.amx_block != nullptr && kernels.sum_pixels != nullptr;
    if (depthwise_ || transposed_) {
      path_ = Path::rows;
    } else if (one_by_one && d.pad_top == 0 && d.pad_bottom == 0 && d.pad_left == 0 &&
               d.pad_right == 0) {
      path_ = Path::flat;
    } else if (channels_ < kIm2colBelowChannels && !one_by_one && d.groups == 1) {
      path_ = Path::im2col;
    } else if (!one_by_one && d.groups == 1 && !amx_kernels &&
               kernel_rows_beat_taps(problem, kernels)) {
      path_ = Path::im2col;  // as kernel-row runs (kernel_row_runs())
    } else {
      path_ = Path::rows;
    }
    // Bytes a tap reads per row: one pixel's channels, or (im2col) a whole window.
    tap_bytes_ = path_ == Path::im2col ? channels_ * d.kernel_h * d.kernel_w : group_in_;
    // AMX takes a u8 input, 64 or 32 bytes of a tap's channels per tile load (amx_chunk), at
    // about the same cost either way (a 160-channel layer ran faster as 3 chunks of 64 than as 5
    // of 32). Channels that are a multiple of 32 run in 32-byte chunks where a copy would cost
    // more than it saves: below 64, or with few output channels (96 -> 24 at 56x56). Otherwise an
    // ungrouped layer of 64 channels or more that are not a multiple of 64 runs on a copy whose
    // pixels are padded with zeros to the next multiple (at most 1.5 times the bytes: 96, 144,
    // 160 channels...), their weights being zero there too.
    const bool chunks_of_32 = channels_ % 32 == 0 && (channels_ < 64 || d.out_channels <= 128);
    channel_padded_ = amx_kernels && path_ != Path::im2col && d.groups == 1 && !depthwise_ &&
                      channels_ >= 64 && channels_ % 64 != 0 && !chunks_of_32 &&
                      2 * round_up(channels_, 64) <= 3 * channels_;
    if (channel_padded_) {
      pixel_bytes_ = round_up(channels_, 64);
      tap_bytes_ = pixel_bytes_;
    }
    // A layer without padding whose kernel rows are contiguous runs of 32 bytes, or of a multiple
    // of 64, too few channels per tap for AMX (a first layer's interleaved rows:
    // interleaved_rows.hpp): each kernel row is one AMX tap of its whole run.
    const std::int64_t row_run = d.kernel_w * channels_;
    row_runs_ = amx_kernels && path_ == Path::rows && d.groups == 1 && !transposed_ &&
                channels_ % 4 == 0 && channels_ < 32 && d.dilation_w == 1 && d.pad_top == 0 &&
                d.pad_bottom == 0 && d.pad_left == 0 && d.pad_right == 0 &&
                (row_run == 32 || row_run % 64 == 0);
    amx_ = amx_kernels &&
           (group_in_ % 64 == 0 || (group_in_ % 32 == 0 && (groups_ > 1 || chunks_of_32)) ||
            path_ == Path::im2col || channel_padded_ || row_runs_);
    // A strided 1x1 layer on AMX reads a dense copy of the pixels it uses (a tile's rows need one
    // input stride); on vpdpbusd it reads each pixel from its own offset, unless it runs as flat
    // runs (below: a dense copy then too).
    compact_copy_ = amx_ && path_ == Path::flat && strided;
    // Groups narrower than a panel share one (its lanes full, and a tile's fixed costs spread
    // over 64 channels): each lane reads its own group's input dwords through the kernel set's
    // grouped tile. The panel's groups' input channels must fit one 64-byte load, whole dwords
    // per group.
    // (A 1x1 layer's groups of 32 output channels keep panels of their own, each run as flat
    // runs, the output stage from the registers: on an AMD Zen 4, 256 -> 256 in 8 groups at 28x28
    // 0.73x the time of grouped tiles two groups to a panel, 128 -> 128 in 4 at 56x56 0.75x, 1024
    // -> 1024 in 32 at 7x7 0.73x; of 16 channels the grouped tiles stay ahead, 29 against 36 us.)
    const bool flat_group_panels = path_ == Path::flat && group_out_ == 32 &&
                                   kernels.flat_run != nullptr &&
                                   kernels.flat_run(d.scheme.kind, d.output_dtype, 2) != nullptr;
    // A width that does not divide 64 shares panels (as many whole groups as fit, the lanes past
    // them idle) where its vectors' lanes are in at most two groups each (two_groups_fit: 13-15
    // and 17-31 channels), that leaves fewer lanes idle than a group's own vectors would (by an
    // eighth of them or more: 17-24 channels), and the kernel set has tiles for that; not for a
    // 1x1 layer, whose flat runs do more than the grouped tiles with the same lanes, nor with a
    // weight zero point, whose window sums a panel of one group takes from whole pixels' sums
    // (in the tiles, a multiply more per vector: as slow as before, 72 -> 72 in 3 groups at
    // 56x56 11 % slower). On an AMD Zen 4, 3x3, 240 -> 240 in 10 groups at 28x28: a group per
    // panel (2 vectors, 24 lanes of 32 used) 282 us, 0.72x oneDNN's speed; two a panel gathered
    // (a vpermd per multiply) 383 us; two_groups (3 vectors, all used) 228 us, 0.90x; 576 ->
    // 576 in 24 at 14x14 169 -> 134 us; 160 -> 160 in 8 at 28x28 (20 lanes of 32; 60 of 64)
    // 199 -> 135 us; groups of 28 (28 of 32; 56 of 64) 257 -> 284 us; groups of 12 at 14x14
    // gathered, 5 a panel (a vpermd per multiply, 60 lanes of 64 where 12 of 16): 46 against 61
    // us, 0.82x -> 1.08x.
    const auto lanes_a_group = [&](std::int64_t per_panel) {
      return static_cast<double>(round_up(per_panel * group_out_, 16)) / per_panel;
    };
    // The common narrow groups get their input by broadcasts, with lanes arranged for them,
    // where the kernel set has tiles for that arrangement.
    const auto has = [&](GroupedLanes lanes) {
      return kernels.grouped_tile != nullptr && kernels.grouped_tile(1, 4, false, lanes) != nullptr;
    };
    const bool odd_width = kPanelWidth % group_out_ != 0 && path_ != Path::flat &&
                           symmetric_weights(problem) &&
                           8 * lanes_a_group(kPanelWidth / group_out_) <= 7 * lanes_a_group(1);
    const bool two_groups = odd_width && two_groups_fit() && has(GroupedLanes::two_groups);
    // Narrower than a vector (5 to 12 channels), gathered, where the kernel set's gathered tiles
    // take such widths.
    const bool gathered_any = odd_width && group_out_ < 16 && kernels.gathers_any_group_width;
    if (kernels.grouped_tile != nullptr && !depthwise_ && groups_ > 1 && !amx_ &&
        !flat_group_panels && group_out_ < kGroupedTileBelow &&
        (kPanelWidth % group_out_ == 0 || two_groups || gathered_any) && group_in_ % 4 == 0 &&
        group_in_ <= group_out_) {
      groups_per_panel_ = std::min<std::int64_t>(kPanelWidth / group_out_, groups_);
      for (std::int64_t l = 0; l < kPanelWidth; ++l) {
        lane_dwords_[static_cast<std::size_t>(l)] =
            static_cast<std::int32_t>((l / group_out_) * group_in_ / 4);
      }
      if (group_in_ == group_out_ && (group_in_ == 4 || group_in_ == 8 || group_in_ == 16) &&
          groups_per_panel_ * group_in_ == kPanelWidth && groups_ % groups_per_panel_ == 0 &&
          has(GroupedLanes::in_lane_groups)) {
        grouped_lanes_ = GroupedLanes::in_lane_groups;
        // Up to four register chunks per tile, as many as the kernel set has tiles for: a tile's
        // few multiplies (K of 9 x 4 to 9 x 16) leave its fixed costs a fifth of its time at 6
        // rows (24 rows against 12: 4-7 % faster at 4 and 8 channels per group). The kernel runs
        // 5 rows at once at 8 and 16 channels per group: tiles of up to 20, not 18 + 1.
        const int chunk = std::min(in_lane_chunk_rows(group_in_), max_rows_);
        int rows = std::min(4 * chunk, kMaxInLaneRows);
        while (rows > chunk && kernels.grouped_tile(rows, 4, false, grouped_lanes_) == nullptr) {
          rows -= chunk;
        }
        max_rows_ = rows;
      } else if (group_in_ == 4 && group_out_ == 4 && groups_ % 4 == 0 &&
                 has(GroupedLanes::four_groups)) {
        grouped_lanes_ = GroupedLanes::four_groups;
      } else if (group_in_ == 8 && group_out_ == 8 && groups_ % 4 == 0 &&
                 has(GroupedLanes::four_groups_of_8)) {
        grouped_lanes_ = GroupedLanes::four_groups_of_8;
      } else if (group_out_ % 16 == 0 && has(GroupedLanes::one_group)) {
        grouped_lanes_ = GroupedLanes::one_group;
      } else if (two_groups) {
        grouped_lanes_ = GroupedLanes::two_groups;
      }
    }
    // How the input is widened for the tiles (input_widening 2): in the grouped tiles' order where
    // their kernel set has one, else plainly.
    if (kernels.grouped_widening != nullptr) {
      if (const WidenBytes grouped = kernels.grouped_widening(grouped_lanes_)) widen_ = grouped;
    }
    steps_ = depthwise_ ? 1 : (path_ == Path::im2col ? im2col_stride() : tap_bytes_ + 3) / 4;
    taps_ = path_ == Path::im2col ? 1 : d.kernel_h * d.kernel_w;
    kernel_row_runs_ = kernel_row_runs(problem, kernels);
    if (kernel_row_runs_) steps_ = d.kernel_h * kernel_row_steps();

    // On AMX a padded layer runs on a copy of the input with its padding filled with the zero
    // point: every pixel then has every tap, and a row of pixels is one block. (Skipping padded
    // taps would leave the border pixels to 1-pixel vpdpbusd tiles, as slow as all the rest.)
    in_h_ = d.in_height;
    in_w_ = d.in_width;
    pad_top_ = d.pad_top;
    pad_left_ = d.pad_left;
    if (transposed_ && !phased_ && !placed_) {
      pad_top_ = flipped_pad_top(d);
      pad_left_ = flipped_pad_left(d);
    }
    padded_copy_ = amx_ && path_ == Path::rows && !transposed_ &&
                   (d.pad_top != 0 || d.pad_bottom != 0 || d.pad_left != 0 || d.pad_right != 0);
    // Kernel-row runs read whole K steps: up to 3 bytes past a row's last window, in columns of
    // the copy added for them (the weights there are zero).
    const std::int64_t past_windows =
        kernel_row_runs_ ? 4 * kernel_row_steps() - d.kernel_w * channels_ : 0;
    padded_copy_ = padded_copy_ || kernel_row_runs_;
    if (placed_) {  // the placed input: output size plus the kernel's span
      in_h_ = out_h_ + (d.kernel_h - 1) * d.dilation_h;
      in_w_ = out_w_ + (d.kernel_w - 1) * d.dilation_w;
      pad_top_ = pad_left_ = 0;
    }
    if (padded_copy_) {
      in_h_ = d.in_height + d.pad_top + d.pad_bottom;
      in_w_ = d.in_width + d.pad_left + d.pad_right + (past_windows + channels_ - 1) / channels_;
      pad_top_ = pad_left_ = 0;
    }
    pack(problem, weights);
    // Both tensors NCHW around a 1x1 layer: pixels in lanes, no transposes (nchw_flat_plan.hpp).
    if (depthwise_) nchw_depthwise_ = NchwDepthwisePlan::make(problem, weights, kernels);
    if (!amx_ && !depthwise_) {
      if (const NchwFlatKernel kernel = NchwFlatPlan::kernel_for(problem, kernels)) {
        nchw_flat_ = std::make_unique<NchwFlatPlan>(problem, weights, shift_, kernel,
                                                    kernels.input_widening);
      }
    }
    if (kernels.widen_weights != nullptr && !depthwise_) {  // the kernel set's own wider form
      widened_.resize(packed_.size() * static_cast<std::size_t>(kernels.weight_widening));
      kernels.widen_weights(packed_.data(), static_cast<std::int64_t>(packed_.size()),
                            widened_.data());
      packed_ = {};
    }
    plan_patterns(problem);
    if (row_runs_) {  // kernel row r: its taps' packed steps are consecutive, from tap r·kw's
      for (std::int64_t r = 0; r < d.kernel_h; ++r) {
        row_run_offsets_.push_back(r * d.dilation_h * in_w_ * pixel_bytes_);
        row_run_sums_.push_back(r * d.dilation_h * out_w_);
        row_run_steps_.push_back(r * d.kernel_w * steps_);
      }
    }
    if (depthwise_) pair_depthwise_weights();
    // Threads share the work in contiguous runs of tasks (each thread the same run in every call):
    // pixels outermost, each thread keeps the activations it reads and writes in its own cache
    // and reads all the weights; panels outermost, each keeps its share of the weights and reads
    // all the input. The smaller of the two is the one both threads read.
    pixels_outer_ =
        out_channels_ * group_in_ * d.kernel_h * d.kernel_w <= d.in_height * d.in_width * channels_;
    // A weight zero point's window sums added up from sums of whole pixels, made once per call
    // (KernelSet::sum_pixels), where every tap reads one pixel's channels of the tensor the tiles
    // walk (im2col: each gathered row's, as it is gathered), per group; otherwise (groups sharing
    // a panel) the tiles sum their windows' bytes themselves.
    pixel_window_sums_ = needs_window_sums_ && kernels.sum_pixels != nullptr && !depthwise_ &&
                         groups_per_panel_ == 1;
    for (const std::int64_t offset : tap_offsets_) tap_pixels_.push_back(offset / pixel_bytes_);
    // Preparation's intermediates: the plan runs from the pattern sums and pairs alone.
    tap_sums_ = {};
    depthwise_weights_ = {};
    epilogue_ = kernels.epilogue(d.scheme.kind, d.output_dtype);
    if (depthwise_ && kernels.depthwise_output_tile != nullptr) {
      depthwise_output_ = kernels.depthwise_output_tile(d.scheme.kind, d.output_dtype);
    }
    // In-lane grouped tiles whose sums need no correction leave them in lane order for an
    // epilogue of their own (full panels; a narrower one, the last of a layer, takes epilogue_).
    if (groups_per_panel_ > 1 && grouped_lanes_ == GroupedLanes::in_lane_groups &&
        !needs_window_sums_ && !amx_ && kernels.in_lane_epilogue != nullptr) {
      in_lane_epilogue_ =
          kernels.in_lane_epilogue(static_cast<int>(group_in_), d.scheme.kind, d.output_dtype);
      if (in_lane_epilogue_ != nullptr && kernels.in_lane_output_tile != nullptr) {
        in_lane_output_ =
            kernels.in_lane_output_tile(static_cast<int>(group_in_), d.scheme.kind, d.output_dtype);
      }
    }
    // two_groups and one_group tiles whose sums need no correction (symmetric weights) likewise,
    // in channel order. (ResNeXt's groups of 32 at 7x7, the stored sums' pass 11 % of the layer.)
    if (groups_per_panel_ > 1 && !needs_window_sums_ && !amx_ &&
        (grouped_lanes_ == GroupedLanes::two_groups || grouped_lanes_ == GroupedLanes::one_group) &&
        kernels.grouped_output_tile != nullptr) {
      grouped_output_ = kernels.grouped_output_tile(grouped_lanes_, d.scheme.kind, d.output_dtype);
    }
    // Plain GEMM tiles likewise (a pass over their stored sums: 2-3 % of ResNet-50's 56-wide 3x3
    // layer on an Intel Xeon).
    if (groups_per_panel_ == 1 && !depthwise_ && !needs_window_sums_ && !amx_ &&
        epilogue_ != nullptr && kernels.gemm_output_tile != nullptr) {
      gemm_output_ = kernels.gemm_output_tile(d.scheme.kind, d.output_dtype);
    }
    // Flat runs (KernelSet::flat_run) where every pixel's input follows the last (a 1x1 layer's
    // pixels, or an im2col run's gathered windows) and the sums need no correction but a weight
    // zero point's from whole pixels' sums: no AMX blocks (their terms), no depthwise tiles, no
    // groups sharing a panel. (A kernel set with wider forms of the weights and input gets those:
    // run_flat.) A transposed layer whose every output pixel has one tap (its kernel its stride:
    // UNet's 2x2/s2): the positions of one output row and column phase read consecutive input
    // pixels, flat runs too (run_phase_runs).
    phase_runs_ = phased_ && !pattern_taps_.empty() &&
                  std::all_of(pattern_taps_.begin(), pattern_taps_.end(),
                              [](const auto& taps) { return taps.second == 1; });
    // The column tiles of one pattern that follow each other (column_step_ apart), merged.
    for (std::size_t t = 0; phase_runs_ && t < column_tiles_.size(); ++t) {
      const auto [x, rows] = column_tiles_[t];
      const std::int64_t kind = column_pattern_[t];
      if (!column_runs_.empty() && column_runs_.back().kind == kind &&
          column_runs_.back().x + column_runs_.back().pixels * column_step_ == x) {
        column_runs_.back().pixels += rows;
      } else {
        column_runs_.push_back({x, rows, kind});
      }
    }
    // A strided 1x1 layer's pixels are consecutive in a dense copy (below).
    const bool runs_of_rows = path_ == Path::flat || path_ == Path::im2col || phase_runs_;
    if (kernels.flat_run != nullptr && runs_of_rows && !amx_ && !depthwise_ &&
        (!needs_window_sums_ || pixel_window_sums_) && groups_per_panel_ == 1) {
      for (int v = 1; v <= 4; ++v) {
        if (v == 4 && tap_stride() >= kFlatRunFullPanelBelowK) break;
        flat_runs_[static_cast<std::size_t>(v)] =
            kernels.flat_run(d.scheme.kind, d.output_dtype, v);
      }
    }
    for (const int v : panel_vectors_) {
      if (flat_runs_[static_cast<std::size_t>(v)] != nullptr) flat_run_panels_ = true;
    }
    // A strided 1x1 layer with flat runs reads a dense copy of the pixels it uses, as on AMX: a
    // pass over a quarter of the input (stride 2), against tiles that each read their rows from
    // their own offsets (ResNet-50's l2.ds, K = 256: 299 -> 269 us at one thread, 0.93x oneDNN
    // before).
    // (Without flat runs, they read the input in place, flat_runs_ unused: PanelRun::strided.)
    if (path_ == Path::flat && strided && flat_run_panels_) compact_copy_ = true;
    // Panels outermost, two threads take the first and second half of the tasks by count: a last
    // panel narrower than the others leaves one of them more work (MobileNetV2's 7x7 layers of 160
    // channels, panels of 64, 64 and 32: 60 % to one, 1.6x faster on two threads than on one).
    // Pixels outermost, each thread's half spans every panel.
    if (!pixels_outer_) {
      const std::int64_t panels_first = busiest_share(false, 2);
      pixels_outer_ = panels_first > 55 && busiest_share(true, 2) < panels_first;
    }
    plan_column_strips();
  }

  std::vector<std::int64_t> take_abs_weight_sums() override { return std::move(abs_weight_sums_); }

  // The file holds the canonical weights (unpack() packs them again).
  std::vector<std::byte> packed() const override { return canonical_bytes(); }
  CanonicalWeights canonical_weights() const override {
    return CanonicalWeights::from_bytes(problem_, canonical_bytes(), "packed_weights");
  }

  std::string describe() const override {
    const auto& d = problem_.desc();
    std::ostringstream out;
    const std::string tile = std::to_string(max_rows_) + "x" + std::to_string(kPanelWidth);
    out << (amx_ ? "avx512_amx tdpbusd <=32x64 + " : "") << kernels_.name << " ";
    if (depthwise_) out << "dwconv " << tile << " (channels in lanes) ";
    if (transposed_ && !phased_) {
      out << (placed_ ? "(transposed: placed input, flipped kernel) "
                      : "(transposed: flipped kernel) ");
    }
    if (phased_) {
      out << "(transposed: " << d.stride_h * d.stride_w
          << " stride phases of the flipped kernel, inserted zeros skipped) ";
    }
    switch (path_) {
      case Path::flat:
        out << "gemm " << tile << " 1x1";
        if (d.stride_h != 1 || d.stride_w != 1) {
          out << " s" << d.stride_h << (compact_copy_ ? "" : " (row offsets)");
        }
        break;
      case Path::rows:
        out << "igemm " << tile << " k" << d.kernel_h << "x" << d.kernel_w << " s" << d.stride_h;
        if (d.stride_w != d.stride_h) out << "x" << d.stride_w;
        break;
      case Path::im2col:
        if (kernel_row_runs_) {
          out << "gemm " << tile << " k" << d.kernel_h << "x" << d.kernel_w << " s" << d.stride_h
              << " (kernel-row runs: " << d.kernel_h << " runs of " << 4 * kernel_row_steps()
              << " bytes read in place from a padded copy, no im2col)";
          break;
        }
        out << "im2col+gemm " << tile << " K=" << tap_bytes_ << " k" << d.kernel_h << "x"
            << d.kernel_w;
        break;
    }
    if (path_ == Path::rows && patterns_ > 1) out << " (padded taps skipped)";
    if (!strip_rows_.empty()) out << " (border columns in tiles down the rows)";
    if (row_runs_) out << " (AMX taps: kernel rows as runs of " << amx_tap_bytes() << " bytes)";
    if (padded_copy_) out << " (padding filled in a copy of the input)";
    if (channel_padded_) out << " (channels padded to " << pixel_bytes_ << " in a copy)";
    if (nchw_flat_ != nullptr) {
      out << " (NCHW in and out: pixels in lanes, no transposes)";
    } else if (nchw_depthwise_ != nullptr) {
      out << " (NCHW in and out: depthwise rows of the padded planes, pixels in lanes, no "
             "transposes)";
    } else {
      if (d.input_layout == Layout::NCHW) {
        out << (copies_input()       ? " (NCHW input transposed by its copy)"
                : transposes_bands() ? " (NCHW input made NHWC band by band as the tiles read it)"
                : transposes_into_widened() ? " (NCHW input made NHWC and widened in one pass)"
                                            : " (NCHW input made NHWC in a copy)");
      }
      if (d.output_layout == Layout::NCHW) {
        out << (pixels_outer_ ? " (NCHW output transposed from an NHWC copy)"
                              : " (NCHW output transposed from an NHWC copy panel by panel)");
      }
    }
    if (compact_copy_) out << " (strided pixels copied densely)";
    if (groups_per_panel_ > 1) {
      static constexpr const char* kLanes[] = {
          "gathered",
          "one group per vector",
          "four groups per vector",
          "groups in 128-bit lanes, one load per row",
          "four groups per pair of vectors",
          "two groups a vector at most, one broadcast per vector"};
      out << " (" << groups_per_panel_ << " groups of " << group_out_ << " per panel, "
          << kLanes[static_cast<int>(grouped_lanes_)]
          << (in_lane_output_ != nullptr || grouped_output_ != nullptr
                  ? ", output stage from the registers"
                  : "")
          << ")";
    }
    if (needs_window_sums_) out << " (weight zero point: window sums)";
    out << " (register tile " << kernels_.tile << ")";
    if (gemm_output_ != nullptr) out << " (GEMM tiles: output stage from the registers)";
    if (epilogue_ == nullptr) out << " (scalar output stage)";
    if (flat_run_panels_) {
      out << " (flat runs" << (flat_runs_[4] == nullptr ? " on narrow panels" : "")
          << ": output stage from the registers)";
    }
    if (depthwise_output_ != nullptr) out << " (depthwise tiles: output stage from the registers)";
    return out.str();
  }

  void run(const RunContext& call) const override {
    const StageView stage = stage_view(call.stage.vectors());
    if (nchw_depthwise_ != nullptr) {
      nchw_depthwise_->run(call, stage);
      return;
    }
    if (nchw_flat_ != nullptr) {
      const std::int32_t zx = call.input_zero_point + (flip_input_ ? 128 : 0);
      nchw_flat_->run(call, stage, zx, flip_input_, zx != 0 ? pattern_sums_.data() : nullptr);
      return;
    }
    const std::int64_t rows = row_count(call.batch, call.threads);
    RunContext ctx = call;
    const auto& d = problem_.desc();
    // NCHW tensors: the tiles run on NHWC. An input the plan copies anyway is transposed by that
    // copy; one the tiles read themselves (output rows, pixel tiles, runs of pixels) is made NHWC
    // band by band in their bodies (NhwcBands); any other whole, in scratch. The output is
    // transposed back panel by panel in the tiles' parallel_for where panels are outermost (below),
    // otherwise at the end (per task, while in cache, measured slower: a task's block spans 64
    // planes in short runs; per row of tasks, once all its panels are done, no faster).
    const bool nchw_input = d.input_layout == Layout::NCHW;
    const bool bands = transposes_bands();
    const bool widened_in_transpose = transposes_into_widened();
    if (widened_in_transpose) {
      ctx.input = widened_nhwc_from_nchw(static_cast<const std::uint8_t*>(call.input), call.batch,
                                         channels_, d.in_height, d.in_width, call.threads, widen_);
    } else if (nchw_input && !copies_input() && !bands) {
      ctx.input = nhwc_from_nchw(static_cast<const std::uint8_t*>(call.input), call.batch,
                                 channels_, d.in_height, d.in_width, call.threads);
    }
    const bool nchw_output = d.output_layout == Layout::NCHW;
    // With panels outermost, each panel's channels are made NCHW by the body that finishes its
    // last row of tasks, in the tiles' parallel_for (after it, on the calling thread alone, they
    // took a fifth of a 14x14 1x1 layer's time on two threads); `panels_done` counts each panel's
    // rows done, after the NHWC result.
    const bool panel_transposes = nchw_output && !pixels_outer_;
    std::int32_t* panels_done = nullptr;
    if (nchw_output) {
      const std::size_t result_bytes =
          round_up(static_cast<std::size_t>(call.batch * out_h_ * out_w_ * out_channels_) *
                       element_size(d.output_dtype),
                   kCacheLine);
      const std::size_t counts = panel_transposes ? static_cast<std::size_t>(panels_) : 0;
      std::uint8_t* storage = thread_scratch(result_bytes + counts * sizeof(std::int32_t), 2);
      ctx.output = storage;
      panels_done = reinterpret_cast<std::int32_t*>(storage + result_bytes);
      std::fill(panels_done, panels_done + counts, 0);
    }
    if (flip_input_)
      ctx.input_zero_point = call.input_zero_point + (kernels_.u8_input ? 128 : -128);
    const ActivationCopy input{static_cast<const std::uint8_t*>(ctx.input),
                               call.batch,
                               d.in_height,
                               d.in_width,
                               channels_,
                               flip_input_,
                               call.threads,
                               pixel_bytes_,
                               nchw_input && copies_input()};
    const auto zx = static_cast<std::uint8_t>(ctx.input_zero_point);
    if (placed_) {
      ctx.input = placed_copy(input, in_h_, in_w_, d.stride_h, d.stride_w, flipped_pad_top(d),
                              flipped_pad_left(d), zx);
    } else if (padded_copy_) {
      ctx.input = placed_copy(input, in_h_, in_w_, 1, 1, d.pad_top, d.pad_left, zx);
    } else if (compact_copy_) {
      ctx.input = dense_copy(input, out_h_, out_w_, d.stride_h, d.stride_w);
    } else if (flip_input_ || channel_padded_) {
      ctx.input = plain_copy(input);
    }
    const std::int32_t* pixel_sums =
        pixel_window_sums_ && path_ != Path::im2col ? sum_input_pixels(ctx) : nullptr;
    // im2col widens each gathered run instead (kernel-row runs read the padded copy: widened)
    if (widened_input() && (path_ != Path::im2col || kernel_row_runs_) && !widened_in_transpose) {
      ctx.input = widened_copy(static_cast<const std::uint8_t*>(ctx.input),
                               walked_pixels(call.batch) * pixel_bytes_, call.threads, widen_);
    }
    // The calling thread's row, shared by the workers: a worker's own would be allocated the first
    // time it takes part, which may be any call (a host pool's threads are not always the same).
    const std::uint8_t* padding_row = pixel_tiles_ ? zero_point_row(ctx) : nullptr;
    // The in-lane tiles' stage arrays, kept from the last call where they were this kernel's with
    // this stage (kept_stage).
    const StageView& lane_stage =
        in_lane_epilogue_ == nullptr
            ? stage
            : kept_stage(StageSlot::grouped_lanes, serial_, call.stage,
                         static_cast<std::size_t>(in_lane_stage_ints(out_channels_)) *
                             sizeof(std::int32_t),
                         [&](std::uint8_t* storage, StageView& view) {
                           kernels_.in_lane_stage(static_cast<int>(group_in_), stage, out_channels_,
                                                  reinterpret_cast<std::int32_t*>(storage), view);
                         });
    const bool saturated_high = narrowing_saturates_high(d, call.stage.vectors());
    // NhwcBands: an image's worth of scratch for each body that may run at once, empty.
    const std::size_t band_bytes = NhwcBands::slot_bytes(d.in_height * d.in_width * channels_);
    const int band_slots = bands ? parallel_participants(call.threads) : 0;
    WorkerScratch band_images(
        bands ? thread_scratch(WorkerScratch::bytes(band_bytes, band_slots), 1) : nullptr,
        band_bytes, band_slots);
    for (int slot = 0; slot < band_slots; ++slot) NhwcBands::clear(band_images.slot(slot));
    parallel_for(
        ctx.threads, panels_ * rows,
        [&](std::int64_t begin, std::int64_t end) {
          if (amx_) kernels_.amx_begin();  // the tile configuration is per thread
          std::optional<WorkerScratch::Claim> band_image_slot;
          std::optional<NhwcBands> nhwc_bands;
          if (bands) {
            // The slot this thread took last (its rows in this thread's cache), if it is free.
            thread_local int last_band_slot = 0;
            band_image_slot.emplace(band_images, last_band_slot);
            last_band_slot = band_image_slot->slot();
            nhwc_bands.emplace(static_cast<const std::uint8_t*>(call.input), channels_,
                               d.in_height * d.in_width, band_image_slot->data());
          }
          for (std::int64_t task = begin; task < end; ++task) {
            const std::int64_t panel = pixels_outer_ ? task % panels_ : task / rows;
            const std::int64_t row = pixels_outer_ ? task / panels_ : task % rows;
            run_row(ctx, stage, lane_stage, pixel_sums, padding_row, saturated_high, panel, row,
                    bands ? &*nhwc_bands : nullptr);
            if (panel_transposes &&
                std::atomic_ref(panels_done[panel]).fetch_add(1, std::memory_order_acq_rel) ==
                    rows - 1) {
              const auto p = static_cast<std::size_t>(panel);
              nchw_channels_from_nhwc(ctx.output, call.output, call.batch, out_channels_,
                                      out_h_ * out_w_, panel_channels_[p], panel_widths_[p],
                                      element_size(d.output_dtype));
            }
          }
          if (amx_) kernels_.amx_end();
        },
        chunks_per_thread(macs(call.batch), ctx.threads));
    if (nchw_output && !panel_transposes) {
      nchw_from_nhwc(ctx.output, call.output, call.batch, out_channels_, out_h_ * out_w_,
                     element_size(d.output_dtype), call.threads);
    }
  }

 private:
  // Pixels of the tensor the tiles walk: the input, or its copy (padded, spread out or dense).
  std::int64_t walked_pixels(std::int64_t batch) const {
    if (transposed_ || padded_copy_) return batch * in_h_ * in_w_;
    if (compact_copy_) return batch * out_h_ * out_w_;
    return batch * problem_.desc().in_height * problem_.desc().in_width;
  }

  // The sum of each pixel's channels in the tensor the tiles walk (before any widening), in the
  // calling thread's scratch: the window sums of every panel's tiles are added up from these.
  // With groups, each group's channels: [group][pixel].
  const std::int32_t* sum_input_pixels(const RunContext& ctx) const {
    const std::int64_t pixels = walked_pixels(ctx.batch);
    auto* sums = reinterpret_cast<std::int32_t*>(
        thread_scratch(static_cast<std::size_t>(groups_ * pixels) * sizeof(std::int32_t), 4));
    const auto* input = static_cast<const std::uint8_t*>(ctx.input);
    constexpr std::int64_t kChunk = 4096;  // pixels per task: a few microseconds
    const std::int64_t chunks = (pixels + kChunk - 1) / kChunk;
    if (row_runs_) {  // the sums of the kernel row runs that windows start, [row][out_w]
      const std::int64_t rows = ctx.batch * in_h_;
      parallel_for(ctx.threads, rows, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t row = begin; row < end; ++row) {
          kernels_.sum_pixels(input + row * in_w_ * pixel_bytes_, out_w_, stride_w_ * pixel_bytes_,
                              amx_tap_bytes(), sums + row * out_w_);
        }
      });
      return sums;
    }
    const std::int64_t channels = groups_ == 1 ? channels_ : group_in_;
    parallel_for(ctx.threads, groups_ * chunks, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t task = begin; task < end; ++task) {
        const std::int64_t group = task / chunks, first = task % chunks * kChunk;
        const std::int64_t count = std::min(pixels - first, kChunk);
        kernels_.sum_pixels(input + first * pixel_bytes_ + group * group_in_, count, pixel_bytes_,
                            channels, sums + group * pixels + first);
      }
    });
    return sums;
  }

  // Σx of each row's window from the per-pixel sums: row i's window origin is pixel
  // first + i·step of the walked tensor, and it reads the pattern's listed taps. Modulo 2^32, as
  // the kernels' own sums.
  void sum_windows(const std::int32_t* pixel_sums, std::int64_t first, std::int64_t step,
                   std::int64_t pattern, int rows, std::int32_t* out) const {
    const auto [first_tap, pattern_tap_count] = pattern_taps_[static_cast<std::size_t>(pattern)];
    // Row runs: the sums are of the runs windows start (sum_input_pixels), one per kernel row;
    // `first` and `step` count those.
    const std::int64_t* tap_pixels =
        row_runs_ ? row_run_sums_.data() : tap_pixels_.data() + first_tap;
    const std::int64_t taps =
        row_runs_ ? static_cast<std::int64_t>(row_run_sums_.size()) : pattern_tap_count;
    std::uint32_t sums[kMaxAmxRows];
    for (int i = 0; i < rows; ++i) sums[i] = 0;
    for (std::int64_t k = 0; k < taps; ++k) {
      // first alone may lie in the padding (a row skipping padded taps): add the tap first.
      const std::int32_t* at = pixel_sums + (first + tap_pixels[k]);
      if (step == 1) {  // consecutive pixels: a loop the compiler vectorises
        for (int i = 0; i < rows; ++i) sums[i] += static_cast<std::uint32_t>(at[i]);
      } else {
        for (int i = 0; i < rows; ++i) sums[i] += static_cast<std::uint32_t>(at[i * step]);
      }
    }
    for (int i = 0; i < rows; ++i) out[i] = static_cast<std::int32_t>(sums[i]);
  }

  // The canonical weight tap packed as tap t: the same one, or (transposed) the flipped kernel's.
  // Its own inverse.
  std::int64_t source_tap(std::int64_t t) const {
    const auto& d = problem_.desc();
    return transposed_ ? d.kernel_h * d.kernel_w - 1 - t : t;
  }

  // Whether groups of group_out_ channels side by side in channel order, as many whole ones as
  // fit a panel, leave every vector's lanes in at most two groups, the second the next vector's
  // first (GroupedLanes::two_groups). Lanes past the panel's groups do not count.
  bool two_groups_fit() const {
    const std::int64_t per_panel = kPanelWidth / group_out_, width = per_panel * group_out_;
    if (per_panel < 2) return false;
    for (std::int64_t first = 0; first < width; first += 16) {
      const std::int64_t last = std::min(first + 16, width) - 1;
      const std::int64_t groups = last / group_out_ - first / group_out_ + 1;
      if (groups > 2) return false;
      // A second group is read from the next vector's broadcast: it must start that vector.
      if (groups == 2 && (first + 16 >= width || (first + 16) / group_out_ != last / group_out_)) {
        return false;
      }
    }
    return true;
  }

  // Output channel o's panel, lane in it, and slot (panel * 64 + lane).
  std::int64_t panel_of(std::int64_t o) const {
    if (groups_per_panel_ > 1) return (o / group_out_) / groups_per_panel_;
    return (o / group_out_) * panels_per_group_ + (o % group_out_) / kPanelWidth;
  }
  std::int64_t lane_of(std::int64_t o) const {
    if (groups_per_panel_ == 1) return (o % group_out_) % kPanelWidth;
    const std::int64_t in_panel = (o / group_out_) % groups_per_panel_;
    if (grouped_lanes_ == GroupedLanes::four_groups) {
      return (in_panel / 4) * 16 + (o % 4) * 4 + in_panel % 4;  // see GroupedLanes
    }
    if (grouped_lanes_ == GroupedLanes::four_groups_of_8) {
      const std::int64_t m = o % 8;
      return ((in_panel / 4) * 2 + m / 4) * 16 + (m % 4) * 4 + in_panel % 4;
    }
    if (grouped_lanes_ == GroupedLanes::in_lane_groups) {
      // Group in_panel in 128-bit lane q (16 / width groups each), its output m in vector
      // m / (width / 4), at lane r of q: the kernel's arrangement (grouped_kernels.cpp).
      const std::int64_t per_lane = 16 / group_out_, lanes_per_group = group_out_ / 4;
      const std::int64_t m = o % group_out_;
      const std::int64_t q = in_panel / per_lane;
      const std::int64_t r = in_panel % per_lane * lanes_per_group + m % lanes_per_group;
      return m / lanes_per_group * 16 + 4 * q + r;
    }
    return in_panel * group_out_ + o % group_out_;
  }

  std::int64_t slot_of(std::int64_t o) const { return panel_of(o) * kPanelWidth + lane_of(o); }

  // The weights back in canonical (o, c, r, s) order, one byte each, from the panels.
  std::vector<std::byte> canonical_bytes() const {
    if (depthwise_) return depthwise_canonical_;
    const auto& d = problem_.desc();
    std::vector<std::byte> out(
        static_cast<std::size_t>(out_channels_ * group_in_ * d.kernel_h * d.kernel_w));
    AlignedVector<std::int8_t> narrowed;  // the common form back from a kernel set's wider one
    if (!widened_.empty()) {
      narrowed.assign(widened_.size() / static_cast<std::size_t>(kernels_.weight_widening), 0);
      kernels_.narrow_weights(widened_.data(), static_cast<std::int64_t>(narrowed.size()),
                              narrowed.data());
    }
    const std::int8_t* packed = widened_.empty() ? packed_.data() : narrowed.data();
    std::size_t i = 0;
    for (std::int64_t o = 0; o < out_channels_; ++o) {
      const std::int64_t p = panel_of(o);
      const std::int64_t lanes = std::int64_t{panel_vectors_[static_cast<std::size_t>(p)]} * 16;
      const std::int8_t* panel =
          packed + panel_offsets_[static_cast<std::size_t>(p)] + lane_of(o) * 4;
      for (std::int64_t c = 0; c < group_in_; ++c) {
        for (std::int64_t tap = 0; tap < d.kernel_h * d.kernel_w; ++tap) {
          const std::int64_t t = path_ == Path::im2col ? 0 : source_tap(tap);
          std::int64_t k = path_ == Path::im2col ? tap * channels_ + c : c;
          if (kernel_row_runs_) {  // kernel row r's run starts a step of its own
            k = tap / d.kernel_w * 4 * kernel_row_steps() + tap % d.kernel_w * channels_ + c;
          }
          const auto stored = static_cast<std::uint8_t>(
              panel[t * steps_ * lanes * 4 + (k / 4) * lanes * 4 + k % 4]);
          out[i++] = static_cast<std::byte>(static_cast<std::uint8_t>(stored + shift_));
        }
      }
    }
    return out;
  }

  // Weights into panels of 64 output channels: [panel][tap][step][panel width][4].
  // Depthwise: s32 (w − zw) per 64-channel block, [block][tap][64].
  void pack_depthwise(const Problem& problem, const CanonicalWeights& weights) {
    const auto& d = problem.desc();
    const std::int64_t taps = d.kernel_h * d.kernel_w;
    panels_ = (out_channels_ + kPanelWidth - 1) / kPanelWidth;
    padded_channels_ = panels_ * kPanelWidth;
    zero_points_.assign(static_cast<std::size_t>(padded_channels_), 0);
    tap_sums_.assign(static_cast<std::size_t>(taps_ * padded_channels_), 0);
    depthwise_weights_.assign(static_cast<std::size_t>(panels_ * taps * kPanelWidth), 0);
    for (std::int64_t p = 0; p < panels_; ++p) {
      const std::int64_t width =
          std::min<std::int64_t>(kPanelWidth, out_channels_ - p * kPanelWidth);
      panel_vectors_.push_back(static_cast<int>((width + 15) / 16));
      panel_widths_.push_back(static_cast<std::int32_t>(width));
      panel_channels_.push_back(p * kPanelWidth);
      panel_offsets_.push_back(0);
    }
    for (std::int64_t o = 0; o < out_channels_; ++o) {
      const std::int32_t zw = problem.weight_zero_point(o);
      const std::uint8_t* channel = weights.data() + weights.channel_offset(o);
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int32_t w = weights.widen(channel[source_tap(t) * weights.step_tap()]) - zw;
        depthwise_weights_[static_cast<std::size_t>(((o / kPanelWidth) * taps + t) * kPanelWidth +
                                                    o % kPanelWidth)] = w;
        tap_sums_[static_cast<std::size_t>(t * padded_channels_ + o)] = w;  // its one channel
      }
    }
    depthwise_canonical_ = weights.bytes();
  }

  // Per padding pattern and 64-channel block, the listed taps' w − zw in 16-bit pairs.
  void pair_depthwise_weights() {
    const std::int64_t taps = problem_.desc().kernel_h * problem_.desc().kernel_w;
    std::int64_t total = 0;
    for (const auto& [first, count] : pattern_taps_) {
      pattern_pair_offsets_.push_back(total);
      total += panels_ * ((count + 1) / 2) * kPanelWidth * 2;
    }
    depthwise_pairs_.assign(static_cast<std::size_t>(total), 0);
    for (std::size_t pattern = 0; pattern < pattern_taps_.size(); ++pattern) {
      const auto [first, count] = pattern_taps_[pattern];
      const std::int64_t pairs = (count + 1) / 2;
      for (std::int64_t block = 0; block < panels_; ++block) {
        std::int16_t* out = depthwise_pairs_.data() + pattern_pair_offsets_[pattern] +
                            block * pairs * kPanelWidth * 2;
        for (std::int32_t k = 0; k < count; ++k) {
          const std::int64_t tap = tap_steps_[static_cast<std::size_t>(first + k)];  // steps 1
          for (std::int64_t l = 0; l < kPanelWidth; ++l) {
            out[(k / 2) * kPanelWidth * 2 + l * 2 + k % 2] =
                static_cast<std::int16_t>(depthwise_weights_[static_cast<std::size_t>(
                    (block * taps + tap) * kPanelWidth + l)]);
          }
        }
      }
    }
  }

  void pack(const Problem& problem, const CanonicalWeights& weights) {
    if (depthwise_) {
      pack_depthwise(problem, weights);
      return;
    }
    const auto& d = problem.desc();
    const bool u8_weights = d.weight_dtype == DType::u8;
    // w' = w − shift: s8 for a u8 input, u8 (as stored bits) for an s8 input.
    shift_ = u8_weights ? 128 : 0;
    const std::int32_t shift = shift_;
    // Panels of up to 64 channels of one group each; per-channel arrays (zw', the tap sums) are
    // indexed by slot, 64 per panel, the output stage by output channel.
    panels_ = groups_per_panel_ > 1 ? (groups_ + groups_per_panel_ - 1) / groups_per_panel_
                                    : groups_ * panels_per_group_;
    padded_channels_ = panels_ * kPanelWidth;
    zero_points_.assign(static_cast<std::size_t>(padded_channels_), 0);
    const std::int32_t first_zw = problem.weight_zero_point(0) - shift;
    for (std::int64_t o = 0; o < out_channels_; ++o) {
      const std::int32_t zw = problem.weight_zero_point(o) - shift;
      zero_points_[static_cast<std::size_t>(slot_of(o))] = zw;
      needs_window_sums_ = needs_window_sums_ || zw != 0;
      uniform_zero_point_ = uniform_zero_point_ && zw == first_zw;
    }
    // Σ(w' − zw') per tap and channel, for the padding patterns.
    tap_sums_.assign(static_cast<std::size_t>(taps_ * padded_channels_), 0);
    std::int64_t total = 0;
    for (std::int64_t p = 0; p < panels_; ++p) {
      const std::int64_t g = p / panels_per_group_, q = p % panels_per_group_;
      std::int64_t width = std::min<std::int64_t>(kPanelWidth, group_out_ - q * kPanelWidth);
      if (groups_per_panel_ > 1) {
        width = std::min(groups_per_panel_, groups_ - p * groups_per_panel_) * group_out_;
      }
      const std::int64_t vectors = (width + 15) / 16;
      panel_offsets_.push_back(total);
      panel_vectors_.push_back(static_cast<int>(vectors));
      panel_widths_.push_back(static_cast<std::int32_t>(width));
      panel_channels_.push_back(groups_per_panel_ > 1 ? p * groups_per_panel_ * group_out_
                                                      : g * group_out_ + q * kPanelWidth);
      total += taps_ * steps_ * vectors * 64;
    }
    packed_.resize(static_cast<std::size_t>(total));  // every byte written by pack_panels
    pack_panels(weights, u8_weights ? 0x80 : 0);      // w' = w − 128: the top bit flipped
  }

  // The panels, 16 lanes (one 64-byte line per K step) at a time, and Σ(w' − zw') per tap and
  // channel from the same rows. A channel's values are read in (tap, c) order: in place where the
  // tensor holds them so (OHWI: the input channels of a tap contiguous), otherwise from a copy.
  void pack_panels(const CanonicalWeights& weights, std::uint8_t flip) {
    const auto& d = problem_.desc();
    const std::int64_t kernel_taps = d.kernel_h * d.kernel_w;
    const bool im2col = path_ == Path::im2col;
    const std::int64_t taps = im2col ? 1 : kernel_taps;                     // packed taps
    const std::int64_t run = im2col ? kernel_taps * channels_ : group_in_;  // values per tap
    const std::int64_t channel_values = kernel_taps * group_in_;
    const bool in_place = weights.in_tap_order();
    std::vector<std::uint8_t> copies(in_place ? 0 : kLaneBlock * channel_values);
    const std::vector<std::uint8_t> unused(static_cast<std::size_t>(run), flip);  // packs to 0
    // Each slot's channel values (null: an unused slot, packed as zeros).
    std::vector<const std::uint8_t*> slot_values(static_cast<std::size_t>(padded_channels_));
    for (std::int64_t o = 0; o < out_channels_; ++o) {
      slot_values[static_cast<std::size_t>(slot_of(o))] =
          weights.data() + weights.channel_offset(o);
    }
    // Per tap and slot Σ of the packed bytes, per slot Σ|w' − zw'|, from the packer.
    std::vector<std::uint32_t> sums(static_cast<std::size_t>(taps * padded_channels_));
    std::vector<std::int64_t> abs_sums(static_cast<std::size_t>(padded_channels_));
    const auto pack_lanes =
        kernels_.pack_lane_block != nullptr ? kernels_.pack_lane_block : &pack_lane_block;
    for (std::int64_t first = 0; first < padded_channels_; first += kLaneBlock) {
      const auto p = static_cast<std::size_t>(first / kPanelWidth);
      const std::int64_t stride = std::int64_t{panel_vectors_[p]} * 64;  // K step to K step
      const std::int64_t lane = first % kPanelWidth;
      if (lane * 4 >= stride) continue;  // past a narrow panel's lanes
      const std::uint8_t* values[kLaneBlock];
      std::copy_n(slot_values.begin() + first, kLaneBlock, values);
      if (!in_place) copy_in_tap_order(weights, values, copies.data());
      std::int8_t* panel = packed_.data() + panel_offsets_[p] + lane * 4;
      if (kernel_row_runs_) {  // each kernel row's kw·C values in steps of their own, in order
        const std::int64_t row_values = d.kernel_w * channels_, row_steps = kernel_row_steps();
        std::uint32_t row_sums[kLaneBlock];
        for (std::int64_t r = 0; r < d.kernel_h; ++r) {
          const std::uint8_t* rows[kLaneBlock];
          for (int l = 0; l < kLaneBlock; ++l) {
            rows[l] = values[l] == nullptr ? unused.data() : values[l] + r * row_values;
          }
          pack_lanes(rows, row_values, row_steps, flip, panel + r * row_steps * stride, stride,
                     {zero_points_.data() + first, row_sums, abs_sums.data() + first});
          for (int l = 0; l < kLaneBlock; ++l)
            sums[static_cast<std::size_t>(first + l)] += row_sums[l];
        }
        continue;
      }
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int64_t source = im2col ? 0 : source_tap(t) * group_in_;
        const std::uint8_t* rows[kLaneBlock];
        for (int l = 0; l < kLaneBlock; ++l) {
          rows[l] = values[l] == nullptr ? unused.data() : values[l] + source;
        }
        pack_lanes(rows, run, steps_, flip, panel + t * steps_ * stride, stride,
                   {zero_points_.data() + first, sums.data() + t * padded_channels_ + first,
                    abs_sums.data() + first});
      }
    }
    for (std::int64_t o = 0; o < out_channels_; ++o) {
      abs_weight_sums_.push_back(abs_sums[static_cast<std::size_t>(slot_of(o))]);
    }
    for (std::int64_t t = 0; t < taps; ++t) {
      for (std::int64_t slot = 0; slot < padded_channels_; ++slot) {
        const auto i = static_cast<std::size_t>(t * padded_channels_ + slot);
        const auto zw = static_cast<std::uint32_t>(zero_points_[static_cast<std::size_t>(slot)]);
        tap_sums_[i] = static_cast<std::int32_t>(sums[i] - static_cast<std::uint32_t>(run) * zw);
      }
    }
  }

  // A lane block's channels from a layout other than OHWI into `out` in (tap, c) order, 16 lanes
  // of one group's consecutive channels in one go where the tensor keeps their values of an input
  // channel together (IOHW: the channels' taps; HWIO: the channels of a tap), otherwise channel
  // by channel; values[] then points into `out`.
  void copy_in_tap_order(const CanonicalWeights& weights, const std::uint8_t** values,
                         std::uint8_t* out) const {
    const std::int64_t taps = problem_.desc().kernel_h * problem_.desc().kernel_w;
    const std::int64_t channel_values = taps * group_in_;
    const std::int64_t step_c = weights.step_c(), step_tap = weights.step_tap();
    bool consecutive = values[0] != nullptr && values[1] != nullptr;
    const std::ptrdiff_t lane_step = consecutive ? values[1] - values[0] : 0;
    for (int l = 2; l < kLaneBlock && consecutive; ++l) {
      consecutive = values[l] != nullptr && values[l] - values[0] == l * lane_step;
    }
    if (consecutive && lane_step == taps && (step_tap == 1 || taps == 1)) {  // IOHW
      detail::transpose_bytes(values[0], step_c, out, group_in_, group_in_, kLaneBlock * taps);
    } else if (consecutive && lane_step == 1) {  // HWIO
      for (std::int64_t t = 0; t < taps; ++t) {
        detail::transpose_bytes(values[0] + t * step_tap, step_c, out + t * group_in_,
                                channel_values, group_in_, kLaneBlock);
      }
    } else {
      for (int l = 0; l < kLaneBlock; ++l) {
        if (values[l] == nullptr) continue;
        std::uint8_t* to = out + l * channel_values;
        if (step_tap == 1 || taps == 1) {  // OIHW: a channel's taps together
          detail::transpose_bytes(values[l], step_c, to, group_in_, group_in_, taps);
          continue;
        }
        for (std::int64_t t = 0; t < taps; ++t) {
          detail::transpose_bytes(values[l] + t * step_tap, step_c, to + t * group_in_, 0,
                                  group_in_, 1);
        }
      }
    }
    for (int l = 0; l < kLaneBlock; ++l) {
      if (values[l] != nullptr) values[l] = out + l * channel_values;
    }
  }

  // Which taps each output row and column keeps, as patterns; the tap list and Σ(w' − zw') of each.
  void plan_patterns(const Problem& problem) {
    const auto& d = problem.desc();
    if (path_ != Path::rows) {
      patterns_ = 1;
      tap_offsets_ = {0};
      tap_steps_ = {0};
      pattern_taps_ = {{0, 1}};
      pattern_sums_.assign(tap_sums_.begin(), tap_sums_.end());
      if (path_ == Path::flat) return;
      // im2col: one row per output pixel, every tap present (padding holds zx).
      column_tiles_.clear();
      split_tiles(0, out_w_, amx_, max_rows_, column_tiles_);
      return;
    }
    const auto [row_walk, column_walk] = walks(problem, padded_copy_);
    std::map<TapRange, std::int32_t> row_kinds, column_kinds;
    std::vector<TapRange> row_ranges, column_ranges;
    for (std::int64_t y = 0; y < out_h_; ++y) {
      const TapRange range = axis_taps(y, row_walk);
      const auto [it, added] =
          row_kinds.emplace(range, static_cast<std::int32_t>(row_ranges.size()));
      if (added) row_ranges.push_back(range);
      row_pattern_.push_back(it->second);
    }
    // Columns: runs of output positions with the same valid taps, each cut into tiles. A
    // transposed convolution's columns of one phase (every stride_w-th) have the same taps: their
    // tiles run over the phase's positions, column_step_ apart.
    column_step_ = column_walk.spacing;
    for (std::int64_t phase = 0; phase < std::min(column_step_, out_w_); ++phase) {
      const std::int64_t positions = (out_w_ - phase + column_step_ - 1) / column_step_;
      std::int64_t run_begin = 0;
      TapRange run_range;
      for (std::int64_t j = 0; j <= positions; ++j) {
        const TapRange range =
            j < positions ? axis_taps(phase + j * column_step_, column_walk) : TapRange{-1, -1, 1};
        if (j > 0 && range != run_range) {
          const auto [it, added] =
              column_kinds.emplace(run_range, static_cast<std::int32_t>(column_ranges.size()));
          if (added) column_ranges.push_back(run_range);
          const std::size_t first_tile = column_tiles_.size();
          split_tiles(run_begin, j, amx_, max_rows_, column_tiles_);
          for (std::size_t t = first_tile; t < column_tiles_.size(); ++t) {
            column_tiles_[t].first = phase + column_tiles_[t].first * column_step_;
          }
          column_pattern_.resize(column_tiles_.size(), it->second);
          run_begin = j;
        }
        run_range = range;
      }
    }
    // Pixel tiles, for outputs narrower than two register tiles: runs of consecutive output
    // pixels, across output rows, whatever their padding (a tile with padded pixels reads those
    // taps from a row of zero-point bytes, run_pixels), all on the pattern with every tap. Where
    // the kernel set takes tap row pointers. Otherwise such a row is short tiles, each streaming
    // the panel's weights again, and its border pixels 1-row tiles, several times slower per
    // pixel (a 7x7 output with padding 1 has 24 of its 49 pixels on the border). Up to 32 wide
    // (14x14, 28x28 layers) where a tile has K steps enough that reading its rows from the
    // listed offsets costs little; in wider outputs the border tiles are a few per row. In-lane
    // grouped tiles at any width: their multiplies are so few (one to four per row and tap) that a
    // 1-pixel border tile costs most of a full one (8 % of a 28-wide layer's time), and the listed
    // offsets' address arithmetic runs beside the multiplies.
    // Not for the phases of a transposed convolution: those list fewer taps than every tap.
    const bool narrow_output =
        out_w_ < 2 * max_rows_ || grouped_lanes_ == GroupedLanes::in_lane_groups ||
        (out_w_ <= kMaxPixelTileWidth && d.kernel_h * d.kernel_w * steps_ >= kMinPixelTileSteps);
    pixel_tiles_ = kernels_.takes_tap_row_offsets && !depthwise_ && !amx_ && narrow_output &&
                   d.kernel_h * d.kernel_w <= kMaxRedirectedTaps && !phased_;
    if (pixel_tiles_) {
      const auto kind_of = [](auto& ranges, TapRange full) {
        const auto at = std::find(ranges.begin(), ranges.end(), full);
        if (at != ranges.end()) return static_cast<std::int64_t>(at - ranges.begin());
        ranges.push_back(full);
        return static_cast<std::int64_t>(ranges.size()) - 1;
      };
      const std::int64_t full_row = kind_of(row_ranges, {0, d.kernel_h, 1});
      const std::int64_t full_column = kind_of(column_ranges, {0, d.kernel_w, 1});
      full_pattern_ = full_row * static_cast<std::int64_t>(column_ranges.size()) + full_column;
      for (std::int64_t y = 0; y < out_h_; ++y) {
        full_rows_.push_back(row_pattern_[static_cast<std::size_t>(y)] == full_row);
      }
      for (std::int64_t x = 0; x < out_w_; ++x) {
        full_columns_.push_back(axis_taps(x, column_walk) ==
                                column_ranges[static_cast<std::size_t>(full_column)]);
      }
    }
    column_kinds_ = static_cast<std::int64_t>(column_ranges.size());
    row_taps_ = row_ranges;
    column_taps_ = column_ranges;
    patterns_ = static_cast<std::int64_t>(row_ranges.size()) * column_kinds_;
    pattern_sums_.assign(static_cast<std::size_t>(patterns_ * padded_channels_), 0);
    for (std::size_t a = 0; a < row_ranges.size(); ++a) {
      for (std::size_t b = 0; b < column_ranges.size(); ++b) {
        const auto first = static_cast<std::int32_t>(tap_offsets_.size());
        std::int32_t* sums = pattern_sums_.data() + (static_cast<std::int64_t>(a) * column_kinds_ +
                                                     static_cast<std::int64_t>(b)) *
                                                        padded_channels_;
        const TapRange rows = row_ranges[a], columns = column_ranges[b];
        for (std::int64_t r = rows.begin; r < rows.end; r += rows.step) {
          for (std::int64_t s = columns.begin; s < columns.end; s += columns.step) {
            const std::int64_t t = r * d.kernel_w + s;
            // By phase: input pixels from the one the pattern's first tap reads (phase_origin),
            // the listed taps (r − begin)·dilation / stride rows and columns further.
            tap_offsets_.push_back(phased_ ? ((r - rows.begin) * d.dilation_h / d.stride_h * in_w_ +
                                              (s - columns.begin) * d.dilation_w / d.stride_w) *
                                                 pixel_bytes_
                                           : (r * d.dilation_h * in_w_ + s * d.dilation_w) *
                                                 pixel_bytes_);
            tap_kernel_rows_.push_back(static_cast<std::int32_t>(r));
            tap_columns_.push_back(static_cast<std::int32_t>(s));
            tap_steps_.push_back(t * steps_);
            for (std::int64_t o = 0; o < padded_channels_; ++o) {
              sums[o] += tap_sums_[static_cast<std::size_t>(t * padded_channels_ + o)];
            }
          }
        }
        pattern_taps_.emplace_back(first, static_cast<std::int32_t>(tap_offsets_.size()) - first);
      }
    }
    if (pixel_tiles_) plan_border_tiles();
  }

  // Column strips: the 1-pixel tiles of an output row's border columns (those whose taps in the
  // padding are skipped, each a pattern of its own) run down the rows instead, up to max_rows_
  // rows of one row pattern in a tile, which the task of its first row runs (strip_rows_). A
  // 1-pixel tile streams the panel's weights for one pixel, bound by vpdpbusd's latency where
  // they sit in L1 and by the L2's bandwidth where they do not: such tiles took 6 % of a 56-wide
  // 3x3 layer's time (128 channels, avx512_vnni). Plain GEMM tiles over the tensor as it lies (no
  // AMX blocks, depthwise, grouped or phase tiles, gathered windows or pixel tiles).
  void plan_column_strips() {
    strip_rows_.clear();
    const bool single_pixel_tiles =
        std::any_of(column_tiles_.begin(), column_tiles_.end(),
                    [](const std::pair<std::int64_t, int>& tile) { return tile.second == 1; });
    if (path_ != Path::rows || amx_ || depthwise_ || groups_per_panel_ > 1 || phased_ ||
        column_step_ != 1 || pixel_tiles_ || !single_pixel_tiles) {
      return;
    }
    strip_rows_.assign(static_cast<std::size_t>(out_h_), 0);
    for (std::int64_t y = 0; y < out_h_;) {
      std::int64_t end = y + 1;
      while (end < out_h_ && end - y < max_rows_ &&
             row_pattern_[static_cast<std::size_t>(end)] ==
                 row_pattern_[static_cast<std::size_t>(y)]) {
        ++end;
      }
      strip_rows_[static_cast<std::size_t>(y)] = static_cast<std::int32_t>(end - y);
      y = end;
    }
  }

  // Pixel tiles: an image's output pixels in as few tiles of consecutive pixels as max_rows_
  // allows, all as long give or take one (tile k from tile_starts_[k]): a last tile of one or two
  // pixels would wait on its few accumulators' chains of vpdpbusd almost as long as a full tile
  // takes. Per tile, its rows' window origins in tile_origins_ (max_rows_ per tile: input pixels
  // from the image's first; a short tile repeats its last), and −1 where every pixel has every
  // tap, else where its list starts in border_offsets_: per tap of the full pattern and row, the
  // byte offset from the image's first pixel that the row reads, or −1 (a padded tap). Made once:
  // every panel and every call reads the same lists.
  void plan_border_tiles() {
    const auto& d = problem_.desc();
    const auto [first_tap, taps] = pattern_taps_[static_cast<std::size_t>(full_pattern_)];
    const std::int64_t pixels = out_h_ * out_w_;
    const std::int64_t tiles = (pixels + max_rows_ - 1) / max_rows_;
    for (std::int64_t k = 0; k <= tiles; ++k) tile_starts_.push_back(k * pixels / tiles);
    for (std::int64_t k = 0; k < tiles; ++k) {
      const std::int64_t at = tile_starts_[static_cast<std::size_t>(k)];
      const std::int64_t rows = tile_starts_[static_cast<std::size_t>(k) + 1] - at;
      bool padded = false;
      for (std::int64_t i = 0; i < max_rows_; ++i) {
        const std::int64_t y = (at + std::min(i, rows - 1)) / out_w_;
        const std::int64_t x = (at + std::min(i, rows - 1)) % out_w_;
        padded = padded || !full_rows_[static_cast<std::size_t>(y)] ||
                 !full_columns_[static_cast<std::size_t>(x)];
        tile_origins_.push_back((y * stride_h_ - pad_top_) * in_w_ + x * stride_w_ - pad_left_);
      }
      if (!padded) {
        border_tiles_.push_back(-1);
        continue;
      }
      border_tiles_.push_back(static_cast<std::int64_t>(border_offsets_.size()));
      for (std::int32_t k = 0; k < taps; ++k) {
        const auto tap = static_cast<std::size_t>(first_tap + k);
        for (std::int64_t i = 0; i < rows; ++i) {
          const std::int64_t h =
              (at + i) / out_w_ * stride_h_ - pad_top_ + tap_kernel_rows_[tap] * d.dilation_h;
          const std::int64_t w =
              (at + i) % out_w_ * stride_w_ - pad_left_ + tap_columns_[tap] * d.dilation_w;
          const bool inside = h >= 0 && h < in_h_ && w >= 0 && w < in_w_;
          border_offsets_.push_back(inside ? (h * in_w_ + w) * pixel_bytes_ : -1);
        }
      }
    }
  }

 public:
  static bool depthwise(const Problem& problem) {
    const auto& d = problem.desc();
    return d.groups > 1 && d.groups == d.in_channels && d.out_channels == d.in_channels;
  }

  // A transposed convolution with a stride above 1 runs by output phases, depthwise tiles too (on
  // the placed input a 4x4/s2 layer's tiles multiplied 16 taps a pixel, 12 of them holes).
  static bool phased(const Problem& problem) {
    const auto& d = problem.desc();
    return problem.transposed() && (d.stride_h > 1 || d.stride_w > 1);
  }

  // A transposed convolution of stride 1 whose padding is within the kernel's span: the
  // convolution of its input with the flipped kernel, padded by (k − 1)·d − pad before and
  // (k − 1)·d − pad + output_padding after (output y reads input y + pad − r·d with kernel row r,
  // y − ((k − 1)·d − pad) + r'·d with the flipped row r' = k − 1 − r).
  static bool flipped_convolution(const Problem& problem) {
    const auto& d = problem.desc();
    return problem.transposed() && d.stride_h == 1 && d.stride_w == 1 && flipped_pad_top(d) >= 0 &&
           flipped_pad_left(d) >= 0 &&
           (d.kernel_h - 1) * d.dilation_h + d.output_pad_h >= d.pad_bottom &&
           (d.kernel_w - 1) * d.dilation_w + d.output_pad_w >= d.pad_right;
  }
  // A transposed convolution's input offset before its flipped kernel: (k − 1)·d − pad, per axis
  // (the padding before the input in the flipped convolution; its placed copy's offset).
  static std::int64_t flipped_pad_top(const ProblemDesc& d) {
    return (d.kernel_h - 1) * d.dilation_h - d.pad_top;
  }
  static std::int64_t flipped_pad_left(const ProblemDesc& d) {
    return (d.kernel_w - 1) * d.dilation_w - d.pad_left;
  }

  // The axes as the tiles walk them: the input, or its copy with the padding filled (pad 0, the
  // padding part of the extent), or a transposed convolution's input spread out at its stride (an
  // axis of stride 1 with every tap, otherwise taps by output phase: axis_taps.hpp).
  static std::pair<AxisWalk, AxisWalk> walks(const Problem& problem, bool padded_copy) {
    const auto& d = problem.desc();
    if (phased(problem)) {
      return {spread_axis(d.stride_h, d.dilation_h, d.pad_top, d.kernel_h, d.in_height,
                          problem.out_height()),
              spread_axis(d.stride_w, d.dilation_w, d.pad_left, d.kernel_w, d.in_width,
                          problem.out_width())};
    }
    if (flipped_convolution(problem)) {
      return {dense_axis(1, d.dilation_h, flipped_pad_top(d), d.kernel_h, d.in_height),
              dense_axis(1, d.dilation_w, flipped_pad_left(d), d.kernel_w, d.in_width)};
    }
    if (problem.transposed()) {  // stride 1: the input placed with its padding filled
      return {dense_axis(1, d.dilation_h, 0, d.kernel_h,
                         problem.out_height() + (d.kernel_h - 1) * d.dilation_h),
              dense_axis(1, d.dilation_w, 0, d.kernel_w,
                         problem.out_width() + (d.kernel_w - 1) * d.dilation_w)};
    }
    if (padded_copy) {
      return {dense_axis(d.stride_h, d.dilation_h, 0, d.kernel_h,
                         d.in_height + d.pad_top + d.pad_bottom),
              dense_axis(d.stride_w, d.dilation_w, 0, d.kernel_w,
                         d.in_width + d.pad_left + d.pad_right)};
    }
    return {dense_axis(d.stride_h, d.dilation_h, d.pad_top, d.kernel_h, d.in_height),
            dense_axis(d.stride_w, d.dilation_w, d.pad_left, d.kernel_w, d.in_width)};
  }

  // The number of padding patterns times the channels: what plan_patterns() would store.
  static std::int64_t pattern_entries(const Problem& problem) {
    const auto distinct = [](std::int64_t out, const AxisWalk& walk) {
      std::vector<TapRange> seen;
      for (std::int64_t i = 0; i < out; ++i) {
        const TapRange r = axis_taps(i, walk);
        if (std::find(seen.begin(), seen.end(), r) == seen.end()) seen.push_back(r);
        if (seen.size() > 4096) break;
      }
      return static_cast<std::int64_t>(seen.size());
    };
    const auto [row_walk, column_walk] = walks(problem, false);
    return distinct(problem.out_height(), row_walk) * distinct(problem.out_width(), column_walk) *
           round_up(problem.desc().out_channels, kPanelWidth);
  }

 private:
  std::int64_t row_count(std::int64_t batch, int threads) const {
    if (path_ == Path::flat) return flat_tasks(batch * out_h_ * out_w_, threads);
    if (pixel_tiles_) return batch * pixel_tile_chunks(threads);
    return batch * out_h_;
  }

  // The multiply-adds of a call (detail::chunks_per_thread's measure of its length).
  std::int64_t macs(std::int64_t batch) const {
    const auto& d = problem_.desc();
    return batch * out_h_ * out_w_ * out_channels_ * d.kernel_h * d.kernel_w *
           (d.in_channels / d.groups);
  }

  // Whether run() makes an NCHW input NHWC band by band inside the tiles' parallel_for (NhwcBands)
  // rather than whole before it: where the tiles read the input itself (no copy, no widening, no
  // sums of whole pixels) by output rows, pixel tiles, or runs of consecutive pixels.
  bool transposes_bands() const {
    const auto& d = problem_.desc();
    return d.input_layout == Layout::NCHW && !copies_input() && !widened_input() &&
           !pixel_window_sums_ && !amx_ && !phased_ && pixel_bytes_ == channels_ &&
           (path_ == Path::rows || (path_ == Path::flat && !strided_flat()));
  }
  // A flat layer whose output pixels read input pixels at a stride (no dense copy made).
  bool strided_flat() const {
    const auto& d = problem_.desc();
    return (d.stride_h != 1 || d.stride_w != 1) && !compact_copy_;
  }
  // Input rows a window spans.
  std::int64_t window_rows() const {
    const auto& d = problem_.desc();
    return (d.kernel_h - 1) * d.dilation_h + 1;
  }

  // Whether run() copies the input (its chain of copies) before the tiles read it.
  bool copies_input() const {
    return placed_ || padded_copy_ || compact_copy_ || flip_input_ || channel_padded_;
  }
  // Whether an NCHW input is made NHWC and widened in one pass: where the tiles read the whole
  // widened input as it is (no other copy, no per-pixel sums of its bytes).
  bool transposes_into_widened() const {
    return problem_.desc().input_layout == Layout::NCHW && !copies_input() && !transposes_bands() &&
           widened_input() && path_ != Path::im2col && !pixel_window_sums_ &&
           channels_ <= kWidenedTransposeChannels;
  }

  // Everything of one panel that a tile needs, fixed for a run.
  struct PanelRun {
    const RunContext& ctx;
    const StageView& stage;
    const StageView& lane_stage;  // in_lane_epilogue_'s (KernelSet::in_lane_stage), or `stage`
    std::int64_t panel;
    int vectors;
    std::int32_t channels;       // valid output channels in the panel
    std::int64_t first_channel;  // the panel's first output channel
    std::int64_t input_offset;   // its group's first input channel, in bytes into a pixel
    // The input channels [band_channel, + band_channels) its tasks make NHWC in NhwcBands: with
    // pixels outermost all of them (the next panels read the same pixels), else its own (with
    // groups, a thread holds only its panels' channels).
    std::int64_t band_channel, band_channels;
    const std::int32_t* pixel_sums;   // per pixel of the walked tensor, or null (sum_input_pixels)
    const std::uint8_t* padding_row;  // pixel tiles: a row of zero points (zero_point_row)
    bool saturated_high;  // narrowing_saturates_high for this call's stage (once a call)
  };

  void run_row(const RunContext& ctx, const StageView& stage, const StageView& lane_stage,
               const std::int32_t* pixel_sums, const std::uint8_t* padding_row, bool saturated_high,
               std::int64_t panel, std::int64_t row, NhwcBands* bands) const {
    const auto p = static_cast<std::size_t>(panel);
    const std::int64_t input_offset = depthwise_ ? panel * kPanelWidth
                                      : groups_per_panel_ > 1
                                          ? panel * groups_per_panel_ * group_in_
                                          : (panel / panels_per_group_) * group_in_;
    const std::int64_t input_width = depthwise_              ? kPanelWidth
                                     : groups_per_panel_ > 1 ? groups_per_panel_ * group_in_
                                                             : group_in_;
    const PanelRun pr{ctx,
                      stage,
                      lane_stage,
                      panel,
                      panel_vectors_[p],
                      panel_widths_[p],
                      panel_channels_[p],
                      input_offset,
                      pixels_outer_ ? 0 : input_offset,
                      pixels_outer_ ? channels_ : std::min(input_width, channels_ - input_offset),
                      pixel_sums != nullptr
                          ? pixel_sums + panel / panels_per_group_ * walked_pixels(ctx.batch)
                          : nullptr,
                      padding_row,
                      saturated_high};
    if (path_ == Path::flat) {
      const std::int64_t pixels = ctx.batch * out_h_ * out_w_;
      std::int64_t begin = row * flat_chunk();
      std::int64_t end = std::min(pixels, begin + flat_chunk());
      if (flat_run_panels_) {  // flat_tasks' even runs
        const std::int64_t tasks = flat_tasks(pixels, ctx.threads);
        begin = row * pixels / tasks;
        end = (row + 1) * pixels / tasks;
      }
      if (!strided_flat()) {  // pixels are consecutive in the input (or its dense copy) too
        const auto* input = static_cast<const std::uint8_t*>(ctx.input);
        if (bands == nullptr) {
          run_consecutive_pixels(pr, input, 0, begin, end);
          return;
        }
        // Image by image, each from its pixels made NHWC in `bands`.
        const std::int64_t image_pixels = out_h_ * out_w_;
        for (std::int64_t at = begin; at < end;) {
          const std::int64_t n = at / image_pixels, first = n * image_pixels;
          const std::int64_t last = std::min(end, first + image_pixels);
          const std::uint8_t* image =
              bands->pixels(n, at - first, last - first, pr.band_channel, pr.band_channels);
          run_consecutive_pixels(pr, image, first, at, last);
          at = last;
        }
        return;
      }
      const auto& d = problem_.desc();
      // The output pixel's column, row and image, stepped along (divisions per row and panel
      // cost about a tenth of ResNet-50's 56x56 stride-2 1x1 layer).
      std::int64_t x = begin % out_w_, y = begin / out_w_ % out_h_, n = begin / (out_w_ * out_h_);
      even_tiles(begin, end, max_rows_, [&](std::int64_t at, int rows) {
        // A strided 1x1 layer as one GEMM too: each row's input pixel from its own offset, so
        // tiles run across output rows (7x7 outputs make 5- and 6-pixel tiles, not 4 + 3).
        std::int64_t offsets[kMaxInLaneRows];
        std::int32_t sums[kMaxInLaneRows];
        for (int i = 0; i < rows; ++i) {
          const std::int64_t input_pixel =
              (n * d.in_height + y * d.stride_h) * d.in_width + x * d.stride_w;
          offsets[i] = input_pixel * pixel_bytes_;
          if (pr.pixel_sums != nullptr) sums[i] = pr.pixel_sums[input_pixel];
          if (++x == out_w_) {
            x = 0;
            if (++y == out_h_) y = 0, ++n;
          }
        }
        run_tile(pr, static_cast<const std::uint8_t*>(ctx.input), 0, 0, offsets, 0, rows, at,
                 nullptr, pr.pixel_sums != nullptr ? sums : nullptr);
      });
      return;
    }
    if (pixel_tiles_) {
      const std::int64_t tiles = pixel_tile_count();
      const std::int64_t chunks = pixel_tile_chunks(ctx.threads);
      const std::int64_t chunk = row % chunks;
      run_pixels(pr, row / chunks, tiles * chunk / chunks, tiles * (chunk + 1) / chunks, bands);
      return;
    }
    const std::int64_t n = row / out_h_;
    const std::int64_t y = row % out_h_;
    const std::int64_t first_pixel = (n * out_h_ + y) * out_w_;
    if (kernel_row_runs_) {  // the output row's pixels as one flat run, from the padded copy
      const auto& d = problem_.desc();
      const std::int64_t line = in_w_ * channels_;
      run_flat(pr, flat_runs_[static_cast<std::size_t>(pr.vectors)],
               static_cast<const std::uint8_t*>(pr.ctx.input), (n * in_h_ + y * d.stride_h) * line,
               d.stride_w * channels_, first_pixel, out_w_, nullptr, 0,
               {static_cast<std::int32_t>(d.kernel_h), d.dilation_h * line});
      return;
    }
    if (path_ == Path::im2col) {
      // Windows of a run of tiles gathered at once, so that the stores have left before the tiles
      // read them back.
      alignas(64) std::uint8_t gathered[kIm2colBufferBytes + 64];
      alignas(64) std::uint16_t wide[kIm2colBufferBytes + 64];  // with input_widening 2
      std::int32_t gathered_sums[kIm2colBufferBytes / 4];       // with pixel_window_sums_
      const std::int64_t per_gather =
          std::max<std::int64_t>(kMaxAmxBlock, kIm2colBufferBytes / im2col_stride());
      for (std::size_t first = 0; first < column_tiles_.size();) {
        const std::int64_t x0 = column_tiles_[first].first;
        std::size_t last = first;
        while (last < column_tiles_.size() &&
               column_tiles_[last].first + column_tiles_[last].second - x0 <= per_gather) {
          ++last;
        }
        const std::int64_t pixels =
            column_tiles_[last - 1].first + column_tiles_[last - 1].second - x0;
        gather(ctx, n, y, x0, static_cast<int>(pixels), gathered);
        // A gathered row is a whole window (zeros after it): its sum is the window sum.
        std::int32_t* row_sums = nullptr;
        if (pixel_window_sums_) {
          row_sums = gathered_sums;
          kernels_.sum_pixels(gathered, pixels, im2col_stride(), im2col_stride(), row_sums);
        }
        const std::uint8_t* rows_in = gathered;
        if (widened_input()) {  // the tiles read it as u16, with zeros after it
          const std::int64_t bytes = pixels * im2col_stride();
          widen_bytes(gathered, bytes, wide);
          std::fill(wide + bytes, wide + bytes + 32, std::uint16_t{0});
          rows_in = reinterpret_cast<const std::uint8_t*>(wide);
        }
        if (const FlatRunKernel run = flat_runs_[static_cast<std::size_t>(pr.vectors)]) {
          run_flat(pr, run, rows_in, 0, im2col_stride(), first_pixel + x0, pixels, row_sums);
          first = last;
          continue;
        }
        for (std::size_t t = first; t < last; ++t) {
          const auto [x, rows] = column_tiles_[t];
          run_tile(pr, rows_in, (x - x0) * im2col_stride(), im2col_stride(), nullptr, 0, rows,
                   first_pixel + x, nullptr, row_sums != nullptr ? row_sums + (x - x0) : nullptr);
        }
        first = last;
      }
      return;
    }
    if (phase_runs_) {
      if (const FlatRunKernel run = flat_runs_[static_cast<std::size_t>(pr.vectors)]) {
        run_phase_runs(pr, run, n, y, first_pixel);
        return;
      }
    }
    // The tiles read image n by offsets from `input`, from pixel `image_first` on: in the walked
    // tensor, or in `bands`, where the row's input rows are made NHWC first.
    const auto* input = static_cast<const std::uint8_t*>(ctx.input);
    std::int64_t image_first = n * in_h_ * in_w_;
    if (bands != nullptr) {
      const std::int64_t top = y * stride_h_ - pad_top_;
      input = bands->pixels(n, top * in_w_, (top + window_rows()) * in_w_, pr.band_channel,
                            pr.band_channels);
      image_first = 0;
    }
    const std::int64_t origin_row = image_first + (y * stride_h_ - pad_top_) * in_w_;
    // Column strips (plan_column_strips) where the tiles read whole images (not a band's rows).
    const bool strips = !strip_rows_.empty() && bands == nullptr;
    for (std::size_t t = 0; t < column_tiles_.size(); ++t) {
      auto [x, rows] = column_tiles_[t];
      const std::int64_t pattern =
          row_pattern_[static_cast<std::size_t>(y)] * column_kinds_ + column_pattern_[t];
      // In pixels: the window origin, or by phase the pixel the pattern's first tap reads.
      const std::int64_t origin =
          phased_ ? phase_origin(n, y, x, pattern) : origin_row + x * stride_w_ - pad_left_;
      // Between the tile's rows, in pixels (by phase: consecutive input pixels), and between their
      // output pixels.
      std::int64_t step = phased_ ? 1 : stride_w_ * column_step_;
      std::int64_t output_step = column_step_;
      if (strips && rows == 1) {  // this row's strip down the column, or none (a row above's)
        rows = strip_rows_[static_cast<std::size_t>(y)];
        if (rows == 0) continue;
        step = stride_h_ * in_w_;
        output_step = out_w_;
      }
      std::int32_t sums[kMaxAmxRows];
      if (pr.pixel_sums != nullptr && row_runs_) {  // run sums are [input row][out_w]
        sum_windows(pr.pixel_sums, (n * in_h_ + y * stride_h_) * out_w_ + x, column_step_, pattern,
                    rows, sums);
      } else if (pr.pixel_sums != nullptr) {
        sum_windows(pr.pixel_sums, origin, step, pattern, rows, sums);
      }
      run_tile(pr, input, origin * pixel_bytes_, step * pixel_bytes_, nullptr, pattern, rows,
               first_pixel + x, nullptr, pr.pixel_sums != nullptr ? sums : nullptr, output_step);
    }
  }

  // Output pixels [begin, end) of a flat layer (a 1x1 layer, stride 1 or its input made dense),
  // each reading the input pixel of its own index, pixel p at input + (p − first)·pixel_bytes_.
  void run_consecutive_pixels(const PanelRun& pr, const std::uint8_t* input, std::int64_t first,
                              std::int64_t begin, std::int64_t end) const {
    if (const FlatRunKernel run = flat_runs_[static_cast<std::size_t>(pr.vectors)]) {
      run_flat(pr, run, input, (begin - first) * pixel_bytes_, pixel_bytes_, begin, end - begin,
               pr.pixel_sums != nullptr ? pr.pixel_sums + begin : nullptr);
      return;
    }
    // Row i reads pixel at + i alone: its window sum is that pixel's. (The tiles take offsets
    // from `input`, which they scale themselves where they read it widened.)
    const auto sums_at = [&](std::int64_t at) {
      return pr.pixel_sums != nullptr ? pr.pixel_sums + at : nullptr;
    };
    std::int64_t at = begin;
    while (amx_ && end - at >= kMinAmxRows) {  // AMX blocks first, where the plan has them
      const int rows = static_cast<int>(std::min<std::int64_t>(kMaxAmxBlock, end - at));
      run_tile(pr, input, (at - first) * pixel_bytes_, pixel_bytes_, nullptr, 0, rows, at, nullptr,
               sums_at(at));
      at += rows;
    }
    even_tiles(at, end, max_rows_, [&](std::int64_t from, int rows) {
      run_tile(pr, input, (from - first) * pixel_bytes_, pixel_bytes_, nullptr, 0, rows, from,
               nullptr, sums_at(from));
    });
  }

  // Output row y of image n (its first pixel first_pixel) of a layer with phase runs: a flat run
  // per column run, over the consecutive input pixels it reads.
  void run_phase_runs(const PanelRun& pr, FlatRunKernel run, std::int64_t n, std::int64_t y,
                      std::int64_t first_pixel) const {
    const auto* input = static_cast<const std::uint8_t*>(pr.ctx.input);
    const std::int64_t row_pattern = row_pattern_[static_cast<std::size_t>(y)] * column_kinds_;
    for (const ColumnRun& c : column_runs_) {
      const std::int64_t pattern = row_pattern + c.kind;
      const std::int64_t origin = phase_origin(n, y, c.x, pattern);
      run_flat(pr, run, input, origin * pixel_bytes_, pixel_bytes_, first_pixel + c.x, c.pixels,
               pr.pixel_sums != nullptr ? pr.pixel_sums + origin : nullptr, pattern);
    }
  }

  // The input pixel that output pixel (n, y, x) reads with the first tap of its pattern (0 when the
  // pattern has no tap: then nothing is read).
  std::int64_t phase_origin(std::int64_t n, std::int64_t y, std::int64_t x,
                            std::int64_t pattern) const {
    const auto& d = problem_.desc();
    const TapRange& rows = row_taps_[static_cast<std::size_t>(pattern / column_kinds_)];
    const TapRange& columns = column_taps_[static_cast<std::size_t>(pattern % column_kinds_)];
    if (rows.count() == 0 || columns.count() == 0) return 0;
    const std::int64_t h = (y + rows.begin * d.dilation_h - flipped_pad_top(d)) / d.stride_h;
    const std::int64_t w = (x + columns.begin * d.dilation_w - flipped_pad_left(d)) / d.stride_w;
    return (n * in_h_ + h) * in_w_ + w;
  }

  // Pixel tiles (plan_patterns): tiles [begin, end) of image n (plan_border_tiles), each up to
  // max_rows consecutive pixels on the full pattern. A tile whose pixels all have every tap reads
  // them at their own offsets; one with padded pixels reads the offsets plan_border_tiles() listed
  // per tap and row, the padded taps the zero-point row.
  void run_pixels(const PanelRun& pr, std::int64_t n, std::int64_t begin, std::int64_t end,
                  NhwcBands* bands) const {
    const std::int64_t pixels = out_h_ * out_w_;
    const std::int64_t image_pixels = in_h_ * in_w_;
    // The tiles read image n at `image` and, by offsets from `input`, from pixel `image_first`
    // on: in the walked tensor, or in `bands`, where the tiles' input rows are made NHWC first.
    const auto* input = static_cast<const std::uint8_t*>(pr.ctx.input);
    std::int64_t image_first = n * image_pixels;
    if (bands != nullptr) {  // the input rows of output rows y0 to y1
      const std::int64_t y0 = tile_starts_[static_cast<std::size_t>(begin)] / out_w_;
      const std::int64_t y1 = (tile_starts_[static_cast<std::size_t>(end)] - 1) / out_w_;
      input = bands->pixels(n, (y0 * stride_h_ - pad_top_) * in_w_,
                            (y1 * stride_h_ - pad_top_ + window_rows()) * in_w_, pr.band_channel,
                            pr.band_channels);
      image_first = 0;
    }
    const std::uint8_t* image = input + image_first * pixel_bytes_;
    for (std::int64_t tile = begin; tile < end; ++tile) {
      const std::int64_t at = tile_starts_[static_cast<std::size_t>(tile)];
      const int rows = static_cast<int>(tile_starts_[static_cast<std::size_t>(tile) + 1] - at);
      const std::int64_t listed = border_tiles_[static_cast<std::size_t>(tile)];
      std::int32_t sums[kMaxInLaneRows];
      std::int32_t* window_sums = pr.pixel_sums != nullptr ? sums : nullptr;
      if (listed < 0) {
        std::int64_t offsets[kMaxInLaneRows];
        const std::int64_t* origins = tile_origins_.data() + tile * max_rows_;
        for (int i = 0; i < rows; ++i) {
          const std::int64_t origin = image_first + origins[i];  // the window's first pixel
          offsets[i] = origin * pixel_bytes_;
          if (window_sums != nullptr)
            sum_windows(pr.pixel_sums, origin, 1, full_pattern_, 1, sums + i);
        }
        run_tile(pr, input, 0, 0, offsets, full_pattern_, rows, n * pixels + at, nullptr,
                 window_sums);
        continue;
      }
      const std::int64_t* tap_row_offsets = border_offsets_.data() + listed;
      if (window_sums != nullptr) {
        // A tap on the zero-point row reads tap_bytes_ bytes of zx.
        const auto padded_sum = static_cast<std::uint32_t>(pr.ctx.input_zero_point * tap_bytes_);
        std::uint32_t padded_sums[kMaxInLaneRows] = {};
        const std::int32_t taps = pattern_taps_[static_cast<std::size_t>(full_pattern_)].second;
        for (std::int32_t k = 0; k < taps; ++k) {
          for (int i = 0; i < rows; ++i) {
            const std::int64_t offset = tap_row_offsets[k * rows + i];
            padded_sums[i] += offset >= 0
                                  ? static_cast<std::uint32_t>(
                                        pr.pixel_sums[n * image_pixels + offset / pixel_bytes_])
                                  : padded_sum;
          }
        }
        for (int i = 0; i < rows; ++i) sums[i] = static_cast<std::int32_t>(padded_sums[i]);
      }
      run_tile(pr, image, 0, 0, nullptr, full_pattern_, rows, n * pixels + at, tap_row_offsets,
               window_sums);
    }
  }

  // The calling thread's row of zero-point bytes (one pixel's channels, plus the slack of a
  // whole-vector read), filled for this call's zero point.
  const std::uint8_t* zero_point_row(const RunContext& ctx) const {
    thread_local AlignedVector<std::uint8_t> row;
    thread_local int value = -1;
    const auto bytes = static_cast<std::size_t>(pixel_bytes_ + 64);
    if (row.size() < bytes || value != ctx.input_zero_point) {
      if (row.size() < bytes) row.resize(bytes);
      std::fill(row.begin(), row.end(), static_cast<std::uint8_t>(ctx.input_zero_point));
      value = ctx.input_zero_point;
    }
    return row.data();
  }

  static constexpr std::int64_t kMaxIm2colBytes = 1024;          // one window, C_in * kh * kw
  static constexpr std::int64_t kIm2colBufferBytes = 32 * 1024;  // at least 32 rows of 1024
  // An im2col row on AMX: whole chunks, of 32 bytes for a window within 32 (half the gathered
  // bytes for the same single tile multiply), else of 64 (fewer tile multiplies).
  std::int64_t im2col_stride() const {
    if (!amx_) return round_up(tap_bytes_, 4);
    return tap_bytes_ <= 32 ? 32 : round_up(tap_bytes_, 64);
  }
  // Whether a first layer runs as kernel-row runs: its windows' kernel rows read in place from a
  // padded copy of the input, each row's kw·C bytes from their first one in whole K steps (the
  // weights zero past them), instead of gathering each pixel's window into a row (im2col). Its
  // K steps are kh·ceil(kw·C / 4) against im2col's ceil(kh·kw·C / 4), but nothing is gathered:
  // the gather cost as much as the multiplies of a 3x3 layer of 3 channels into 16 (per output
  // row of 32 pixels, its borders' and set-up's fixed costs). Not with a weight zero point (the
  // steps' bytes past a row would count in its window sums) nor a column dilation (a kernel row's
  // taps not contiguous); every panel width must have flat runs (K within
  // kFlatRunFullPanelBelowK).
  bool kernel_row_runs(const Problem& problem, const KernelSet& kernels) const {
    const auto& d = problem.desc();
    if (path_ != Path::im2col || amx_ || !kernel_row_runs_allowed(problem, kernels)) return false;
    // A layer of 8 or more channels is on this path as kernel-row runs (kernel_rows_beat_taps).
    if (channels_ >= kIm2colBelowChannels) return true;
    // Where they multiply more than a fifth more (3 channels, 3x3: 9 steps against 7), only
    // where the gather costs the more: a kernel set that widens what it gathers, one vector of
    // output channels (each gathered window feeds few multiplies), outputs up to 32 wide (the
    // gather's fixed costs per output row). Measured on an AMD Zen 4 (avx512_vnni, against
    // im2col): ResNet-50's 7x7/s2 0.93x the time; 3x3/s2 3 -> 32 at 224x224 1.10x (so left to
    // im2col), 3 -> 64 at 64x64 1.05x; 3 -> 16 at 32x32 0.79x; 1 -> 32 at 28x28 0.62x.
    const std::int64_t im2col_steps = (d.kernel_h * d.kernel_w * channels_ + 3) / 4;
    return 5 * d.kernel_h * kernel_row_steps() <= 6 * im2col_steps || kernels.input_widening == 2 ||
           d.out_channels <= 16 || problem.out_width() <= 32;
  }
  // Whether the layer may run as kernel-row runs at all (the vpdpbusd engines; for the reasons
  // above): a flat run for every panel width (this stage and dtype) and K within them, no weight
  // zero point, no column dilation.
  bool kernel_row_runs_allowed(const Problem& problem, const KernelSet& kernels) const {
    const auto& d = problem.desc();
    if (kernels.flat_run == nullptr || d.dilation_w != 1 ||
        d.kernel_h * kernel_row_steps() * 4 >= kFlatRunFullPanelBelowK ||
        d.kernel_h * kernel_row_steps() > kMaxKernelRowSteps) {
      return false;
    }
    for (int v = 1; v <= 4; ++v) {
      if (kernels.flat_run(d.scheme.kind, d.output_dtype, v) == nullptr) return false;
    }
    return symmetric_weights(problem);
  }
  // Whether a k x k layer of 8 or more input channels runs as kernel-row runs instead of the
  // implicit GEMM's tap tiles: with few channels those tiles' taps are a K step or two each, their
  // fixed costs and the epilogue's pass over their stored sums most of the time, where a flat run
  // takes each kernel row's kw·C bytes in one run (never more K steps than the taps' C/4 each) and
  // the output stage from the registers. Below 16 channels, and up to 31 with up to 32 output
  // channels where an output row is 28 pixels or more (narrower ones run the tap tiles across rows
  // as pixel tiles, which do better). On an AMD Zen 4 (avx512_vnni, against the tap tiles):
  // 3x3 8 -> 16 at 56x56 0.47x the time, 8 -> 128 0.80-0.86x, 10 -> 16 at 64x64 0.54x, 16 -> 16
  // at 56x56 0.75x, 24 -> 16 0.83x; 16 -> 32 at 14x14 1.40x, 32 -> 32 at 56x56 stride 2 1.06x.
  bool kernel_rows_beat_taps(const Problem& problem, const KernelSet& kernels) const {
    const auto& d = problem.desc();
    if (channels_ >= 32 || !kernel_row_runs_allowed(problem, kernels)) return false;
    return channels_ < 16 || (d.out_channels <= 32 && problem.out_width() >= 28);
  }
  // K steps of one kernel row's run (kernel-row runs).
  std::int64_t kernel_row_steps() const { return (problem_.desc().kernel_w * channels_ + 3) / 4; }
  // The K bytes of an AMX block's tile loads: 64 where a tap's bytes allow, else 32.
  std::int32_t amx_chunk() const { return amx_tap_bytes() % 64 == 0 ? 64 : 32; }
  // Bytes an AMX block reads per tap and row: a tap's, or (row runs) a kernel row's.
  std::int64_t amx_tap_bytes() const {
    return row_runs_ ? problem_.desc().kernel_w * tap_bytes_ : tap_stride();
  }
  // Bytes of input a tap reads per row, as the kernels see them (an im2col row: its whole stride,
  // zeros after the window).
  std::int64_t tap_stride() const {
    if (kernel_row_runs_) return steps_ * 4;
    return path_ == Path::im2col ? im2col_stride() : tap_bytes_;
  }

 public:
  static bool im2col_fits(std::int64_t bytes) { return round_up(bytes, 4) <= kMaxIm2colBytes; }

 private:
  // Output pixels (n, y, x .. x + rows) as rows of [kh][kw][C] bytes, the padding holding zx.
  void gather(const RunContext& ctx, std::int64_t n, std::int64_t y, std::int64_t x, int rows,
              std::uint8_t* out) const {
    const auto& d = problem_.desc();
    kernels_.gather_windows({static_cast<const std::uint8_t*>(ctx.input), out, im2col_stride(), n,
                             y, x, rows, channels_, d.in_height, d.in_width, d.kernel_h, d.kernel_w,
                             d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, d.pad_top,
                             d.pad_left, static_cast<std::uint8_t>(ctx.input_zero_point)});
  }

  // Output pixels first_pixel .. first_pixel + pixels − 1 as one flat run whose rows are at `rows`
  // (a pixel's input, or its gathered window), row_bytes apart; window_sums: their sums of bytes,
  // with a weight zero point.
  // A flat run of pattern `pattern`'s one tap (a 1x1 unpadded layer, or an im2col run, has only
  // pattern 0; a transposed layer's phase runs, one per phase).
  // A flat run of `pixels` rows of `row_bytes` bytes, the first at byte `offset` of `rows` (offsets
  // and strides as in the unwidened input: a widened copy's are twice them).
  // kernel_rows: a first layer's kernel rows (kernel-row runs).
  void run_flat(const PanelRun& pr, FlatRunKernel run, const std::uint8_t* rows,
                std::int64_t offset, std::int64_t row_bytes, std::int64_t first_pixel,
                std::int64_t pixels, const std::int32_t* window_sums, std::int64_t pattern = 0,
                KernelRows kernel_rows = {}) const {
    const std::size_t element = element_size(problem_.desc().output_dtype);
    const std::int64_t tap = pattern_taps_[static_cast<std::size_t>(pattern)].first;
    // An im2col row is zero from its window's end to a multiple of 4 bytes (and the weights past
    // K are 0): its last K step reads whole, no masked load for the window's last 1 to 3 bytes.
    // A kernel-row run's last step reads the next pixel's bytes (or the copy's added columns).
    std::int64_t channels = path_ == Path::im2col ? round_up(tap_bytes_, 4) : tap_bytes_;
    if (kernel_row_runs_) channels = 4 * kernel_row_steps();
    const std::int64_t widening = widened_input() ? 2 : 1;
    run({rows + widening * (offset + pr.input_offset), widening * row_bytes,
         static_cast<std::int32_t>(pixels), static_cast<std::int32_t>(channels),
         panel_weights(static_cast<std::size_t>(pr.panel)) +
             tap_steps_[static_cast<std::size_t>(tap)] * pr.vectors * 64 * weight_widening(),
         // The constant term of the pattern, as run_tile's.
         pr.ctx.input_zero_point != 0
             ? pattern_sums_.data() + pattern * padded_channels_ + pr.panel * kPanelWidth
             : nullptr,
         pr.ctx.input_zero_point, pr.channels, pr.first_channel,
         static_cast<std::byte*>(pr.ctx.output) +
             static_cast<std::size_t>(first_pixel * out_channels_ + pr.first_channel) * element,
         out_channels_ * column_step_, window_sums, zero_points_.data() + pr.panel * kPanelWidth,
         uniform_zero_point_, pr.saturated_high, kernel_rows.count,
         widening * kernel_rows.row_bytes},
        pr.stage);
  }

  // Where a tile of `rows` pixels from first_pixel, output_step pixels apart (0: column_step_),
  // writes panel pr's channels, its sums in `acc`.
  TileOutput tile_output(const PanelRun& pr, std::int32_t* acc, int rows, std::int64_t first_pixel,
                         const std::int32_t* window_sums, const std::int32_t* channel_terms,
                         std::int64_t output_step = 0) const {
    const std::size_t element = element_size(problem_.desc().output_dtype);
    return {acc,
            rows,
            pr.channels,
            pr.first_channel,
            window_sums,
            zero_points_.data() + pr.panel * kPanelWidth,  // slots for the panel's channels
            uniform_zero_point_,
            static_cast<std::byte*>(pr.ctx.output) +
                static_cast<std::size_t>(first_pixel * out_channels_ + pr.first_channel) * element,
            out_channels_ * (output_step != 0 ? output_step : column_step_),
            channel_terms,
            pr.saturated_high};
  }

  void run_tile(const PanelRun& pr, const std::uint8_t* input, std::int64_t origin,
                std::int64_t row_stride, const std::int64_t* row_offsets, std::int64_t pattern,
                int rows, std::int64_t first_pixel, const std::int64_t* tap_row_offsets = nullptr,
                const std::int32_t* row_window_sums = nullptr, std::int64_t output_step = 0) const {
    alignas(64) std::int32_t acc[kMaxAmxRows * kPanelWidth];
    alignas(64) std::int32_t terms[kPanelWidth];  // an AMX block's constant term
    const std::int32_t* channel_terms = nullptr;
    std::int32_t window_sums[kMaxAmxRows];
    const auto p = static_cast<std::size_t>(pr.panel);
    const auto [first_tap, taps] = pattern_taps_[static_cast<std::size_t>(pattern)];
    const std::int64_t origin_in_pixel = origin + pr.input_offset;
    // The tiles sum their windows' bytes, unless the caller added them up (pixel_window_sums_).
    std::int32_t* sums = needs_window_sums_ && !pixel_window_sums_ ? window_sums : nullptr;
    // The constant term −zx·Σ(w' − zw') over this pattern's taps starts the sums.
    const std::int32_t* zero_point_sums =
        pr.ctx.input_zero_point != 0
            ? pattern_sums_.data() + pattern * padded_channels_ + pr.panel * kPanelWidth
            : nullptr;
    // An in-lane grouped tile's full panel leaves its sums in lane order for in_lane_epilogue_.
    const bool lane_order =
        in_lane_epilogue_ != nullptr && rows <= max_rows_ && pr.channels == kPanelWidth;
    if (depthwise_) {  // (x − zx)(w − zw) directly: the sum is already exact
      const std::int64_t pairs = (taps + 1) / 2;
      const DepthwiseTile tile{input,
                               origin_in_pixel,
                               row_stride,
                               tap_offsets_.data() + first_tap,
                               taps,
                               pr.channels,
                               rows,
                               depthwise_pairs_.data() +
                                   pattern_pair_offsets_[static_cast<std::size_t>(pattern)] +
                                   pr.panel * pairs * kPanelWidth * 2,
                               pr.ctx.input_zero_point,
                               acc,
                               zero_point_sums};
      if (depthwise_output_ != nullptr) {  // through the stage from the registers
        depthwise_output_(tile, tile_output(pr, acc, rows, first_pixel, nullptr, nullptr),
                          pr.stage);
        return;
      }
      kernels_.depthwise_tile(tile);
    } else if (rows > max_rows_) {
      kernels_.amx_block({input, origin_in_pixel, row_stride,
                          row_runs_ ? row_run_offsets_.data() : tap_offsets_.data() + first_tap,
                          row_runs_ ? row_run_steps_.data() : tap_steps_.data() + first_tap,
                          row_runs_ ? static_cast<std::int32_t>(row_run_offsets_.size()) : taps,
                          static_cast<std::int32_t>(amx_tap_bytes() / amx_chunk()), amx_chunk(),
                          rows, packed_.data() + panel_offsets_[p], zero_point_sums,
                          pr.ctx.input_zero_point, acc, pr.vectors, terms});
      if (zero_point_sums != nullptr) channel_terms = terms;
    } else if (groups_per_panel_ > 1) {
      const std::int64_t groups = pr.channels / group_out_;
      const GroupedTile tile{
          {input, origin_in_pixel, row_stride, row_offsets, tap_offsets_.data() + first_tap,
           tap_steps_.data() + first_tap, taps, static_cast<std::int32_t>(steps_),
           static_cast<std::int32_t>(group_in_), pr.vectors, panel_weights(p), zero_point_sums,
           pr.ctx.input_zero_point, acc, nullptr, tap_row_offsets, pr.padding_row, rows},
          lane_dwords_.data(),
          static_cast<std::int32_t>(groups * group_in_),
          zero_points_.data() + pr.panel * kPanelWidth,
          lane_order};
      if (lane_order && in_lane_output_ != nullptr) {  // through the stage from the registers
        in_lane_output_(tile, tile_output(pr, acc, rows, first_pixel, nullptr, nullptr),
                        pr.lane_stage);
        return;
      }
      if (grouped_output_ != nullptr) {  // through the stage from the registers
        grouped_output_(tile, tile_output(pr, acc, rows, first_pixel, nullptr, nullptr), pr.stage);
        return;
      }
      kernels_.grouped_tile(rows, pr.vectors, needs_window_sums_, grouped_lanes_)(tile);
      sums = nullptr;  // the grouped tile took zw'·Σx off itself
    } else {
      const GemmTile tile{input,
                          origin_in_pixel,
                          row_stride,
                          row_offsets,
                          tap_offsets_.data() + first_tap,
                          tap_steps_.data() + first_tap,
                          taps,
                          static_cast<std::int32_t>(steps_),
                          static_cast<std::int32_t>(tap_stride()),
                          pr.vectors,
                          panel_weights(p),
                          zero_point_sums,
                          pr.ctx.input_zero_point,
                          acc,
                          sums,
                          tap_row_offsets,
                          pr.padding_row,
                          rows};
      if (gemm_output_ != nullptr) {  // through the stage from the registers
        gemm_output_(tile, tile_output(pr, acc, rows, first_pixel, nullptr, nullptr, output_step),
                     pr.stage);
        return;
      }
      kernels_.gemm_tile(rows, pr.vectors)(tile);
    }

    const RunContext& ctx = pr.ctx;
    const std::int32_t* row_sums = pixel_window_sums_ ? row_window_sums : sums;
    const std::int64_t channel = pr.first_channel;
    const TileOutput out =
        tile_output(pr, acc, rows, first_pixel, row_sums, channel_terms, output_step);
    if (lane_order) {
      in_lane_epilogue_(out, pr.lane_stage);
      return;
    }
    if (epilogue_ != nullptr) {
      epilogue_(out, pr.stage);
      return;
    }
    kernels_.correct_tile(out);
    // No vector form for this (scheme, dtype): the scalar output stage, element by element.
    auto* o = static_cast<std::int32_t*>(out.output);
    for (int i = 0; i < rows; ++i) {
      for (std::int32_t c = 0; c < pr.channels; ++c) {
        o[i * out.output_row_stride + c] = ctx.stage.apply(acc[i * kPanelWidth + c], channel + c);
      }
    }
  }

 public:
  // A kernel with more taps runs on the reference engine: it bounds the plan's per-pattern tap
  // lists.
  static constexpr std::int32_t kMaxTaps = 1024;
  // Pixel tiles (run_pixels) for kernels of at most this many taps: each border tile lists an
  // offset per tap and row (border_offsets_).
  static constexpr std::int64_t kMaxRedirectedTaps = 64;
  static constexpr int kMaxAmxRows = kMaxAmxBlock;
  static_assert(kMaxDepthwiseOutputRows <= kMaxAmxRows, "run_tile's buffers hold a tile's rows");

 private:
  std::int64_t flat_chunk() const {
    return flat_run_panels_ ? kFlatRunChunk : kFlatChunkTiles * max_rows_;
  }
  // A flat layer's tasks per panel: chunks of flat_chunk() pixels; with flat runs (which take any
  // run of pixels) as many as a whole number per thread needs, all as long give or take one (196
  // pixels on 2 threads as 98 + 98, not 192 + 4; 784 as 6 x 130-131, not 4 x 192 + 16, where each
  // thread took half the work only by luck). The bits do not depend on where runs begin.
  std::int64_t flat_tasks(std::int64_t pixels, int threads) const {
    const std::int64_t chunks = (pixels + flat_chunk() - 1) / flat_chunk();
    if (!flat_run_panels_ || threads <= 1) return chunks;
    return std::min(pixels, (chunks + threads - 1) / threads * threads);
  }
  // The busiest of `threads` threads' share of a batch-1 call's work, in percent, tasks in either
  // order, were the threads to keep to their home chunks (tasks weighted by their panel's
  // vectors): the share of a call of one chunk per thread, whose threads take nothing from each
  // other's. 0 when the call has more chunks.
  std::int64_t busiest_share(bool pixels_outer, int threads) const {
    if (chunks_per_thread(macs(1), threads) != 1) return 0;
    const std::int64_t rows = row_count(1, threads), count = panels_ * rows;
    std::int64_t total = 0, busiest = 0;
    for (int t = 0; t < threads; ++t) {
      std::int64_t share = 0;
      for (std::int64_t task = count * t / threads; task < count * (t + 1) / threads; ++task) {
        share +=
            panel_vectors_[static_cast<std::size_t>(pixels_outer ? task % panels_ : task / rows)];
      }
      total += share;
      busiest = std::max(busiest, share);
    }
    return total > 0 ? busiest * 100 / total : 0;
  }
  // Pixel tiles: per image, and per task (a flat chunk's worth).
  std::int64_t pixel_tile_count() const {
    return static_cast<std::int64_t>(tile_starts_.size()) - 1;
  }
  std::int64_t chunk_tiles() const { return flat_chunk() / max_rows_; }
  // An image's chunks of pixel tiles (tasks per panel): of at most chunk_tiles() tiles, as even as
  // possible (66 tiles: 14,13,13,13,13, not four of 16 and one of 2: the threads take whole
  // tasks). Where that leaves fewer tasks than threads (a 7x7 layer of 64 channels: one panel, 9
  // tiles, one chunk), one per thread if the layer has kMinSplitMacs for each; where it leaves a
  // few tasks that the threads cannot share evenly (a 14x14 one: 33 tiles, 3 chunks, 2 for one
  // thread and 1 for the other), as many more as make them a multiple of the threads.
  std::int64_t pixel_tile_chunks(int threads) const {
    const std::int64_t tiles = pixel_tile_count();
    std::int64_t chunks = (tiles + chunk_tiles() - 1) / chunk_tiles();
    if (threads <= 1 || macs(1) / kMinSplitMacs < 2) return chunks;
    if (panels_ * chunks < threads) {
      const std::int64_t worth = std::min<std::int64_t>(threads, macs(1) / kMinSplitMacs);
      chunks = std::max(chunks, (worth + panels_ - 1) / panels_);
    }
    if (panels_ * chunks < kMaxBalancedTasks * threads) {
      while ((panels_ * chunks) % threads != 0 && chunks < tiles) ++chunks;
    }
    return std::min(chunks, tiles);
  }
  // The GEMM tiles read the input as u16 (KernelSet::input_widening); depthwise tiles never.
  bool widened_input() const { return kernels_.input_widening == 2 && !depthwise_; }
  // Panel p's weights as the GEMM and grouped tiles take them: packed, or the kernel set's wider
  // form (KernelSet::weight_widening).
  const std::int8_t* panel_weights(std::size_t p) const {
    return widened_.empty() ? packed_.data() + panel_offsets_[p]
                            : widened_.data() + panel_offsets_[p] * weight_widening();
  }
  // Bytes of the tiles' weights per packed byte (1 where they take the common form).
  std::int64_t weight_widening() const { return widened_.empty() ? 1 : kernels_.weight_widening; }

  const KernelSet& kernels_;
  int max_rows_;
  std::int32_t shift_ = 0;  // w' = w − shift_
  Problem problem_;
  Path path_ = Path::rows;
  bool flip_input_ = false;
  bool transposed_ = false;
  std::int64_t stride_h_ = 1, stride_w_ = 1;  // the tiles' strides (1 for a spread-out input)
  bool depthwise_ = false;
  // Tasks ordered pixels (rows) first, then panels: see the constructor.
  bool pixels_outer_ = false;
  AlignedVector<std::int32_t> depthwise_weights_;  // w − zw, [block][tap][64] (preparation only)
  AlignedVector<std::int16_t> depthwise_pairs_;    // per pattern: [block][pair][64][2]
  std::vector<std::int64_t> pattern_pair_offsets_;
  std::vector<std::byte> depthwise_canonical_;  // an s8 input, run as u8 from a copy
  bool needs_window_sums_ = false;
  bool pixel_window_sums_ = false;        // the window sums from per-pixel sums (sum_input_pixels)
  std::vector<std::int64_t> tap_pixels_;  // per listed tap: tap_offsets_ in pixels
  bool amx_ = false;
  bool padded_copy_ = false;
  // AMX on channels padded to a multiple of 64 in every copy: pixel_bytes_ bytes per pixel.
  bool channel_padded_ = false;
  std::int64_t pixel_bytes_ = 0;  // a pixel's bytes in the tensor the tiles read
  bool compact_copy_ = false;
  // AMX blocks take each kernel row as one tap (a run of its taps' bytes), listed here: per kernel
  // row its offset from a window origin and its first packed K step. With a weight zero point
  // the pixel sums are those runs' sums, for the runs windows start (sum_input_pixels).
  bool row_runs_ = false;
  bool kernel_row_runs_ = false;  // kernel_row_runs()
  std::vector<std::int64_t> row_run_offsets_, row_run_steps_;
  std::vector<std::int64_t> row_run_sums_;  // per kernel row: its run's sum from a window's
  // The input geometry the tiles walk: the problem's, or its padded copy's (no padding left).
  std::int64_t in_h_ = 0, in_w_ = 0, pad_top_ = 0, pad_left_ = 0;
  bool uniform_zero_point_ = true;  // one zw' for every channel
  std::int64_t channels_ = 0, out_channels_ = 0, out_h_ = 0, out_w_ = 0;
  std::int64_t tap_bytes_ = 0, steps_ = 0, taps_ = 0;
  std::int64_t panels_ = 0, padded_channels_ = 0;
  std::int64_t groups_ = 1, group_in_ = 0, group_out_ = 0, panels_per_group_ = 0;
  // Groups side by side in one panel (grouped tiles), or 1: each group has panels of its own.
  std::int64_t groups_per_panel_ = 1;
  GroupedLanes grouped_lanes_ = GroupedLanes::gathered;
  WidenBytes widen_ = &widen_bytes;  // with input_widening 2: the widened copy's order
  AlignedVector<std::int32_t> lane_dwords_ = AlignedVector<std::int32_t>(kPanelWidth, 0);
  std::vector<std::int32_t> panel_widths_;    // valid output channels of each panel
  std::vector<std::int64_t> panel_channels_;  // each panel's first output channel
  UninitializedAlignedVector<std::int8_t> packed_;
  // Or the kernel set's wider form of it (packed_ freed), every byte written by widen_weights.
  UninitializedAlignedVector<std::int8_t> widened_;
  std::vector<std::int64_t> panel_offsets_;
  std::vector<int> panel_vectors_;
  AlignedVector<std::int32_t> zero_points_;  // zw' per channel
  std::vector<std::int32_t> tap_sums_;  // Σ_c (w' − zw') per tap and channel (preparation only)
  std::vector<std::int64_t> abs_weight_sums_;  // per output channel, until the plan takes them
  // Padding patterns: (row kind, column kind) → taps and Σ(w' − zw') over them.
  std::int64_t patterns_ = 0, column_kinds_ = 1;
  std::vector<std::int32_t> row_pattern_;                   // per output row
  std::vector<std::pair<std::int64_t, int>> column_tiles_;  // (first x, pixels)
  std::vector<std::int32_t> column_pattern_;                // per column tile
  // Output pixels of a column tile are this many apart: 1, or a transposed convolution's
  // stride_w (a tile runs over one output phase; every tile is on the rows path then).
  std::int64_t column_step_ = 1;
  bool phased_ = false;  // a transposed convolution's taps listed per output phase (phased())
  bool placed_ = false;  // a transposed convolution of stride 1 on its placed input
  std::vector<TapRange> row_taps_, column_taps_;  // per row and column kind (plan_patterns)
  std::vector<std::pair<std::int32_t, std::int32_t>> pattern_taps_;  // (first, count)
  std::vector<std::int32_t> tap_columns_;      // per listed tap: its kernel column s
  std::vector<std::int32_t> tap_kernel_rows_;  // per listed tap: its kernel row r
  // Pixel tiles (plan_patterns): the pattern with every tap, and which output rows and columns
  // have every tap.
  bool pixel_tiles_ = false;
  // plan_column_strips: per output row, the rows of the strip it starts (0: it starts none); empty
  // where the plan has no strips.
  std::vector<std::int32_t> strip_rows_;
  std::int64_t full_pattern_ = 0;
  std::vector<bool> full_rows_, full_columns_;
  // plan_border_tiles
  std::vector<std::int64_t> tile_starts_, tile_origins_, border_tiles_, border_offsets_;
  std::vector<std::int64_t> tap_offsets_, tap_steps_;  // per listed tap: input offset, first step
  AlignedVector<std::int32_t> pattern_sums_;
  EpilogueKernel epilogue_ = nullptr;
  DepthwiseOutputKernel depthwise_output_ = nullptr;  // depthwise tiles through the stage, or null
  EpilogueKernel in_lane_epilogue_ = nullptr;         // in-lane grouped tiles' (lane order)
  InLaneOutputKernel in_lane_output_ = nullptr;       // the same tiles' stage from the registers
  InLaneOutputKernel grouped_output_ = nullptr;       // one_group, two_groups tiles' likewise
  GemmOutputKernel gemm_output_ = nullptr;            // plain GEMM tiles' likewise
  const std::uint64_t serial_ = new_stage_deriver();  // for the in-lane tiles' kept_stage
  std::unique_ptr<NchwFlatPlan> nchw_flat_;  // both tensors NCHW around a 1x1 layer, or null
  std::unique_ptr<NchwDepthwisePlan> nchw_depthwise_;  // both NCHW around a depthwise one, or null
  // Per panel width in vectors (1 to 4): its flat run, or null (tiles and the epilogue).
  std::array<FlatRunKernel, 5> flat_runs_{};
  bool phase_runs_ = false;  // a transposed layer's phases as flat runs (run_phase_runs)
  // With phase_runs_: runs of column tiles of one column pattern, from output column x.
  struct ColumnRun {
    std::int64_t x, pixels, kind;
  };
  std::vector<ColumnRun> column_runs_;
  bool flat_run_panels_ = false;  // some panel has a flat run (its tasks are kFlatRunChunk long)
};

class GemmEngine final : public Engine {
 public:
  GemmEngine(std::string name, CpuFeatures required, const KernelSet& kernels, bool amx)
      : name_(std::move(name)), required_(required), kernels_(kernels), amx_(amx) {}

  std::string_view name() const override { return name_; }

  std::string unsupported_reason(const Problem& problem) const override {
    const CpuFeatures missing = required_cpu_features() & ~host_cpu_features();
    if (missing != 0) return "this CPU lacks " + to_string_features(missing);
    if (amx_ && (kernels_.amx_available == nullptr || !kernels_.amx_available())) {
      return "the operating system does not grant this process the AMX tile state";
    }
    const auto& d = problem.desc();

    // The plan keeps a tile list per output row and column: bounded, so that a valid but absurd
    // geometry (a file may describe one) cannot make preparation allocate gigabytes.
    if (problem.out_height() > kMaxOutputExtent || problem.out_width() > kMaxOutputExtent) {
      return "an output taller or wider than " + std::to_string(kMaxOutputExtent) + " pixels";
    }
    if (d.kernel_h * d.kernel_w > GemmKernel::kMaxTaps) {
      return "more than " + std::to_string(GemmKernel::kMaxTaps) + " kernel taps";
    }
    if (d.in_channels < kIm2colBelowChannels && d.kernel_h * d.kernel_w > 1 &&
        !GemmKernel::im2col_fits(d.in_channels * d.kernel_h * d.kernel_w)) {
      return "a window of C_in*kh*kw over 1024 bytes with fewer than 8 input channels";
    }
    if (kernels_.depthwise_tile == nullptr && GemmKernel::depthwise(problem)) {
      return "depthwise convolution: this engine has no depthwise kernel";
    }
    const std::int64_t entries = GemmKernel::pattern_entries(problem);
    // Preparation sums each pattern's taps per channel: bound that work too.
    if (entries > kMaxPatternEntries || entries * d.kernel_h * d.kernel_w > kMaxPatternWork) {
      return "too many distinct padding patterns";
    }
    return {};
  }

  std::unique_ptr<PreparedKernel> prepare(const Problem& problem,
                                          const CanonicalWeights& weights) const override {
    if (const RowInterleaving rows = amx_ && kernels_.interleave_rows != nullptr
                                         ? row_interleaving(problem)
                                         : RowInterleaving{};
        rows.rows > 0) {  // a first layer: interleaved_rows.hpp
      const Problem interleaved = interleaved_problem(problem, rows, kernels_.u8_input);
      return with_interleaved_rows(
          std::make_unique<GemmKernel>(interleaved,
                                       interleaved_weights(problem, interleaved, rows, weights),
                                       kernels_, amx_),
          problem, interleaved, rows, weights, kernels_);
    }
    if (const std::int64_t factor = amx_ ? merged_group_factor(problem) : 1; factor > 1) {
      const Problem merged = merged_problem(problem, factor);  // merged_groups.hpp
      return with_merged_groups(
          std::make_unique<GemmKernel>(merged, merged_weights(problem, merged, weights, factor),
                                       kernels_, amx_),
          problem, factor);
    }
    return std::make_unique<GemmKernel>(problem, weights, kernels_, amx_);
  }
  std::unique_ptr<PreparedKernel> unpack(const Problem& problem,
                                         std::span<const std::byte> packed) const override {
    // The file holds the canonical weights: packing is deterministic and fast, so a loaded plan
    // packs again and never trusts a layout from a file.
    return prepare(problem, CanonicalWeights::from_bytes(problem, packed, "packed_weights"));
  }
  CpuFeatures required_cpu_features() const override { return required_; }

 private:
  std::string name_;
  CpuFeatures required_;
  const KernelSet& kernels_;
  bool amx_;
};

}  // namespace

std::unique_ptr<Engine> make_engine(std::string name, CpuFeatures required,
                                    const KernelSet& kernels, bool amx) {
  return std::make_unique<GemmEngine>(std::move(name), required, kernels, amx);
}

}  // namespace qconv::detail::gemm
