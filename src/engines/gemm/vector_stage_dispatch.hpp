// SPDX-License-Identifier: Apache-2.0
// The (scheme, output dtype) pairs that the kernel sets' vector output stages cover, as one
// dispatch shared by their tables of epilogues and fused kernels. Internal linkage: it is
// instantiated in files built for the kernel sets' ISAs (see kernel_set.hpp).
#pragma once

#include "qconv/scheme.hpp"
#include "qconv/types.hpp"

namespace qconv::detail::gemm {
namespace {

// The (scheme, output dtype) pairs with a vector stage: f.template operator()<K, D>() for them
// (a kernel of their own), R{} for the rest — the requantizing schemes to s32, where r may leave
// s32 before zy is added, and int32 to bytes.
template <class R, class F>
R for_vector_stage(SchemeKind scheme, DType output_dtype, const F& f) {
  const auto by_dtype = [&]<SchemeKind K>() -> R {
    if constexpr (K == SchemeKind::int32) {
      return output_dtype == DType::s32 ? f.template operator()<K, DType::s32>() : R{};
    } else {
      switch (output_dtype) {
        case DType::u8: return f.template operator()<K, DType::u8>();
        case DType::s8: return f.template operator()<K, DType::s8>();
        default: return R{};
      }
    }
  };
  switch (scheme) {
    case SchemeKind::int32: return by_dtype.template operator()<SchemeKind::int32>();
    case SchemeKind::fbgemm: return by_dtype.template operator()<SchemeKind::fbgemm>();
    case SchemeKind::qnnpack: return by_dtype.template operator()<SchemeKind::qnnpack>();
    case SchemeKind::onednn: return by_dtype.template operator()<SchemeKind::onednn>();
    case SchemeKind::onnx: return by_dtype.template operator()<SchemeKind::onnx>();
    case SchemeKind::tvm: return by_dtype.template operator()<SchemeKind::tvm>();
    case SchemeKind::tvm_f32: return by_dtype.template operator()<SchemeKind::tvm_f32>();
    case SchemeKind::tflite: return by_dtype.template operator()<SchemeKind::tflite>();
    case SchemeKind::tflite_single:
      return by_dtype.template operator()<SchemeKind::tflite_single>();
    case SchemeKind::onnxruntime: return by_dtype.template operator()<SchemeKind::onnxruntime>();
  }
  return R{};
}

}  // namespace
}  // namespace qconv::detail::gemm
