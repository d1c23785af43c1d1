# SPDX-License-Identifier: Apache-2.0
"""The PyTorch face's Python side: QuantizedArray and PyTorch tensors in, the same kind out,
dtype given as torch dtypes or strings, engines, fused ReLU, and PyTorch's own refusals."""

import subprocess
import sys

import numpy as np
import pytest

import qconv
from qconv import functional

RNG = np.random.default_rng(8)
X = RNG.integers(0, 256, (1, 2, 5, 5), dtype=np.uint8)
W = RNG.integers(-128, 128, (3, 2, 3, 3), dtype=np.int8)


def test_quantized_array_in_quantized_array_out():
    y = functional.conv2d(qconv.QuantizedArray(X, 0.1, 128), qconv.QuantizedArray(W, 0.01, 0),
                          None, padding=1, scale=0.5, zero_point=10)
    assert isinstance(y, qconv.QuantizedArray)
    assert y.values.dtype == np.uint8 and y.shape == (1, 3, 5, 5)
    assert (y.scale, y.zero_point, y.axis) == (0.5, 10, None)
    assert y.dequantize().dtype == np.float32


def test_dtype_strings_and_relu():
    x, w = qconv.QuantizedArray(X, 0.1, 128), qconv.QuantizedArray(W, 0.01, 0)
    y = functional.conv2d(x, w, None, padding=1, scale=0.05, zero_point=-5, dtype="qint8")
    assert y.values.dtype == np.int8
    r = functional.conv2d(x, w, None, padding=1, scale=0.05, zero_point=-5, dtype="qint8",
                          relu=True)
    np.testing.assert_array_equal(r.values, np.maximum(y.values, -5))
    with pytest.raises(qconv.InvalidArgument, match="dtype = qint32"):
        functional.conv2d(x, w, None, dtype="qint32")
    with pytest.raises(qconv.InvalidArgument, match="padding_mode = reflect"):
        functional.conv2d(x, w, None, padding_mode="reflect")
    with pytest.raises(qconv.InvalidArgument, match="engine = x87"):
        functional.conv2d(x, w, None, engine="x87")


def test_per_channel_quantized_array_needs_an_axis():
    with pytest.raises(qconv.InvalidArgument, match="per-channel quantization needs axis"):
        qconv.QuantizedArray(W, [0.1, 0.2, 0.3], 0)
    w = qconv.QuantizedArray(W, [0.1, 0.2, 0.3], [0, 1, 2], axis=0)
    expected = (W.astype(np.float32) - np.array([0, 1, 2])[:, None, None, None]) * \
        np.array([0.1, 0.2, 0.3], np.float32)[:, None, None, None]
    np.testing.assert_allclose(w.dequantize(), expected, rtol=1e-6)
    with pytest.raises(qconv.InvalidArgument, match="weight.axis"):
        functional.conv2d(qconv.QuantizedArray(X, 0.1, 0),
                          qconv.QuantizedArray(W, [0.1, 0.2, 0.3], 0, axis=1), None)


def test_not_quantized_inputs_are_refused():
    with pytest.raises(TypeError, match="input must be a qconv.QuantizedArray"):
        functional.conv2d(X, qconv.QuantizedArray(W, 0.1, 0), None)


def test_qconv_does_not_import_torch():
    code = ("import sys, numpy as np, qconv; "
            "x = qconv.QuantizedArray(np.ones((1, 1, 2, 2), np.uint8), 1.0, 0); "
            "w = qconv.QuantizedArray(np.ones((1, 1, 1, 1), np.int8), 1.0, 0); "
            "qconv.functional.conv2d(x, w, None); print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


class TestWithTorch:
    @staticmethod
    def tensors(torch, per_channel=False):
        x = torch.quantize_per_tensor(torch.rand(1, 2, 5, 5), 0.01, 3, torch.quint8)
        w = torch.randn(3, 2, 3, 3)
        if per_channel:
            w = torch.quantize_per_channel(w, torch.tensor([0.01, 0.02, 0.03], dtype=torch.double),
                                           torch.tensor([0, 0, 0]), 0, torch.qint8)
        else:
            w = torch.quantize_per_tensor(w, 0.02, 0, torch.qint8)
        return x, w

    @pytest.mark.parametrize("per_channel", [False, True])
    def test_torch_in_torch_out(self, torch, per_channel):
        x, w = self.tensors(torch, per_channel)
        bias = torch.randn(3, requires_grad=True)
        y = functional.conv2d(x, w, bias, padding=1, scale=0.05, zero_point=7, dtype=torch.quint8,
                              engine="qnnpack")
        assert isinstance(y, torch.Tensor) and y.is_quantized and y.dtype == torch.quint8
        assert (y.q_scale(), y.q_zero_point(), tuple(y.shape)) == (0.05, 7, (1, 3, 5, 5))
        arrays = functional.conv2d(
            qconv.QuantizedArray(x.int_repr().numpy(), x.q_scale(), x.q_zero_point()),
            qconv.QuantizedArray(w.int_repr().numpy(), *(
                (w.q_per_channel_scales().numpy(), w.q_per_channel_zero_points().numpy(), 0)
                if per_channel else (w.q_scale(), w.q_zero_point()))),
            bias.detach().numpy(), padding=1, scale=0.05, zero_point=7, engine="qnnpack")
        np.testing.assert_array_equal(y.int_repr().numpy(), arrays.values)

    def test_torch_qint8_output_and_unquantized_refusal(self, torch):
        x, w = self.tensors(torch)
        y = functional.conv2d(x, w, None, scale=0.05, zero_point=-3, dtype=torch.qint8)
        assert y.dtype == torch.qint8 and y.q_zero_point() == -3
        with pytest.raises(qconv.InvalidArgument, match="input.dtype = torch.float32"):
            functional.conv2d(torch.rand(1, 2, 5, 5), w, None)
        float_qparams = torch.quantize_per_channel(
            torch.randn(3, 2, 3, 3), torch.tensor([0.1, 0.1, 0.1], dtype=torch.double),
            torch.tensor([0.0, 0.0, 0.0]), 0, torch.quint8)
        with pytest.raises(qconv.InvalidArgument, match="per_channel_affine_float_qparams"):
            functional.conv2d(x, float_qparams, None)
