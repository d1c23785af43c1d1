# SPDX-License-Identifier: Apache-2.0
"""qconv.functional against PyTorch's own quantized convolutions, element by element.

For engine qnnpack and onednn, thousands of seeded random problems (per-tensor and per-channel
weights and weight zero points where the engine accepts them, groups, depthwise, stride,
dilation, padding, output padding, fused ReLU, random and power-of-two scales so that exact ties
and saturation are frequent) are run through PyTorch under the matching
torch.backends.quantized.engine and through qconv with the same PyTorch tensors. Every element
must be equal, except inside PyTorch's own defects listed in docs/PEERS.md, which are recognised by
their stated rule and counted separately:

1. oneDNN's int8 deconvolution leaves output rows unwritten (onednn conv_transpose2d): a row oh
   with dilation_h = 1, pad_h < kh and kh + 1 <= (oh + pad_h) mod stride_h <= stride_h - 1.
2. oneDNN's GEMM-based int8 convolution drops the input zero point's compensation for some small
   shapes (onednn conv2d): torch's value is the onednn formula applied to acc + zx * sum(w[o]).
3. (avoided) ideep caches the output zero point with the primitive: a problem whose shapes, bias
   presence, ReLU and output scale repeat an earlier one's reuses that one's output zero point.
4. (avoided) qnnpack's prepacked weights are stateful: every problem is prepacked afresh
   (qF.conv2d does; conv2d_relu and conv_transpose2d are prepacked here per call).
"""

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import qconv  # noqa: E402
import reference  # noqa: E402
from random_problems import random_problem  # noqa: E402

qF = torch.ao.nn.quantized.functional

PROBLEMS_PER_CASE = 2000

# What each engine accepts (docs/PEERS.md, "What each accepts").
LIMITS = {
    ("qnnpack", False): dict(per_channel_ok=True, weight_zero_point_ok=True, relu_ok=True,
                             output_padding_ok=False),
    ("qnnpack", True): dict(per_channel_ok=True, per_channel_groups_ok=False,
                            weight_zero_point_ok=True, relu_ok=False, output_padding_ok=True),
    ("onednn", False): dict(per_channel_ok=True, weight_zero_point_ok=False, relu_ok=True,
                            output_padding_ok=False),
    ("onednn", True): dict(per_channel_ok=False, weight_zero_point_ok=False, relu_ok=False,
                           output_padding_ok=False),
}


def _cpu_has_vnni():
    try:
        with open("/proc/cpuinfo") as f:
            return re.search(r"\bavx512_vnni\b", f.read()) is not None
    except OSError:
        return False


def torch_tensors(p):
    x = torch._make_per_tensor_quantized_tensor(torch.from_numpy(p.x), p.sx, p.zx)
    w = torch.from_numpy(p.w)
    if p.per_channel:
        # PyTorch quantizes a transposed weight ([C_in, C_out/groups, kh, kw]) along axis 1.
        w = torch._make_per_channel_quantized_tensor(
            w, torch.from_numpy(p.sw), torch.from_numpy(p.zw), 1 if p.transposed else 0)
    else:
        w = torch._make_per_tensor_quantized_tensor(w, float(p.sw[0]), int(p.zw[0]))
    b = None if p.bias is None else torch.from_numpy(p.bias)
    return x, w, b


def torch_output(p):
    x, w, b = torch_tensors(p)
    stride, padding, dilation = list(p.stride), list(p.padding), list(p.dilation)
    if p.transposed:
        packed = torch.ops.quantized.conv_transpose2d_prepack(
            w, b, stride, padding, list(p.output_padding), dilation, p.groups)
        y = torch.ops.quantized.conv_transpose2d(x, packed, p.sy, p.zy)
    elif p.relu:
        packed = torch.ops.quantized.conv2d_prepack(w, b, stride, padding, dilation, p.groups)
        y = torch.ops.quantized.conv2d_relu(x, packed, p.sy, p.zy)
    else:
        y = qF.conv2d(x, w, b, p.stride, p.padding, p.dilation, p.groups, scale=p.sy,
                      zero_point=p.zy)
    return y.int_repr().numpy().astype(np.int64)


def qconv_output(p, engine):
    x, w, b = torch_tensors(p)
    if p.transposed:
        y = qconv.functional.conv_transpose2d(x, w, b, p.stride, p.padding, p.output_padding,
                                              p.groups, p.dilation, p.sy, p.zy, engine=engine)
    else:
        y = qconv.functional.conv2d(x, w, b, p.stride, p.padding, p.dilation, p.groups, "zeros",
                                    p.sy, p.zy, engine=engine, relu=p.relu)
    assert y.is_quantized and y.dtype == torch.quint8
    assert y.q_scale() == p.sy and y.q_zero_point() == p.zy
    return y.int_repr().numpy().astype(np.int64)


def accumulator(p):
    ph, pw = p.padding
    if p.transposed:
        return reference.conv_transpose2d_accumulator(p.x, p.zx, p.w, p.zw, p.stride,
                                                      (ph, ph, pw, pw), p.output_padding,
                                                      p.dilation, p.groups)
    return reference.conv2d_accumulator(p.x, p.zx, p.w, p.zw, p.stride, (ph, ph, pw, pw),
                                        p.dilation, p.groups)


def scheme_output(p, engine, acc):
    """(pre-rounding value, output) of the engine's SPEC §4 row, from the NumPy reference."""
    if engine == "qnnpack":
        return reference.qnnpack(acc, p.sx, p.sw, p.sy, p.zy, p.bias, 0, 255, p.relu)
    return reference.onednn(acc, p.sx, p.sw, p.sy, p.zy, p.bias, 0, 255, p.relu, p.per_channel)


