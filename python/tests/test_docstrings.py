# SPDX-License-Identifier: Apache-2.0
"""Every public function documents its parameters, what it returns and what it raises."""

import inspect

import pytest

import qconv
from qconv import functional, onnx, qnn, ttnn

FUNCTIONS = [
    qnn.conv2d, qnn.conv2d_transpose, qnn.requantize, functional.conv2d,
    functional.conv_transpose2d, ttnn.prepare_conv_weights, ttnn.prepare_conv_bias, ttnn.conv2d,
    onnx.qlinear_conv, onnx.conv_integer, onnx.conv_transpose_integer,
]


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_function_docstrings(function):
    doc = inspect.getdoc(function)
    for section in ("Parameters", "Returns", "Raises"):
        assert section in doc, f"{function.__name__}: no {section} section"
    # Every parameter is named in the docstring.
    for name in inspect.signature(function).parameters:
        if name not in ("device", "memory_config", "input_memory_config"):
            assert name in doc, f"{function.__name__}: parameter {name} undocumented"


def test_padding_order_is_documented_per_face():
    assert "(top, left, bottom, right)" in inspect.getdoc(qnn.conv2d)
    assert "(top, bottom, left, right)" in inspect.getdoc(ttnn.conv2d)
    assert "[top, left, bottom, right]" in inspect.getdoc(onnx)
    assert "(pad_h, pad_w)" in inspect.getdoc(functional.conv2d)


def test_classes_and_modules_are_documented():
    for obj in (qconv, qnn, functional, ttnn, onnx, qconv.QuantizedArray, qconv.Conv2dConfig,
                qconv.ComputeConfig, qconv.PreparedWeights, qconv.PreparedBias):
        assert inspect.getdoc(obj), obj


def test_framework_signatures():
    # The frameworks' argument names, in their order, with their defaults.
    def defaults(f):
        return {k: p.default for k, p in inspect.signature(f).parameters.items()
                if p.default is not inspect.Parameter.empty}

    assert list(inspect.signature(qnn.conv2d).parameters)[:8] == [
        "data", "kernel", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale",
        "kernel_size", "channels"]
    assert defaults(qnn.conv2d)["out_dtype"] == "int32"
    assert defaults(qnn.requantize) == {"axis": -1, "rounding": "UPWARD",
                                        "compute_dtype": "int64", "out_dtype": "int8"}
    assert list(inspect.signature(functional.conv2d).parameters)[:11] == [
        "input", "weight", "bias", "stride", "padding", "dilation", "groups", "padding_mode",
        "scale", "zero_point", "dtype"]
    assert list(inspect.signature(onnx.qlinear_conv).parameters)[:9] == [
        "x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
        "y_zero_point", "B"]
    assert list(inspect.signature(qconv.prepare_conv_weights).parameters)[:16] == [
        "weight_tensor", "input_layout", "weights_format", "in_channels", "out_channels",
        "batch_size", "input_height", "input_width", "kernel_size", "stride", "padding",
        "dilation", "has_bias", "groups", "conv_config", "compute_config"]
