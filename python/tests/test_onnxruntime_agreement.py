# SPDX-License-Identifier: Apache-2.0
"""qconv.onnx against ONNX Runtime itself: random single-node QLinearConv and ConvInteger models
(built with python3-onnx) run in ORT's CPU kernels through onnxruntime-node and a short Node script
(onnxruntime_runner.js), every output element compared.

- QLinearConv with ``semantics="onnxruntime"`` must give ORT's numbers: 0 mismatches.
- QLinearConv with the default ``semantics="reference"`` must give the ONNX reference
  implementation's numbers (its formula, written here in NumPy from an independent accumulator):
  0 mismatches. Its differences from ORT (ties with an odd y_zero_point) are counted and reported.
- ConvInteger: the exact accumulator, 0 mismatches with ORT.
- com.microsoft QLinearConv with channels_last = 1 (ORT's NHWC variant, which its NHWC
  transformer substitutes at the "all" optimization level): 0 mismatches with ``"onnxruntime"``.

On an x86-64 CPU without VNNI (AVX2 alone, AVX-512 without VNNI) ORT multiplies an unsigned by a
signed operand with ``vpmaddubsw``, whose 16-bit pair sums saturate: its u8 x s8 and s8 x u8 results
are then not exact (ORT's quantization guide gives 7-bit weights, ``reduce_range``, as the remedy).
There the problems of mixed signedness take 7-bit weights, where ORT is exact, and the report says
so; elsewhere (VNNI, ARM) every problem takes the full range.

Skipped, saying why, when Node.js, the onnxruntime-node package or python3-onnx is missing
(an error instead with QCONV_REQUIRE_ONNXRUNTIME=1). ``scripts/test-onnxruntime.sh`` installs
them and runs this test. The package is looked for in
``$QCONV_ONNXRUNTIME_NODE_MODULES`` or else ``.cache/onnxruntime-node/node_modules``.
"""

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from qconv import onnx as qonnx
from reference import conv2d_accumulator

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("onnxruntime_runner.js")
PROBLEMS_PER_OP = 1000
F32 = np.float32


def _node_modules():
    return Path(os.environ.get("QCONV_ONNXRUNTIME_NODE_MODULES",
                               ROOT / ".cache" / "onnxruntime-node" / "node_modules"))


def _missing():
    """Why the test cannot run here, or None."""
    if shutil.which("node") is None:
        return "Node.js (node) is not installed: apt-get install nodejs npm"
    if not (_node_modules() / "onnxruntime-node" / "package.json").is_file():
        return (f"onnxruntime-node is not installed in {_node_modules()}: run "
                "scripts/test-onnxruntime.sh (npm install --ignore-scripts onnxruntime-node)")
    try:
        import onnx  # noqa: F401
    except ImportError:
        return ("python3-onnx is not installed (it builds the ONNX models): "
                "apt-get install python3-onnx")
    return None