def defect1_rows(p, out_height):
    """docs/PEERS.md defect 1: the output rows oneDNN's int8 deconvolution never writes."""
    kh, sh, ph = p.w.shape[2], p.stride[0], p.padding[0]
    if p.dilation[0] != 1 or ph >= kh:
        return np.zeros(out_height, bool)
    phase = (np.arange(out_height) + ph) % sh
    return (phase >= kh + 1) & (phase <= sh - 1)


def defect2_output(p, acc):
    """docs/PEERS.md defect 2: the onednn formula applied to acc + zx * sum of w[o]."""
    weight_sums = p.w.astype(np.int64).reshape(p.w.shape[0], -1).sum(axis=1)
    return scheme_output(p, "onednn", acc + p.zx * weight_sums[None, :, None, None])[1]


def stale_zero_point_key(p):
    """docs/PEERS.md defect 3: what ideep's primitive cache tells problems apart by (zero points
    not among it)."""
    return (p.transposed, p.x.shape, p.w.shape, p.stride, p.padding, p.output_padding,
            p.dilation, p.groups, p.bias is None, p.relu, p.sy)


class Tally:
    def __init__(self):
        self.problems = self.elements = self.mismatches = 0
        self.ties = self.saturated = self.refused = 0
        self.defect = {1: 0, 2: 0}
        self.defect_shapes = set()
        self.examples = []
        self.refusals = []

    def line(self, engine, op):
        return (f"{engine:8s} {op:17s} problems={self.problems} elements={self.elements} "
                f"mismatches={self.mismatches} exact_ties={self.ties} "
                f"saturated={self.saturated} torch_defect1_elements={self.defect[1]} "
                f"torch_defect2_elements={self.defect[2]} torch_refused={self.refused}")


def compare(engine, transposed, seed):
    torch.backends.quantized.engine = engine
    rng = np.random.default_rng(seed)
    tally = Tally()
    zero_point_of = {}
    while tally.problems < PROBLEMS_PER_CASE:
        p = random_problem(rng, transposed=transposed, **LIMITS[(engine, transposed)])
        if engine == "onednn":  # defect 3: a repeated cache key keeps its output zero point
            p.zy = zero_point_of.setdefault(stale_zero_point_key(p), p.zy)
        try:
            expected = torch_output(p)
        except RuntimeError as e:  # a problem PyTorch refuses is not comparable
            tally.refused += 1
            tally.refusals.append(f"{p.describe()}: {str(e).splitlines()[0]}")
            continue
        got = qconv_output(p, engine)
        assert got.shape == expected.shape, p.describe()
        acc = accumulator(p)
        pre, _ = scheme_output(p, engine, acc)
        tally.problems += 1
        tally.elements += expected.size
        tally.ties += int(np.count_nonzero(reference.is_tie(pre) & (pre > 0) & (pre < 255)))
        tally.saturated += int(np.count_nonzero((got == 0) | (got == 255)))

        differs = got != expected
        if engine == "onednn" and transposed:
            unwritten = np.broadcast_to(defect1_rows(p, expected.shape[2])[None, None, :, None],
                                        expected.shape)
            tally.defect[1] += int(np.count_nonzero(unwritten))
            differs &= ~unwritten
        if engine == "onednn" and not transposed and differs.any():
            dropped = differs & (expected == defect2_output(p, acc))
            if dropped.any():
                tally.defect[2] += int(np.count_nonzero(dropped))
                c_out, cg, kh, kw = p.w.shape
                tally.defect_shapes.add((p.groups, cg, c_out // p.groups, kh, kw))
                differs &= ~dropped
        if differs.any():
            tally.mismatches += int(np.count_nonzero(differs))
            if len(tally.examples) < 5:
                where = tuple(int(i) for i in np.argwhere(differs)[0])
                tally.examples.append(f"{p.describe()} at {where}: torch {expected[where]}, "
                                      f"qconv {got[where]}, acc {acc[where]}")
    return tally


CASES = [("qnnpack", False, 11), ("qnnpack", True, 12), ("onednn", False, 13),
         ("onednn", True, 14)]


@pytest.mark.parametrize("engine, transposed, seed", CASES,
                         ids=[f"{e}-{'conv_transpose2d' if t else 'conv2d'}" for e, t, _ in CASES])
def test_agrees_with_pytorch(engine, transposed, seed, report):
    if engine not in torch.backends.quantized.supported_engines:
        pytest.skip(f"this PyTorch has no {engine} engine")
    if engine == "onednn" and not _cpu_has_vnni():
        pytest.skip("oneDNN's results depend on the CPU without AVX-512 VNNI "
                    "(docs/PEERS.md defect 5)")
    tally = compare(engine, transposed, seed)
    op = "conv_transpose2d" if transposed else "conv2d"
    report(tally.line(engine, op))
    if tally.defect_shapes:
        report(f"         defect 2 shapes (groups, C/g, O/g, kh, kw): "
               f"{sorted(tally.defect_shapes)}")
    assert tally.mismatches == 0, "\n".join(tally.examples)
    # Refusals would mean the generator leaves what the engine accepts: keep them rare.
    assert tally.refused <= PROBLEMS_PER_CASE // 20, "\n".join(tally.refusals[:5])
    assert tally.ties > 0 and tally.saturated > 0
