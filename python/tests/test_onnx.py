# SPDX-License-Identifier: Apache-2.0
"""qconv.onnx against hand-derived cases: ONNX's pads order, auto_pad (VALID, SAME_UPPER,
SAME_LOWER), per-channel weight zero points, QLinearConv's rounding after adding the zero point,
y's dtype taken from y_zero_point, the bias B, and ConvTranspose's output_shape."""

import numpy as np
import pytest

import qconv
from qconv import onnx

# A 3x3 image stored with zero point 10: the real values are 1..9.
X = (np.arange(1, 10).reshape(1, 1, 3, 3) + 10).astype(np.uint8)
ONES_2X2 = np.ones((1, 1, 2, 2), np.int8)


def test_pads_are_top_left_bottom_right():
    w = np.ones((1, 1, 1, 1), np.uint8)
    y = onnx.conv_integer(X[:, :, :2, :2], w, np.uint8(10), np.uint8(0), pads=[1, 0, 0, 2])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y[0, 0], [[0, 0, 0, 0], [1, 2, 0, 0], [4, 5, 0, 0]])


@pytest.mark.parametrize("auto_pad, expected", [
    ("VALID", [[12, 16], [24, 28]]),
    # total padding (3-1)*1 + 2 - 3 = 1: at the end (bottom, right) ...
    ("SAME_UPPER", [[12, 16, 9], [24, 28, 15], [15, 17, 9]]),
    # ... or at the beginning (top, left); padding reads as the zero point (real 0).
    ("SAME_LOWER", [[1, 3, 5], [5, 12, 16], [11, 24, 28]]),
])
def test_auto_pad(auto_pad, expected):
    y = onnx.conv_integer(X, ONES_2X2, 10, auto_pad=auto_pad)
    np.testing.assert_array_equal(y[0, 0], expected)


def test_same_upper_with_stride_puts_the_odd_padding_at_the_end():
    # in 3, k 2, s 2: total = (ceil(3/2) - 1)*2 + 2 - 3 = 1, at the end: windows rows {0,1}, {2}.
    y = onnx.conv_integer(X, ONES_2X2, 10, auto_pad="SAME_UPPER", strides=[2, 2])
    np.testing.assert_array_equal(y[0, 0], [[12, 9], [15, 9]])
    y = onnx.conv_integer(X, ONES_2X2, 10, auto_pad="SAME_LOWER", strides=[2, 2])
    np.testing.assert_array_equal(y[0, 0], [[1, 5], [11, 28]])


def test_conv_integer_per_channel_weight_zero_points():
    w = np.array([[[[3]]], [[[3]]]], np.uint8)
    y = onnx.conv_integer(X, w, 10, np.array([1, 5], np.uint8))
    np.testing.assert_array_equal(y[0, 0], np.arange(1, 10).reshape(3, 3) * 2)
    np.testing.assert_array_equal(y[0, 1], np.arange(1, 10).reshape(3, 3) * -2)
    y = onnx.conv_integer(X - 10, w)  # zero points default to 0
    np.testing.assert_array_equal(y[0, 0], np.arange(1, 10).reshape(3, 3) * 3)


def test_qlinear_conv_adds_the_zero_point_before_rounding():
    # acc = x - 10 with w = 1; m = 0.5 * 1 / 1 = 0.5; R = acc/2 + 3, rounded half to even:
    # acc 1 -> 3.5 -> 4 (round-then-add would give 3), acc 3 -> 4.5 -> 4, acc 5 -> 5.5 -> 6.
    x = np.array([[[[11, 13, 15, 9]]]], np.uint8)
    w = np.ones((1, 1, 1, 1), np.int8)
    y = onnx.qlinear_conv(x, 0.5, 10, w, 1.0, 0, 1.0, np.uint8(3))
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y[0, 0, 0], [4, 4, 6, 2])  # acc -1 -> 2.5 -> 2


def test_qlinear_conv_onnxruntime_semantics_rounds_before_adding_the_zero_point():
    # As above, with ONNX Runtime's order: acc 1 -> rne(0.5) + 3 = 3, acc 3 -> rne(1.5) + 3 = 5,
    # acc 5 -> rne(2.5) + 3 = 5, acc -1 -> rne(-0.5) + 3 = 3.
    x = np.array([[[[11, 13, 15, 9]]]], np.uint8)
    w = np.ones((1, 1, 1, 1), np.int8)
    y = onnx.qlinear_conv(x, 0.5, 10, w, 1.0, 0, 1.0, np.uint8(3), semantics="onnxruntime")
    np.testing.assert_array_equal(y[0, 0, 0], [3, 5, 5, 3])
    y = onnx.qlinear_conv(x, 0.5, 10, w, 1.0, 0, 1.0, np.uint8(3), semantics="reference")
    np.testing.assert_array_equal(y[0, 0, 0], [4, 4, 6, 2])
    with pytest.raises(qconv.InvalidArgument, match="semantics = onnx: must be"):
        onnx.qlinear_conv(x, 0.5, 10, w, 1.0, 0, 1.0, np.uint8(3), semantics="onnx")


