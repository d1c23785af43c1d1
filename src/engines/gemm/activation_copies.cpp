// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/activation_copies.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/aligned.hpp"
#include "core/parallel.hpp"
#include "core/worker_scratch.hpp"
#include "engines/layout_transpose.hpp"

namespace qconv::detail::gemm {
namespace {

// Pixels per task of an NCHW <-> NHWC transpose, and about the pixels of a block of NCHW input
// rows made NHWC for a copy.
constexpr std::int64_t kTransposeChunk = 256;
constexpr std::int64_t kLeastBlockPixels = 64;

void copy_bytes(std::uint8_t* to, const std::uint8_t* from, std::int64_t bytes, bool flip_sign) {
  if (!flip_sign) {
    std::memcpy(to, from, static_cast<std::size_t>(bytes));
    return;
  }
  for (std::int64_t i = 0; i < bytes; ++i) to[i] = static_cast<std::uint8_t>(from[i] ^ 0x80u);
}

}  // namespace

std::uint8_t* thread_scratch(std::size_t bytes, int slot) {
  thread_local AlignedVector<std::uint8_t> buffers[9];
  AlignedVector<std::uint8_t>& buffer = buffers[slot];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

namespace {

// Copies `count` pixels of `c` bytes to `to` at a stride of `p` bytes, zeros after each.
void copy_pixels(std::uint8_t* to, const std::uint8_t* from, std::int64_t count, std::int64_t c,
                 std::int64_t p, bool flip_sign) {
  for (std::int64_t i = 0; i < count; ++i) {
    copy_bytes(to + i * p, from + i * c, c, flip_sign);
    std::memset(to + i * p + c, 0, static_cast<std::size_t>(p - c));
  }
}

std::int64_t pixel_bytes(const ActivationCopy& in) {
  return in.pixel_bytes > 0 ? in.pixel_bytes : in.channels;
}

// The blocks of NCHW rows made NHWC by NhwcRows, for the bodies of one copy's parallel_for: a
// slot for each body that may run at once (WorkerScratch), in the calling thread's scratch slot 6.
// A block is a few hundred pixels of consecutive rows (one transpose over them all, even where
// rows are short), and fewer rows where that leaves the threads too few blocks to share, but not
// fewer than kLeastBlockPixels.
class NhwcBlocks {
 public:
  explicit NhwcBlocks(const ActivationCopy& in)
      : slots_(in.nchw ? parallel_participants(in.threads) : 0),
        rows_(in.nchw ? block_rows(in, slots_) : 0),
        slot_bytes_(static_cast<std::size_t>(rows_ * in.width * in.channels)),
        scratch_(in.nchw ? thread_scratch(WorkerScratch::bytes(slot_bytes_, slots_), 6) : nullptr,
                 slot_bytes_, slots_) {}

  std::int64_t rows() const { return rows_; }
  // Blocks per image (each a task of for_input_blocks).
  std::int64_t per_image(const ActivationCopy& in) const { return (in.height + rows_ - 1) / rows_; }
  WorkerScratch& scratch() { return scratch_; }

 private:
  static std::int64_t block_rows(const ActivationCopy& in, int participants) {
    const std::int64_t shared = (in.height + 2 * participants - 1) / (2 * participants);
    const std::int64_t least = (kLeastBlockPixels + in.width - 1) / in.width;
    return std::clamp<std::int64_t>(std::max(std::min(kTransposeChunk / in.width, shared), least),
                                    1, in.height);
  }

  int slots_;
  std::int64_t rows_;
  std::size_t slot_bytes_;
  WorkerScratch scratch_;
};

// parallel_for over the `out_rows` rows per image (of `in.batch` images) of a copy, body(begin,
// end) getting a range of them. For an NHWC input, any split. For an NCHW one, a task per block of
// input rows (`blocks`), with the output rows from first_row(k) to first_row(k + 1) (0 for k = 0,
// out_rows for the last), those that read block k's rows: so each block is transposed once (split
// by output rows, a task shorter than a block transposed the whole block for its few rows, and
// the tasks of two threads each did so: a layer's copy took longer on two threads than on one).
template <class FirstRow, class Body>
void for_input_blocks(const ActivationCopy& in, const NhwcBlocks& blocks, std::int64_t out_rows,
                      const FirstRow& first_row, const Body& body) {
  if (!in.nchw) {
    parallel_for(in.threads, in.batch * out_rows, body);
    return;
  }
  const std::int64_t per_image = blocks.per_image(in);
  const auto row_of = [&](std::int64_t k) {
    if (k == 0) return std::int64_t{0};
    if (k == per_image) return out_rows;
    return std::clamp<std::int64_t>(first_row(k * blocks.rows()), 0, out_rows);
  };
  parallel_for(in.threads, in.batch * per_image, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t n = task / per_image, k = task % per_image;
      const std::int64_t first = row_of(k), last = row_of(k + 1);
      if (first < last) body(n * out_rows + first, n * out_rows + last);
    }
  });
}

// The input's rows as NHWC, for one task of a copy: an NHWC input's own, an NCHW input's made
// NHWC a block of consecutive rows at a time (a few hundred pixels: one transpose over them all,
// even where rows are short) in a slot of `blocks`, read while still in cache.
class NhwcRows {
 public:
  NhwcRows(const ActivationCopy& in, NhwcBlocks& blocks) : in_(in) {
    if (!in.nchw) return;
    block_rows_ = blocks.rows();
    claim_.emplace(blocks.scratch());
    block_ = claim_->data();
  }

