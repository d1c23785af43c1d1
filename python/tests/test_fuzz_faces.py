# SPDX-License-Identifier: Apache-2.0
"""Every face driven with arbitrary argument types and values (Debian's python3-hypothesis): each
call must return, or raise a qconv.Error, or a TypeError naming the argument whose Python type is
wrong — never crash, hang or raise anything else. A few thousand examples per face, derandomized
so that CI runs the same ones; a MemoryError is accepted only as qconv's own (an output too large
to allocate, naming it)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qconv
from qconv import functional, onnx, qnn

# NumPy warns when an arbitrary float becomes a float32 bias; that is the caller's value, not ours.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

EXAMPLES = 3000
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

EXTREME_INTS = [2**31 - 1, 2**31, -2**31 - 1, 2**32, 2**63 - 1, 2**63, -2**63, -2**63 - 1,
                2**64, 10**30, 255, 256, -129, 128]


class IndexRaises:
    def __index__(self):
        raise ValueError("no index")

    def __repr__(self):
        return "IndexRaises()"


def _array_pool():
    """Arrays of every dtype kind and rank 0 to 4, built once (drawing them from a pool keeps an
    example cheap enough for thousands per face)."""
    rng = np.random.default_rng(10)
    pool = []
    for dtype in (np.uint8, np.int8, np.int32, np.int64, np.float32, np.float64, np.bool_,
                  np.uint16, np.complex64):
        for shape in ((), (0,), (1,), (2,), (4,), (3, 1), (2, 2), (1, 2, 3, 3), (1, 3, 3, 2),
                      (4, 2, 2, 2), (2, 4, 2, 2), (1, 1, 1, 1), (0, 2, 3, 3)):
            # Small values (a valid problem stays cheap) and now and then an extreme one.
            values = rng.integers(-3, 8, size=shape) * rng.choice([1, 1, 1, 2**40], size=shape)
            with np.errstate(all="ignore"):
                pool.append(values.astype(dtype))
    pool.append(np.array([np.nan, np.inf, -np.inf, 1e-40]))
    pool.append(np.arange(8, dtype=np.uint8)[::2])      # not contiguous
    pool.append(np.ones((2, 2), np.int8, order="F"))   # Fortran order
    pool.append(np.array(["a", "b"]))
    pool.append(np.array([object(), 1], dtype=object))
    return pool


def arrays():
    return st.sampled_from(_array_pool())


def small_ints():
    return st.one_of(st.integers(-3, 6), st.sampled_from(EXTREME_INTS))


def values():
    """Anything a careless caller could pass."""
    scalars = st.one_of(st.none(), st.booleans(), small_ints(),
                        st.floats(allow_nan=True, allow_infinity=True, width=64),
                        st.sampled_from([1e300, 1e-320, -0.0, 10**400]),
                        st.text(max_size=6), st.binary(max_size=4),
                        st.sampled_from(["NCHW", "NHWC", "OIHW", "IOHW", "HWIO", "uint8", "int8",
                                         "int32", "quint8", "fbgemm", "SAME_UPPER", "VALID"]),
                        st.just(IndexRaises()), st.just(object()))
    sequences = st.one_of(st.lists(small_ints(), max_size=5).map(tuple),
                          st.lists(small_ints(), max_size=5),
                          st.lists(scalars, max_size=3))
    return st.one_of(scalars, sequences, arrays())


VALUES = values()


def changes(names):
    """{name: value} for one to three of `names` (built once per list of names: strategies
    built per example would cost more than the calls)."""
    return st.dictionaries(st.sampled_from(sorted(names)), VALUES, min_size=1, max_size=3)


def outcome(call, changed):
    """Runs call(); only the documented outcomes pass."""
    try:
        call()
    except qconv.Error:
        pass
    except TypeError as error:
        message = str(error)
        assert any(name in message for name in changed), \
            f"TypeError names none of {sorted(changed)}: {message}"
    except MemoryError as error:
        assert str(error).startswith("output: cannot allocate"), str(error)


X = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(1, 2, 3, 3)          # NCHW
W = (np.arange(4 * 2 * 2 * 2) % 7 - 3).astype(np.int8).reshape(4, 2, 2, 2)  # OIHW
WT = (np.arange(2 * 4 * 2 * 2) % 5 - 2).astype(np.int8).reshape(2, 4, 2, 2)  # IOHW


# ---- TVM ----

QNN_CONV = dict(data=X, kernel=W, input_zero_point=3, kernel_zero_point=0, input_scale=0.5,
                kernel_scale=0.25, kernel_size=(2, 2), channels=4, strides=(1, 1),
                padding=(0, 0), dilation=(1, 1), groups=1, data_layout="NCHW",
                kernel_layout="OIHW", out_layout="", out_dtype="int32", allow_wraparound=False,
                threads=1)
QNN_TRANSPOSE = dict(data=X, weight=WT, input_zero_point=3, kernel_zero_point=0, input_scale=0.5,
                     kernel_scale=0.25, strides=(2, 2), padding=(0, 0), dilation=(1, 1),
                     groups=1, channels=None, kernel_size=None, data_layout="NCHW",
                     kernel_layout="IOHW", out_layout="", output_padding=(1, 0),
                     out_dtype="int32", allow_wraparound=False, threads=1)
QNN_REQUANTIZE = dict(data=np.arange(-6, 6, dtype=np.int32).reshape(3, 4), input_scale=0.5,
                      input_zero_point=1, output_scale=0.25, output_zero_point=-3, axis=-1,
                      rounding="UPWARD", compute_dtype="int64", out_dtype="int8")


def test_qnn_baselines_run():
    qnn.conv2d(**QNN_CONV)
    qnn.conv2d_transpose(**QNN_TRANSPOSE)
    qnn.requantize(**QNN_REQUANTIZE)


QNN_CASES = [(qnn.conv2d, QNN_CONV, changes(QNN_CONV)),
             (qnn.conv2d_transpose, QNN_TRANSPOSE, changes(QNN_TRANSPOSE)),
             (qnn.requantize, QNN_REQUANTIZE, changes(QNN_REQUANTIZE))]


@SETTINGS
@given(st.integers(0, 2), st.data())
def test_qnn_face(which, data):
    function, base, strategy = QNN_CASES[which]
    changed = data.draw(strategy)
    outcome(lambda: function(**dict(base, **changed)), changed)


# ---- PyTorch ----

FUNCTIONAL = dict(stride=1, padding=0, dilation=1, groups=1, scale=0.5, zero_point=3,
                  dtype="quint8", engine="fbgemm", relu=False, threads=1)
QUANTIZED = ["input.scale", "input.zero_point", "weight.scale", "weight.zero_point", "input",
             "weight", "bias"]


def functional_call(transposed, changed):
    def call():
        kwargs = dict(FUNCTIONAL)
        for name, value in changed.items():
            if "." not in name and name not in ("input", "weight", "bias"):
                kwargs[name] = value
        w = WT if transposed else W
        x_scale = changed.get("input.scale", 0.5)
        x_zero = changed.get("input.zero_point", 3)
        w_scale = changed.get("weight.scale", [0.25] * w.shape[1 if transposed else 0])
        w_zero = changed.get("weight.zero_point", 0)
        axis = 1 if transposed else 0
        x = changed.get("input", None)
        x = qconv.QuantizedArray(X, x_scale, x_zero) if x is None else x
        weight = changed.get("weight", None)
        if weight is None:
            weight = qconv.QuantizedArray(
                w, w_scale, w_zero if np.size(w_zero) != 1 else [w_zero] * np.size(w_scale),
                axis=axis)
        bias = changed.get("bias", None)
        if transposed:
            kwargs.pop("padding_mode", None)
            return functional.conv_transpose2d(x, weight, bias, **kwargs)
        return functional.conv2d(x, weight, bias, **kwargs)
    return call


def test_functional_baselines_run():
    functional_call(False, {})()
    functional_call(True, {})()


FUNCTIONAL_CHANGES = changes(sorted(FUNCTIONAL) + QUANTIZED)


@SETTINGS
@given(st.booleans(), FUNCTIONAL_CHANGES)
def test_functional_face(transposed, changed):
    outcome(functional_call(transposed, changed), changed)


# ---- ttnn ----

TTNN_X = np.ascontiguousarray(X.transpose(0, 2, 3, 1))  # NHWC
TTNN_GEOMETRY = dict(in_channels=2, out_channels=4, batch_size=1, input_height=3, input_width=3,
                     kernel_size=(2, 2), stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                     groups=1)
TTNN_CONFIGS = dict(conv_config=qconv.Conv2dConfig(), compute_config=qconv.ComputeConfig())
TTNN_CONFIG_FIELDS = dict(activation="", clamp=(0.0, 1.0), input_dtype="uint8",
                          output_layout="NHWC", dtype="uint8", threads=1, algorithm="auto",
                          input_zero_point=None, allow_wraparound=False)
TTNN_COMPUTE_FIELDS = dict(scheme="fbgemm", rounding="UPWARD", input_scale=1.0,
                           input_zero_point=0, output_scale=1.0, output_zero_point=0,
                           multiplier_q31=[], shift=[])
PREPARED = qconv.prepare_conv_weights(W, "NHWC", "OIHW", has_bias=False, **TTNN_GEOMETRY,
                                      **TTNN_CONFIGS)


def ttnn_call(kind, changed):
    def call():
        geometry = {k: changed.get(k, v) for k, v in TTNN_GEOMETRY.items()}
        conv = {k[len("conv_config."):]: v for k, v in changed.items()
                if k.startswith("conv_config.")}
        compute = {k[len("compute_config."):]: v for k, v in changed.items()
                   if k.startswith("compute_config.")}
        configs = dict(conv_config=qconv.Conv2dConfig(**conv),
                       compute_config=qconv.ComputeConfig(**compute))
        if "conv_config" in changed:
            configs["conv_config"] = changed["conv_config"]
        weights = changed.get("weight_tensor", W)
        if kind == "prepare":
            return qconv.prepare_conv_weights(
                weights, changed.get("input_layout", "NHWC"),
                changed.get("weights_format", "OIHW"), has_bias=changed.get("has_bias", False),
                **geometry, **configs)
        if kind == "bias":
            return qconv.prepare_conv_bias(changed.get("bias_tensor", np.zeros(4, np.float32)),
                                           changed.get("input_layout", "NHWC"), **geometry,
                                           **configs)
        if kind == "prepared":
            weights = PREPARED
        extra = {k: changed[k] for k in ("input_layout", "weights_format", "bias_tensor",
                                         "return_output_dim", "return_weights_and_bias")
                 if k in changed}
        return qconv.conv2d(changed.get("input_tensor", TTNN_X), weights, **geometry, **configs,
                            **extra)
    return call


TTNN_NAMES = (sorted(TTNN_GEOMETRY) + ["input_layout", "weights_format", "has_bias",
                                       "weight_tensor", "bias_tensor", "input_tensor",
                                       "return_output_dim", "return_weights_and_bias",
                                       "conv_config"]
              + ["conv_config." + k for k in TTNN_CONFIG_FIELDS]
              + ["compute_config." + k for k in TTNN_COMPUTE_FIELDS])


def test_ttnn_baselines_run():
    for kind in ("prepare", "bias", "prepared", "raw"):
        ttnn_call(kind, {})()


TTNN_CHANGES = changes(TTNN_NAMES)


@SETTINGS
@given(st.sampled_from(["prepare", "bias", "prepared", "raw"]), TTNN_CHANGES)
def test_ttnn_face(kind, changed):
    # A config field's TypeError names the field alone ("threads must be an int").
    names = set(changed) | {name.split(".", 1)[-1] for name in changed}
    outcome(ttnn_call(kind, changed), names)


# ---- ONNX ----

ONNX_QLINEAR = dict(x=X, x_scale=0.5, x_zero_point=np.uint8(3), w=W, w_scale=0.25,
                    w_zero_point=np.int8(0), y_scale=1.0, y_zero_point=np.uint8(4), B=None,
                    auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
                    strides=None, semantics="reference", threads=1)
ONNX_INTEGER = dict(x=X, w=W, x_zero_point=3, w_zero_point=None, auto_pad="SAME_UPPER",
                    dilations=None, group=1, kernel_shape=None, pads=None, strides=(2, 1),
                    threads=1)
ONNX_TRANSPOSE = dict(x=X, w=WT, x_zero_point=None, w_zero_point=1, auto_pad="NOTSET",
                      dilations=(1, 1), group=1, kernel_shape=None, output_padding=None,
                      output_shape=(5, 6), pads=None, strides=(2, 2), threads=1)


def test_onnx_baselines_run():
    onnx.qlinear_conv(**ONNX_QLINEAR)
    onnx.conv_integer(**ONNX_INTEGER)
    onnx.conv_transpose_integer(**ONNX_TRANSPOSE)


ONNX_CASES = [(onnx.qlinear_conv, ONNX_QLINEAR, changes(ONNX_QLINEAR)),
              (onnx.conv_integer, ONNX_INTEGER, changes(ONNX_INTEGER)),
              (onnx.conv_transpose_integer, ONNX_TRANSPOSE, changes(ONNX_TRANSPOSE))]


@SETTINGS
@given(st.integers(0, 2), st.data())
def test_onnx_face(which, data):
    function, base, strategy = ONNX_CASES[which]
    changed = data.draw(strategy)
    outcome(lambda: function(**dict(base, **changed)), changed)


# ---- prepared weights in memory ----

@settings(max_examples=EXAMPLES // 4, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.one_of(st.binary(max_size=64), VALUES))
def test_from_bytes(data):
    outcome(lambda: qconv.PreparedWeights.from_bytes(data), {"data"})


@pytest.mark.parametrize("data", [PREPARED.to_bytes(), bytearray(PREPARED.to_bytes()),
                                  memoryview(PREPARED.to_bytes())])
def test_from_bytes_takes_every_bytes_like(data):
    assert qconv.PreparedWeights.from_bytes(data).engine == PREPARED.engine
