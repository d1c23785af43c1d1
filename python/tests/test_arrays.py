# SPDX-License-Identifier: Apache-2.0
"""NumPy arrays in and out: zero-copy for contiguous aligned arrays of the right dtype, a correct
copy for everything else (slices with steps, negative strides, Fortran order, byte-swapped and
misaligned buffers, lists, other integer widths), refusal of what cannot be converted, and
results that own their memory."""

import gc

import numpy as np
import pytest

import qconv
from qconv import _qconv, qnn

RNG = np.random.default_rng(3)


def conv(data, kernel):
    return qnn.conv2d(data, kernel, 7, 0, 1.0, 1.0, kernel.shape[2:], kernel.shape[0], padding=1)


def test_contiguous_aligned_arrays_are_read_in_place():
    for dtype in (np.uint8, np.int8, np.int32):
        a = np.arange(12, dtype=dtype)
        assert _qconv._borrowed_address(a) == a.ctypes.data


def test_other_arrays_are_copied():
    a = np.arange(24, dtype=np.uint8)
    assert _qconv._borrowed_address(a[::2]) != a.ctypes.data
    assert _qconv._borrowed_address(a[::-1]) != a[::-1].ctypes.data
    swapped = np.arange(6, dtype=">i4")
    address, copy = _qconv._converted(swapped, "int32")
    assert address != swapped.ctypes.data
    np.testing.assert_array_equal(copy, [0, 1, 2, 3, 4, 5])
    buffer = np.zeros(4 * 6 + 1, np.uint8)
    misaligned = np.frombuffer(buffer.data, dtype=np.int32, count=6, offset=1)
    assert not misaligned.flags.aligned
    address, copy = _qconv._converted(misaligned, "int32")
    assert address % 4 == 0 and copy.flags.aligned


@pytest.mark.parametrize("make_view", [
    lambda x: x[:, :, ::-1, :],                     # negative strides
    lambda x: x[:, :, :, ::2],                      # steps
    lambda x: np.asfortranarray(x),                 # Fortran order
    lambda x: x.transpose(0, 1, 3, 2),              # transposed
], ids=["negative-strides", "steps", "fortran", "transposed"])
def test_non_contiguous_inputs_give_the_contiguous_result(make_view):
    x = RNG.integers(0, 256, (2, 3, 6, 6), dtype=np.uint8)
    k = RNG.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)
    view = make_view(x)
    kernel_view = make_view(k) if view.shape[2:] == x.shape[2:] else k
    expected = conv(np.ascontiguousarray(view), np.ascontiguousarray(kernel_view))
    np.testing.assert_array_equal(conv(view, kernel_view), expected)


def test_other_integer_dtypes_convert_when_values_fit():
    data = [-300, 0, 300]
    expected = qnn.requantize(np.array(data, np.int32), 1.0, 0, 1.0, 0, out_dtype="int32")
    for given in (data, np.array(data, np.int64), np.array(data, np.int16),
                  np.array(data, ">i8")):
        np.testing.assert_array_equal(qnn.requantize(given, 1.0, 0, 1.0, 0, out_dtype="int32"),
                                      expected)
    with pytest.raises(qconv.InvalidArgument, match=r"data = values in \[0, 4294967296\]"):
        qnn.requantize(np.array([0, 2**32]), 1.0, 0, 1.0, 0)
    with pytest.raises(qconv.InvalidArgument, match="data.dtype = float64"):
        qnn.requantize(np.array([1.5]), 1.0, 0, 1.0, 0)


def test_quantized_values_must_say_their_type():
    # uint8 or int8 choose the quantized type; a wider integer array is ambiguous.
    k = np.ones((1, 1, 1, 1), np.int8)
    with pytest.raises(qconv.InvalidArgument, match="data.dtype = int64: must be uint8 or int8"):
        qnn.conv2d(np.ones((1, 1, 2, 2), np.int64), k, 0, 0, 1.0, 1.0, (1, 1), 1)
    with pytest.raises(qconv.InvalidArgument, match="kernel.dtype = float32"):
        qnn.conv2d(np.ones((1, 1, 2, 2), np.uint8), k.astype(np.float32), 0, 0, 1.0, 1.0,
                   (1, 1), 1)
    with pytest.raises(qconv.InvalidArgument, match="data: .*4 dimensions"):
        qnn.conv2d(np.ones((2, 2), np.uint8), k, 0, 0, 1.0, 1.0, (1, 1), 1)
    with pytest.raises(TypeError, match="data must be an array"):
        qnn.conv2d(None, k, 0, 0, 1.0, 1.0, (1, 1), 1)


def test_scalar_arguments():
    x = np.ones((1, 1, 1, 1), np.uint8)
    k = np.ones((1, 1, 1, 1), np.int8)
    for zero_point in (1, np.int64(1), np.uint8(1), np.array(1), np.array([1])):
        assert qnn.conv2d(x, k, zero_point, 0, 1.0, 1.0, (1, 1), 1)[0, 0, 0, 0] == 0
    with pytest.raises(qconv.InvalidArgument, match="input_zero_point = 1.5: must be an integer"):
        qnn.conv2d(x, k, 1.5, 0, 1.0, 1.0, (1, 1), 1)
    with pytest.raises(qconv.InvalidArgument, match="input_scale .*single number"):
        qnn.conv2d(x, k, 0, 0, [1.0, 2.0], 1.0, (1, 1), 1)
    with pytest.raises(qconv.InvalidArgument, match="input_zero_point .*must fit in int32"):
        qnn.conv2d(x, k, 2**40, 0, 1.0, 1.0, (1, 1), 1)
    with pytest.raises(TypeError, match="strides must be an int or a sequence of ints"):
        qnn.conv2d(x, k, 0, 0, 1.0, 1.0, (1, 1), 1, strides="1")


def test_results_own_their_memory():
    x = RNG.integers(0, 256, (1, 2, 5, 5), dtype=np.uint8)
    k = RNG.integers(-128, 128, (3, 2, 3, 3), dtype=np.int8)
    y = conv(x, k)
    expected = y.copy()
    assert y.flags.c_contiguous and y.flags.writeable and y.flags.aligned
    assert y.ctypes.data % 64 == 0  # qconv's own 64-byte aligned storage, handed over
    del x, k
    gc.collect()
    np.testing.assert_array_equal(y, expected)
    view = y[0, 1]
    del y
    gc.collect()
    np.testing.assert_array_equal(view, expected[0, 1])
