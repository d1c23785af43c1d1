# SPDX-License-Identifier: Apache-2.0
"""Prepared weights saved and loaded from Python: a round trip computes the same output, and a
damaged file raises FormatError (a qconv.Error, a ValueError), a missing one OSError."""

import pytest

import qconv
from ttnn_problem import GEOMETRY, INT32, INT32_OUT, X, prepare  # the ttnn test's problem: 20


def run(weights):
    return qconv.conv2d(X, weights, **GEOMETRY, conv_config=INT32_OUT, compute_config=INT32)


@pytest.mark.parametrize("keep", [False, True])
def test_save_load_round_trip(tmp_path, keep):
    path = tmp_path / "weights.qconv"
    prepare().save(path, keep_original_weights=keep)
    loaded = qconv.PreparedWeights.load(str(path))
    assert run(loaded)[0, 0, 0, 0] == 20
    assert loaded.engine == prepare().engine
    assert "loaded from prepared weights" in loaded.describe()
    # A loaded plan still refuses another configuration by name.
    with pytest.raises(qconv.PreparedMismatch, match=r"stride\[0\]: prepared for 1, given 2"):
        qconv.conv2d(X, loaded, **GEOMETRY, stride=(2, 2), conv_config=INT32_OUT,
                     compute_config=INT32)


def test_bytes_round_trip_and_damage():
    data = prepare().to_bytes()
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
