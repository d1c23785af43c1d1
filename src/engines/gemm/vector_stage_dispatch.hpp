// SPDX-License-Identifier: Apache-2.0
// The schemes, and the (scheme, output dtype) pairs that the kernel sets' vector output stages
// cover, as one dispatch shared by their tables of epilogues and kernels. Internal linkage: it is
// instantiated in files built for the kernel sets' ISAs (see kernel_set.hpp).
#pragma once

#include "qconv/scheme.hpp"
#include "qconv/types.hpp"

namespace qconv::detail::gemm {
namespace {

// f.template operator()<K>() with `scheme` as the constant K; R() for a value outside the enum. The
// one switch over the schemes for every table of kernels templated on the scheme.
template <class R, class F>
R for_scheme(SchemeKind scheme, const F& f) {
  switch (scheme) {
    case SchemeKind::int32: return f.template operator()<SchemeKind::int32>();
    case SchemeKind::fbgemm: return f.template operator()<SchemeKind::fbgemm>();
    case SchemeKind::qnnpack: return f.template operator()<SchemeKind::qnnpack>();
    case SchemeKind::onednn: return f.template operator()<SchemeKind::onednn>();
    case SchemeKind::onnx: return f.template operator()<SchemeKind::onnx>();
    case SchemeKind::tvm: return f.template operator()<SchemeKind::tvm>();
    case SchemeKind::tvm_f32: return f.template operator()<SchemeKind::tvm_f32>();
    case SchemeKind::tflite: return f.template operator()<SchemeKind::tflite>();
    case SchemeKind::tflite_single: return f.template operator()<SchemeKind::tflite_single>();
    case SchemeKind::onnxruntime: return f.template operator()<SchemeKind::onnxruntime>();
  }
  return R();
}

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
  return for_scheme<R>(scheme, by_dtype);
}

}  // namespace
}  // namespace qconv::detail::gemm
