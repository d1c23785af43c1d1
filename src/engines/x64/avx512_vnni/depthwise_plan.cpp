// SPDX-License-Identifier: Apache-2.0
// The depthwise path of the AVX-512 engines: planning and packing at preparation, the walk over
// output rows at run time; the kernels are in depthwise_kernels.cpp (built for AVX-512, called only
// on a CPU that has it). Built for the baseline ISA.
//
// The arithmetic. A lane sums x·d over the window, d = w − zw (in [−255, 255]) packed as s8, and
// starts at −zx·Σd: so it holds Σ (x − zx)(w − zw) exactly (modulo 2^32, as the reference wraps)
// provided every listed tap reads either an input byte or, in the padding, zx itself. The
// interleaved columns hold zx outside the input, so padding needs no per-pattern tap lists and no
// correction; a slot past the kernel's rows has weight 0. An s8 input is read as x xor 0x80 = x +
// 128 with zx + 128. A d outside s8 (a weight zero point at the far end of the weights' range)
// is split into two or three s8 parts, each its own tap over the same column; no window sums.
//
// Rows and columns. Each output row interleaves the input rows of its kernel rows, 4 to a group,
// into columns; output pixel x then reads column x·column_step + tap_column[s] for each kernel
// column s. A transposed convolution is split into output phases instead of a zero-inserted copy:
// output row y takes kernel rows r with (y + pad_top − r·dh) divisible by stride_h (input row
// (y + pad_top − r·dh) / stride_h), output columns x ≡ b (mod stride_w) take kernel columns s with
// (b + pad_left − s·dw) divisible by stride_w, reading input column x / stride_w + (b + pad_left −
// s·dw) / stride_w: a dense depthwise convolution with a sub-kernel per phase (a 4x4 stride-2
// kernel: 2 x 2 taps), nothing multiplied by inserted zeros. Where a row phase reads at most 3
// consecutive input rows (3x3 stride 1; 4x4 stride 2 transposed), output rows go in pairs over
// one set of columns (Geometry::row_pairs).
//
// NCHW. With NCHW input and output, on a CPU with VBMI, the planes are convolved where they lie,
// pixels in lanes (depthwise_planes.cpp), but for stride 1 on one thread; otherwise an NCHW side
// is transposed, whole on one thread, in slabs of rows in per-thread scratch on more.
#include "engines/x64/avx512_vnni/depthwise_plan.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/aligned.hpp"
#include "core/cpu_features.hpp"
#include "core/parallel.hpp"
#include "core/worker_scratch.hpp"
#include "engines/gemm/activation_copies.hpp"
#include "engines/gemm/derived_stage.hpp"
#include "engines/gemm/stage_view.hpp"
#include "engines/layout_transpose.hpp"
#include "engines/x64/avx512_vnni/depthwise_planes.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using gemm::narrowing_saturates_high;
using gemm::nchw_from_nhwc;
using gemm::nhwc_from_nchw;
using gemm::stage_view;
using gemm::thread_scratch;

// A transposed layer with more output phases (stride_h · stride_w) runs on the GEMM path.
constexpr std::int64_t kMaxPhases = 64;
// Per-thread scratch (interleaved columns of one output row) beyond this: the GEMM path.
constexpr std::int64_t kMaxScratchBytes = std::int64_t{64} << 20;
// The kernels' row pointer list: kernel rows, rounded up to groups of 4.
constexpr std::int64_t kMaxKernelRows = 1024;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }

// Output pixels per register tile of the kernels: a run's buffer has columns for whole tiles.
constexpr std::int64_t kTilePixels = 8;
// Multiply-adds per thread below which a call uses fewer threads. A second thread costs the call
// its hand-over and the lines the two cores share; since a call's chunks are one per thread
// (chunks_per_thread), the stage's arrays are kept from call to call (kept_stage) and the pool's
// helper no longer shares its caller's core (thread_pool.cpp), it gains from about 50K on an AMD
// Zen 4: MobileNetV2's stride-2 layers 28x28x192 (338K) 6.0 -> 3.5 us on two threads and
// 14x14x576 (254K) 5.2 -> 3.4 us; 14x14x64 (112K) 1.84 -> 1.47 us, 7x7x256 (112K) 2.05 -> 1.48,
// 7x7x128 (56K) 1.09 -> 0.94, 28x28x32 stride 2 (56K) 1.78 -> 1.31.
constexpr std::int64_t kMinMacsPerThread = std::int64_t{24} << 10;

// Input rows an NCHW slab transposes, at most (more when one output row alone reads more).
constexpr std::int64_t kSlabInputBytes = std::int64_t{64} << 10;

// One set of output columns: all of them (convolution), or x ≡ first_x mod stride_w (transposed).
struct ColumnPhase {
  std::int64_t first_x = 0;
  std::int64_t pixels = 0;
  std::int32_t step = 1;                  // buffer columns between consecutive pixels
  std::vector<std::int32_t> kernel_cols;  // per kernel tap column s (before splitting)
  std::vector<std::int64_t> offsets;      // per kernel column: input column of pixel 0's tap
  std::vector<std::int32_t> tap_columns;  // per split tap: buffer column of pixel 0
  DepthwiseOutputKernel kernel = nullptr;
};

// Everything about rows and columns that does not depend on the weights.
struct Geometry {
  // Per row phase, its kernel rows: one per group slot, −1 for a slot of weight 0.
  std::vector<std::vector<std::int32_t>> row_phases;
  // Output rows in pairs, when each row phase reads at most 3 consecutive input rows: rows y and
  // y + row_step (stride 1: the next row; transposed: the next of the same phase) read input rows
  // shifted by one, so columns of 4 consecutive input rows serve both: row y with its kernel rows
  // in slots 0-2 (row phase 2a), row y + row_step in slots 1-3 (row phase 2a + 1). Each column is
  // then built once for two output rows.
  bool row_pairs = false;
  std::int64_t row_step = 1;
  std::vector<ColumnPhase> column_phases;
  std::int64_t first_column = 0;  // input column of buffer column 0
  std::int64_t max_groups = 0;