  // Row h of image n: width x channels bytes.
  const std::uint8_t* row(std::int64_t n, std::int64_t h) {
    const std::int64_t row_bytes = in_.width * in_.channels;
    if (!in_.nchw) return in_.data + (n * in_.height + h) * row_bytes;
    if (n != image_ || h < first_ || h >= first_ + block_rows_) {
      image_ = n;
      first_ = std::min(h, in_.height - block_rows_);
      // Rows [first_, first_ + block_rows_) are a [channels][rows·width] matrix, a plane apart.
      const std::int64_t plane = in_.height * in_.width;
      transpose_bytes(in_.data + (n * in_.channels * plane + first_ * in_.width), plane, block_,
                      in_.channels, in_.channels, block_rows_ * in_.width);
    }
    return block_ + (h - first_) * row_bytes;
  }

 private:
  const ActivationCopy& in_;
  std::optional<WorkerScratch::Claim> claim_;
  std::int64_t block_rows_ = 0;
  std::uint8_t* block_ = nullptr;
  std::int64_t image_ = -1, first_ = 0;
};

}  // namespace

const std::uint8_t* placed_copy(const ActivationCopy& in, std::int64_t grid_height,
                                std::int64_t grid_width, std::int64_t stride_h,
                                std::int64_t stride_w, std::int64_t top, std::int64_t left,
                                std::uint8_t fill) {
  const std::int64_t c = in.channels, p = pixel_bytes(in), row_bytes = grid_width * p;
  std::uint8_t* out =
      thread_scratch(static_cast<std::size_t>(in.batch * grid_height * row_bytes), 0);
  // The input columns that land inside the grid: w·stride_w + left in [0, grid_width).
  const std::int64_t first_w = left >= 0 ? 0 : (-left + stride_w - 1) / stride_w;
  const std::int64_t end_w =
      std::min(in.width, grid_width - left <= 0 ? 0 : (grid_width - left - 1) / stride_w + 1);
  NhwcBlocks blocks(in);
  // Input row i lands on grid row i·stride_h + top.
  const auto first_row = [&](std::int64_t i) { return i * stride_h + top; };
  for_input_blocks(in, blocks, grid_height, first_row, [&](std::int64_t begin, std::int64_t end) {
    NhwcRows rows(in, blocks);
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t n = row / grid_height, j = row % grid_height - top;
      std::uint8_t* to = out + row * row_bytes;
      std::memset(to, fill, static_cast<std::size_t>(row_bytes));
      if (p > c) {  // padded channels: 0 in every pixel
        for (std::int64_t w = 0; w < grid_width; ++w) {
          std::memset(to + w * p + c, 0, static_cast<std::size_t>(p - c));
        }
      }
      if (j < 0 || j % stride_h != 0 || j / stride_h >= in.height || first_w >= end_w) continue;
      const std::uint8_t* line = rows.row(n, j / stride_h);
      if (p > c) {
        for (std::int64_t w = first_w; w < end_w; ++w) {
          copy_pixels(to + (w * stride_w + left) * p, line + w * c, 1, c, p, in.flip_sign);
        }
        continue;
      }
      if (stride_w == 1) {  // one run of pixels
        copy_bytes(to + (first_w + left) * c, line + first_w * c, (end_w - first_w) * c,
                   in.flip_sign);
        continue;
      }
      for (std::int64_t w = first_w; w < end_w; ++w) {
        copy_bytes(to + (w * stride_w + left) * c, line + w * c, c, in.flip_sign);
      }
    }
  });
  return out;
}

