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


def test_default_install_dir_is_the_interpreters(build, tmp_path):
    """Configures a scratch build tree without QCONV_PYTHON_INSTALL_DIR, as a user would, and
    checks the directory CMake derives: the interpreter's platlib, kept relative to the prefix
    when it lies under it (so that `cmake --install --prefix` relocates it)."""
    if cache_value(build, "Python_EXECUTABLE") != sys.executable:
        pytest.skip("built for another interpreter")
    source = pathlib.Path(cache_value(build, "qconv_SOURCE_DIR"))
    scratch = tmp_path / "build"
    platlib = pathlib.Path(sysconfig.get_path("platlib"))
    for prefix in (pathlib.Path(sysconfig.get_config_var("prefix") or "/usr"), tmp_path / "p"):
        shutil.rmtree(scratch, ignore_errors=True)
        subprocess.run(["cmake", "-S", str(source), "-B", str(scratch), "-G", "Ninja",
                        "-DQCONV_BUILD_PYTHON=ON", "-DQCONV_BUILD_TESTS=OFF",
                        "-DQCONV_BUILD_TOOLS=OFF", f"-DPython_EXECUTABLE={sys.executable}",
                        f"-DCMAKE_INSTALL_PREFIX={prefix}"],
                       check=True, capture_output=True)
        install_dir = cache_value(scratch, "QCONV_PYTHON_INSTALL_DIR")
        if platlib.is_relative_to(prefix):
            assert install_dir == str(platlib.relative_to(prefix)), (prefix, install_dir)
            assert pathlib.Path(prefix, install_dir) == platlib
        else:
            assert pathlib.Path(install_dir) == platlib, (prefix, install_dir)


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
