# SPDX-License-Identifier: Apache-2.0
"""`cmake --install` puts a working package into the interpreter's site directory layout: it is
installed into a scratch prefix and imported from there by a fresh interpreter."""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

import qconv


def build_dir():
    """The CMake build tree qconv was imported from, if it was."""
    candidate = pathlib.Path(qconv.__file__).parents[2]  # <build>/python/qconv/__init__.py
    return candidate if (candidate / "CMakeCache.txt").exists() else None


def cache_value(build, name):
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


@pytest.fixture
def build():
    found = build_dir()
    if found is None or shutil.which("cmake") is None:
        pytest.skip("qconv is not imported from a CMake build tree")
    return found


def test_default_install_dir_is_the_interpreters(build):
    if cache_value(build, "Python_EXECUTABLE") != sys.executable:
        pytest.skip("built for another interpreter")
    install_dir = cache_value(build, "QCONV_PYTHON_INSTALL_DIR")
    prefix = cache_value(build, "CMAKE_INSTALL_PREFIX")
    platlib = sysconfig.get_path("platlib")
    resolved = pathlib.Path(prefix, install_dir) if not os.path.isabs(install_dir) else \
        pathlib.Path(install_dir)
    if resolved != pathlib.Path(platlib):
        pytest.skip(f"QCONV_PYTHON_INSTALL_DIR was set to {install_dir}")
    assert resolved == pathlib.Path(platlib)


def test_install_and_import(build, tmp_path):
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(tmp_path), "--component",
                    "python"], check=True, capture_output=True)
    installed = list(tmp_path.rglob("qconv/__init__.py"))
    assert len(installed) == 1, installed
    site = installed[0].parent.parent
    assert list(site.glob("qconv/_qconv*.so"))
    # With the stubs, the marker that it is typed and the version; and nothing of the C++ side.
    assert {"__init__.pyi", "_qconv.pyi", "py.typed", "_version.py"} <= \
        {p.name for p in site.glob("qconv/*")}
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith("libqconv") or
                p.name in ("qconv.hpp", "qconvConfig.cmake")]
    code = ("import numpy as np, qconv; "
            "print(qconv.__file__); assert qconv.__version__; "
            "print(int(qconv.qnn.conv2d(np.full((1, 1, 1, 1), 3, np.uint8), "
            "np.full((1, 1, 1, 1), 2, np.int8), 1, 0, 1.0, 1.0, (1, 1), 1)[0, 0, 0, 0]))")
    env = dict(os.environ, PYTHONPATH=str(site))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=tmp_path, check=True)
    where, value = result.stdout.split()
    assert pathlib.Path(where).is_relative_to(tmp_path) and value == "4"
