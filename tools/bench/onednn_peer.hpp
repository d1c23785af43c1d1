// SPDX-License-Identifier: Apache-2.0
// The peer: oneDNN's int8 convolution on the same layer, in its own best setup (u8 NHWC source,
// s8 weights in the layout oneDNN prefers, reordered once at creation, per-channel scales, float
// bias, u8 NHWC destination with a zero point). Linked into the bench only, never the library.
// oneDNN takes no weight zero point and no u8 weights: for those variants it runs the symmetric
// u8 x s8 problem, and the bench says so.
#pragma once

#include <memory>
#include <string>

#include "qconv/problem.hpp"

namespace qconv::bench {

class Peer {
 public:
  virtual ~Peer() = default;
  virtual void run() = 0;
  // Primitive creation, weight reorder and the first execution, in milliseconds.
  virtual double prepare_ms() const = 0;
  // oneDNN's implementation name, e.g. "brgconv:avx512_core_vnni".
  virtual std::string implementation() const = 0;
};

// Whether this build of the bench has oneDNN.
bool peer_available();

// Limits oneDNN's instruction set ("avx512_core_vnni", "avx2_vnni", "avx2", ...); call before any
// peer is made. Throws std::runtime_error for a name oneDNN does not know.
void limit_peer_isa(const std::string& isa);

// Makes the peer for `problem` on `threads` threads (an empty pointer when oneDNN cannot run the
// problem's class); `what` says which problem oneDNN ran.
std::unique_ptr<Peer> make_peer(const Problem& problem, int threads, std::string& what);

}  // namespace qconv::bench