  explicit Geometry(const Problem& problem) {
    const auto& d = problem.desc();
    const bool transposed = problem.transposed();
    const std::int64_t out_w = problem.out_width();
    if (!transposed) {
      row_phases.emplace_back();
      for (std::int32_t r = 0; r < d.kernel_h; ++r) row_phases[0].push_back(r);
      row_pairs = d.kernel_h <= 3 && d.stride_h == 1 && d.dilation_h == 1;
      ColumnPhase c;
      c.pixels = out_w;
      c.step = static_cast<std::int32_t>(d.stride_w);
      for (std::int32_t s = 0; s < d.kernel_w; ++s) {
        c.kernel_cols.push_back(s);
        c.offsets.push_back(s * d.dilation_w - d.pad_left);
      }
      sort_taps(c);
      column_phases.push_back(std::move(c));
    } else {
      // A phase's kernel rows from the last: its input rows ascending (consecutive when dh = 1).
      row_pairs = d.dilation_h == 1;
      row_step = d.stride_h;
      for (std::int64_t a = 0; a < d.stride_h; ++a) {
        row_phases.emplace_back();
        for (std::int32_t r = static_cast<std::int32_t>(d.kernel_h) - 1; r >= 0; --r) {
          if (floor_mod(a + d.pad_top - r * d.dilation_h, d.stride_h) == 0) {
            row_phases.back().push_back(r);
          }
        }
        row_pairs = row_pairs && row_phases.back().size() <= 3;
      }
      for (std::int64_t b = 0; b < d.stride_w; ++b) {
        ColumnPhase c;
        c.first_x = b;
        c.pixels = b < out_w ? (out_w - b + d.stride_w - 1) / d.stride_w : 0;
        c.step = 1;
        for (std::int32_t s = 0; s < d.kernel_w; ++s) {
          const std::int64_t t = b + d.pad_left - s * d.dilation_w;
          if (floor_mod(t, d.stride_w) != 0) continue;
          c.kernel_cols.push_back(s);
          c.offsets.push_back(floor_div(t, d.stride_w));
        }
        sort_taps(c);
        column_phases.push_back(std::move(c));
      }
    }
    if (row_pairs) {  // each phase a becomes 2a (upper row) and 2a + 1 (lower row)
      std::vector<std::vector<std::int32_t>> paired;
      for (const auto& rows : row_phases) {
        paired.push_back(rows);
        paired.push_back({-1});
        paired.back().insert(paired.back().end(), rows.begin(), rows.end());
      }
      row_phases = std::move(paired);
    }
    bool first = true;
    for (const ColumnPhase& c : column_phases) {
      for (std::int64_t off : c.offsets) {
        first_column = first ? off : std::min(first_column, off);
        first = false;
      }
    }
    for (const auto& rows : row_phases) {
      max_groups =
          std::max<std::int64_t>(max_groups, (static_cast<std::int64_t>(rows.size()) + 3) / 4);
    }
  }

  // A phase's taps in ascending input columns (a transposed phase lists them descending), so that
  // consecutive columns have the kernels' fixed schedule.
  static void sort_taps(ColumnPhase& c) {
    std::vector<std::size_t> order(c.offsets.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return c.offsets[a] < c.offsets[b]; });
    ColumnPhase sorted = c;
    for (std::size_t i = 0; i < order.size(); ++i) {
      sorted.kernel_cols[i] = c.kernel_cols[order[i]];
      sorted.offsets[i] = c.offsets[order[i]];
    }
    c = std::move(sorted);
  }

  // Buffer columns that tiles of `tile` pixels read in phase c.
  std::int64_t columns_read(const ColumnPhase& c, std::int64_t tile) const {
    if (c.pixels == 0 || c.offsets.empty()) return 0;
    const std::int64_t last = *std::max_element(c.offsets.begin(), c.offsets.end()) - first_column;
    return ((c.pixels + tile - 1) / tile * tile - 1) * c.step + last + 1;
  }
  std::int64_t max_columns() const {
    std::int64_t n = 0;
    for (const ColumnPhase& c : column_phases) n = std::max(n, columns_read(c, kTilePixels));
    return n;
  }
  std::int64_t max_pixels() const {
    std::int64_t n = 0;
    for (const ColumnPhase& c : column_phases) n = std::max(n, c.pixels);
    return n;
  }
};

// A block of up to 64 output channels and the input bytes it reads.
struct Block {
  std::int64_t channel;       // first output channel
  std::int32_t width;         // 16, 32 or 64 lanes
  std::int32_t channels;      // valid output channels
  std::int64_t input_offset;  // first input channel read
  std::int32_t input_bytes;   // bytes read per column
  // A full block's kernel that interleaves its columns itself (3- and 5-column stride 1 and 2
  // layers that have one), or null: its columns go through the buffer.
  DepthwiseOutputKernel fused;
  // Its kernel for both rows of a row pair at once (depthwise_fused_pair_kernel), where `fused` is
  // the one-part stride-1 3-column kernel and output rows go in pairs; else null.
  DepthwisePairKernel fused_pair;
  // What builds its columns in the buffer (depthwise_columns, or its VBMI form for 32 lanes).
  void (*build_columns)(const DepthwiseColumns&);
  // How its fused kernel takes a w − zw outside s8 (DepthwiseSplit; both chosen by
  // plan_weight_splits): parts (in splits_ parts, or none needed), column_sums ([tap][lanes][4]
  // a, then c) or duplicated_row ([tap][lanes][4] a and the spare slot's e, then its masks).
  DepthwiseSplit split;
  // A full 64-lane block of such a layer whose w − zw all lie in s8: one part, on the fused
  // kernel of a layer that needs none (plan_weight_splits).
  bool one_part;
};

class DepthwiseKernel final : public PreparedKernel {
 public:
  // Not copied: the kernels' planned arguments point into its own vectors (plan_kernel_args).
  DepthwiseKernel(const DepthwiseKernel&) = delete;
  DepthwiseKernel& operator=(const DepthwiseKernel&) = delete;
  DepthwiseKernel(const Problem& problem, const CanonicalWeights& weights)
      : problem_(problem), geometry_(problem), canonical_(weights.bytes()) {
    const auto& d = problem.desc();
    in_channels_ = d.in_channels;
    out_channels_ = d.out_channels;
    multiplier_ = d.out_channels / d.in_channels;
    flip_input_ = d.input_dtype == DType::s8;
    out_h_ = problem.out_height();
    out_w_ = problem.out_width();
    element_ = static_cast<std::int64_t>(element_size(d.output_dtype));
    plan_blocks();
    // The first output row of each task (per image): every row, or the upper row of each pair.
    for (std::int64_t y = 0; y < out_h_; ++y) {
      const std::int64_t step = geometry_.row_step;
      if (!geometry_.row_pairs || (y / step) % 2 == 0) task_rows_.push_back(y);
    }
    const bool vbmi = (host_cpu_features() & kAvx512vbmi) != 0;  // the 16-lane fused kernels'
    // 32-lane blocks' columns through VBMI permutes: 4 shuffles a column where the unpacks took
    // 12. MobileNetV2's b1.dw (32 channels at 112x112, stride 1: the buffer, built once for a
    // pair of output rows) on an AMD Zen 5 36.9 -> 33.9 us.
    for (Block& b : blocks_) {
      b.build_columns = vbmi && b.width == 32 && multiplier_ == 1 ? &depthwise_columns_32_vbmi
                                                                  : &depthwise_columns;
    }
    splits_ = weight_parts_needed(problem, weights);
    plan_weight_splits(problem, weights, vbmi);
    pack(problem, weights);
    plan_task_rows();
    columns_ = geometry_.max_columns();
    // Interleaved columns (at most 64 lanes of 4 bytes), then the sums of a scalar output stage.
    scratch_bytes_ = round_up(
        geometry_.max_groups * columns_ * 256 + 256 * (geometry_.max_pixels() + kTilePixels) + 64,
        64);
    stage_bytes_ = 7 * round_up(out_channels_, 64) * 4;
    planes_ = DepthwisePlanePath::plan(problem, weights, splits_);
    if (planes_ == nullptr && (d.input_layout == Layout::NCHW || d.output_layout == Layout::NCHW)) {
      plan_slabs();
    }
    for (const Block& b : blocks_) blocks64_ += b.width == 64 ? 1 : 0;
    epilogue_ = epilogue_kernel(d.scheme.kind, d.output_dtype);
    for (ColumnPhase& c : geometry_.column_phases) {
      // Kernel columns at consecutive buffer columns, each split into splits_ taps: a fixed
      // schedule where the kernels have one.
      bool consecutive = true;
      for (std::size_t t = 0; t < c.tap_columns.size(); ++t) {
        consecutive =
            consecutive && c.tap_columns[t] == c.tap_columns[0] + static_cast<int>(t) / splits_;
      }
      const int columns = consecutive ? static_cast<int>(c.kernel_cols.size()) : 0;
      c.kernel = depthwise_output_kernel(d.scheme.kind, d.output_dtype, columns, splits_, c.step);
      // Stride 1 or 2 over 3 kernel columns in one group of rows, or over 5 in two, multiplier
      // 1 (a u8 input, or an s8 one that the kernel flips as it interleaves; the optimised builds
      // only, kEveryKernelVariant): full blocks interleave their columns in registers instead of
      // a buffer, where a kernel does (depthwise_fused_kernel: 3 columns at stride 2 every width,
      // at stride 1 64 and 16 lanes; 5 columns 64 lanes, at stride 1 one part only). 5x5 on an
      // AMD Zen 4, stride 2: 240 channels at 28x28 27.6 -> 25.1 us, 144 at 56x56 67.7 -> 55.4
      // us, 256 at 56x56 93.2 -> 80.0 us, 672 at 14x14 18.2 -> 15.0 us; stride 1: 128 at 56x56
      // 134.1 -> 108.6 us, 240 at 14x14 19.8 -> 17.8 us, 480 at 14x14 35.8 -> 30.8 us, 1152 at
      // 7x7 24.5 -> 19.6 us.
      const bool three = columns == 3 && geometry_.max_groups == 1;
      const bool five = columns == 5 && geometry_.max_groups == 2;
      if (geometry_.column_phases.size() == 1 && (three || five) && (c.step == 2 || c.step == 1) &&
          multiplier_ == 1) {
        for (Block& b : blocks_) {
          // (A split's kernel is chosen already.)
          if (b.channels != b.width || b.split != DepthwiseSplit::parts || b.one_part) continue;
          b.fused = depthwise_fused_kernel(d.scheme.kind, d.output_dtype, splits_, b.width, c.step,
                                           columns, flip_input_, vbmi);
        }
      }
    }
    plan_pair_kernels(vbmi);
    plan_fused_runs();
    plan_kernel_args();
  }

