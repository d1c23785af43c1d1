# SPDX-License-Identifier: Apache-2.0
"""Regressions of issue 10, found by probing the Python module as a careless user would: each test
failed (or crashed the interpreter) before its fix."""

import errno
import os
import pathlib
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import qconv
from qconv import functional, onnx, qnn

import ttnn_problem

X = np.ones((1, 1, 4, 4), np.uint8)
K = np.ones((1, 1, 2, 2), np.int8)


def conv(**kwargs):
    return qnn.conv2d(X, K, 0, 0, 1.0, 1.0, (2, 2), 1, **kwargs)


# ---- 1. integer sequences given as NumPy arrays (a segfault), and what is not one ----

def test_numpy_integer_arrays_are_integer_sequences():
    np.testing.assert_array_equal(conv(strides=np.array([2, 2])), conv(strides=(2, 2)))
    np.testing.assert_array_equal(conv(padding=np.array([1, 0, 1, 0])), conv(padding=(1, 0, 1, 0)))
    np.testing.assert_array_equal(conv(strides=np.int64(2)), conv(strides=2))
    np.testing.assert_array_equal(conv(strides=np.array(2)), conv(strides=2))
    y = qnn.conv2d(X, K, 0, 0, 1.0, 1.0, np.array([2, 2]), 1)
    np.testing.assert_array_equal(y, conv())
    x = onnx.conv_integer(X, K, pads=np.array([0, 0, 1, 1]), strides=np.array([1, 1]))
    assert x.shape == (1, 1, 4, 4)
    t = qnn.conv2d_transpose(X, K, 0, 0, 1.0, 1.0, strides=(2, 2),
                             output_padding=np.array([1, 1]))
    assert t.shape == (1, 1, 9, 9)


class RaisingIndex:
    def __index__(self):
        raise ValueError("no index here")


@pytest.mark.parametrize("value", [(np.array([1]), 1), (RaisingIndex(), 1), RaisingIndex(),
                                   np.array([[1, 1]]), np.array([1.0, 1.0]), (1.5, 1),
                                   b"\x02\x02", bytearray(b"\x02\x02"), "22", {1: 1}])
def test_anything_else_is_a_type_error_naming_the_argument(value):
    with pytest.raises(TypeError, match=r"^strides must be an int"):
        conv(strides=value)


# ---- 2. ttnn weights quantized per channel along another axis ----

