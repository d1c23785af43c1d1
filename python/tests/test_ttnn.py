# SPDX-License-Identifier: Apache-2.0
"""The ttnn face: hand-derived int32 results with ttnn's padding order, prepared objects that
refuse another configuration, ttnn's return conventions, and the configs as Python classes."""

import numpy as np
import pytest

import qconv
from ttnn_problem import GEOMETRY, INT32, INT32_OUT, W, X, prepare


def test_int32_accumulator_and_ttnn_padding_order():
    weights = prepare()
    y = qconv.conv2d(X, weights, **GEOMETRY, conv_config=INT32_OUT, compute_config=INT32)
    assert y.dtype == np.int32 and y.shape == (1, 1, 1, 1)
    assert y[0, 0, 0, 0] == 1 * 0 + 2 * 1 + 3 * 2 + 4 * 3
    # ttnn's four values are (top, bottom, left, right): one row below, read as zero point.
    weights = prepare(padding=(0, 1, 0, 0))
    y = qconv.conv2d(X, weights, **GEOMETRY, padding=(0, 1, 0, 0), conv_config=INT32_OUT,
                     compute_config=INT32)
    # The output is ttnn's [1, 1, N·H·W, C]: here H = 2, W = 1.
    assert y.shape == (1, 1, 2, 1)
    np.testing.assert_array_equal(y[0, 0, :, 0], [20, 1 * 2 + 2 * 3])


def test_prepared_weights_refuse_another_configuration():
    weights = prepare()
    with pytest.raises(qconv.PreparedMismatch, match=r"stride\[0\]: prepared for 1, given 2"):
        qconv.conv2d(X, weights, **GEOMETRY, stride=(2, 2), conv_config=INT32_OUT,
                     compute_config=INT32)
    other = qconv.ComputeConfig(scheme="int32", input_zero_point=1, output_scale=0.5)
    with pytest.raises(qconv.PreparedMismatch, match="output_scale"):
        qconv.conv2d(X, weights, **GEOMETRY, conv_config=INT32_OUT, compute_config=other)


def test_batch_size_and_input_zero_point_may_change_per_call():
    weights = prepare()
    batch = np.concatenate([X, X + 1])
    y = qconv.conv2d(batch, weights, **dict(GEOMETRY, batch_size=2), conv_config=INT32_OUT,
                     compute_config=INT32)
    assert y.shape == (1, 1, 2, 1)  # [1, 1, N·H·W, C]
    assert y[0, 0, 0, 0] == 20 and y[0, 0, 1, 0] == 20 + (1 + 2 + 3 + 4)
    # ttnn's flattened form is taken as input too.
    y = qconv.conv2d(batch.reshape(1, 1, 8, 1), weights, **dict(GEOMETRY, batch_size=2),
                     conv_config=INT32_OUT, compute_config=INT32)
    assert y[0, 0, 0, 0] == 20 and y[0, 0, 1, 0] == 20 + (1 + 2 + 3 + 4)
    override = qconv.Conv2dConfig(dtype="int32", input_zero_point=0)
    y = qconv.conv2d(X, weights, **GEOMETRY, conv_config=override, compute_config=INT32)
    assert y[0, 0, 0, 0] == 1 * 1 + 2 * 2 + 3 * 3 + 4 * 4


def test_bias_prepared_or_raw():
    weights = prepare(has_bias=True)
    bias = qconv.prepare_conv_bias(np.array([100], np.int32), "NHWC", **GEOMETRY, stride=(1, 1),
                                   padding=(0, 0), dilation=(1, 1), groups=1,
                                   conv_config=INT32_OUT, compute_config=INT32)
    for b in (bias, [100], np.array([100], np.int64)):
        y = qconv.conv2d(X, weights, **GEOMETRY, bias_tensor=b, conv_config=INT32_OUT,
                         compute_config=INT32)
        assert y[0, 0, 0, 0] == 120
    y = qconv.conv2d(X, W, **GEOMETRY, bias_tensor=[100], conv_config=INT32_OUT,
                     compute_config=INT32)
    assert y[0, 0, 0, 0] == 120
    with pytest.raises(qconv.PreparedMismatch, match="has_bias"):
        qconv.conv2d(X, prepare(), **GEOMETRY, bias_tensor=bias, conv_config=INT32_OUT,
                     compute_config=INT32)


