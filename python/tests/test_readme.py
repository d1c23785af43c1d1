# SPDX-License-Identifier: Apache-2.0
"""The worked examples of python/README.md, run as doctests."""

import doctest
import pathlib

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples():
    pytest.importorskip("torch")  # the PyTorch example needs it
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted >= 20
    assert result.failed == 0