  std::vector<std::byte> packed() const override { return canonical_; }
  CanonicalWeights canonical_weights() const override {
    return CanonicalWeights::from_bytes(problem_, canonical_, "packed_weights");
  }

  std::string describe() const override {
    const auto& d = problem_.desc();
    std::ostringstream out;
    const std::int32_t widest = blocks_.front().width;
    out << "avx512_vnni dwconv_u8s8_" << widest << "c4 (4 taps per vpdpbusd, channels in lanes) k"
        << d.kernel_h << "x" << d.kernel_w << " s" << d.stride_h;
    if (d.stride_w != d.stride_h) out << "x" << d.stride_w;
    if (d.dilation_h != 1 || d.dilation_w != 1) out << " d" << d.dilation_h << "x" << d.dilation_w;
    if (multiplier_ > 1) out << " (multiplier " << multiplier_ << ")";
    if (problem_.transposed()) {
      out << " (transposed: " << d.stride_h * d.stride_w << " output phases)";
    }
    if (geometry_.row_pairs) out << " (output rows in pairs)";
    if (splits_ > 1) out << " (w - zw outside s8: " << splits_ << " taps per weight)";
    const auto any_block = [&](DepthwiseSplit split) {
      return std::any_of(blocks_.begin(), blocks_.end(),
                         [&](const Block& b) { return b.split == split; });
    };
    if (any_block(DepthwiseSplit::duplicated_row)) {
      out << " (full blocks: w - zw outside s8 in one kernel row per channel, its second part on "
             "a spare row slot that repeats that row)";
    }
    if (std::any_of(blocks_.begin(), blocks_.end(), [](const Block& b) { return b.one_part; })) {
      out << " (full blocks with every w - zw in s8: one part)";
    }
    if (any_block(DepthwiseSplit::column_sums)) {
      out << " (full blocks: w - zw as a + c, c times each column's sum)";
    }
    if (planes_ != nullptr) {
      out << planes_->describe();
    } else if (d.input_layout == Layout::NCHW || d.output_layout == Layout::NCHW) {
      out << " (NCHW: whole-tensor transposes on one thread; on more, slabs of up to "
          << slab_tasks_ << " task rows transposed in per-thread scratch)";
    }
    if (epilogue_ == nullptr) out << " (scalar output stage)";
    const bool fused = std::any_of(blocks_.begin(), blocks_.end(),
                                   [](const Block& b) { return b.fused != nullptr; });
    if (fused) out << " (full blocks: columns interleaved in registers)";
    if (std::any_of(blocks_.begin(), blocks_.end(),
                    [](const Block& b) { return b.fused_pair != nullptr; })) {
      out << " (row pairs' columns interleaved once for both rows)";
    }
    return out.str();
  }

