# SPDX-License-Identifier: Apache-2.0
"""A small typed program against qconv's stubs: mypy must accept it (python/tests/test_stubs.py,
scripts/test-pip.sh)."""

from typing import Tuple

import numpy as np

import qconv
from qconv import functional, onnx, qnn


def convolve(values: np.ndarray, padding: Tuple[int, int]) -> np.ndarray:
    x = qconv.QuantizedArray(values, 0.5, 128)
    w = qconv.QuantizedArray(np.ones((4, 2, 3, 3), np.int8), [0.25] * 4, [0] * 4, axis=0)
    y = functional.conv2d(x, w, None, padding=padding, scale=0.5, zero_point=3, engine="qnnpack",
                          threads=2)
    t = functional.conv_transpose2d(x, np.ones((2, 4, 2, 2), np.int8), stride=(2, 2))
    assert t is not None
    result: qconv.QuantizedArray = y
    return result.dequantize()


def accumulate(data: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    acc = qnn.conv2d(data, kernel, 0, 0, 1.0, 1.0, (3, 3), 4, padding=(1, 1))
    return onnx.conv_integer(data, kernel, pads=[1, 1, 1, 1]) - acc


version: str = qconv.__version__
errors: Tuple[type, ...] = (qconv.Error, qconv.InvalidArgument, qconv.PreparedMismatch)
print(version, errors, convolve(np.zeros((1, 2, 4, 4), np.uint8), (1, 1)).shape)
