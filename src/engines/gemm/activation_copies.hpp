// SPDX-License-Identifier: Apache-2.0
// The per-call copies of activations the fast engines make in per-thread scratch: the input placed
// on a grid whose other bytes hold the zero point (padding filled; a transposed convolution's
// input spread out at its stride), the pixels a strided 1x1 layer reads made dense, an input
// of the other signedness than the kernels take (x ± 128), NCHW made NHWC and back. Plain C++ over
// the thread pool (built for the baseline ISA).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::gemm {

// An NHWC u8 or s8 activation tensor as given, and how to copy it.
struct ActivationCopy {
  const std::uint8_t* data;
  std::int64_t batch, height, width, channels;
  bool flip_sign;  // each byte xor 0x80: s8 read as u8 (x + 128), or u8 as s8 (x − 128)
  int threads;
  // Bytes per pixel in the copy: `channels`, or more (AMX reads 64 channels at a time), the
  // bytes past `channels` being 0 in every pixel, padding pixels included (0 adds nothing to a
  // window sum, and their weights are 0). 0 means `channels`.
  std::int64_t pixel_bytes = 0;
  // `data` is NCHW ([batch][channels][height][width]): the copies below transpose it as they
  // place it, so that an NCHW input costs no pass of its own where the plan copies it anyway.
  bool nchw = false;
};

// Scratch buffer `slot` of the calling thread (0: the input's copy, 1: an NHWC copy of an NCHW
// input, or the NhwcBands images of a parallel_for's bodies, or an NCHW 1x1 plan's interleaved
// blocks (nchw_flat_plan.cpp: it makes no such copy), 2: an NHWC result for an NCHW output, 3: the
// input widened to u16, 4: per-pixel sums of the input for a weight zero point, 5: a first layer's
// interleaved rows, 6: blocks of an NCHW input's rows made NHWC by a copy's bodies, 7: the output
// stage's arrays in a grouped tile's lane order, 8: those in the depthwise blocks' lane order; 7
// and 8 are kept from call to call: kept_stage in derived_stage.hpp), grown to `bytes` once and
// then reused: no allocation after a thread's first call of a plan this size. Freed when the thread
// ends. Only the thread that makes a parallel_for calls it: a body that needs scratch of its own
// takes a slot of the caller's (WorkerScratch), since a pool thread may take part first in any
// call.
std::uint8_t* thread_scratch(std::size_t bytes, int slot);

// A [batch][grid_height][grid_width][channels] grid of `fill` bytes with pixel (h, w) of the input
// at (h·stride_h + top, w·stride_w + left); pixels falling outside the grid are left out.
const std::uint8_t* placed_copy(const ActivationCopy& in, std::int64_t grid_height,
                                std::int64_t grid_width, std::int64_t stride_h,
                                std::int64_t stride_w, std::int64_t top, std::int64_t left,
                                std::uint8_t fill);

// The pixels (y·stride_h, x·stride_w) for y < out_height, x < out_width, densely.
const std::uint8_t* dense_copy(const ActivationCopy& in, std::int64_t out_height,
                               std::int64_t out_width, std::int64_t stride_h,
                               std::int64_t stride_w);

// The whole tensor (for an input of the other signedness, flip_sign).
const std::uint8_t* plain_copy(const ActivationCopy& in);

// An NCHW tensor of bytes as NHWC, in scratch slot 1.
const std::uint8_t* nhwc_from_nchw(const std::uint8_t* nchw, std::int64_t batch,
                                   std::int64_t channels, std::int64_t height, std::int64_t width,
                                   int threads);