  void run(const RunContext& call) const override {
    const auto& d = problem_.desc();
    const std::int64_t macs =
        call.batch * out_h_ * out_w_ * out_channels_ * d.kernel_h * d.kernel_w;
    const int threads =
        static_cast<int>(std::clamp<std::int64_t>(macs / kMinMacsPerThread, 1, call.threads));
    if (planes_ != nullptr && planes_->faster_than_transposes(threads)) {
      return planes_->run(call, threads);
    }
    // The calling thread's scratch: the output stage's arrays in the 64-lane blocks' lane order
    // (kept from the last call where it was this kernel's with this stage), and a slot of
    // interleaved columns (and NCHW slabs) for each body that may run at once.
    const StageView& stage = gemm::kept_stage(
        gemm::StageSlot::depthwise_blocks, serial_, call.stage,
        static_cast<std::size_t>(stage_bytes_), [&](std::uint8_t* storage, StageView& view) {
          depthwise_block_stage(d.scheme.kind, stage_view(call.stage.vectors()), blocks64_,
                                out_channels_, reinterpret_cast<std::int32_t*>(storage), view);
        });
    const int slots = parallel_participants(threads);
    const std::int64_t slot_bytes =
        scratch_bytes_ + (slab_tasks_ > 0 ? slab_input_bytes_ + slab_output_bytes_ : 0);
    WorkerScratch columns(
        thread_scratch(WorkerScratch::bytes(static_cast<std::size_t>(slot_bytes), slots), 0),
        static_cast<std::size_t>(slot_bytes), slots);
    const RowCall row_call{
        call, stage, static_cast<std::uint8_t>(call.input_zero_point + (flip_input_ ? 128 : 0)),
        narrowing_saturates_high(d, call.stage.vectors())};
    const auto blocks = static_cast<std::int64_t>(blocks_.size());
    const auto tasks_per_image = static_cast<std::int64_t>(task_rows_.size());
    const auto element = static_cast<std::size_t>(element_);
    const auto* input = static_cast<const std::uint8_t*>(call.input);
    const std::int64_t in_image = d.in_height * d.in_width * in_channels_;
    const std::int64_t out_image = out_h_ * out_w_ * out_channels_;
    if (slab_tasks_ == 0 || threads == 1) {  // NHWC, or NCHW through whole-tensor transposes
      if (d.input_layout == Layout::NCHW) {
        input =
            nhwc_from_nchw(input, call.batch, in_channels_, d.in_height, d.in_width, call.threads);
      }
      void* output = call.output;
      const bool nchw_output = d.output_layout == Layout::NCHW;
      if (nchw_output) {
        output = thread_scratch(static_cast<std::size_t>(call.batch * out_image) * element, 2);
      }
      // Tasks in the order (image, task row, block); a thread's consecutive tasks of one row
      // share its rows' addresses (run_row).
      parallel_for(
          threads, call.batch * tasks_per_image * blocks,
          [&](std::int64_t begin, std::int64_t end) {
            const WorkerScratch::Claim slot(columns);
            std::int64_t row = begin / blocks;
            for (std::int64_t task = begin; task < end; ++row) {
              const std::int64_t n = row / tasks_per_image;
              const std::int64_t first = task - row * blocks;
              const std::int64_t last = std::min(blocks, first + end - task);
              run_row(row_call, input + n * in_image, 0,
                      static_cast<std::byte*>(output) +
                          static_cast<std::size_t>(n * out_image) * element,
                      0, static_cast<std::size_t>(row - n * tasks_per_image),
                      static_cast<std::size_t>(first), static_cast<std::size_t>(last), slot.data());
              task += last - first;
            }
          },
          chunks_per_thread(macs, threads));
      if (nchw_output) {
        nchw_from_nhwc(output, call.output, call.batch, out_channels_, out_h_ * out_w_, element,
                       call.threads);
      }
      return;
    }
    // NCHW on more than one thread: slabs of output rows, each transposing the input rows it reads
    // into its own scratch and its output rows back from there, so that the bytes a thread
    // transposes are the bytes it reads, while in its cache. Whole-tensor transposes took longer
    // at two threads than at one, and their rows were read by the other core half the time
    // (MobileNetV2's 112x112 and 56x56 layers: 1.15-1.35x faster this way; at one thread the
    // whole-tensor transposes measured faster: no rows transposed twice, fewer partial blocks).
    // At least two slabs a thread, where the rows allow.
    const std::int64_t share = (tasks_per_image * call.batch + 2 * threads - 1) / (2 * threads);
    const std::int64_t slab_tasks =
        std::min(slab_tasks_, round_up(std::max<std::int64_t>(share, 1), slab_step()));
    const std::int64_t slabs = (tasks_per_image + slab_tasks - 1) / slab_tasks;
    parallel_for(threads, call.batch * slabs, [&](std::int64_t begin, std::int64_t end) {
      const WorkerScratch::Claim slot(columns);
      std::uint8_t* in_slab = slot.data() + scratch_bytes_;
      std::byte* out_slab = reinterpret_cast<std::byte*>(in_slab + slab_input_bytes_);
      for (std::int64_t task = begin; task < end; ++task) {
        const std::int64_t n = task / slabs, first = task % slabs * slab_tasks;
        const SlabRows r = slab_rows(first, std::min(first + slab_tasks, tasks_per_image));
        const std::uint8_t* image = input + n * in_image;
        std::int64_t first_row = 0;
        if (d.input_layout == Layout::NCHW) {  // image n's [channels][pixels], rows of the slab
          const std::int64_t pixels = d.in_height * d.in_width;
          transpose_bytes(image + r.input_begin * d.in_width, pixels, in_slab, in_channels_,
                          in_channels_, (r.input_end - r.input_begin) * d.in_width);
          image = in_slab;
          first_row = r.input_begin;
        }
        auto* out = static_cast<std::byte*>(call.output) +
                    static_cast<std::size_t>(n * out_image) * element;
        const bool nchw_output = d.output_layout == Layout::NCHW;
        for (std::int64_t t = first; t < r.tasks_end; ++t) {
          run_row(row_call, image, first_row, nchw_output ? out_slab : out,
                  nchw_output ? r.output_begin : 0, static_cast<std::size_t>(t), 0, blocks_.size(),
                  slot.data());
        }
        if (nchw_output) {
          const std::int64_t pixels = out_h_ * out_w_;
          transpose_values(out_slab, out_channels_,
                           out + static_cast<std::size_t>(r.output_begin * out_w_) * element,
                           pixels, (r.output_end - r.output_begin) * out_w_, out_channels_,
                           element);
        }
      }
    });
  }

 private:
  // What every output row of one call shares.
  struct RowCall {
    const RunContext& run;
    const StageView& stage;  // depthwise_block_stage()'s
    std::uint8_t zx;         // the input zero point as the columns hold it (+128 for an s8 input)
    bool saturated_high;     // DepthwiseOutputs::saturated_high
  };
  // The rows of a slab of task rows [first, end): the input rows its output rows read (within the
  // image), and its output rows, both contiguous.
  struct SlabRows {
    std::int64_t tasks_end, input_begin, input_end, output_begin, output_end;
  };
  SlabRows slab_rows(std::int64_t first, std::int64_t end) const {
    const auto& d = problem_.desc();
    SlabRows r{end, d.in_height, 0, out_h_, 0};
    for (std::int64_t t = first; t < end; ++t) {
      const std::int64_t y = task_rows_[static_cast<std::size_t>(t)];
      const std::int64_t last =
          geometry_.row_pairs ? std::min(y + geometry_.row_step, out_h_ - 1) : y;
      r.output_begin = std::min(r.output_begin, y);
      r.output_end = std::max(r.output_end, last + 1);
      for (std::size_t i = 0; i < row_slots(y); ++i) {
        const std::int64_t iy = std::clamp<std::int64_t>(slot_input_row(y, i), 0, d.in_height - 1);
        r.input_begin = std::min(r.input_begin, iy);
        r.input_end = std::max(r.input_end, iy + 1);
      }
    }
    r.input_begin = std::min(r.input_begin, r.input_end);
    return r;
  }
  // Task rows per slab come in multiples of this, so that a slab's output rows are contiguous:
  // transposed rows in pairs take task rows y and y + stride_h, so stride_h task rows together.
  std::int64_t slab_step() const {
    return problem_.transposed() && geometry_.row_pairs ? geometry_.row_step : 1;
  }
  // The task rows of an NCHW slab (as many as read at most kSlabInputBytes of input rows, at least
  // slab_step()) and the scratch its input and output rows take.
  void plan_slabs() {
    const auto& d = problem_.desc();
    const auto tasks = static_cast<std::int64_t>(task_rows_.size());
    const std::int64_t row_bytes = d.in_width * in_channels_;
    const auto input_bytes = [&](std::int64_t first, std::int64_t end) {
      const SlabRows r = slab_rows(first, end);
      return (r.input_end - r.input_begin) * row_bytes;
    };
    slab_tasks_ = std::min(slab_step(), tasks);
    while (slab_tasks_ < tasks &&
           input_bytes(0, std::min(slab_tasks_ + slab_step(), tasks)) <= kSlabInputBytes) {
      slab_tasks_ = std::min(slab_tasks_ + slab_step(), tasks);
    }
    // The most any run of slab_tasks_ (or fewer) task rows reads and writes.
    for (std::int64_t first = 0; first < tasks; first += slab_step()) {
      const SlabRows r = slab_rows(first, std::min(first + slab_tasks_, tasks));
      slab_input_bytes_ = std::max(slab_input_bytes_, (r.input_end - r.input_begin) * row_bytes);
      slab_output_bytes_ = std::max(
          slab_output_bytes_, (r.output_end - r.output_begin) * out_w_ * out_channels_ * element_);
    }
    slab_input_bytes_ = round_up(slab_input_bytes_, 64);
    slab_output_bytes_ = round_up(slab_output_bytes_, 64);
  }

