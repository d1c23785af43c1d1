# SPDX-License-Identifier: Apache-2.0
"""engine="fbgemm" (PyTorch's default engine on x86, absent from Debian's PyTorch) against an
independent formulation of SPEC §4's fbgemm row: NumPy int64 accumulators and float32 arithmetic
in the order the spec writes, on seeded random problems with frequent ties and saturation, given
as qconv.QuantizedArray (no torch needed)."""

import numpy as np
import pytest

import qconv
import reference
from random_problems import random_problem

PROBLEMS_PER_OP = 2000

RANGES = {"quint8": (0, 255), "qint8": (-128, 127)}


def quantized_arrays(p):
    x = qconv.QuantizedArray(p.x, p.sx, p.zx)
    if p.per_channel:
        w = qconv.QuantizedArray(p.w, p.sw, p.zw, axis=1 if p.transposed else 0)
    else:
        w = qconv.QuantizedArray(p.w, float(p.sw[0]), int(p.zw[0]))
    return x, w


def run_qconv(p):
    x, w = quantized_arrays(p)
    if p.transposed:
        y = qconv.functional.conv_transpose2d(x, w, p.bias, p.stride, p.padding, p.output_padding,
                                              p.groups, p.dilation, p.sy, p.zy, p.out_dtype,
                                              relu=p.relu)
    else:
        y = qconv.functional.conv2d(x, w, p.bias, p.stride, p.padding, p.dilation, p.groups,
                                    "zeros", p.sy, p.zy, p.out_dtype, relu=p.relu)
    assert isinstance(y, qconv.QuantizedArray)
    assert (y.scale, y.zero_point) == (p.sy, p.zy)
    return y.values.astype(np.int64)


def run_reference(p):
    ph, pw = p.padding
    if p.transposed:
        acc = reference.conv_transpose2d_accumulator(p.x, p.zx, p.w, p.zw, p.stride,
                                                     (ph, ph, pw, pw), p.output_padding,
                                                     p.dilation, p.groups)
    else:
        acc = reference.conv2d_accumulator(p.x, p.zx, p.w, p.zw, p.stride, (ph, ph, pw, pw),
                                           p.dilation, p.groups)
    lo, hi = RANGES[p.out_dtype]
    return reference.fbgemm(acc, p.sx, p.sw, p.sy, p.zy, p.bias, lo, hi, p.relu)


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_fbgemm_matches_float_reference(transposed, report):
    rng = np.random.default_rng(21 + transposed)
    problems = elements = mismatches = ties = saturated = 0
    examples = []
    for _ in range(PROBLEMS_PER_OP):
        p = random_problem(rng, transposed=transposed, per_channel_ok=True,
                           weight_zero_point_ok=True, relu_ok=True, output_padding_ok=True,
                           per_channel_groups_ok=not transposed,
                           signed_input=bool(rng.random() < 0.3), out_dtypes=tuple(RANGES))
        got = run_qconv(p)
        pre, expected = run_reference(p)
        lo, hi = RANGES[p.out_dtype]
        problems += 1
        elements += expected.size
        ties += int(np.count_nonzero(reference.is_tie(pre)))
        saturated += int(np.count_nonzero((expected == lo) | (expected == hi)))
        differs = got != expected
        if differs.any():
            mismatches += int(np.count_nonzero(differs))
            where = tuple(int(i) for i in np.argwhere(differs)[0])
            if len(examples) < 5:
                examples.append(f"{p.describe()} at {where}: reference {expected[where]}, "
                                f"qconv {got[where]}")
    op = "conv_transpose2d" if transposed else "conv2d"
    report(f"fbgemm   {op:17s} problems={problems} elements={elements} mismatches={mismatches} "
           f"exact_ties={ties} saturated={saturated} (vs NumPy float32 reference of SPEC §4)")
    assert mismatches == 0, "\n".join(examples)
    assert ties > 0 and saturated > 0
