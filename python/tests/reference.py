# SPDX-License-Identifier: Apache-2.0
"""Independent NumPy formulations for the tests: the exact accumulator of SPEC §3 (plain int64
arithmetic, no qconv) and the PyTorch engines' output schemes of SPEC §4 in float32, written from
the spec's text in the order it gives."""

import numpy as np

F32 = np.float32


def conv2d_accumulator(x, zx, w, zw, stride, padding, dilation, groups):
    """acc[n, o, y, x] of a convolution. x: NCHW integers; w: OIHW; zw: one value or one per
    output channel; padding (top, bottom, left, right) reads as zx (real value 0)."""
    sh, sw = stride
    top, bottom, left, right = padding
    dh, dw = dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xs = np.zeros((n, c, h + top + bottom, wd + left + right), np.int64)
    xs[:, :, top:top + h, left:left + wd] = x.astype(np.int64) - zx
    ws = w.astype(np.int64) - np.broadcast_to(np.asarray(zw, np.int64), (o,))[:, None, None, None]
    oh = (h + top + bottom - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + left + right - (dw * (kw - 1) + 1)) // sw + 1
    og = o // groups
    acc = np.zeros((n, o, oh, ow), np.int64)
    for g in range(groups):
        xg = xs[:, g * cg:(g + 1) * cg]
        wg = ws[g * og:(g + 1) * og]
        for r in range(kh):
            for s in range(kw):
                patch = xg[:, :, r * dh:r * dh + sh * (oh - 1) + 1:sh,
                           s * dw:s * dw + sw * (ow - 1) + 1:sw]
                acc[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, r, s])
    return acc


def conv_transpose2d_accumulator(x, zx, w, zw, stride, padding, output_padding, dilation, groups):
    """acc of a transposed convolution: every input element scatters into the full output, from
    which `padding` (top, bottom, left, right) is cut; output padding adds rows at the bottom and
    columns at the right. w: IOHW ([C_in, C_out/groups, kh, kw])."""
    sh, sw = stride
    top, bottom, left, right = padding
    oph, opw = output_padding
    dh, dw = dilation
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    o = og * groups
    cg = c // groups
    oh = sh * (h - 1) + dh * (kh - 1) + 1 - top - bottom + oph
    ow = sw * (wd - 1) + dw * (kw - 1) + 1 - left - right + opw
    full_h = max(sh * (h - 1) + dh * (kh - 1) + 1, top + oh)
    full_w = max(sw * (wd - 1) + dw * (kw - 1) + 1, left + ow)
    full = np.zeros((n, o, full_h, full_w), np.int64)
    xs = x.astype(np.int64) - zx
    zw = np.broadcast_to(np.asarray(zw, np.int64), (o,))
    for g in range(groups):
        wg = w[g * cg:(g + 1) * cg].astype(np.int64) - zw[g * og:(g + 1) * og][None, :, None, None]
        for r in range(kh):
            for s in range(kw):
                contribution = np.einsum("nchw,co->nohw", xs[:, g * cg:(g + 1) * cg],
                                         wg[:, :, r, s])
                full[:, g * og:(g + 1) * og, r * dh:r * dh + sh * (h - 1) + 1:sh,
                     s * dw:s * dw + sw * (wd - 1) + 1:sw] += contribution
    return full[:, :, top:top + oh, left:left + ow]


def _per_channel(values, channels):
    return np.broadcast_to(np.asarray(values, np.float64).reshape(-1), (channels,))


def _channel_axis(values):
    return np.asarray(values)[None, :, None, None]


# Each scheme returns (pre, q): `pre` is the value the scheme rounds (a tie when its fraction is
# exactly one half) and `q` the final output, as int64.

def fbgemm(acc, sx, sw, sy, zy, bias, lo, hi, relu):
    """SPEC §4 fbgemm: t = f32(sx*sw[o]); m = f32(t/sy); v = f32(f32(acc) + f32(b/t));
    q = rne(f32(v*m)) + zy, clamped to [lo, hi] (ReLU: lo = max(lo, zy))."""
    channels = acc.shape[1]
    t = F32(sx) * _per_channel(sw, channels).astype(F32)
    m = t / F32(sy)
    v = acc.astype(F32)
    if bias is not None:
        v = v + _channel_axis(np.asarray(bias, F32) / t)
    pre = v * _channel_axis(m)
    q = np.rint(pre).astype(np.float64) + zy
    if relu:
        lo = max(lo, zy)
    return pre, np.clip(q, lo, hi).astype(np.int64)


def qnnpack(acc, sx, sw, sy, zy, bias, lo, hi, relu):
    """SPEC §4 qnnpack: m = f32(f32(f32(sw)*f32(sx)) * f32(1/f32(sy))); the float bias becomes
    bq = clamp_s32(rne(f32(f32(b) * f32(1/f32(f64(sw)*f64(sx)))))); v = f32(f32(s32(acc+bq))*m);
    r = rne(v) (INT32_MIN when |v| >= 2^31); q = clamp(r + zy, lo, hi); ReLU: lo = zy."""
    channels = acc.shape[1]
    sw = _per_channel(sw, channels)
    m = (sw.astype(F32) * F32(sx)) * (F32(1.0) / F32(sy))
    bq = np.zeros(channels, np.int64)
    if bias is not None:
        inverse = F32(1.0) / (sw * np.float64(sx)).astype(F32)
        bq = np.clip(np.rint(np.asarray(bias, F32) * inverse).astype(np.float64), -2**31,
                     2**31 - 1).astype(np.int64)
    total = acc + _channel_axis(bq)
    wrapped = (total + 2**31) % 2**32 - 2**31
    pre = wrapped.astype(F32) * _channel_axis(m)
    r = np.where(np.abs(pre) < F32(2.0**31), np.rint(pre).astype(np.float64), -2.0**31)
    if relu:
        lo = max(lo, zy)
    return pre, np.clip(r + zy, lo, hi).astype(np.int64)


def onednn(acc, sx, sw, sy, zy, bias, lo, hi, relu, per_channel):
    """SPEC §4 onednn: reciprocal scales, float bias, zero point added in float before rounding:
    v = f32(f32(f32(acc) + bb) * os); ReLU: max(v, 0); q = rne(clamp(f32(v + f32(zy)), lo, hi))."""
    channels = acc.shape[1]
    rx = F32(1.0 / np.float64(sx))
    ry = F32(1.0 / np.float64(sy))
    sw = _per_channel(sw, channels)
    rw = F32(1.0) / sw.astype(F32) if per_channel else (1.0 / sw).astype(F32)
    bs = rx * rw
    os_ = ry / bs
    v = acc.astype(F32)
    if bias is not None:
        v = v + _channel_axis(np.asarray(bias, F32) * bs)
    v = v * _channel_axis(os_)
    if relu:
        v = np.maximum(v, F32(0))
    pre = v + F32(zy)
    return pre, np.rint(np.clip(pre.astype(np.float64), lo, hi)).astype(np.int64)


def is_tie(pre):
    """Elements whose rounded value is an exact half."""
    pre = np.asarray(pre, np.float64)
    return pre - np.floor(pre) == 0.5
