// SPDX-License-Identifier: Apache-2.0
// The unit of each output scheme (src/output/schemes/).
#include "output/scheme_unit.hpp"

namespace qconv::detail {
namespace scheme {
extern const SchemeUnit kInt32, kFbgemm, kQnnpack, kOnednn, kOnnx, kOnnxruntime, kTvm, kTvmF32,
    kTflite, kTfliteSingle;
}  // namespace scheme

const SchemeUnit& scheme_unit(SchemeKind kind) {
  switch (kind) {
    case SchemeKind::int32: return scheme::kInt32;
    case SchemeKind::fbgemm: return scheme::kFbgemm;
    case SchemeKind::qnnpack: return scheme::kQnnpack;
    case SchemeKind::onednn: return scheme::kOnednn;
    case SchemeKind::onnx: return scheme::kOnnx;
    case SchemeKind::onnxruntime: return scheme::kOnnxruntime;
    case SchemeKind::tvm: return scheme::kTvm;
    case SchemeKind::tvm_f32: return scheme::kTvmF32;
    case SchemeKind::tflite: return scheme::kTflite;
    case SchemeKind::tflite_single: return scheme::kTfliteSingle;
  }
  return scheme::kInt32;
}

}  // namespace qconv::detail