def test_the_onnxruntime_scheme_in_prepared_weights_and_on_disk():
    # The core problem takes the scheme too (here by name, through the ttnn face): acc = 20,
    # m = 1/8: rne(2.5) + 1 = 3 (the onnx scheme: rne(3.5) = 4). Saved and loaded, it stays.
    from ttnn_problem import GEOMETRY, W, X, prepare
    out = qconv.Conv2dConfig(dtype="uint8")
    results = {}
    for scheme in ("onnxruntime", "onnx"):
        config = qconv.ComputeConfig(scheme=scheme, input_zero_point=1, output_scale=8.0,
                                     output_zero_point=1)
        weights = prepare(conv_config=out, compute_config=config)
        weights = qconv.PreparedWeights.from_bytes(weights.to_bytes())
        results[scheme] = qconv.conv2d(X, weights, **GEOMETRY, conv_config=out,
                                       compute_config=config)[0, 0, 0, 0]
    assert results == {"onnxruntime": 3, "onnx": 4}


def test_qlinear_conv_output_dtype_bias_and_saturation():
    x = np.array([[[[11, 13, 15, 9]]]], np.uint8)
    w = np.array([[[[2]]], [[[4]]]], np.int8)
    # Channel 0: (acc*(2-0) + B0) * 0.5 * 1 / 0.5 - 100; channel 1: w zero point 4, weight 0 ...
    y = onnx.qlinear_conv(x, 0.5, 10, w, np.array([1.0, 1.0]), np.array([0, 4], np.int8), 0.5,
                          np.int8(-100), B=np.array([300, 7], np.int32))
    assert y.dtype == np.int8
    # ch0: (2*acc + 300) - 100 with acc = 1, 3, 5, -1 -> 202, 206, 210, 198 -> saturate at 127.
    np.testing.assert_array_equal(y[0, 0, 0], [127, 127, 127, 127])
    # ch1: (0*acc + 7) - 100 = -93.
    np.testing.assert_array_equal(y[0, 1, 0], [-93, -93, -93, -93])
    with pytest.raises(qconv.InvalidArgument, match="y_zero_point"):
        onnx.qlinear_conv(x, 0.5, 10, w, 1.0, 0, 0.5, np.int32(3))


def test_conv_transpose_integer_output_shape_sets_the_pads():
    x = np.array([[[[1, 2], [3, 4]]]], np.uint8)
    w = np.ones((1, 1, 3, 3), np.int8)
    full = onnx.conv_transpose_integer(x, w, strides=[2, 2])
    np.testing.assert_array_equal(full[0, 0], [[1, 1, 3, 2, 2], [1, 1, 3, 2, 2],
                                               [4, 4, 10, 6, 6], [3, 3, 7, 4, 4],
                                               [3, 3, 7, 4, 4]])
    # output_shape 4x4 from a full 5x5: total padding 1, which ONNX puts at the beginning
    # unless auto_pad is SAME_UPPER.
    y = onnx.conv_transpose_integer(x, w, strides=[2, 2], output_shape=[4, 4])
    np.testing.assert_array_equal(y[0, 0], full[0, 0, 1:, 1:])
    y = onnx.conv_transpose_integer(x, w, strides=[2, 2], output_shape=[4, 4],
                                    auto_pad="SAME_UPPER")
    np.testing.assert_array_equal(y[0, 0], full[0, 0, :4, :4])
    y = onnx.conv_transpose_integer(x, w, strides=[2, 2], pads=[1, 0, 0, 1])
    np.testing.assert_array_equal(y[0, 0], full[0, 0, 1:, :4])


def test_errors_name_onnx_attributes():
    with pytest.raises(qconv.InvalidArgument, match="pads"):
        onnx.conv_integer(X, ONES_2X2, 10, pads=[1, 1, 1])
    with pytest.raises(qconv.InvalidArgument, match="auto_pad"):
        onnx.conv_integer(X, ONES_2X2, 10, auto_pad="SAME")
    with pytest.raises(qconv.ShapeMismatch, match="kernel_shape"):
        onnx.conv_integer(X, ONES_2X2, 10, kernel_shape=[3, 3])
    # The length check is the plan's, which calls B "bias".
    with pytest.raises(qconv.ShapeMismatch, match="B.size = 3"):
        onnx.qlinear_conv(X, 1.0, 10, ONES_2X2, 1.0, 0, 1.0, np.uint8(0), B=np.zeros(3, np.int32))
