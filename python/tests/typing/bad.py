# SPDX-License-Identifier: Apache-2.0
"""Calls the stubs forbid: mypy must refuse each line marked `error` (python/tests/test_stubs.py),
which shows that the stubs are read and say something."""

import numpy as np

import qconv

x = qconv.QuantizedArray(np.zeros((1, 1, 2, 2), np.uint8), 1.0, 0)
qconv.functional.conv2d(x, x, None, threads="two")  # error: threads is an int
qconv.functional.conv2d(x, x, None, engine=3)  # error: engine is a str
qconv.functional.conv2d(x, x, None, stride="1")  # error: an int or (h, w)
n: int = qconv.__version__  # error: a str
qconv.functional.conv3d(x, x, None)  # error: no such function