// An NCHW image of bytes made NHWC band by band, for the tiles of a parallel_for that read it:
// each body's scratch slot (a WorkerScratch's) holds one NHWC image and a record of the pixels in
// place; the run of pixels each task needs (its input rows, or its pixels; all their channels, or
// with panels outermost only its panel's) is made there at its own place, what is already there
// kept, also from the slot's earlier bodies in the same call (a thread taking the same slot each
// time). Each thread then transposes the pixels it reads, while they are in its cache, rather than
// the whole tensor being transposed first, by parts, into a buffer that both threads read back (on
// two threads a third of a grouped 3x3 layer's time, much of it read from the other core's cache;
// where every thread reads every pixel, as in a 1x1 layer split by output channels, each
// transposes them all, at once, and reads its own copy).
class NhwcBands {
 public:
  // A slot's bytes, for images of `image_bytes`.
  static std::size_t slot_bytes(std::int64_t image_bytes) {
    return kRecordBytes + static_cast<std::size_t>(image_bytes);
  }
  // Marks a slot (64-byte aligned) as holding no pixels: before each call's bodies use it.
  static void clear(std::uint8_t* slot);

  // Images of `pixels` pixels of `channels` bytes.
  NhwcBands(const std::uint8_t* nchw, std::int64_t channels, std::int64_t pixels,
            std::uint8_t* slot);
  ~NhwcBands();
  NhwcBands(const NhwcBands&) = delete;
  NhwcBands& operator=(const NhwcBands&) = delete;

  // The slot's NHWC image with channels [channel, channel + count) of pixels [first, last) of
  // image n (clamped to the image) in place; the image's other bytes may be anything.
  const std::uint8_t* pixels(std::int64_t n, std::int64_t first, std::int64_t last,
                             std::int64_t channel, std::int64_t count);

 private:
  struct Record {  // channels [channel, channel + count) of pixels [first, last) of image n
    std::int64_t n = -1, first = 0, last = 0, channel = 0, count = 0;
  };
  static constexpr std::size_t kRecordBytes = 64;  // the image stays 64-byte aligned
  static_assert(sizeof(Record) <= kRecordBytes);

  void transpose(std::int64_t first, std::int64_t last);

  const std::uint8_t* nchw_;
  std::int64_t channels_, pixels_;
  std::uint8_t* slot_;
  std::uint8_t* image_;
  Record record_;
};

// Channels [first, first + count) of every pixel of an NHWC tensor of `element`-byte values
// written to their planes of the NCHW tensor `nchw`.
void nchw_channels_from_nhwc(const void* nhwc, void* nchw, std::int64_t batch,
                             std::int64_t channels, std::int64_t pixels, std::int64_t first,
                             std::int64_t count, std::size_t element);

// An NHWC tensor of `element`-byte values written as NCHW into `nchw`.
void nchw_from_nhwc(const void* nhwc, void* nchw, std::int64_t batch, std::int64_t channels,
                    std::int64_t pixels, std::size_t element, int threads);

// `bytes` bytes zero-extended to u16 (for kernel sets that read the input widened).
void widen_bytes(const std::uint8_t* in, std::int64_t bytes, std::uint16_t* out);

// The same into scratch slot 3, followed by 64 zero bytes (a tile's last K step may read past its
// row's channels), by `widen` (chunks of 64 KiB of the input) where given.
const std::uint8_t* widened_copy(const std::uint8_t* in, std::int64_t bytes, int threads,
                                 WidenBytes widen = &widen_bytes);

// An NCHW input of up to kWidenedTransposeChannels channels as widened_copy's result for its NHWC
// transpose, in one pass (the NHWC bytes of a few pixels at a time in a buffer in L1), where
// nhwc_from_nchw wrote the NHWC copy whole and widened_copy read it back.
inline constexpr std::int64_t kWidenedTransposePiece = 8192;  // bytes
inline constexpr std::int64_t kWidenedTransposeChannels = kWidenedTransposePiece / 2;
const std::uint8_t* widened_nhwc_from_nchw(const std::uint8_t* nchw, std::int64_t batch,
                                           std::int64_t channels, std::int64_t height,
                                           std::int64_t width, int threads, WidenBytes widen);

}  // namespace qconv::detail::gemm