const std::uint8_t* dense_copy(const ActivationCopy& in, std::int64_t out_height,
                               std::int64_t out_width, std::int64_t stride_h,
                               std::int64_t stride_w) {
  const std::int64_t c = in.channels, p = pixel_bytes(in);
  std::uint8_t* out =
      thread_scratch(static_cast<std::size_t>(in.batch * out_height * out_width * p), 0);
  NhwcBlocks blocks(in);
  // Output row y reads input row y·stride_h.
  const auto first_row = [&](std::int64_t i) { return (i + stride_h - 1) / stride_h; };
  for_input_blocks(in, blocks, out_height, first_row, [&](std::int64_t begin, std::int64_t end) {
    NhwcRows rows(in, blocks);
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t n = row / out_height, y = row % out_height;
      const std::uint8_t* from = rows.row(n, y * stride_h);
      std::uint8_t* to = out + row * out_width * p;
      for (std::int64_t x = 0; x < out_width; ++x) {
        copy_pixels(to + x * p, from + x * stride_w * c, 1, c, p, in.flip_sign);
      }
    }
  });
  return out;
}

const std::uint8_t* plain_copy(const ActivationCopy& in) {
  if (pixel_bytes(in) > in.channels) return dense_copy(in, in.height, in.width, 1, 1);
  const std::int64_t row_bytes = in.width * in.channels, rows = in.batch * in.height;
  std::uint8_t* out = thread_scratch(static_cast<std::size_t>(rows * row_bytes), 0);
  NhwcBlocks blocks(in);
  const auto first_row = [](std::int64_t i) { return i; };
  for_input_blocks(in, blocks, in.height, first_row, [&](std::int64_t begin, std::int64_t end) {
    if (!in.nchw) {  // one run
      copy_bytes(out + begin * row_bytes, in.data + begin * row_bytes, (end - begin) * row_bytes,
                 in.flip_sign);
      return;
    }
    NhwcRows nhwc(in, blocks);
    for (std::int64_t row = begin; row < end; ++row) {
      copy_bytes(out + row * row_bytes, nhwc.row(row / in.height, row % in.height), row_bytes,
                 in.flip_sign);
    }
  });
  return out;
}

namespace {

// The tasks of a whole-tensor transpose over `pixels` pixels per image, each at most
// kTransposeChunk pixels. Where there are enough of them for every thread, as many as the pool
// cuts chunks (a multiple of ThreadPool::kChunksPerThread per thread), of (nearly) equal length:
// each thread's share is then the same run of pixels as its share of the tiles' parallel_for,
// which splits the pixels in the same proportions, and a thread reads the pixels it wrote itself
// (read from the other core's cache, 400 KB came in 12 µs rather than 3). A smaller image, or
// one thread, keeps tasks of kTransposeChunk. Tasks start at multiples of 16 pixels, the
// transposes' blocks (196-pixel tasks made a one-thread depthwise layer's transposes 8 % slower).
struct TransposeTasks {
  std::int64_t per_image;
  bool even = false;  // equal shares, not runs of kTransposeChunk

