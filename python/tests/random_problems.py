# SPDX-License-Identifier: Apache-2.0
"""Seeded random quantized convolution problems that make exact ties and saturation frequent:
power-of-two scales (the multiplier is a power of two, so acc * m often ends in .5), narrow value
ranges (small accumulators meet small multipliers), and random scales (anything can happen)."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Problem:
    transposed: bool
    x: np.ndarray           # uint8 (or int8), NCHW
    sx: float
    zx: int
    w: np.ndarray           # int8, OIHW (transposed: IOHW)
    sw: np.ndarray          # float64, 1 value or one per output channel
    zw: np.ndarray          # int64, 1 value or one per output channel
    per_channel: bool
    bias: object            # float32 array or None
    stride: tuple
    padding: tuple          # (pad_h, pad_w), symmetric as in PyTorch
    dilation: tuple
    groups: int
    output_padding: tuple
    sy: float
    zy: int
    relu: bool
    out_dtype: str = "quint8"
    notes: dict = field(default_factory=dict)

    @property
    def out_channels(self):
        return self.w.shape[1] * self.groups if self.transposed else self.w.shape[0]

    def describe(self):
        return (f"{'conv_transpose2d' if self.transposed else 'conv2d'} x{list(self.x.shape)} "
                f"w{list(self.w.shape)} stride={self.stride} padding={self.padding} "
                f"output_padding={self.output_padding} dilation={self.dilation} "
                f"groups={self.groups} sx={self.sx!r} zx={self.zx} sw={self.sw.tolist()} "
                f"zw={self.zw.tolist()} sy={self.sy!r} zy={self.zy} relu={self.relu} "
                f"bias={None if self.bias is None else self.bias.tolist()} "
                f"out_dtype={self.out_dtype}")


def _values(rng, shape, dtype_range, center, spread):
    lo, hi = dtype_range
    return np.clip(center + rng.integers(-spread, spread + 1, shape), lo, hi)


def random_problem(rng, *, transposed, per_channel_ok, weight_zero_point_ok, relu_ok,
                   output_padding_ok, per_channel_groups_ok=True, signed_input=False,
                   out_dtypes=("quint8",)):
    # Geometry: grouped and depthwise often, every stride/dilation/padding combination small.
    kind = rng.choice(["plain", "grouped", "depthwise"], p=[0.55, 0.2, 0.25])
    if kind == "depthwise":
        c_in = int(rng.integers(1, 7))
        groups = c_in
        c_out = c_in * int(rng.integers(1, 3))
    else:
        groups = 1 if kind == "plain" else int(rng.integers(2, 4))
        c_in = groups * int(rng.integers(1, 5))
        c_out = groups * int(rng.integers(1, 5))
    kh, kw = (int(v) for v in rng.integers(1, 5, 2))
    sh, sw_ = (int(v) for v in rng.integers(1, 4, 2))
    dh, dw = (int(v) for v in rng.integers(1, 3, 2))
    ph, pw = (int(v) for v in rng.integers(0, 3, 2))
    batch = int(rng.integers(1, 3))
    oph = opw = 0
    if transposed:
        h, w = (int(v) for v in rng.integers(1, 7, 2))
        if output_padding_ok:
            oph = int(rng.integers(0, max(sh, dh)))
            opw = int(rng.integers(0, max(sw_, dw)))
        # Keep the output non-empty: OH = sh*(H-1) + dh*(kh-1) + 1 - 2*ph + oph >= 1.
        while sh * (h - 1) + dh * (kh - 1) + 1 - 2 * ph + oph < 1:
            ph -= 1
        while sw_ * (w - 1) + dw * (kw - 1) + 1 - 2 * pw + opw < 1:
            pw -= 1
    else:
        min_h = max(1, dh * (kh - 1) + 1 - 2 * ph)
        min_w = max(1, dw * (kw - 1) + 1 - 2 * pw)
        h = int(rng.integers(min_h, min_h + 7))
        w = int(rng.integers(min_w, min_w + 7))

    per_channel = per_channel_ok and (per_channel_groups_ok or groups == 1) and rng.random() < 0.5
    n_w = c_out if per_channel else 1

    # Values: full range (saturation) or narrow around the zero points (small sums, ties).
    x_range = (-128, 127) if signed_input else (0, 255)
    zx = int(rng.integers(x_range[0], x_range[1] + 1))
    spread_x = int(rng.choice([1, 3, 20, 255]))
    x = _values(rng, (batch, c_in, h, w), x_range, zx, spread_x)
    x = x.astype(np.int8 if signed_input else np.uint8)
    if weight_zero_point_ok:
        zw = rng.integers(-128, 128, n_w) if rng.random() < 0.7 else np.zeros(n_w, np.int64)
    else:
        zw = np.zeros(n_w, np.int64)
    spread_w = int(rng.choice([1, 3, 20, 255]))
    w_shape = (c_in, c_out // groups, kh, kw) if transposed else (c_out, c_in // groups, kh, kw)
    center = int(zw[0]) if n_w == 1 else 0
    weights = _values(rng, w_shape, (-128, 127), center, spread_w).astype(np.int8)

    # Scales: powers of two (ties) or random; the multiplier spans saturation to tiny outputs.
    pow2 = rng.random() < 0.5
    if pow2:
        sx = 2.0 ** int(rng.integers(-9, 0))
        sw = 2.0 ** rng.integers(-9, 0, n_w).astype(np.float64)
        # Multipliers 1/2, 1/4, 1/8 make ties most frequent; the others reach saturation.
        exponent = int(rng.choice([-1, -1, -1, -2, -2, -3, -4, -6, -8, -10, 0, 1]))
        sy = sx * float(sw.max()) / 2.0 ** exponent
    else:
        sx = float(10 ** rng.uniform(-3, -0.5))
        sw = 10 ** rng.uniform(-3, -0.5, n_w)
        sy = sx * float(sw.max()) / float(2 ** rng.uniform(-10, 1))

    bias = None
    if rng.random() < 0.7:
        t = sx * sw.max()
        if pow2:  # multiples of t/2: exact in every engine's arithmetic, ties in the bias
            bias = (t * rng.integers(-300, 301, c_out) / 2).astype(np.float32)
        else:
            bias = (t * rng.normal(0, 300, c_out)).astype(np.float32)

    out_dtype = str(rng.choice(list(out_dtypes)))
    zy = int(rng.integers(0, 256)) if out_dtype == "quint8" else int(rng.integers(-128, 128))
    return Problem(
        transposed=transposed, x=x, sx=sx, zx=zx, w=weights, sw=np.asarray(sw, np.float64),
        zw=np.asarray(zw, np.int64), per_channel=per_channel, bias=bias, stride=(sh, sw_),
        padding=(ph, pw), dilation=(dh, dw), groups=groups, output_padding=(oph, opw), sy=sy,
        zy=zy, relu=bool(relu_ok and rng.random() < 0.3), out_dtype=out_dtype,
        notes={"pow2": pow2})