def _ort_saturates_mixed_signs():
    """True on an x86-64 Linux CPU without VNNI (see the module's docstring)."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx512_vnni" not in flags and "avx_vnni" not in flags


SEVEN_BIT_MIXED_WEIGHTS = _ort_saturates_mixed_signs()

_WHY_NOT = _missing()
if _WHY_NOT is not None and os.environ.get("QCONV_REQUIRE_ONNXRUNTIME") == "1":
    # scripts/test-onnxruntime.sh (CI) asks for the comparison: not running it is a failure.
    raise RuntimeError(f"the ONNX Runtime agreement test cannot run: {_WHY_NOT}")
pytestmark = pytest.mark.skipif(_WHY_NOT is not None,
                                reason=f"ONNX Runtime agreement skipped: {_WHY_NOT}")


# ---------------------------------------------------------------------------------------------
# Random problems

@dataclass
class Case:
    op: str                     # "QLinearConv" or "ConvInteger"
    x: np.ndarray               # NCHW, uint8 or int8
    w: np.ndarray               # OIHW, uint8 or int8
    zx: int
    zw: np.ndarray              # 1 value or one per output channel, of w's dtype
    attrs: dict                 # ONNX attributes given to both ORT and qconv
    sx: float = 1.0             # float32 values
    sw: np.ndarray = None
    sy: float = 1.0
    zy: int = 0
    bias: np.ndarray = None     # int32 [M] or None
    variants: tuple = ("plain",)  # also "nhwc" (com.microsoft QLinearConv, channels_last = 1)
                                  # and "qdq" (DequantizeLinear -> Conv -> QuantizeLinear)
    optimization: str = "all"
    notes: dict = field(default_factory=dict)

    def describe(self):
        return (f"{self.op} x{list(self.x.shape)} {self.x.dtype} w{list(self.w.shape)} "
                f"{self.w.dtype} attrs={self.attrs} zx={self.zx} zw={self.zw.tolist()} "
                f"sx={self.sx!r} sw={None if self.sw is None else self.sw.tolist()} "
                f"sy={self.sy!r} zy={self.zy} "
                f"B={None if self.bias is None else self.bias.tolist()}")


def _range(dtype):
    return (0, 255) if dtype == np.uint8 else (-128, 127)


def _values(rng, shape, dtype, center, bounds=None):
    """Full range (saturation, large sums) or narrow around the zero point (small sums, ties);
    within `bounds` (lo, hi) when given, else the dtype's range."""
    lo, hi = bounds or _range(dtype)
    spread = int(rng.choice([1, 3, 20, 255]))
    return np.clip(center + rng.integers(-spread, spread + 1, shape), lo, hi).astype(dtype)


def _pads(rng, attrs):
    """Explicit asymmetric pads (often), none, or auto_pad SAME_UPPER, SAME_LOWER or VALID."""
    choice = rng.choice(["pads", "pads", "pads", "none", "SAME_UPPER", "SAME_LOWER", "VALID"])
    if choice == "pads":
        pads = [int(v) for v in rng.integers(0, 3, 4)]  # [top, left, bottom, right]
        attrs["pads"] = pads
    elif choice != "none":
        attrs["auto_pad"] = str(choice)