  void plan_blocks() {
    for (std::int64_t o = 0; o < out_channels_;) {
      const std::int64_t left = out_channels_ - o;
      Block b{};
      b.channel = o;
      b.width = left > 32 ? 64 : (left > 16 ? 32 : 16);
      b.channels = static_cast<std::int32_t>(std::min<std::int64_t>(b.width, left));
      if (multiplier_ == 1) {
        b.input_offset = o;
        b.input_bytes = b.channels;
      } else {
        b.input_offset = o / multiplier_;
        std::int64_t span = 0;
        for (std::int64_t k = 0; k < 64; ++k) {
          const std::int64_t at = k < b.channels ? (o + k) / multiplier_ - b.input_offset : 0;
          expand_.push_back(static_cast<std::uint16_t>(at));
          span = std::max(span, at + 1);
        }
        b.input_bytes = static_cast<std::int32_t>(span);  // ≤ 32, within the input's channels
      }
      blocks_.push_back(b);
      o += b.width;
    }
  }

  // With w − zw in two s8 parts (splits_ 2), the full 64-lane blocks of a 3-column layer at
  // stride 1 or 2 (one group of rows) take the second part another way (DepthwiseSplit), with
  // their fused kernel chosen here with the packing, so that the two cannot disagree; every task
  // row of such a layer has its one group of rows, so these blocks always run fused (run_row),
  // never on the buffer's kernels, which read the parts.
  // - duplicated_row, where every row phase has a spare slot (3, or 0 for the lower row of a pair)
  //   and each channel's w − zw outside s8 lie in one kernel row (duplicated_row_): a + e with
  //   a = w − zw clamped to s8 (two parts bound w − zw to [−256, 254], so e is in s8 too). Weights
  //   of real layers with a zero point near one end of their range reach beyond s8 at one or two
  //   taps a channel; random s8 weights with zw = 3 (every tap below −125) leave about 80 % of
  //   64-lane blocks so.
  // - else column_sums, w − zw as a + c with c per channel (column_sum_): a channel's weights lie
  //   within one dtype's 256 values, so its w − zw spans at most 255 of them, and a c in s8 that
  //   leaves every a in s8 always exists (checked all the same: a wrong one would wrap).
  void plan_weight_splits(const Problem& problem, const CanonicalWeights& weights, bool vbmi) {
    const auto& d = problem.desc();
    column_sum_.assign(static_cast<std::size_t>(out_channels_), 0);
    duplicated_row_.assign(static_cast<std::size_t>(out_channels_), -1);
    if (splits_ != 2 || multiplier_ != 1 || problem.transposed() || d.dilation_w != 1) return;
    if (geometry_.column_phases.size() != 1 || geometry_.max_groups != 1) return;
    const ColumnPhase& phase = geometry_.column_phases[0];
    if ((phase.step != 1 && phase.step != 2) || phase.kernel_cols.size() != 3) return;
    const auto kernel = [&](DepthwiseSplit split) {
      return depthwise_fused_kernel(d.scheme.kind, d.output_dtype, 1, 64, phase.step, 3,
                                    flip_input_, vbmi, split);
    };
    const DepthwiseOutputKernel one_part_kernel = kernel(DepthwiseSplit::parts);
    const DepthwiseOutputKernel sums_kernel = kernel(DepthwiseSplit::column_sums);
    const DepthwiseOutputKernel duplicating_kernel = kernel(DepthwiseSplit::duplicated_row);
    const bool spare_slots =
        std::all_of(geometry_.row_phases.begin(), geometry_.row_phases.end(),
                    [](const std::vector<std::int32_t>& rows) { return spare_slot(rows) >= 0; });
    for (Block& b : blocks_) {
      if (b.width != 64 || b.channels != 64) continue;
      bool one_row = spare_slots && duplicating_kernel != nullptr;
      bool fits = sums_kernel != nullptr;
      bool in_s8 = true;  // every w − zw of the block
      for (std::int64_t o = b.channel; o < b.channel + b.channels; ++o) {
        const std::int32_t zw = problem.weight_zero_point(o);
        std::int32_t lo = 255, hi = -255, row = -1;
        for (std::int64_t r = 0; r < d.kernel_h; ++r) {
          for (std::int64_t s = 0; s < d.kernel_w; ++s) {
            const std::int32_t v = weights.value(o, 0, r, s) - zw;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            if (v >= -128 && v <= 127) continue;
            in_s8 = false;
            one_row = one_row && (row < 0 || row == r);
            row = static_cast<std::int32_t>(r);
          }
        }
        duplicated_row_[static_cast<std::size_t>(o)] = static_cast<std::int8_t>(row);
        // Every a = (w − zw) − c in s8: c in [hi − 127, lo + 128], and c itself in s8.
        const std::int32_t low = std::max(hi - 127, -128), high = std::min(lo + 128, 127);
        fits = fits && low <= high;
        column_sum_[static_cast<std::size_t>(o)] =
            static_cast<std::int8_t>(std::clamp(0, low, high));
      }
      if (in_s8 && one_part_kernel != nullptr) {
        b.one_part = true;
        b.fused = one_part_kernel;
      } else if (one_row) {
        b.split = DepthwiseSplit::duplicated_row;
        b.fused = duplicating_kernel;
      } else if (fits) {
        b.split = DepthwiseSplit::column_sums;
        b.fused = sums_kernel;
      }
    }
  }

  // The slot of a row phase's group of 4 (its kernel row per slot, −1 for a slot of weight 0)
  // that a duplicated_row kernel fills with a kernel row per channel: 3, or 0 where 3 holds a
  // kernel row; −1 where neither is free, or the phase has more than one group.
  static int spare_slot(const std::vector<std::int32_t>& rows) {
    if (rows.size() > 4) return -1;
    if (rows.size() < 4 || rows[3] < 0) return 3;
    return rows[0] < 0 ? 0 : -1;
  }

