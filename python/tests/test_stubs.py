# SPDX-License-Identifier: Apache-2.0
"""The checked-in type stubs (python/qconv/*.pyi) are what stubgen makes of the module as built,
and mypy reads them: it accepts a small typed program and refuses the calls they forbid."""

import os
import pathlib
import subprocess
import sys

import pytest

import qconv

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(qconv.__file__).parent
TYPING = pathlib.Path(__file__).parent / "typing"

pytest.importorskip("mypy", reason="mypy (Debian: python3-mypy) generates and checks the stubs")


def test_stubs_match_the_module():
    if not list(PACKAGE.glob("_qconv*.so")):
        pytest.skip(f"{PACKAGE} holds no built extension")
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "stubgen.py"), "--check",
                             "--package", str(PACKAGE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_reads_the_stubs(tmp_path):
    # MYPYPATH finds the package imported here (a build tree or an installed copy) and its stubs.
    env = dict(os.environ, MYPYPATH=str(PACKAGE.parent))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "--no-error-summary",
         "--show-error-codes", str(TYPING / "good.py"), str(TYPING / "bad.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    errors = {}
    for line in result.stdout.splitlines():
        path, number, _ = line.split(":", 2)
        errors.setdefault(pathlib.Path(path).name, set()).add(int(number))
    expected = {number for number, line in
                enumerate((TYPING / "bad.py").read_text().splitlines(), 1) if "# error" in line}
    assert "good.py" not in errors, result.stdout
    assert errors.get("bad.py") == expected, result.stdout
