# SPDX-License-Identifier: Apache-2.0
"""Generates the numpy_*.json test vectors: SPEC §3 (the exact accumulator) and the SPEC §4 `tflite`
scheme computed here with NumPy and Python integers, sharing nothing with qconv's code, on seeded
random values, in layouts other than NCHW/OIHW and with non-zero (per-channel) weight zero points.

    python3 tests/data/vectors/generate_numpy.py tests/data/vectors

Deterministic: running it again writes the same files. The format is the README's, plus
`x_layout`, `w_layout`, `y_layout` (each array is stored in its layout), per-channel `w_zero_point`
and `w_scale`, and for `tflite` outputs the scales from which the multipliers are derived.
"""

import json
import math
import pathlib
import sys

import numpy as np

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
RANGES = {"uint8": (0, 255), "int8": (-128, 127), "int32": (INT32_MIN, INT32_MAX)}


def accumulate(op, x, w, zx, zw, stride, pads, dilation, groups, output_padding=(0, 0)):
    """x: NCHW values, w: OIHW ([C_out, C_in/g, kh, kw]) for conv2d or IOHW ([C_in, C_out/g, kh,
    kw]) for conv2d_transpose; pads (top, left, bottom, right). Exact int64 sums."""
    n, c, h, wd = x.shape
    top, left, bottom, right = pads
    sh, sw = stride
    dh, dw = dilation
    xs = x.astype(np.int64) - zx
    if op == "conv2d":
        o, cg, kh, kw = w.shape
        ws = w.astype(np.int64) - np.asarray(zw, np.int64).reshape(-1, 1, 1, 1)
        padded = np.zeros((n, c, h + top + bottom, wd + left + right), np.int64)  # real 0 = zx
        padded[:, :, top:top + h, left:left + wd] = xs
        oh = (h + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
        ow = (wd + left + right - ((kw - 1) * dw + 1)) // sw + 1
        out = np.zeros((n, o, oh, ow), np.int64)
        og = o // groups
        for g in range(groups):
            for r in range(kh):
                for s in range(kw):
                    patch = padded[:, g * cg:(g + 1) * cg,
                                   r * dh:r * dh + (oh - 1) * sh + 1:sh,
                                   s * dw:s * dw + (ow - 1) * sw + 1:sw]
                    out[:, g * og:(g + 1) * og] += np.einsum(
                        "nchw,oc->nohw", patch, ws[g * og:(g + 1) * og, :, r, s])
        return out
    cin, og, kh, kw = w.shape
    o = og * groups
    cg = cin // groups
    zw_o = np.asarray(zw, np.int64) * np.ones(o, np.int64)
    full_h = sh * (h - 1) + (kh - 1) * dh + 1
    full_w = sw * (wd - 1) + (kw - 1) * dw + 1
    full = np.zeros((n, o, full_h + output_padding[0], full_w + output_padding[1]), np.int64)
    for g in range(groups):
        for r in range(kh):
            for s in range(kw):
                # weight joining input channel g*cg + i to output g*og + j
                wgt = w[g * cg:(g + 1) * cg, :, r, s].astype(np.int64) - zw_o[g * og:(g + 1) * og]
                contrib = np.einsum("nchw,cj->njhw", xs[:, g * cg:(g + 1) * cg], wgt)
                full[:, g * og:(g + 1) * og, r * dh:r * dh + (h - 1) * sh + 1:sh,
                     s * dw:s * dw + (wd - 1) * sw + 1:sw] += contrib
    oh = full_h - top - bottom + output_padding[0]
    ow = full_w - left - right + output_padding[1]
    return full[:, :, top:top + oh, left:left + ow]


def wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


def quantize_multiplier(m):
    """TFLite's QuantizeMultiplier: m = q·2^(e−31), q = frexp fraction·2^31 rounded half away."""
    if m == 0:
        return 0, 0
    f, e = math.frexp(m)
    q = int(math.floor(abs(f) * 2**31 + 0.5)) * (1 if f > 0 else -1)
    if q == 2**31:
        q //= 2
        e += 1
    if e < -31:
        return 0, 0
    return q, e


def srdhm(a, b):
    """gemmlowp's SaturatingRoundingDoublingHighMul."""
    if a == INT32_MIN and b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = 2**30 if ab >= 0 else 1 - 2**30
    value = ab + nudge
    # C's division truncates toward zero.
    return abs(value) // 2**31 * (1 if value >= 0 else -1)


def rdbp(x, exponent):
    """gemmlowp's RoundingDivideByPOT."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def f32(v):
    return float(np.float32(v))


def tflite(acc, bias, sx, sw, sy, zy, lo, hi):
    out = np.empty(acc.shape, np.int64)
    for o in range(acc.shape[1]):
        q, shift = quantize_multiplier(f32(sx) * f32(sw[o]) / f32(sy))
        for idx in np.ndindex(acc.shape[0], *acc.shape[2:]):
            n, rest = idx[0], idx[1:]
            a = wrap32(int(acc[(n, o) + rest]) + int(bias[o]))
            shifted = wrap32(a * 2**max(shift, 0))
            y = rdbp(srdhm(shifted, q), max(-shift, 0)) + zy
            out[(n, o) + rest] = min(max(y, lo), hi)
    return out


def to_layout(a, layout):
    """An NCHW / OIHW array rearranged into `layout` (HWOI: [kh, kw, C, multiplier])."""
    if layout in ("NCHW", "OIHW", "IOHW"):
        return a
    if layout in ("NHWC", "OHWI"):
        return a.transpose(0, 2, 3, 1)
    if layout == "HWIO":
        return a.transpose(2, 3, 1, 0)
    raise ValueError(layout)


def hwoi(w_oihw, channels):
    """Depthwise OIHW [C·m, 1, kh, kw] (output o = c·m + j) as HWOI [kh, kw, C, m]."""
    o, _, kh, kw = w_oihw.shape
    m = o // channels
    return w_oihw[:, 0].reshape(channels, m, kh, kw).transpose(2, 3, 0, 1)


def array(a):
    return {"shape": list(a.shape), "data": [int(v) for v in a.reshape(-1)]}


def case(name, rng, op, x_dtype, w_dtype, x_layout, w_layout, y_layout, n, c, h, wd, o, groups,
         k, stride, pads, dilation, out, output_padding=(0, 0), y_dtype="int8", per_channel=True,
         x_zero_point=None, w_zero_point=None, values=None):
    xlo, xhi = RANGES[x_dtype]
    wlo, whi = RANGES[w_dtype]
    x = rng.integers(xlo, xhi + 1, size=(n, c, h, wd)) if values is None else values[0]
    if op == "conv2d":
        w = rng.integers(wlo, whi + 1, size=(o, c // groups, *k))
    else:
        w = rng.integers(wlo, whi + 1, size=(c, o // groups, *k))
    zx = int(rng.integers(xlo, xhi + 1)) if x_zero_point is None else x_zero_point
    if w_zero_point is not None:
        zw = w_zero_point
    elif per_channel:
        zw = [int(v) for v in rng.integers(max(wlo, -9), min(whi, 9) + 1, size=o)]
    else:
        zw = [int(rng.integers(wlo, whi + 1))]
    acc = accumulate(op, x, w, zx, zw if len(zw) > 1 else zw * o, stride, pads, dilation, groups,
                     output_padding)
    doc = {
        "source": "generated by tests/data/vectors/generate_numpy.py (SPEC §3 and §4 in NumPy "
                  "and Python integers, independently of qconv)",
        "op": "conv_transpose2d" if op != "conv2d" else "conv2d",
        "x_dtype": x_dtype, "w_dtype": w_dtype, "x_layout": x_layout, "w_layout": w_layout,
        "y_layout": y_layout, "x_zero_point": zx, "w_zero_point": zw, "strides": list(stride),
        "pads": list(pads), "dilations": list(dilation), "groups": groups,
    }
    if op != "conv2d":
        doc["output_padding"] = list(output_padding)
    if out == "int32":
        doc["out"] = "int32_accumulator"
        y = wrap32(acc)
    else:
        sx = float(rng.choice([0.5, 0.03125, 0.0078125, 0.1]))
        sw = [float(np.float32(rng.uniform(0.001, 0.02))) for _ in range(o)]
        sy = float(np.float32(sx * 0.01 * rng.uniform(2, 40)))
        zy = int(rng.integers(-20, 21)) if y_dtype == "int8" else int(rng.integers(0, 40))
        bias = [int(v) for v in rng.integers(-3000, 3001, size=o)]
        lo, hi = RANGES[y_dtype]
        act_min, act_max = lo + int(rng.integers(0, 20)), hi - int(rng.integers(0, 20))
        doc.update({"out": "tflite", "y_dtype": y_dtype, "x_scale": sx, "w_scale": sw,
                    "y_scale": sy, "y_zero_point": zy, "bias": {"shape": [o], "data": bias},
                    "act_min": act_min, "act_max": act_max})
        y = tflite(acc, bias, sx, sw, sy, zy, act_min, act_max)
    doc["x"] = array(to_layout(x, x_layout))
    doc["w"] = array(hwoi(w, c) if w_layout == "HWOI" else to_layout(w, w_layout))
    doc["expected"] = array(to_layout(y, y_layout))
    return name, doc


def main(directory):
    rng = np.random.default_rng(20261130)
    cases = [
        # The shape of TVM's test_tflite_large_irregular (whose inputs all equal their zero
        # points, so that its expected output is 0 whatever the weights), with real values.
        case("numpy_large_irregular", rng, "conv2d", "uint8", "uint8", "NCHW", "OIHW", "NCHW",
             1, 1024, 1, 1, 1001, 1, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), "int32",
             x_zero_point=127, w_zero_point=[127]),
        case("numpy_nhwc_ohwi_grouped_tflite", rng, "conv2d", "int8", "int8", "NHWC", "OHWI",
             "NHWC", 2, 6, 7, 9, 4, 2, (3, 2), (2, 1), (1, 0, 2, 1), (1, 2), "tflite"),
        case("numpy_nchw_hwio_to_nhwc_int32", rng, "conv2d", "uint8", "int8", "NCHW", "HWIO",
             "NHWC", 1, 3, 6, 5, 5, 1, (2, 3), (1, 2), (0, 1, 1, 0), (2, 1), "int32"),
        case("numpy_nhwc_hwoi_depthwise_tflite", rng, "conv2d", "int8", "int8", "NHWC", "HWOI",
             "NCHW", 1, 3, 6, 6, 6, 3, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "tflite"),
        case("numpy_nhwc_transposed_tflite", rng, "conv2d_transpose", "uint8", "int8", "NHWC",
             "IOHW", "NHWC", 1, 4, 3, 4, 3, 1, (3, 2), (2, 3), (1, 0, 0, 1), (1, 1), "tflite",
             output_padding=(1, 2), y_dtype="uint8"),
    ]
    for name, doc in cases:
        path = pathlib.Path(directory) / f"{name}.json"
        path.write_text(json.dumps(doc, separators=(", ", ": ")) + "\n")
        print(f"{path}: {len(doc['expected']['data'])} outputs")


if __name__ == "__main__":
    main(sys.argv[1])
