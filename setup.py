# SPDX-License-Identifier: Apache-2.0
"""Builds the extension qconv._qconv for pip with the project's CMake build (pyproject.toml has
the metadata). Only the targets the module needs are configured and built: the library (static,
linked into the extension) and _qconv; never the tests, the bench or the fuzzers. The version is
the one in CMakeLists.txt.

Environment: QCONV_CMAKE_ARGS adds arguments to the CMake configure step (e.g.
"-DCMAKE_BUILD_TYPE=RelWithDebInfo"); the build runs `build_ext -j N` jobs, else
CMAKE_BUILD_PARALLEL_LEVEL, else one per CPU.
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def cmake_version():
    """The version of project(qconv VERSION x.y.z) in CMakeLists.txt: the project's one version."""
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"project\(\s*qconv\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)", text)
    if match is None:
        raise RuntimeError("CMakeLists.txt: no project(qconv VERSION ...)")
    return match.group(1)


class CMakeBuild(build_ext):
    """build_ext that configures and builds the _qconv target with CMake, then takes the built
    extension and the generated _version.py into the package."""

    def build_extension(self, ext):
        # CMake's tree one level below the sources, as scripts/test.sh's build/ is: every compile
        # command then names the same relative paths in both trees, so a compiler cache with a
        # base directory (.ci/run's ccache) serves this build from that one.
        build = ROOT / "build-pip"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
            "-DQCONV_BUILD_PYTHON=ON", "-DQCONV_BUILD_TESTS=OFF", "-DQCONV_BUILD_TOOLS=OFF",
            "-DQCONV_BUILD_FUZZERS=OFF", f"-DPython_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        try:  # PyPI's pybind11 (an isolated build); Debian's pybind11-dev is found by CMake
            import pybind11
            configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass
        configure += shlex.split(os.environ.get("QCONV_CMAKE_ARGS", ""))
        jobs = self.parallel or os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or os.cpu_count() or 1
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_qconv", f"-j{jobs}"],
                       check=True)

        built = build / "python" / "qconv"
        extension = pathlib.Path(self.get_ext_fullpath(ext.name))
        extension.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built / extension.name, extension)
        shutil.copyfile(built / "_version.py", extension.parent / "_version.py")


setup(
    version=cmake_version(),
    ext_modules=[Extension("qconv._qconv", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' scratch space, out of CMake's build/ (scripts/test.sh's build tree) and beside
    # this build's own CMake tree.
    options={"build": {"build_base": "build-pip/setuptools"}},
)