def test_return_conventions_and_reuse():
    y, (out_h, out_w) = qconv.conv2d(X, W, **GEOMETRY, conv_config=INT32_OUT,
                                     compute_config=INT32, return_output_dim=True)
    assert (out_h, out_w) == (1, 1)
    y, [weights, bias] = qconv.conv2d(X, W, **GEOMETRY, conv_config=INT32_OUT,
                                      compute_config=INT32, return_weights_and_bias=True)
    assert isinstance(weights, qconv.PreparedWeights) and bias is None
    y2, dims, [w2, b2] = qconv.conv2d(X, weights, **GEOMETRY, conv_config=INT32_OUT,
                                      compute_config=INT32, return_output_dim=True,
                                      return_weights_and_bias=True)
    assert dims == (1, 1) and int(y2[0, 0, 0, 0]) == int(y[0, 0, 0, 0]) == 20
    assert isinstance(w2, qconv.PreparedWeights) and b2 is None
    assert weights.engine in repr(weights) and weights.input_layout == "NHWC"


def test_fbgemm_scheme_agrees_with_the_pytorch_face():
    # The same problem through two faces must give the same bytes.
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (2, 3, 6, 5), dtype=np.uint8)  # NCHW
    w = rng.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)
    scales = np.array([0.01, 0.02, 0.03, 0.04])
    bias = rng.normal(0, 1, 4).astype(np.float32)
    expected = qconv.functional.conv2d(qconv.QuantizedArray(x, 0.05, 120),
                                       qconv.QuantizedArray(w, scales, 0, axis=0), bias,
                                       stride=2, padding=1, scale=0.3, zero_point=100)
    compute = qconv.ComputeConfig(scheme="fbgemm", input_scale=0.05, input_zero_point=120,
                                  output_scale=0.3, output_zero_point=100)
    y = qconv.conv2d(x, qconv.QuantizedArray(w, scales, 0, axis=0), 3, 4, 2, 6, 5, (3, 3),
                     (2, 2), 1, bias_tensor=bias, compute_config=compute,
                     conv_config=qconv.Conv2dConfig(output_layout="NCHW"), input_layout="NCHW")
    np.testing.assert_array_equal(y, expected.values)


def test_configs_are_keyword_classes():
    config = qconv.Conv2dConfig(activation="relu", threads=2)
    assert config.activation == "relu" and config.threads == 2 and config.dtype == "uint8"
    config.dtype = "int8"
    assert "dtype='int8'" in repr(config)
    compute = qconv.ComputeConfig(scheme="tvm", rounding="TONEAREST", output_scale=0.5)
    assert compute.scheme == "tvm" and compute.output_scale == 0.5
    assert repr(compute).startswith("ComputeConfig(scheme='tvm'")
    with pytest.raises(TypeError):
        qconv.Conv2dConfig("relu")
    with pytest.raises(qconv.InvalidArgument, match="compute_config.scheme"):
        prepare(compute_config=qconv.ComputeConfig(scheme="fast"))


def test_ttnn_only_arguments_are_accepted():
    weights = prepare(device=object(), input_memory_config=None)
    y = qconv.conv2d(input_tensor=X, weight_tensor=weights, device=object(), memory_config=None,
                     slice_config=object(), **GEOMETRY, conv_config=INT32_OUT,
                     compute_config=INT32)
    assert y[0, 0, 0, 0] == 20
    bias = qconv.prepare_conv_bias(np.array([1], np.int32), qconv.ttnn.TILE_LAYOUT, **GEOMETRY,
                                   stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                                   conv_config=INT32_OUT, compute_config=INT32, device=object(),
                                   input_memory_config=qconv.ttnn.DRAM_MEMORY_CONFIG,
                                   input_dtype="uint8", output_dtype="int32", slice_config=None)
    assert qconv.conv2d(X, prepare(has_bias=True, input_dtype=np.uint8, slice_config=None),
                        **GEOMETRY, bias_tensor=bias, conv_config=INT32_OUT,
                        compute_config=INT32)[0, 0, 0, 0] == 21