  TransposeTasks(std::int64_t pixels, int threads) {
    const std::int64_t participants = parallel_participants(threads);
    per_image = (pixels + kTransposeChunk - 1) / kTransposeChunk;
    if (participants == 1 || per_image < 2 * participants) return;
    const std::int64_t share = participants * ThreadPool::kChunksPerThread;
    per_image = (per_image + share - 1) / share * share;
    even = true;
  }
  // The first pixel of task k of an image of `pixels` (and past the last, k = per_image).
  std::int64_t first(std::int64_t k, std::int64_t pixels) const {
    if (k >= per_image) return pixels;
    return even ? pixels * k / per_image / kBlock * kBlock : k * kTransposeChunk;
  }

 private:
  static constexpr std::int64_t kBlock = 16;
};

}  // namespace

const std::uint8_t* nhwc_from_nchw(const std::uint8_t* nchw, std::int64_t batch,
                                   std::int64_t channels, std::int64_t height, std::int64_t width,
                                   int threads) {
  const std::int64_t pixels = height * width, c = channels;
  std::uint8_t* out = thread_scratch(static_cast<std::size_t>(batch * pixels * c), 1);
  const TransposeTasks tasks(pixels, threads);
  const std::int64_t chunks = tasks.per_image;
  parallel_for(threads, batch * chunks, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t n = task / chunks, first = tasks.first(task % chunks, pixels);
      const std::int64_t count = tasks.first(task % chunks + 1, pixels) - first;
      // Image n is a [channels][pixels] matrix; its transpose is the NHWC image.
      transpose_bytes(nchw + n * c * pixels + first, pixels, out + (n * pixels + first) * c, c, c,
                      count);
    }
  });
  return out;
}

namespace {

// A widened copy's storage for `bytes` input bytes: scratch slot 3, the 64 zero bytes after them
// already written (a tile's last K step may read past its row's channels).
std::uint16_t* widened_storage(std::int64_t bytes) {
  constexpr std::int64_t kSlack = 64;
  auto* out = reinterpret_cast<std::uint16_t*>(
      thread_scratch(static_cast<std::size_t>(2 * bytes + kSlack), 3));
  std::memset(out + bytes, 0, kSlack);
  return out;
}

}  // namespace

const std::uint8_t* widened_nhwc_from_nchw(const std::uint8_t* nchw, std::int64_t batch,
                                           std::int64_t channels, std::int64_t height,
                                           std::int64_t width, int threads, WidenBytes widen) {
  const std::int64_t pixels = height * width, c = channels;
  std::uint16_t* out = widened_storage(batch * pixels * c);
  // Each task's pixels go through a buffer that stays in L1, a piece at a time.
  const std::int64_t piece_pixels = kWidenedTransposePiece / c;
  const TransposeTasks tasks(pixels, threads);
  const std::int64_t chunks = tasks.per_image;
  parallel_for(threads, batch * chunks, [&](std::int64_t begin, std::int64_t end) {
    alignas(64) std::uint8_t piece[kWidenedTransposePiece];
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t n = task / chunks, last = tasks.first(task % chunks + 1, pixels);
      for (std::int64_t first = tasks.first(task % chunks, pixels); first < last;) {
        const std::int64_t count = std::min(piece_pixels, last - first);
        transpose_bytes(nchw + n * c * pixels + first, pixels, piece, c, c, count);
        widen(piece, count * c, out + (n * pixels + first) * c);
        first += count;
      }
    }
  });
  return reinterpret_cast<const std::uint8_t*>(out);
}