  // Weights per (block, row phase, column phase): [group][split tap][width lanes][4 rows] s8 (a
  // column-sums block: [group][tap][lanes][4] a, then [lanes][4] c; a duplicated-row block:
  // [tap][lanes][4] a and e, then the spare slot's masks), and Σ(w − zw) per lane.
  void pack(const Problem& problem, const CanonicalWeights& weights) {
    for (ColumnPhase& c : geometry_.column_phases) {
      for (std::int64_t off : c.offsets) {
        for (int k = 0; k < splits_; ++k) {
          c.tap_columns.push_back(static_cast<std::int32_t>(off - geometry_.first_column));
        }
      }
    }
    for (const Block& b : blocks_) {
      const bool split = b.split != DepthwiseSplit::parts;
      for (const auto& rows : geometry_.row_phases) {
        const std::int64_t groups = (static_cast<std::int64_t>(rows.size()) + 3) / 4;
        for (const ColumnPhase& c : geometry_.column_phases) {
          const int parts = split || b.one_part ? 1 : splits_;
          const std::int64_t columns = static_cast<std::int64_t>(c.kernel_cols.size());
          const std::int64_t taps = columns * parts + (split ? 1 : 0);
          const std::int64_t lanes = b.width;
          weight_offsets_.push_back(static_cast<std::int64_t>(weights_.size()));
          sum_offsets_.push_back(static_cast<std::int64_t>(sums_.size()));
          weights_.resize(weights_.size() + static_cast<std::size_t>(groups * taps * lanes * 4), 0);
          sums_.resize(sums_.size() + static_cast<std::size_t>(lanes), 0);
          std::int8_t* w = weights_.data() + weight_offsets_.back();
          std::int32_t* sums = sums_.data() + sum_offsets_.back();
          // duplicated_row: the spare slot, and the lanes that repeat the second and third of
          // the other slots (the rest repeat the first).
          const int spare = b.split == DepthwiseSplit::duplicated_row ? spare_slot(rows) : -1;
          std::uint64_t repeats[2] = {0, 0};
          for (std::int64_t channel = 0; channel < b.channels; ++channel) {
            const std::int64_t pos = depthwise_lane(b.width, static_cast<int>(channel));
            const std::int64_t o = b.channel + channel;
            const std::int32_t zw = problem.weight_zero_point(o);
            const std::int32_t column_sum = column_sum_[static_cast<std::size_t>(o)];
            std::uint32_t sum = 0;
            for (std::size_t i = 0; i < rows.size(); ++i) {
              if (rows[i] < 0) continue;  // a slot of weight 0
              const std::int64_t g = static_cast<std::int64_t>(i) / 4;
              const auto at_slot = [&](std::int64_t t, std::int64_t slot) {
                return ((g * taps + t) * lanes + pos) * 4 + slot;
              };
              const auto at = [&](std::int64_t t) {
                return at_slot(t, static_cast<std::int64_t>(i % 4));
              };
              const bool duplicated =
                  spare >= 0 && rows[i] == duplicated_row_[static_cast<std::size_t>(o)];
              if (duplicated) {  // its place among the other slots: 0, 1 or 2
                const int place = static_cast<int>(i) - (spare == 0 ? 1 : 0);
                if (place > 0) repeats[place - 1] |= std::uint64_t{1} << channel;
              }
              for (std::size_t s = 0; s < c.kernel_cols.size(); ++s) {
                const std::int32_t value = weights.value(o, 0, rows[i], c.kernel_cols[s]) - zw;
                sum += static_cast<std::uint32_t>(value);
                const auto tap = static_cast<std::int64_t>(s);
                if (b.split == DepthwiseSplit::column_sums) {  // a = value − c, in s8
                  w[at(tap)] = static_cast<std::int8_t>(value - column_sum);
                } else if (spare >= 0) {  // a = value in s8, e = the rest (only where duplicated)
                  const std::int32_t a = std::clamp(value, -128, 127);
                  w[at(tap)] = static_cast<std::int8_t>(a);
                  if (duplicated) w[at_slot(tap, spare)] = static_cast<std::int8_t>(value - a);
                } else {
                  for (int k = 0; k < parts; ++k) w[at(tap * parts + k)] = weight_part(value, k);
                }
              }
              if (b.split == DepthwiseSplit::column_sums) {
                w[at(columns)] = static_cast<std::int8_t>(column_sum);
              }
            }
            sums[pos] = static_cast<std::int32_t>(sum);
          }
          if (spare >= 0) {  // after the taps: the two masks, then the spare slot
            static_assert(kSpareSlotIndexAt - kSpareSlotMasksAt == sizeof repeats);
            std::memcpy(w + columns * lanes * 4 + kSpareSlotMasksAt, repeats, sizeof repeats);
            w[columns * lanes * 4 + kSpareSlotIndexAt] = static_cast<std::int8_t>(spare);
          }
        }
      }
    }
  }

  // The row phase of output row y (with row pairs, the upper row's).
  std::size_t row_phase(std::int64_t y) const {
    const auto& d = problem_.desc();
    const std::size_t a = problem_.transposed() ? static_cast<std::size_t>(y % d.stride_h) : 0;
    return geometry_.row_pairs ? 2 * a : a;
  }
  // The slots of input rows output row y's columns hold: its kernel rows', and with row pairs one
  // more (slot i then holds slot 0's input row + i).
  std::size_t row_slots(std::int64_t y) const {
    const auto& kernel_rows = geometry_.row_phases[row_phase(y)];
    return kernel_rows.size() + (geometry_.row_pairs && !kernel_rows.empty() ? 1 : 0);
  }
  // The input row in slot i of output row y's columns (outside [0, in_height): the zero point).
  std::int64_t slot_input_row(std::int64_t y, std::size_t i) const {
    const auto& d = problem_.desc();
    const auto& kernel_rows = geometry_.row_phases[row_phase(y)];
    const auto input_row = [&](std::int64_t r) {
      return problem_.transposed() ? floor_div(y + d.pad_top - r * d.dilation_h, d.stride_h)
                                   : y * d.stride_h + r * d.dilation_h - d.pad_top;
    };
    return geometry_.row_pairs ? input_row(kernel_rows[0]) + static_cast<std::int64_t>(i)
                               : input_row(kernel_rows[i]);
  }

  // Each task row's input row per slot, once for every call: −1 outside the input (the zero
  // point) and for the slots past its kernel rows (weight 0), up to whole groups of 4.
  void plan_task_rows() {
    const auto& d = problem_.desc();
    for (const std::int64_t y : task_rows_) {
      const std::size_t slots = row_slots(y);
      const auto groups = static_cast<std::int32_t>((slots + 3) / 4);
      task_slots_.push_back(static_cast<std::int64_t>(slot_rows_.size()));
      task_groups_.push_back(groups);
      for (std::size_t i = 0; i < static_cast<std::size_t>(groups) * 4; ++i) {
        const std::int64_t iy = i < slots ? slot_input_row(y, i) : -1;
        slot_rows_.push_back(iy >= 0 && iy < d.in_height ? static_cast<std::int32_t>(iy) : -1);
      }
    }
  }

