"""Prepared weights saved and loaded from Python: a round trip computes the same output, and a
damaged file raises FormatError (a qconv.Error, a ValueError), a missing one OSError."""

import numpy as np
import pytest

import qconv

# The ttnn test's problem: NHWC 1x2x2x1 input stored with zero point 1 (real 0, 1, 2, 3), OIHW
# 1x1x2x2 weights [[1, 2], [3, 4]]: acc = 0·1 + 1·2 + 2·3 + 3·4 = 20.
X = np.array([[[[1], [2]], [[3], [4]]]], np.uint8)
W = np.array([[[[1, 2], [3, 4]]]], np.int8)
INT32 = qconv.ComputeConfig(scheme="int32", input_zero_point=1)
INT32_OUT = qconv.Conv2dConfig(dtype="int32")
GEOMETRY = dict(in_channels=1, out_channels=1, batch_size=1, input_height=2, input_width=2,
                kernel_size=(2, 2))


def prepared():
    return qconv.prepare_conv_weights(W, "NHWC", "OIHW", **GEOMETRY, stride=(1, 1),
                                      padding=(0, 0), dilation=(1, 1), has_bias=False, groups=1,
                                      conv_config=INT32_OUT, compute_config=INT32)


def run(weights):
    return qconv.conv2d(X, weights, **GEOMETRY, conv_config=INT32_OUT, compute_config=INT32)


@pytest.mark.parametrize("keep", [False, True])
def test_save_load_round_trip(tmp_path, keep):
    path = tmp_path / "weights.qconv"
    prepared().save(path, keep_original_weights=keep)
    loaded = qconv.PreparedWeights.load(str(path))
    assert run(loaded)[0, 0, 0, 0] == 20
    assert loaded.engine == prepared().engine
    assert "loaded from prepared weights" in loaded.describe()
    # A loaded plan still refuses another configuration by name.
    with pytest.raises(qconv.PreparedMismatch, match="stride_h: prepared for 1, given 2"):
        qconv.conv2d(X, loaded, **GEOMETRY, stride=(2, 2), conv_config=INT32_OUT,
                     compute_config=INT32)


def test_bytes_round_trip_and_damage():
    data = prepared().to_bytes()
    assert run(qconv.PreparedWeights.from_bytes(data))[0, 0, 0, 0] == 20
    with pytest.raises(qconv.FormatError):
        qconv.PreparedWeights.from_bytes(data[: len(data) // 2])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x01
    with pytest.raises(qconv.FormatError) as caught:
        qconv.PreparedWeights.from_bytes(bytes(flipped))
    assert isinstance(caught.value, ValueError)
    with pytest.raises(qconv.FormatError):
        qconv.PreparedWeights.from_bytes(b"not a qconv file at all")


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="missing.qconv"):
        qconv.PreparedWeights.load(tmp_path / "missing.qconv")
