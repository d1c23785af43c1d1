# SPDX-License-Identifier: Apache-2.0
"""Checks on the repository's files themselves (standard library only):

  repository_check.py references ROOT   every `.md` file a Markdown or source file names exists
  repository_check.py spdx ROOT         every source file carries an SPDX licence line

A referenced document is a token ending in `.md` (URLs are left out); it is looked up relative to
the repository root and to the naming file's directory, and a bare name (no directory) also in
docs/, where the project's documents live. Exits 1 and lists every failure.
"""

import os
import pathlib
import re
import sys

SKIPPED_DIRS = {".git", ".cache", "__pycache__", "node_modules"}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".py", ".pyi", ".sh", ".cmake"}
TEXT_SUFFIXES = SOURCE_SUFFIXES | {".md", ".txt", ".toml", ".in", ".cfg"}
SPDX = "SPDX-License-Identifier: Apache-2.0"
# Files whose owners add the SPDX line with their current work (the engines, the output stage,
# the thread pool and the bench are being changed elsewhere); remove an entry once it has one.
SPDX_PENDING = ()

URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
MD_REFERENCE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)\b")


def repository_files(root):
    """Every file of the tree, relative to root, outside build trees and tool caches."""
    for directory, dirs, files in os.walk(root):
        rel_dir = pathlib.Path(directory).relative_to(root)
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not (
            rel_dir == pathlib.Path(".") and (d.startswith("build") or d.startswith("."))
            and d != ".ci"))
        for name in sorted(files):
            yield rel_dir / name


def is_source(path):
    return (path.suffix in SOURCE_SUFFIXES or path.name == "CMakeLists.txt"
            or path.name.endswith(".cmake.in") or path.parent.name in (".ci", "scripts"))


def referenced_documents(root):
    """(file, line number, reference, found) for every .md reference in the text files."""
    for path in repository_files(root):
        if path.suffix not in TEXT_SUFFIXES and not is_source(path):
            continue
        try:
            text = (root / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in MD_REFERENCE.finditer(URL.sub(" ", line)):
                reference = match.group(1).removeprefix("./")
                places = [root / reference, root / path.parent / reference]
                if "/" not in reference:
                    places.append(root / "docs" / reference)
                yield path, number, reference, any(p.is_file() for p in places)


def check_references(root):
    missing = [f"{path}:{number}: {reference}"
               for path, number, reference, found in referenced_documents(root) if not found]
    count = sum(1 for _ in referenced_documents(root))
    print(f"{count} references to .md files checked")
    return missing


def check_spdx(root):
    missing, count = [], 0
    for path in repository_files(root):
        if not is_source(path) or str(path).startswith(SPDX_PENDING) or \
                str(path).startswith("tests/data/"):
            continue
        count += 1
        head = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()[:2]
        if not any(SPDX in line for line in head):
            missing.append(f"{path}: no '{SPDX}' line at its top")
    print(f"{count} source files checked for an SPDX line")
    return missing


def main(argv):
    if len(argv) != 3 or argv[1] not in ("references", "spdx"):
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[2]).resolve()
    failures = check_references(root) if argv[1] == "references" else check_spdx(root)
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