def random_case(rng, op, index):
    large = rng.random() < 0.15
    kind = rng.choice(["plain", "grouped", "depthwise"], p=[0.55, 0.2, 0.25])
    if large:
        groups = 1 if kind == "plain" else int(rng.choice([2, 4]))
        if kind == "depthwise":
            c_in = int(rng.integers(8, 33))
            groups, c_out = c_in, c_in * int(rng.integers(1, 3))
        else:
            c_in = groups * int(rng.integers(16 // groups, 64 // groups + 1))
            c_out = groups * int(rng.integers(max(1, 8 // groups), 32 // groups + 1))
        kh, kw = (int(v) for v in rng.choice([1, 3, 3, 5], 2))
        size = (int(rng.integers(8, 20)), int(rng.integers(8, 20)))
    else:
        if kind == "depthwise":
            c_in = int(rng.integers(1, 9))
            groups, c_out = c_in, c_in * int(rng.integers(1, 3))
        else:
            groups = 1 if kind == "plain" else int(rng.integers(2, 4))
            c_in = groups * int(rng.integers(1, 5))
            c_out = groups * int(rng.integers(1, 5))
        kh, kw = (int(v) for v in rng.integers(1, 6, 2))
        size = None
    sh, sw_ = (int(v) for v in rng.integers(1, 4, 2))
    dh, dw = (int(v) for v in rng.integers(1, 3, 2))
    attrs = {}
    if groups != 1 or rng.random() < 0.3:
        attrs["group"] = groups
    if (sh, sw_) != (1, 1) or rng.random() < 0.3:
        attrs["strides"] = [sh, sw_]
    if (dh, dw) != (1, 1) or rng.random() < 0.3:
        attrs["dilations"] = [dh, dw]
    if rng.random() < 0.3:
        attrs["kernel_shape"] = [kh, kw]
    _pads(rng, attrs)
    if attrs.get("auto_pad", "").startswith("SAME") and (dh, dw) != (1, 1):
        # ORT refuses it ("Dilation not supported for AutoPadType::SAME_UPPER or SAME_LOWER").
        attrs["auto_pad"] = "VALID"
    # An input large enough for one output whatever the padding (VALID and pads alike).
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    h = span_h + (size[0] if size else int(rng.integers(0, 7)))
    w = span_w + (size[1] if size else int(rng.integers(0, 7)))
    batch = int(rng.integers(1, 3))

    # ORT's CPU kernels: QLinearConv takes (u8, u8), (u8, s8), (s8, s8); ConvInteger all four.
    if op == "QLinearConv":
        x_dtype, w_dtype = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)][
            int(rng.integers(0, 3))]
    else:
        x_dtype = np.uint8 if rng.random() < 0.5 else np.int8
        w_dtype = np.uint8 if rng.random() < 0.5 else np.int8
    x_lo, x_hi = _range(x_dtype)
    w_lo, w_hi = _range(w_dtype)
    if SEVEN_BIT_MIXED_WEIGHTS and x_dtype != w_dtype:
        w_lo, w_hi = (0, 127) if w_dtype == np.uint8 else (-64, 63)
    zx = int(rng.integers(x_lo, x_hi + 1)) if rng.random() < 0.8 else 0
    x = _values(rng, (batch, c_in, h, w), x_dtype, zx)
    # Weight zero points: 0 often (ORT's symmetric kernels), else one value or, for QLinearConv,
    # one per output channel (ConvInteger in ORT takes a single one).
    per_channel = op == "QLinearConv" and rng.random() < 0.5
    n_w = c_out if per_channel else 1
    r = rng.random()
    if r < 0.4:
        zw = np.zeros(n_w, np.int64)
    elif r < 0.6 or not per_channel:
        zw = np.full(n_w, int(rng.integers(w_lo, w_hi + 1)))
    else:
        zw = rng.integers(w_lo, w_hi + 1, n_w)
    zw = zw.astype(w_dtype)
    weights = _values(rng, (c_out, c_in // groups, kh, kw), w_dtype, int(zw[0]), (w_lo, w_hi))
    case = Case(op=op, x=x, w=weights, zx=zx, zw=zw, attrs=attrs,
                optimization="all" if index % 2 == 0 else "disabled")
    if op == "ConvInteger":
        return case

    # Scales: powers of two (the multiplier is a power of two: exact ties) or random float32.
    n_s = c_out if per_channel and rng.random() < 0.8 else 1
    if rng.random() < 0.5:
        sx = 2.0 ** int(rng.integers(-9, 0))
        sw = 2.0 ** rng.integers(-9, 0, n_s).astype(np.float64)
        exponent = int(rng.choice([-1, -1, -1, -2, -2, -3, -4, -6, -8, -10, -14, -18, 0, 1]))
        sy = sx * float(sw.max()) / 2.0 ** exponent
    else:
        sx = float(10 ** rng.uniform(-3, -0.5))
        sw = 10 ** rng.uniform(-3, -0.5, n_s)
        sy = sx * float(sw.max()) / float(2 ** rng.uniform(-18, 1))
    case.sx, case.sw, case.sy = float(F32(sx)), np.asarray(sw, F32), float(F32(sy))
    case.zy = int(rng.integers(x_lo, x_hi + 1))
    if rng.random() < 0.6:
        # Small biases (ties stay ties) or large ones (|acc + B| beyond 2^24: float32 rounding).
        limit = int(rng.choice([4, 300, 1 << 20, 1 << 27]))
        case.bias = rng.integers(-limit, limit + 1, c_out).astype(np.int32)
    if index % 4 == 1:
        case.variants += ("nhwc",)
    if index % 4 == 2 and case.optimization == "all":  # ORT fuses QDQ from "extended" up
        case.variants += ("qdq",)
    return case


# ---------------------------------------------------------------------------------------------
# The ONNX models and ORT

def _tensor(name, value, dtype):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _qdq_graph(case):
    """The QDQ form of the same QLinearConv: x and w dequantized (w per channel on axis 0 when
    its scale or zero point is), B dequantized with scale x_scale * w_scale, a float Conv and a
    QuantizeLinear. ORT rewrites it into QLinearConv from the "extended" level up."""
    from onnx import helper
    channels = case.w.shape[0]
    per_channel = len(case.sw) > 1 or len(case.zw) > 1
    sw = np.broadcast_to(case.sw, (channels,)).astype(F32)
    zw = np.broadcast_to(case.zw, (channels,)).astype(case.w.dtype)
    inits = [_tensor("x_scale", case.sx, F32), _tensor("x_zero_point", case.zx, case.x.dtype),
             _tensor("w", case.w, case.w.dtype),
             _tensor("w_scale", sw if per_channel else sw[0], F32),
             _tensor("w_zero_point", zw if per_channel else zw[0], case.w.dtype),
             _tensor("y_scale", case.sy, F32), _tensor("y_zero_point", case.zy, case.x.dtype)]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero_point"], ["wf"],
                              axis=0)]
    conv_inputs = ["xf", "wf"]
    if case.bias is not None:
        inits += [_tensor("B", case.bias, np.int32), _tensor("B_scale", F32(case.sx) * sw, F32),
                  _tensor("B_zero_point", np.zeros(channels), np.int32)]
        nodes.append(helper.make_node("DequantizeLinear", ["B", "B_scale", "B_zero_point"],
                                      ["Bf"], axis=0))
        conv_inputs.append("Bf")
    nodes += [helper.make_node("Conv", conv_inputs, ["yf"], **case.attrs),
              helper.make_node("QuantizeLinear", ["yf", "y_scale", "y_zero_point"], ["y"])]
    return nodes, inits


def _model(case, variant="plain"):
    from onnx import TensorProto, helper
    elem = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
    nhwc = variant == "nhwc"
    x = np.ascontiguousarray(case.x.transpose(0, 2, 3, 1)) if nhwc else case.x
    zw = case.zw if len(case.zw) > 1 else case.zw.reshape(())
    if case.op == "ConvInteger":
        inits = [_tensor("w", case.w, case.w.dtype), _tensor("x_zero_point", case.zx, case.x.dtype),
                 _tensor("w_zero_point", zw, case.w.dtype)]
        inputs = ["x", "w", "x_zero_point", "w_zero_point"]
        out_type = TensorProto.INT32
    else:
        sw = case.sw if len(case.sw) > 1 else case.sw.reshape(())
        inits = [_tensor("x_scale", case.sx, F32), _tensor("x_zero_point", case.zx, case.x.dtype),
                 _tensor("w", case.w, case.w.dtype), _tensor("w_scale", sw, F32),
                 _tensor("w_zero_point", zw, case.w.dtype), _tensor("y_scale", case.sy, F32),
                 _tensor("y_zero_point", case.zy, case.x.dtype)]
        inputs = ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
                  "y_zero_point"]
        if case.bias is not None:
            inits.append(_tensor("B", case.bias, np.int32))
            inputs.append("B")
        out_type = elem[case.x.dtype]
    attrs = dict(case.attrs)
    domain = ""
    if nhwc:
        attrs["channels_last"] = 1
        domain = "com.microsoft"
    nodes = [helper.make_node(case.op, inputs, ["y"], domain=domain, **attrs)]
    if variant == "qdq":
        nodes, inits = _qdq_graph(case)
    graph = helper.make_graph(
        nodes, "qconv_agreement",
        [helper.make_tensor_value_info("x", elem[case.x.dtype], list(x.shape))],
        [helper.make_tensor_value_info("y", out_type, None)], inits)
    opsets = [helper.make_opsetid("", 13)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 7
    return model.SerializeToString(), x


def run_in_onnxruntime(jobs):
    """jobs: [(case, variant)]. Returns (version line, [output array or error message])."""
    with tempfile.TemporaryDirectory(prefix="qconv-ort-") as tmp:
        tmp = Path(tmp)
        entries = []
        for i, (case, variant) in enumerate(jobs):
            model, x = _model(case, variant)
            (tmp / f"{i}.onnx").write_bytes(model)
            x.tofile(tmp / f"{i}.x")
            entries.append({"model": f"{i}.onnx", "optimization": case.optimization,
                            "inputs": [{"name": "x", "file": f"{i}.x", "type": x.dtype.name,
                                        "dims": list(x.shape)}],
                            "output": "y", "result": f"{i}.y"})
        (tmp / "manifest.json").write_text(json.dumps({"cases": entries}))
        env = dict(os.environ, NODE_PATH=str(_node_modules()))
        done = subprocess.run(["node", str(RUNNER), str(tmp / "manifest.json")], env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"the Node runner failed:\n{done.stdout}\n{done.stderr}"
        results = []
        for i, (case, _) in enumerate(jobs):
            error = tmp / f"{i}.y.error"
            if error.exists():
                results.append(error.read_text())
                continue
            dtype = np.int32 if case.op == "ConvInteger" else case.x.dtype
            results.append(np.fromfile(tmp / f"{i}.y", dtype))
        return done.stdout.splitlines()[0], results


# ---------------------------------------------------------------------------------------------
# qconv and the ONNX reference formula

def _qconv_kwargs(case):
    return {k: case.attrs[k] for k in ("auto_pad", "dilations", "group", "kernel_shape", "pads",
                                       "strides") if k in case.attrs}


def qconv_output(case, semantics=None):
    kwargs = _qconv_kwargs(case)
    if case.op == "ConvInteger":
        return qonnx.conv_integer(case.x, case.w, case.zx, case.zw, **kwargs)
    if semantics is not None:
        kwargs["semantics"] = semantics
    return qonnx.qlinear_conv(case.x, case.sx, case.zx, case.w, case.sw.astype(np.float64),
                              case.zw, case.sy, case.x.dtype.type(case.zy), B=case.bias,
                              **kwargs)


def _explicit_pads(case):
    """(top, bottom, left, right) from the attributes, by ONNX's rules (SPEC §2)."""
    a = case.attrs
    auto = a.get("auto_pad", "NOTSET")
    if auto == "NOTSET":
        t, l, b, r = a.get("pads", [0, 0, 0, 0])
        return t, b, l, r
    if auto == "VALID":
        return 0, 0, 0, 0
    out = []
    for axis in (0, 1):
        n = case.x.shape[2 + axis]
        k = case.w.shape[2 + axis]
        s = a.get("strides", [1, 1])[axis]
        d = a.get("dilations", [1, 1])[axis]
        total = max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        out += [small, big] if auto == "SAME_UPPER" else [big, small]
    return tuple(out)


def accumulator(case):
    a = case.attrs
    return conv2d_accumulator(case.x, case.zx, case.w, case.zw.astype(np.int64),
                              tuple(a.get("strides", [1, 1])), _explicit_pads(case),
                              tuple(a.get("dilations", [1, 1])), a.get("group", 1))


def onnx_reference(case, acc):
    """ONNX's reference QLinearConv (onnx/reference/ops/op_qlinear_conv.py): the int32 result
    plus B, times the float32 multiplier x_scale * w_scale / y_scale in double, plus y_zero_point,
    clipped to y's range, then rounded half to even."""
    channels = acc.shape[1]
    m = (F32(case.sx) * np.broadcast_to(case.sw, (channels,))) / F32(case.sy)
    if case.bias is not None:
        acc = acc + case.bias.astype(np.int64)[None, :, None, None]
    r = acc.astype(np.float64) * m.astype(np.float64)[None, :, None, None] + case.zy
    lo, hi = _range(case.x.dtype)
    return np.rint(np.clip(r, lo, hi)).astype(np.int64)


def onnxruntime_formula(case, acc):
    """The issue's formula for ORT: clamp(rne(f32(f32(acc + B) * m)) + y_zero_point)."""
    channels = acc.shape[1]
    m = (F32(case.sx) * np.broadcast_to(case.sw, (channels,))) / F32(case.sy)
    if case.bias is not None:
        acc = acc + case.bias.astype(np.int64)[None, :, None, None]
    v = acc.astype(F32) * m[None, :, None, None]
    lo, hi = _range(case.x.dtype)
    return np.clip(np.rint(v).astype(np.int64) + case.zy, lo, hi)


def is_tie(case, acc):
    channels = acc.shape[1]
    m = (F32(case.sx) * np.broadcast_to(case.sw, (channels,))) / F32(case.sy)
    if case.bias is not None:
        acc = acc + case.bias.astype(np.int64)[None, :, None, None]
    v = (acc.astype(F32) * m[None, :, None, None]).astype(np.float64)
    return v - np.floor(v) == 0.5


# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def agreement():
    rng = np.random.default_rng(20261130)
    cases = [random_case(rng, op, i) for op in ("QLinearConv", "ConvInteger")
             for i in range(PROBLEMS_PER_OP)]
    jobs = [(c, v) for c in cases for v in c.variants]
    version, results = run_in_onnxruntime(jobs)
    by_case = {}  # id(case) -> {variant: result}
    for (c, v), r in zip(jobs, results):
        by_case.setdefault(id(c), {})[v] = r
    plain = [by_case[id(c)]["plain"] for c in cases]
    return version, cases, plain, by_case


def _first(mismatch, case, got, want):
    index = tuple(int(i[0]) for i in np.nonzero(mismatch))
    return (f"{case.describe()}\n  first at {index}: qconv {got[index]}, "
            f"ORT/formula {want[index]}")


def test_qlinear_conv_agrees_with_onnxruntime(agreement, report):
    version, cases, results, by_case = agreement
    elements = ort_mismatch = ref_vs_ort = ref_mismatch = ties = odd_ties = 0
    beyond_2_24 = 0
    variant_elements = {"nhwc": 0, "qdq": 0}
    variant_mismatch = {"nhwc": 0, "qdq": 0}
    failures = []
    problems = [(c, r) for c, r in zip(cases, results) if c.op == "QLinearConv"]
    for case, ort in problems:
        assert not isinstance(ort, str), f"ORT refused {case.describe()}: {ort}"
        acc = accumulator(case)
        ort = ort.reshape(acc.shape).astype(np.int64)
        mine = qconv_output(case, "onnxruntime").astype(np.int64)
        default = qconv_output(case).astype(np.int64)
        reference = onnx_reference(case, acc)
        elements += ort.size
        bad = mine != ort
        ort_mismatch += int(bad.sum())
        ref_vs_ort += int((default != ort).sum())
        ref_bad = default != reference
        ref_mismatch += int(ref_bad.sum())
        total = acc + (0 if case.bias is None else case.bias.astype(np.int64)[None, :, None, None])
        beyond_2_24 += int((np.abs(total) > 2**24).sum())
        tie = is_tie(case, acc)
        ties += int(tie.sum())
        odd_ties += int((tie & (case.zy % 2 == 1)).sum())
        if bad.any() and len(failures) < 5:
            failures.append("onnxruntime: " + _first(bad, case, mine, ort))
        if ref_bad.any() and len(failures) < 5:
            failures.append("reference: " + _first(ref_bad, case, default, reference))
        for variant in case.variants[1:]:
            y = by_case[id(case)][variant]
            assert not isinstance(y, str), f"ORT refused {variant} {case.describe()}: {y}"
            if variant == "nhwc":
                y = y.reshape(acc.shape[0], acc.shape[2], acc.shape[3], acc.shape[1])
                y = y.transpose(0, 3, 1, 2)
            y = y.reshape(acc.shape).astype(np.int64)
            variant_elements[variant] += y.size
            variant_bad = mine != y
            variant_mismatch[variant] += int(variant_bad.sum())
            if variant_bad.any() and len(failures) < 5:
                failures.append(f"{variant}: " + _first(variant_bad, case, mine, y))
    per_channel_zw = sum(len(set(c.zw.tolist())) > 1 for c, _ in problems)
    report(f"ONNX Runtime ({version}) QLinearConv: {len(problems)} problems ({per_channel_zw} with "
           f"per-channel weight zero points that differ), {elements} elements "
           f"({ties} exact ties, {odd_ties} of them with an odd y_zero_point; {beyond_2_24} with "
           "|acc + B| > 2^24)")
    if SEVEN_BIT_MIXED_WEIGHTS:
        report("  this CPU has no VNNI, where ORT's u8 x s8 products saturate (vpmaddubsw): the "
               "problems of mixed signedness take 7-bit weights")
    report(f"  semantics='onnxruntime' vs ORT: {ort_mismatch} mismatching elements")
    report(f"  semantics='reference' vs ORT: {ref_vs_ort} mismatching elements (expected: ORT "
           "adds the zero point after rounding, the ONNX reference before)")
    report(f"  semantics='reference' vs the ONNX reference formula: {ref_mismatch} mismatching "
           "elements")
    report(f"  com.microsoft QLinearConv channels_last=1 (NHWC) vs semantics='onnxruntime': "
           f"{variant_mismatch['nhwc']} mismatching of {variant_elements['nhwc']} elements")
    report(f"  QDQ DequantizeLinear->Conv->QuantizeLinear (fused by ORT) vs "
           f"semantics='onnxruntime': {variant_mismatch['qdq']} mismatching of "
           f"{variant_elements['qdq']} elements")
    assert ort_mismatch == 0 and ref_mismatch == 0, "\n".join(failures)
    assert variant_mismatch == {"nhwc": 0, "qdq": 0}, "\n".join(failures)
    # The comparison must have met the cases where the two semantics differ.
    assert odd_ties > 0 and ref_vs_ort > 0


def test_conv_integer_agrees_with_onnxruntime(agreement, report):
    version, cases, results, _ = agreement
    elements = mismatch = 0
    failures = []
    problems = [(c, r) for c, r in zip(cases, results) if c.op == "ConvInteger"]
    for case, ort in problems:
        assert not isinstance(ort, str), f"ORT refused {case.describe()}: {ort}"
        acc = accumulator(case)
        ort = ort.reshape(acc.shape).astype(np.int64)
        mine = qconv_output(case).astype(np.int64)
        np.testing.assert_array_equal(mine, acc, err_msg=case.describe())
        elements += ort.size
        bad = mine != ort
        mismatch += int(bad.sum())
        if bad.any() and len(failures) < 5:
            failures.append(_first(bad, case, mine, ort))
    report(f"ONNX Runtime ({version}) ConvInteger: {len(problems)} problems, {elements} elements, "
           f"{mismatch} mismatching")
    assert mismatch == 0, "\n".join(failures)


def test_the_issue_formula_is_what_onnxruntime_computes(agreement):
    """The formula of SPEC §4 onnxruntime, written in NumPy, against ORT: the scheme's text is
    right independently of qconv's implementation of it."""
    _, cases, results, _ = agreement
    for case, ort in zip(cases, results):
        if case.op != "QLinearConv":
            continue
        acc = accumulator(case)
        np.testing.assert_array_equal(onnxruntime_formula(case, acc), ort.reshape(acc.shape),
                                      err_msg=case.describe())