void nchw_channels_from_nhwc(const void* nhwc, void* nchw, std::int64_t batch,
                             std::int64_t channels, std::int64_t pixels, std::int64_t first,
                             std::int64_t count, std::size_t element) {
  const auto* in = static_cast<const std::byte*>(nhwc);
  auto* out = static_cast<std::byte*>(nchw);
  const auto at = [&](std::int64_t values) { return static_cast<std::size_t>(values) * element; };
  for (std::int64_t n = 0; n < batch; ++n) {  // image n: the [pixels][count] block's transpose
    transpose_values(in + at(n * pixels * channels + first), channels,
                     out + at((n * channels + first) * pixels), pixels, pixels, count, element);
  }
}

void nchw_from_nhwc(const void* nhwc, void* nchw, std::int64_t batch, std::int64_t channels,
                    std::int64_t pixels, std::size_t element, int threads) {
  const auto* in = static_cast<const std::byte*>(nhwc);
  auto* out = static_cast<std::byte*>(nchw);
  const auto at = [&](std::int64_t values) { return static_cast<std::size_t>(values) * element; };
  const TransposeTasks tasks(pixels, threads);
  const std::int64_t chunks = tasks.per_image;
  parallel_for(threads, batch * chunks, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t n = task / chunks, first = tasks.first(task % chunks, pixels);
      const std::int64_t count = tasks.first(task % chunks + 1, pixels) - first;
      // Image n is a [pixels][channels] matrix; its transpose is the NCHW image.
      transpose_values(in + at((n * pixels + first) * channels), channels,
                       out + at(n * channels * pixels + first), pixels, count, channels, element);
    }
  });
}

void NhwcBands::clear(std::uint8_t* slot) {
  const Record none;
  std::memcpy(slot, &none, sizeof none);
}

NhwcBands::NhwcBands(const std::uint8_t* nchw, std::int64_t channels, std::int64_t pixels,
                     std::uint8_t* slot)
    : nchw_(nchw), channels_(channels), pixels_(pixels), slot_(slot), image_(slot + kRecordBytes) {
  std::memcpy(&record_, slot_, sizeof record_);
}

NhwcBands::~NhwcBands() { std::memcpy(slot_, &record_, sizeof record_); }

const std::uint8_t* NhwcBands::pixels(std::int64_t n, std::int64_t first, std::int64_t last,
                                      std::int64_t channel, std::int64_t count) {
  first = std::max<std::int64_t>(first, 0);
  last = std::min(last, pixels_);
  if (first >= last) return image_;
  Record& r = record_;
  if (n != r.n || channel != r.channel || count != r.count || first > r.last ||
      last < r.first) {  // nothing to keep: the band alone
    r = {n, first, first, channel, count};
    transpose(first, last);
    r.last = last;
    return image_;
  }
  if (first < r.first) transpose(first, r.first);
  if (last > r.last) transpose(r.last, last);
  r.first = std::min(r.first, first);
  r.last = std::max(r.last, last);
  return image_;
}

void NhwcBands::transpose(std::int64_t first, std::int64_t last) {
  // Channels [channel, channel + count) of pixels [first, last) of image n are a [count][pixels]
  // matrix, a plane apart.
  const Record& r = record_;
  transpose_bytes(nchw_ + ((r.n * channels_ + r.channel) * pixels_ + first), pixels_,
                  image_ + first * channels_ + r.channel, channels_, r.count, last - first);
}

void widen_bytes(const std::uint8_t* in, std::int64_t bytes, std::uint16_t* out) {
  for (std::int64_t i = 0; i < bytes; ++i) out[i] = in[i];
}

const std::uint8_t* widened_copy(const std::uint8_t* in, std::int64_t bytes, int threads,
                                 WidenBytes widen) {
  std::uint16_t* out = widened_storage(bytes);
  constexpr std::int64_t kChunk = 1 << 16;
  parallel_for(threads, (bytes + kChunk - 1) / kChunk, [&](std::int64_t begin, std::int64_t end) {
    const std::int64_t first = begin * kChunk, last = std::min(bytes, end * kChunk);
    widen(in + first, last - first, out + first);
  });
  return reinterpret_cast<const std::uint8_t*>(out);
}

}  // namespace qconv::detail::gemm
