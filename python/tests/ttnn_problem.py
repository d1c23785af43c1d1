# SPDX-License-Identifier: Apache-2.0
"""The small ttnn problem the ttnn and prepared-weights tests share: NHWC 1x2x2x1 input stored
with zero point 1 (real values 0, 1, 2, 3), OIHW 1x1x2x2 weights [[1, 2], [3, 4]], int32 output:
acc = 0·1 + 1·2 + 2·3 + 3·4 = 20."""

import numpy as np

import qconv

X = np.array([[[[1], [2]], [[3], [4]]]], np.uint8)
W = np.array([[[[1, 2], [3, 4]]]], np.int8)
INT32 = qconv.ComputeConfig(scheme="int32", input_zero_point=1)
INT32_OUT = qconv.Conv2dConfig(dtype="int32")
GEOMETRY = dict(in_channels=1, out_channels=1, batch_size=1, input_height=2, input_width=2,
                kernel_size=(2, 2))


def prepare(padding=(0, 0), has_bias=False, **kwargs):
    """W prepared for the problem; keyword arguments replace the defaults."""
    args = dict(GEOMETRY, stride=(1, 1), padding=padding, dilation=(1, 1), has_bias=has_bias,
                groups=1, conv_config=INT32_OUT, compute_config=INT32)
    args.update(kwargs)
    return qconv.prepare_conv_weights(W, "NHWC", "OIHW", **args)
