#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Generates the type stubs of the qconv package (python/qconv/*.pyi) with mypy's stubgen
(Debian: python3-mypy) from a built package, or checks that the checked-in ones match it.

  scripts/stubgen.py [--package DIR] [--check]

DIR is a built package directory holding the pure-Python modules and the extension _qconv
(default: build/python/qconv, what scripts/test.sh builds). The modules are copied without any
.pyi beside them (stubgen would read old stubs instead of the code), stubgen runs on the copy, and
three fixed edits follow, so that the stubs are what stubgen says plus only these:

  - each file starts with the SPDX licence line;
  - pybind11 calls a py::handle argument `handle`, which no stub defines: it becomes `object`;
  - stubgen leaves out `__version__`; qconv/__init__.pyi declares it (`__version__: str`).

The checked-in stubs are made with Debian 12's mypy (1.0.1); another stubgen version may lay them
out differently. With --check nothing is written: it exits 1, naming each stub that differs from the module (run
without --check, with the same Python, and commit the result). Run it with the interpreter qconv
was built for (Debian's /usr/bin/python3).
"""

import argparse
import difflib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECKED_IN = ROOT / "python" / "qconv"
HEADER = "# SPDX-License-Identifier: Apache-2.0\n"


def fix(name, text):
    """The fixed edits listed in the module docstring."""
    if name == "_qconv.pyi":
        text = re.sub(r"\bhandle\b", "object", text)
    if name == "__init__.pyi" and "__version__" not in text:
        text = text.rstrip("\n") + "\n\n__version__: str\n"
    return HEADER + text


def generate(package):
    """{file name: text} of the stubs stubgen makes for the built package directory."""
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp, "src", "qconv")
        source.mkdir(parents=True)
        for path in package.iterdir():
            if path.suffix == ".py" or (path.name.startswith("_qconv") and path.suffix == ".so"):
                shutil.copy2(path, source / path.name)
        out = pathlib.Path(tmp, "out")
        env = dict(os.environ, PYTHONPATH=str(source.parent))
        subprocess.run([sys.executable, "-c", "from mypy.stubgen import main; main()",
                        "-p", "qconv", "-o", str(out)], check=True, cwd=tmp, env=env,
                       stdout=subprocess.DEVNULL)
        return {p.name: fix(p.name, p.read_text()) for p in sorted((out / "qconv").glob("*.pyi"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=pathlib.Path,
                        default=ROOT / "build" / "python" / "qconv")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not list(args.package.glob("_qconv*.so")):
        sys.exit(f"{args.package}: no built extension _qconv here; build first (scripts/test.sh)")
    stubs = generate(args.package.resolve())
    old = {p.name: p.read_text() for p in CHECKED_IN.glob("*.pyi")}
    differing = sorted(n for n in stubs.keys() | old.keys() if stubs.get(n) != old.get(n))
    if args.check:
        for name in differing:
            sys.stdout.writelines(difflib.unified_diff(
                old.get(name, "").splitlines(True), stubs.get(name, "").splitlines(True),
                f"python/qconv/{name} (checked in)", f"{name} (stubgen, from {args.package})"))
        if differing:
            print(f"stubs differ from the module: {', '.join(differing)}; regenerate them with "
                  "scripts/stubgen.py and commit the result")
            return 1
        print(f"{len(stubs)} stubs match the module")
        return 0
    for name in old.keys() - stubs.keys():
        (CHECKED_IN / name).unlink()
    for name, text in stubs.items():
        (CHECKED_IN / name).write_text(text)
    print(f"wrote {len(stubs)} stubs to {CHECKED_IN.relative_to(ROOT)}"
          f" ({len(differing)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