  // Task row `task`'s output row y (and with row pairs y + row_step) of blocks [first_block,
  // end_block). `image`: NHWC input rows from `first_row` of the image on; `out_image`: NHWC output
  // rows from `first_out_row` on. Per output row a layer of 7x7 or 14x14 pixels has little work:
  // what is known at preparation (the slots' input rows, the kernels' fixed arguments) is not
  // derived here, and the rows' addresses are found once for all the blocks (per row and block,
  // with a division per task, this took a fifth of MobileNetV2's 7x7 layers' time).
  void run_row(const RowCall& call, const std::uint8_t* image, std::int64_t first_row,
               void* out_image, std::int64_t first_out_row, std::size_t task,
               std::size_t first_block, std::size_t end_block, std::uint8_t* scratch) const {
    const std::int64_t y = task_rows_[task];
    const std::size_t phase = row_phase(y);
    const std::int32_t groups = task_groups_[task];
    const std::int32_t* slot_rows = slot_rows_.data() + task_slots_[task];
    const std::int64_t row_bytes = problem_.desc().in_width * in_channels_;
    std::array<const std::uint8_t*, kMaxKernelRows> rows;  // NOLINT: the first groups · 4 set
    for (std::int32_t i = 0; i < groups * 4; ++i) {
      const std::int32_t iy = slot_rows[i];
      rows[static_cast<std::size_t>(i)] = iy < 0 ? nullptr : image + (iy - first_row) * row_bytes;
    }
    const std::int64_t buffer_bytes =
        static_cast<std::int64_t>(geometry_.max_groups) * columns_ * 4 * 64;
    std::int32_t* raw = reinterpret_cast<std::int32_t*>(scratch + round_up(buffer_bytes, 64));
    const bool pair = geometry_.row_pairs && y + geometry_.row_step < out_h_;
    for (std::size_t k = first_block; k < end_block; ++k) {
      const Block& b = blocks_[k];
      DepthwiseColumns build = columns_args_[k];
      build.rows = rows.data();
      build.groups = groups;
      build.zero_point = call.zx;
      build.out = scratch;
      // A full block with a fused kernel reads the rows itself, no buffer to build; its rows are
      // given at the block's channels (channel_offset added in the kernel's set-up instead
      // measured 14 % slower on MobileNetV2's b7.dw).
      const DepthwiseColumns* source = nullptr;
      std::array<const std::uint8_t*, 8> block_rows{};
      if (b.fused != nullptr && groups == geometry_.max_groups) {  // (1 or 2: the kernel's)
        for (std::size_t i = 0; i < static_cast<std::size_t>(4 * groups); ++i) {
          block_rows[i] = rows[i] != nullptr ? rows[i] + b.input_offset : nullptr;
        }
        build.rows = block_rows.data();
        build.channel_offset = 0;
        source = &build;
      }
      if (groups > 0 && source == nullptr) b.build_columns(build);
      // The full 64-lane blocks after it that share its fused kernel, in one loop
      // (write_fused_blocks), as far as this task's blocks go.
      const std::size_t run =
          source != nullptr ? std::min(fused_run_end_[k], end_block) - k : std::size_t{1};
      if (run > 1 || (pair && b.fused_pair != nullptr)) {
        write_fused_blocks(call, out_image, y - first_out_row, phase, pair, groups, k, run, build,
                           block_rows.data());
        k += run - 1;
        continue;
      }
      write_row(call, out_image, y - first_out_row, phase, groups, b, k, scratch, raw, source);
      if (pair) {
        write_row(call, out_image, y + geometry_.row_step - first_out_row, phase + 1, groups, b, k,
                  scratch, raw, source);
      }
    }
  }

  // Block::fused_pair: the pair kernel of the blocks on the one-part stride-1 3-column kernel (as
  // depthwise_fused_kernel gives it for these arguments, so that the two cannot disagree), for
  // output rows of 8 pixels or more. On an Intel Xeon (Emerald Rapids line), alternating builds,
  // pinned, fastest of 15 rounds: MobileNetV1's dw3 (128 channels at 56x56) 59.4 -> 52.6 us, dw5
  // (256 at 28x28) 30.1 -> 27.5, dw9 (512 at 14x14) 16.1 -> 14.8; MobileNetV2's b3.dw (144 at
  // 56x56, 128 of them in 64-lane blocks) 75.0 -> 71.5, b5.dw 22.8 -> 20.4, b12.dw 17.7 -> 16.6.
  // At 7x7 (dw13, b15.dw) 4-6 % slower: rows of 7 pixels left one at a time.
  void plan_pair_kernels(bool vbmi) {
    const auto& d = problem_.desc();
    if (!geometry_.row_pairs || geometry_.column_phases.size() != 1 || out_w_ < 8) return;
    const DepthwiseOutputKernel single =
        depthwise_fused_kernel(d.scheme.kind, d.output_dtype, 1, 64, 1, 3, flip_input_, vbmi);
    if (single == nullptr) return;
    const DepthwisePairKernel pair =
        depthwise_fused_pair_kernel(d.scheme.kind, d.output_dtype, flip_input_);
    for (Block& b : blocks_) {
      if (b.fused == single) b.fused_pair = pair;
    }
  }

  // fused_run_end_: per block, one past the last block of the run of full 64-lane blocks with the
  // same fused kernel that it starts or lies in (itself + 1 where it has none, or another width).
  void plan_fused_runs() {
    fused_run_end_.assign(blocks_.size(), 0);
    for (std::size_t k = blocks_.size(); k-- > 0;) {
      const Block& b = blocks_[k];
      const bool joins_next = b.fused != nullptr && b.width == 64 && k + 1 < blocks_.size() &&
                              blocks_[k + 1].fused == b.fused;
      fused_run_end_[k] = joins_next ? fused_run_end_[k + 1] : k + 1;
    }
  }

  // The planned kernel arguments `index` (per block, row phase and column phase) with this call's
  // and this row's: its groups of 4 rows, its output and its rows (`source`, for a fused kernel).
  DepthwiseOutputs row_outputs(const RowCall& call, std::size_t index, std::int32_t groups,
                               void* output, const DepthwiseColumns* source) const {
    DepthwiseOutputs o = outputs_args_[index];
    o.groups = groups;
    o.zero_point = call.zx;
    o.output = output;
    o.saturated_high = call.saturated_high;
    o.stage = &call.stage;
    o.source = source;
    return o;
  }

  // Output row `at` of out_image (and with `pair` the row row_step below it, with row phase
  // a + 1) for the `run` full 64-lane blocks from block k on, all with k's fused kernel and
  // `source`'s rows (given at block k's channels in `rows`, which this advances), a block after
  // the other (its rows of a pair both at once on its pair kernel, or else one after the other,
  // the second reading the first's input columns again): the kernel's arguments made once, then per
  // block only its weights, sums, channels and rows moved on. Through run_row and write_row a block
  // at a time, the arguments' set-up cost a 7x7 output row about as much as its tiles. One column
  // phase, as every fused kernel has.
  void write_fused_blocks(const RowCall& call, void* out_image, std::int64_t at, std::size_t a,
                          bool pair, std::int32_t groups, std::size_t k, std::size_t run,
                          const DepthwiseColumns& source, const std::uint8_t** rows) const {
    const std::size_t row_phases = geometry_.row_phases.size();
    const auto arguments = [&](std::int64_t row, std::size_t phase) {
      const std::int64_t first_pixel = row * out_w_ + geometry_.column_phases[0].first_x;
      return row_outputs(call, k * row_phases + phase, groups,
                         static_cast<std::byte*>(out_image) +
                             (first_pixel * out_channels_ + blocks_[k].channel) * element_,
                         &source);
    };
    DepthwiseOutputs rows_of[2] = {arguments(at, a), {}};
    if (pair) rows_of[1] = arguments(at + geometry_.row_step, a + 1);
    const DepthwiseOutputKernel kernel = blocks_[k].fused;
    const DepthwisePairKernel pair_kernel = pair ? blocks_[k].fused_pair : nullptr;
    for (std::size_t j = 0;;) {
      if (pair_kernel != nullptr) {
        pair_kernel(rows_of[0], rows_of[1]);
      } else {
        kernel(rows_of[0]);
        if (pair) kernel(rows_of[1]);
      }
      if (++j == run) return;
      for (int r = 0; r < (pair ? 2 : 1); ++r) {
        DepthwiseOutputs& o = rows_of[r];
        const DepthwiseOutputs& next = outputs_args_[(k + j) * row_phases + a + r];
        o.weights = next.weights;
        o.weight_sums = next.weight_sums;
        o.channel = next.channel;
        o.output = static_cast<std::byte*>(o.output) + 64 * element_;
      }
      for (std::int32_t i = 0; i < 4 * groups; ++i) {
        if (rows[i] != nullptr) rows[i] += 64;
      }
    }
  }

