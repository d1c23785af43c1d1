# SPDX-License-Identifier: Apache-2.0
"""Every C++ error class arrives as its own Python exception, a ValueError under qconv.Error,
carrying the C++ message that names the field, the value and the rule."""

import numpy as np
import pytest

import qconv
from qconv import _qconv, qnn

CLASSES = ["InvalidArgument", "ShapeMismatch", "OverflowRisk", "PreparedMismatch", "FormatError"]


def test_hierarchy():
    assert issubclass(qconv.Error, ValueError)
    for name in CLASSES:
        cls = getattr(qconv, name)
        assert issubclass(cls, qconv.Error) and cls.__module__ == "qconv"
    assert len({getattr(qconv, name) for name in CLASSES}) == len(CLASSES)


@pytest.mark.parametrize("name", ["Error"] + CLASSES)
def test_each_cpp_class_is_translated_to_its_own(name):
    with pytest.raises(getattr(qconv, name)) as caught:
        _qconv._throw(name, f"field = 1: a {name} message")
    assert type(caught.value) is getattr(qconv, name)
    assert str(caught.value) == f"field = 1: a {name} message"


def test_real_errors_carry_the_cpp_message():
    x = np.ones((1, 1, 4, 4), np.uint8)
    k = np.ones((1, 1, 3, 3), np.int8)
    with pytest.raises(qconv.InvalidArgument, match=r"^strides\[0\] = 0: .*"):
        qnn.conv2d(x, k, 0, 0, 1.0, 1.0, (3, 3), 1, strides=(0, 1))
    with pytest.raises(qconv.InvalidArgument, match=r"input_scale = nan"):
        qnn.conv2d(x, k, 0, 0, float("nan"), 1.0, (3, 3), 1)
    with pytest.raises(qconv.InvalidArgument, match=r"input_zero_point = 300"):
        qnn.conv2d(x, k, 300, 0, 1.0, 1.0, (3, 3), 1)
    with pytest.raises(qconv.ShapeMismatch, match=r"channels = 2"):
        qnn.conv2d(x, k, 0, 0, 1.0, 1.0, (3, 3), 2)


def test_overflow_risk_names_k_and_the_bound():
    # K = 8192 * 3 * 3 = 73728; 255 * 128 * K > 2^31 - 1.
    x = np.zeros((1, 8192, 3, 3), np.uint8)
    k = np.full((1, 8192, 3, 3), -128, np.int8)
    with pytest.raises(qconv.OverflowRisk, match="K = 73728"):
        qnn.conv2d(x, k, 0, 0, 1.0, 1.0, (3, 3), 1)
    y = qnn.conv2d(x, k, 0, 0, 1.0, 1.0, (3, 3), 1, allow_wraparound=True)
    assert y[0, 0, 0, 0] == 0


def test_nothing_is_half_done_on_error():
    # A refused call leaves a prepared object usable.
    weights = qconv.prepare_conv_weights(np.ones((1, 1, 1, 1), np.int8), "NHWC", "OIHW", 1, 1, 1,
                                         2, 2, (1, 1), (1, 1), (0, 0), (1, 1), False, 1)
    with pytest.raises(qconv.PreparedMismatch):
        qconv.conv2d(np.ones((1, 2, 2, 1), np.uint8), weights, 1, 1, 1, 2, 2, (1, 1),
                     stride=(2, 2))
    y = qconv.conv2d(np.ones((1, 2, 2, 1), np.uint8), weights, 1, 1, 1, 2, 2, (1, 1))
    assert y.shape == (1, 1, 4, 1)  # ttnn's [1, 1, N·H·W, C]
