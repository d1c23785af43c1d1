# SPDX-License-Identifier: Apache-2.0
"""qconv.qnn against hand-derived cases: TVM's padding order, layouts, per-channel kernel zero
points, conv2d_transpose, and every rounding / compute_dtype of requantize."""

import numpy as np
import pytest

import qconv
from qconv import qnn

X = np.array([[[[5, 6], [7, 8]]]], np.uint8)  # NCHW 1x1x2x2


def test_conv2d_padding_is_top_left_bottom_right():
    # (x - 3) * (2 - 1) with 1 row on top and 2 columns on the right; padding reads as the
    # input zero point, so it contributes 0.
    y = qnn.conv2d(X, np.array([[[[2]]]], np.int8), 3, 1, 0.5, 0.25, (1, 1), 1,
                   padding=(1, 0, 0, 2))
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y[0, 0], [[0, 0, 0, 0], [2, 3, 0, 0], [4, 5, 0, 0]])


def test_conv2d_two_value_padding_is_pad_h_pad_w():
    y = qnn.conv2d(X, np.array([[[[1]]]], np.int8), 0, 0, 1.0, 1.0, (1, 1), 1, padding=(1, 0))
    np.testing.assert_array_equal(y[0, 0], [[0, 0], [5, 6], [7, 8], [0, 0]])


def test_conv2d_per_channel_kernel_zero_points():
    # Output channel 0: (x - 4) * (3 - 1); channel 1: (x - 4) * (5 - 6).
    kernel = np.array([[[[3]]], [[[5]]]], np.int8)
    y = qnn.conv2d(X, kernel, 4, np.array([1, 6]), 1.0, np.array([0.5, 0.25]), (1, 1), 2)
    np.testing.assert_array_equal(y[0, 0], [[2, 4], [6, 8]])
    np.testing.assert_array_equal(y[0, 1], [[-1, -2], [-3, -4]])


def test_conv2d_stride_and_dilation():
    x = np.arange(16, dtype=np.uint8).reshape(1, 1, 4, 4)
    kernel = np.ones((1, 1, 2, 2), np.int8)
    # Dilation 2: taps at (i, j), (i, j+2), (i+2, j), (i+2, j+2).
    y = qnn.conv2d(x, kernel, 0, 0, 1.0, 1.0, (2, 2), 1, dilation=(2, 2))
    np.testing.assert_array_equal(y[0, 0], [[0 + 2 + 8 + 10, 1 + 3 + 9 + 11],
                                            [4 + 6 + 12 + 14, 5 + 7 + 13 + 15]])
    y = qnn.conv2d(x, kernel, 0, 0, 1.0, 1.0, (2, 2), 1, strides=(2, 2))
    np.testing.assert_array_equal(y[0, 0], [[0 + 1 + 4 + 5, 2 + 3 + 6 + 7],
                                            [8 + 9 + 12 + 13, 10 + 11 + 14 + 15]])


def test_conv2d_nhwc_hwio_and_out_layout():
    # Two input channels, one output channel: 1*c0 + 2*c1 (signed data, zero point -1).
    data = np.array([[[[0, 1], [2, 3]]]], np.int8)  # NHWC 1x1x2x2: pixels (0,1) and (2,3)
    kernel = np.array([[[[1], [2]]]], np.int8)        # HWIO 1x1x2x1
    y = qnn.conv2d(data, kernel, -1, 0, 1.0, 1.0, (1, 1), 1, data_layout="NHWC",
                   kernel_layout="HWIO")
    np.testing.assert_array_equal(y, [[[[1 + 2 * 2], [3 + 2 * 4]]]])  # NHWC
    y = qnn.conv2d(data, kernel, -1, 0, 1.0, 1.0, (1, 1), 1, data_layout="NHWC",
                   kernel_layout="HWIO", out_layout="NCHW")
    np.testing.assert_array_equal(y, [[[[5, 11]]]])


def test_conv2d_depthwise_hwoi():
    # Depthwise NHWC: [kh, kw, C, multiplier]; channel c scales by its own weight.
    data = np.array([[[[1, 2]]]], np.uint8)           # NHWC 1x1x1x2
    kernel = np.array([[[[3], [4]]]], np.int8)        # HWOI 1x1x2x1
    y = qnn.conv2d(data, kernel, 0, 0, 1.0, 1.0, (1, 1), 2, groups=2, data_layout="NHWC",
                   kernel_layout="HWOI")
    np.testing.assert_array_equal(y, [[[[3, 8]]]])


def test_conv2d_transpose_scatters_and_cuts_padding():
    x = np.array([[[[1, 2], [3, 4]]]], np.uint8)
    w = np.ones((1, 1, 2, 2), np.int8)  # IOHW
    y = qnn.conv2d_transpose(x, w, 0, 0, 1.0, 1.0, strides=(2, 2))
    np.testing.assert_array_equal(y[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2],
                                            [3, 3, 4, 4], [3, 3, 4, 4]])
    # (top, left, bottom, right) = (1, 0, 0, 1): the first row and the last column go.
    y = qnn.conv2d_transpose(x, w, 0, 0, 1.0, 1.0, strides=(2, 2), padding=(1, 0, 0, 1))
    np.testing.assert_array_equal(y[0, 0], [[1, 1, 2], [3, 3, 4], [3, 3, 4]])
    # Output padding adds a row at the bottom and a column at the right (nothing lands there).
    y = qnn.conv2d_transpose(x, w, 0, 0, 1.0, 1.0, strides=(2, 2), output_padding=(1, 1),
                             channels=1, kernel_size=(2, 2))
    assert y.shape == (1, 1, 5, 5)
    np.testing.assert_array_equal(y[0, 0, 4], 0)
    np.testing.assert_array_equal(y[0, 0, :, 4], 0)


