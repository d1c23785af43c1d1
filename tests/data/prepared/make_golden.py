# SPDX-License-Identifier: Apache-2.0
"""Writes golden prepared-weights files with the qconv build on PYTHONPATH, for
tests/serialize_golden_test.cpp: `v<N>.qcpw` (packed form only), `v<N>_original.qcpw` (with the
original weights) and `v<N>.json` (the problem's arrays and the output the build computed), where
N is the format version the build writes. Run once per format version; never regenerate an old
version's files (they stand for files written by that build):

    PYTHONPATH=build/python python3 tests/data/prepared/make_golden.py tests/data/prepared
"""

import json
import pathlib
import struct
import sys

import numpy as np

import qconv

# A problem that exercises the fields: NHWC input, OHWI s8 weights with per-channel scales and
# non-zero zero points, padding and stride that differ per side, the tvm scheme with ReLU.
N, H, W, C, O, KH, KW = 1, 5, 6, 4, 6, 3, 2
x = ((np.arange(N * H * W * C) * 37 + 11) % 256).astype(np.uint8).reshape(N, H, W, C)
w = (((np.arange(O * KH * KW * C) * 53 + 7) % 256) - 128).astype(np.int8).reshape(O, KH, KW, C)
w_scale = [0.01 + 0.002 * o for o in range(O)]
w_zero_point = [o - 3 for o in range(O)]
conv = qconv.Conv2dConfig(activation="relu", output_layout="NCHW", dtype="uint8",
                          algorithm="reference")  # the same bytes on every machine
compute = qconv.ComputeConfig(scheme="tvm", rounding="TONEAREST", input_scale=0.05,
                              input_zero_point=17, output_scale=0.2, output_zero_point=5)
geometry = dict(in_channels=C, out_channels=O, batch_size=N, input_height=H, input_width=W,
                kernel_size=(KH, KW), stride=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 1),
                groups=1)

weights = qconv.prepare_conv_weights(
    qconv.QuantizedArray(w, w_scale, w_zero_point, axis=0), "NHWC", "OHWI", has_bias=False,
    conv_config=conv, compute_config=compute, **geometry)
y = qconv.conv2d(x, weights, conv_config=conv, compute_config=compute, **geometry)

out = pathlib.Path(sys.argv[1])
plain = weights.to_bytes()
version = struct.unpack_from("<I", plain, 8)[0]
(out / f"v{version}.qcpw").write_bytes(plain)
(out / f"v{version}_original.qcpw").write_bytes(weights.to_bytes(keep_original_weights=True))
(out / f"v{version}.json").write_text(json.dumps({
    "format_version": version,
    "input_shape_nhwc": list(x.shape),
    "input": x.reshape(-1).tolist(),
    "weights_ohwi": w.reshape(-1).tolist(),
    "output_shape_nchw": list(y.shape),
    "output": y.reshape(-1).tolist(),
}) + "\n")
print(f"wrote format version {version}: {len(plain)} bytes, output {list(y.shape)}")