  // An output row of block b, row `at` of out_image, from the interleaved columns in `scratch`
  // (or, with b's fused kernel, from `source`'s rows), with row phase a's weights.
  void write_row(const RowCall& call, void* out_image, std::int64_t at, std::size_t a,
                 std::int32_t groups, const Block& b, std::size_t block_index,
                 const std::uint8_t* scratch, std::int32_t* raw,
                 const DepthwiseColumns* source) const {
    for (std::size_t c = 0; c < geometry_.column_phases.size(); ++c) {
      const ColumnPhase& phase = geometry_.column_phases[c];
      if (phase.pixels == 0) continue;
      const std::size_t index =
          (static_cast<std::size_t>(block_index) * geometry_.row_phases.size() + a) *
              geometry_.column_phases.size() +
          c;
      const std::int64_t first_pixel = at * out_w_ + phase.first_x;
      void* out =
          static_cast<std::byte*>(out_image) + (first_pixel * out_channels_ + b.channel) * element_;
      DepthwiseOutputs o = row_outputs(call, index, groups, out, source);
      o.columns = scratch;
      o.sums = raw;
      (source != nullptr ? b.fused : phase.kernel)(o);
      if (epilogue_ != nullptr) continue;
      // No vector form for this (scheme, dtype): the scalar output stage, element by element.
      for (std::int64_t p = 0; p < phase.pixels; ++p) {
        for (std::int32_t k = 0; k < b.channels; ++k) {
          const std::int32_t v = call.run.stage.apply(raw[p * 64 + k], b.channel + k);
          std::byte* to = static_cast<std::byte*>(out) + (p * o.output_stride + k) * element_;
          if (element_ == 4) {
            std::memcpy(to, &v, 4);
          } else {
            *to = static_cast<std::byte>(static_cast<std::uint8_t>(v));
          }
        }
      }
    }
  }

  // The kernels' arguments that stay the same from call to call: per block its columns' build,
  // per (block, row phase, column phase) its outputs' (weights, sums, taps, pixels, strides).
  void plan_kernel_args() {
    const auto& d = problem_.desc();
    const std::int64_t out_stride = (problem_.transposed() ? d.stride_w : 1) * out_channels_;
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      const Block& b = blocks_[k];
      columns_args_.push_back({nullptr, b.input_offset, 0, in_channels_, d.in_width,
                               geometry_.first_column, static_cast<std::int32_t>(columns_), b.width,
                               b.input_bytes, multiplier_ > 1 ? expand_.data() + k * 64 : nullptr,
                               flip_input_, 0, nullptr});
      for (std::size_t a = 0; a < geometry_.row_phases.size(); ++a) {
        for (std::size_t c = 0; c < geometry_.column_phases.size(); ++c) {
          const ColumnPhase& phase = geometry_.column_phases[c];
          const std::size_t index = outputs_args_.size();
          outputs_args_.push_back({nullptr,
                                   0,
                                   static_cast<std::int32_t>(columns_),
                                   b.width,
                                   static_cast<std::int32_t>(phase.tap_columns.size()),
                                   phase.tap_columns.data(),
                                   weights_.data() + weight_offsets_[index],
                                   sums_.data() + sum_offsets_[index],
                                   0,
                                   static_cast<std::int32_t>(phase.pixels),
                                   phase.step,
                                   b.channels,
                                   b.channel,
                                   nullptr,
                                   out_stride,
                                   d.output_dtype == DType::s8,
                                   false,
                                   nullptr,
                                   nullptr,
                                   nullptr});
        }
      }
    }
  }

  Problem problem_;
  const std::uint64_t serial_ = gemm::new_stage_deriver();  // for its kept_stage
  Geometry geometry_;
  std::vector<std::byte> canonical_;
  std::int64_t in_channels_ = 0, out_channels_ = 0, multiplier_ = 1, out_h_ = 0, out_w_ = 0;
  bool flip_input_ = false;
  int splits_ = 1;
  std::vector<std::int8_t> column_sum_;  // per output channel: c (plan_weight_splits), else 0
  // Per output channel: the kernel row of its w − zw outside s8 (plan_weight_splits), else −1.
  std::vector<std::int8_t> duplicated_row_;
  std::vector<Block> blocks_;
  std::vector<std::size_t> fused_run_end_;  // plan_fused_runs
  std::vector<std::int64_t> task_rows_;
  // Per task row: where its slots' input rows start in slot_rows_, and its groups of 4 slots.
  std::vector<std::int64_t> task_slots_;
  std::vector<std::int32_t> task_groups_;
  std::vector<std::int32_t> slot_rows_;
  std::vector<DepthwiseColumns> columns_args_;  // per block (see plan_kernel_args)
  std::vector<DepthwiseOutputs> outputs_args_;  // per (block, row phase, column phase)
  std::int64_t element_ = 1;                    // bytes per output value
  std::vector<std::uint16_t> expand_;           // m ≥ 2: per block, 64 lane → span byte indices
  AlignedVector<std::int8_t> weights_;
  AlignedVector<std::int32_t> sums_;
  std::vector<std::int64_t> weight_offsets_, sum_offsets_;  // per (block, row phase, col phase)
  std::int64_t columns_ = 0, scratch_bytes_ = 0, stage_bytes_ = 0;
  // NCHW input or output: task rows per slab (0: NHWC in and out, no slabs), and a slab's bytes.
  std::int64_t slab_tasks_ = 0, slab_input_bytes_ = 0, slab_output_bytes_ = 0;
  std::int64_t blocks64_ = 0;  // the first blocks, 64 lanes wide
  EpilogueKernel epilogue_ = nullptr;
  std::unique_ptr<DepthwisePlanePath> planes_;  // NCHW in and out, where it applies (else null)
};

}  // namespace

bool depthwise_takes(const Problem& problem) {
  const auto& d = problem.desc();
  if (d.groups < 2 || d.groups != d.in_channels) return false;
  if (d.kernel_h > kMaxKernelRows) return false;
  if (problem.transposed() && d.stride_h * d.stride_w > kMaxPhases) return false;
  const Geometry geometry(problem);
  const std::int64_t bytes =
      geometry.max_groups * geometry.max_columns() * 256 + 256 * (geometry.max_pixels() + 8) + 64;
  return bytes <= kMaxScratchBytes;
}

std::unique_ptr<PreparedKernel> make_depthwise_kernel(const Problem& problem,
                                                      const CanonicalWeights& weights) {
  return std::make_unique<DepthwiseKernel>(problem, weights);
}

}  // namespace qconv::detail::avx512_vnni