def test_conv2d_transpose_zero_points():
    x = np.array([[[[7]]]], np.uint8)
    w = np.array([[[[1, 4]]], [[[2, 9]]]], np.int8)  # IOHW 2x1x1x2, C_in = 2
    x2 = np.array([[[[7]], [[5]]]], np.uint8)         # two input channels
    y = qnn.conv2d_transpose(x2, w, 5, 1, 1.0, 1.0)
    # (7-5)*(w0-1) + (5-5)*(w1-1) = 2*[0, 3]
    np.testing.assert_array_equal(y[0, 0], [[0, 6]])
    assert x.shape == (1, 1, 1, 1)


@pytest.mark.parametrize("compute_dtype", ["int64", "float32"])
def test_requantize_ties(compute_dtype):
    data = np.array([-3, -1, 1, 3, 2, -2], np.int32)  # times 1/2: -1.5 -0.5 0.5 1.5 1 -1
    up = qnn.requantize(data, 1.0, 0, 2.0, 0, rounding="UPWARD", compute_dtype=compute_dtype)
    near = qnn.requantize(data, 1.0, 0, 2.0, 0, rounding="TONEAREST",
                          compute_dtype=compute_dtype)
    assert up.dtype == np.int8
    np.testing.assert_array_equal(up, [-1, 0, 1, 2, 1, -1])      # half toward +infinity
    np.testing.assert_array_equal(near, [-2, -1, 1, 2, 1, -1])   # half away from zero


def test_requantize_int64_and_float32_paths_differ_where_float_loses_bits():
    # 2^24 + 1 is not a float32: the float path sees 2^24 and halves it exactly, the integer path
    # halves 16777217 to 8388608.5 and rounds it up.
    data = np.array([2**24 + 1], np.int32)
    exact = qnn.requantize(data, 1.0, 0, 2.0, 0, compute_dtype="int64", out_dtype="int32")
    lossy = qnn.requantize(data, 1.0, 0, 2.0, 0, compute_dtype="float32", out_dtype="int32")
    assert exact[0] == 8388609 and lossy[0] == 8388608


def test_requantize_zero_points_and_saturation():
    data = np.array([0, 10, 300, -300], np.int32)
    # (data - 10) * 1 + 5, clamped to uint8.
    np.testing.assert_array_equal(qnn.requantize(data, 1.0, 10, 1.0, 5, out_dtype="uint8"),
                                  [0, 5, 255, 0])
    # The input zero point is subtracted in 64 bits: -2^31 - (2^31 - 1) does not wrap.
    y = qnn.requantize(np.array([-2**31], np.int32), 1.0, 2**31 - 1, 2.0**32, 0,
                       out_dtype="int32")
    assert y[0] == -1


def test_requantize_per_channel_axis_any_rank():
    data = np.ones((2, 3, 2), np.int32) * 3
    y = qnn.requantize(data, np.array([1.0, 2.0, 4.0]), 0, 1.0, 0, axis=1)
    assert y.shape == (2, 3, 2)
    np.testing.assert_array_equal(y[:, :, 0], [[3, 6, 12], [3, 6, 12]])
    y = qnn.requantize(data, np.array([1.0, 2.0]), 0, 1.0, 0, axis=-1)
    np.testing.assert_array_equal(y[0], [[3, 6]] * 3)
    y = qnn.requantize(data[0, 0], np.array([1.0, 2.0]), 0, 1.0, 0)  # rank 1, axis -1
    np.testing.assert_array_equal(y, [3, 6])
    with pytest.raises(qconv.InvalidArgument, match="input_scale"):
        qnn.requantize(data, np.array([1.0, 2.0]), 0, 1.0, 0, axis=1)
    with pytest.raises(qconv.InvalidArgument, match="axis = 3"):
        qnn.requantize(data, 1.0, 0, 1.0, 0, axis=3)


def test_errors_name_tvm_arguments():
    kernel = np.ones((1, 1, 3, 3), np.int8)
    with pytest.raises(qconv.ShapeMismatch, match="kernel_size"):
        qnn.conv2d(X, kernel, 0, 0, 1.0, 1.0, (2, 2), 1, padding=1)
    with pytest.raises(qconv.ShapeMismatch, match="channels"):
        qnn.conv2d(X, kernel, 0, 0, 1.0, 1.0, (3, 3), 4, padding=1)
    with pytest.raises(qconv.InvalidArgument, match="out_dtype"):
        qnn.conv2d(X, kernel, 0, 0, 1.0, 1.0, (3, 3), 1, padding=1, out_dtype="int8")
    with pytest.raises(qconv.InvalidArgument, match="padding"):
        qnn.conv2d(X, kernel, 0, 0, 1.0, 1.0, (3, 3), 1, padding=(1, 1, 1))
    with pytest.raises(qconv.InvalidArgument, match="rounding"):
        qnn.requantize(np.zeros(2, np.int32), 1.0, 0, 1.0, 0, rounding="DOWN")
    with pytest.raises(qconv.InvalidArgument, match="compute_dtype"):
        qnn.requantize(np.zeros(2, np.int32), 1.0, 0, 1.0, 0, compute_dtype="int32")