def test_ttnn_refuses_per_channel_weights_off_the_output_axis():
    w = np.ones((2, 2, 1, 1), np.int8)
    weights = qconv.QuantizedArray(w, [0.5, 0.25], [0, 0], axis=1)
    args = dict(in_channels=2, out_channels=2, batch_size=1, input_height=2, input_width=2,
                kernel_size=(1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                has_bias=False, groups=1)
    with pytest.raises(qconv.InvalidArgument, match=r"^weight_tensor.axis = 1: .*axis 0"):
        qconv.prepare_conv_weights(weights, "NHWC", "OIHW", **args)
    with pytest.raises(qconv.InvalidArgument, match=r"^weight_tensor.axis = 1"):
        qconv.conv2d(np.ones((1, 2, 2, 2), np.uint8), weights, 2, 2, 1, 2, 2, (1, 1))
    # Along the output axis (also written -4) it is taken; HWIO's output axis is 3.
    for axis in (0, -4):
        qconv.prepare_conv_weights(qconv.QuantizedArray(w, [0.5, 0.25], [0, 0], axis=axis),
                                   "NHWC", "OIHW", **args)
    qconv.prepare_conv_weights(
        qconv.QuantizedArray(w.reshape(1, 1, 2, 2), [0.5, 0.25], [0, 0], axis=3), "NHWC", "HWIO",
        **args)


def test_ttnn_refuses_torch_weights_quantized_along_axis_1():
    torch = pytest.importorskip("torch")
    w = torch.quantize_per_channel(torch.ones(2, 2, 1, 1), torch.tensor([0.5, 0.25]),
                                   torch.tensor([0, 0]), 1, torch.qint8)
    with pytest.raises(qconv.InvalidArgument, match=r"^weight_tensor.axis = 1"):
        qconv.prepare_conv_weights(w, "NHWC", "OIHW", 2, 2, 1, 2, 2, (1, 1), (1, 1), (0, 0),
                                   (1, 1), False, 1)


# ---- 3. a daemon thread inside a computation when the interpreter exits ----

def test_python_exits_cleanly_while_a_daemon_thread_computes():
    script = textwrap.dedent("""
        import sys, threading, numpy as np, qconv
        from qconv import qnn
        n = int(sys.argv[1])
        x = np.ones((1, 8, n, n), np.uint8)
        k = np.ones((8, 8, 3, 3), np.int8)
        started = threading.Event()
        def work():
            while True:
                started.set()
                qnn.conv2d(x, k, 0, 0, 1.0, 1.0, (3, 3), 8, threads=2)
        for _ in range(4):
            threading.Thread(target=work, daemon=True).start()
        started.wait()
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    # Small computations in a loop: some daemon thread is always about to ask for the GIL back
    # (before the fix, every run aborted: "terminate called without an active exception").
    for size in (4, 16, 64, 4, 16):
        result = subprocess.run([sys.executable, "-c", script, str(size)], env=env,
                                capture_output=True, timeout=120)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        assert result.stderr == b""


def test_exit_handlers_running_after_qconvs_may_still_call_it():
    # atexit runs handlers last-registered first: this one, registered before qconv was imported,
    # runs after qconv's own exit hook, on the exiting thread, and must neither hang nor fail.
    script = textwrap.dedent("""
        import atexit
        def late():
            import numpy as np
            from qconv import qnn
            y = qnn.conv2d(np.ones((1, 1, 2, 2), np.uint8), np.ones((1, 1, 1, 1), np.int8), 0, 0,
                           1.0, 1.0, (1, 1), 1, threads=2)
            print("late", int(y.sum()))
        atexit.register(late)
        import qconv
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stdout == b"late 4\n"


# ---- 4. load on a FIFO ----

def test_loading_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    script = f"import qconv\ntry:\n    qconv.PreparedWeights.load({str(fifo)!r})\n" \
             "except OSError as e:\n    print(e.errno, e)\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            timeout=30)
    assert result.returncode == 0, result.stderr
    assert b"not a regular file" in result.stdout
    assert result.stdout.startswith(str(errno.EINVAL).encode())


# ---- 5. values out of every C++ type's range ----

@pytest.mark.parametrize("call, field", [
    (lambda: conv(strides=2**63), "strides"),
    (lambda: conv(groups=2**63), "groups"),
    (lambda: conv(threads=2**31), "threads"),
    (lambda: qnn.conv2d(X, K, 2**63, 0, 1.0, 1.0, (2, 2), 1), "input_zero_point"),
    (lambda: qnn.conv2d(X, K, 0, 0, 10**400, 1.0, (2, 2), 1), "input_scale"),
    (lambda: qnn.conv2d(X, K, 0, 0, 1.0, 1.0, (2, 2), 2**64), "channels"),
    (lambda: onnx.conv_transpose_integer(X, K, output_shape=[2**63, 5]), "output_shape"),
    (lambda: functional.conv2d(qconv.QuantizedArray(X, 1.0, 0), qconv.QuantizedArray(K, 1.0, 0),
                               None, scale=10**400), "scale"),
    (lambda: functional.conv2d(qconv.QuantizedArray(X, 1.0, 0), qconv.QuantizedArray(K, 1.0, 0),
                               None, zero_point=2**63), "zero_point"),
    (lambda: qconv.Conv2dConfig(threads=2**31), "threads"),
    (lambda: qconv.ComputeConfig(input_zero_point=2**40), "input_zero_point"),
    (lambda: ttnn_problem.prepare(groups=2**63), "groups"),
])
def test_out_of_range_values_are_qconv_errors_naming_the_argument(call, field):
    with pytest.raises(qconv.Error, match=rf"^{field}"):
        call()


@pytest.mark.parametrize("call, field", [
    (lambda: conv(groups="1"), "groups"),
    (lambda: conv(data_layout=5), "data_layout"),
    (lambda: conv(allow_wraparound="yes"), "allow_wraparound"),
    (lambda: qconv.Conv2dConfig(activation=1), "activation"),
    (lambda: ttnn_problem.prepare(conv_config="fast"), "conv_config"),
    (lambda: qconv.PreparedWeights.load(3.5), "path"),
])
def test_wrong_python_types_are_type_errors_naming_the_argument(call, field):
    with pytest.raises(TypeError, match=rf"^{field} must be"):
        call()


def test_config_fields_are_checked_when_set():
    config = qconv.Conv2dConfig()
    with pytest.raises(qconv.InvalidArgument, match=r"^threads"):
        config.threads = 2**31
    with pytest.raises(TypeError, match=r"^dtype must be a str"):
        config.dtype = 8


# ---- 6. messages and errors the system gives ----

def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def reseal(data):
    return data[:-8] + struct.pack("<Q", fnv1a64(data[:-8]))


def test_a_non_utf8_path_keeps_its_errno_and_its_message(tmp_path):
    missing = os.fsencode(str(tmp_path)) + b"/\xff\xfe.qcpw"
    with pytest.raises(FileNotFoundError) as error:
        qconv.PreparedWeights.load(missing)
    assert error.value.errno == errno.ENOENT
    assert "cannot open" in str(error.value)
    with pytest.raises(FileNotFoundError):
        qconv.PreparedWeights.load(os.fsdecode(missing))
    weights = ttnn_problem.prepare()
    weights.save(missing)  # a name the file system takes loads back
    assert qconv.PreparedWeights.load(missing).engine == weights.engine


def test_non_utf8_bytes_in_a_file_never_lose_the_message():
    weights = ttnn_problem.prepare()
    data = weights.to_bytes()
    version_at = 20 + 4
    version_length = struct.unpack_from("<I", data, 20)[0]
    engine_at = version_at + version_length + 4
    bad_engine = reseal(data[:engine_at] + b"\xff" + data[engine_at + 1:])
    with pytest.raises(qconv.FormatError) as error:
        qconv.PreparedWeights.from_bytes(bad_engine)
    assert str(error.value).startswith(
        f"engine = \ufffd{weights.engine[1:]}: this library has no such engine")
    bad_version = reseal(data[:version_at] + b"\xff" + data[version_at + 1:])
    loaded = qconv.PreparedWeights.from_bytes(bad_version)
    assert "written by qconv \ufffd" in loaded.describe()
    assert "\ufffd" in repr(loaded)


# ---- 11. an argument that contradicts the preparation ----

def test_ttnn_input_layout_contradicting_the_preparation_is_refused():
    weights = ttnn_problem.prepare()  # for NHWC
    run = dict(ttnn_problem.GEOMETRY, conv_config=ttnn_problem.INT32_OUT,
               compute_config=ttnn_problem.INT32)
    assert qconv.conv2d(ttnn_problem.X, weights, input_layout="NHWC", **run)[0, 0, 0, 0] == 20
    with pytest.raises(qconv.PreparedMismatch,
                       match=r"^input_layout: prepared for NHWC, given NCHW"):
        qconv.conv2d(ttnn_problem.X, weights, input_layout="NCHW", **run)
    with pytest.raises(qconv.PreparedMismatch, match=r"^weights_format: prepared for OIHW"):
        qconv.conv2d(ttnn_problem.X, weights, weights_format="HWIO", **run)


# ---- 12. messages in the caller's words ----

def test_ttnn_errors_name_ttnn_arguments():
    with pytest.raises(qconv.InvalidArgument, match=r"^batch_size = 0"):
        ttnn_problem.prepare(batch_size=0)
    with pytest.raises(qconv.InvalidArgument, match=r"^input_height = -1"):
        ttnn_problem.prepare(input_height=-1)


def test_requantize_of_a_scalar():
    y = qnn.requantize(np.array(100, np.int32), 0.5, 0, 1.0, 3, out_dtype="int8")
    assert y.shape == () and int(y) == 53
    with pytest.raises(qconv.InvalidArgument, match=r"^input_scale.size = 2"):
        qnn.requantize(np.array(100, np.int32), [0.5, 0.25], 0, 1.0, 3)


def test_an_output_too_large_to_allocate_says_which_and_how_large():
    with pytest.raises(MemoryError, match=r"^output: cannot allocate 1125900041060356 bytes"):
        qnn.conv2d_transpose(np.ones((1, 1, 2, 2), np.uint8), np.ones((1, 1, 1, 1), np.int8), 0,
                             0, 1.0, 1.0, strides=(2**24, 2**24))
