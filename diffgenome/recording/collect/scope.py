"""Which code is in scope, and what module a file is.

A file is ``test`` when it lies under a test root or is named like a pytest test module or
``conftest.py``; it is ``repo`` when it lies under a source root; everything else
(standard library, site-packages, virtualenvs inside the repository, dot-folders,
``__pycache__``) is out of scope, and the collector silences its events after the first.

Runs once per code object, at event time, so it uses string operations and a captured
``os.stat`` only: tests patch ``os.path`` and ``pathlib``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from diffgenome.protocol.modules import (
    DEFAULT_TEST_FILES,
    is_excluded_dir,
    is_test_file,
    module_name,
)
from diffgenome.protocol.vocab import ORIGIN_REPO, ORIGIN_TEST

_stat = os.stat
_SEP = os.sep


def normalize_dir(path: str) -> str:
    """An absolute folder path with exactly one trailing separator (string work only)."""
    path = path.replace("\\", "/") if _SEP == "\\" else path
    while len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path + "/"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a file sits: its origin, dotted module name and path relative to the rootdir."""

    origin: str
    module: str
    relpath: str


@dataclass(slots=True)
class Scope:
    """Scope rules for one session; answers are cached per file and per folder."""

    rootdir: str
    source_roots: list[str]
    test_roots: list[str]
    test_files: tuple[str, ...] = DEFAULT_TEST_FILES
    _files: dict[str, Placement | None] = field(default_factory=dict)
    _venv_dirs: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rootdir = normalize_dir(self.rootdir)
        self.source_roots = sorted({normalize_dir(r) for r in self.source_roots}, key=len)[::-1]
        self.test_roots = sorted({normalize_dir(r) for r in self.test_roots}, key=len)[::-1]

    def place(self, filename: str) -> Placement | None:
        """The placement of a code object's file, or None when it is out of scope."""
        try:
            return self._files[filename]
        except KeyError:
            pass
        placement = self._place(filename)
        self._files[filename] = placement
        return placement

    def _place(self, filename: str) -> Placement | None:
        if not filename.endswith(".py") or not filename.startswith("/"):
            return None  # <string>, <frozen ...>, compiled-in code
        root = self.rootdir
        if not filename.startswith(root):
            return None
        rel = filename[len(root) :]
        if self._excluded(root, rel):
            return None
        basename = rel.rpartition("/")[2]
        for test_root in self.test_roots:
            if filename.startswith(test_root):
                return Placement(ORIGIN_TEST, module_name(rel), rel)
        if is_test_file(basename, self.test_files):
            return Placement(ORIGIN_TEST, module_name(rel), rel)
        for source_root in self.source_roots:
            if filename.startswith(source_root):
                return Placement(ORIGIN_REPO, module_name(filename[len(source_root) :]), rel)
        return None

    def _excluded(self, root: str, rel: str) -> bool:
        parts = rel.split("/")[:-1]
        current = root
        for part in parts:
            if is_excluded_dir(part):
                return True
            current = current + part + "/"
            if self._is_venv(current):
                return True
        return False

    def _is_venv(self, folder: str) -> bool:
        known = self._venv_dirs.get(folder)
        if known is None:
            try:
                _stat(folder + "pyvenv.cfg")
                known = True
            except OSError:
                known = False
            self._venv_dirs[folder] = known
        return known


def discover_roots(
    rootdir: str, testpaths: list[str], explicit_source: list[str], explicit_test: list[str]
) -> tuple[list[str], list[str]]:
    """Source and test roots from the rootdir layout and pytest's configuration.

    Explicit roots win. Otherwise the source root is ``<rootdir>/src`` when it exists (src
    layout) and the rootdir itself otherwise (flat layout); test roots are ``testpaths`` (less
    any that is or holds a source root: pytest may be told to collect doctests there) or,
    without them, ``tests``/``test`` folders under the rootdir. Called once at session start.
    """
    root = normalize_dir(rootdir)

    def absolute(path: str) -> str:
        return path if path.startswith("/") else root + path

    if explicit_source:
        sources = [absolute(p) for p in explicit_source]
    else:
        sources = [root + "src"] if _isdir(root + "src") else [root]
    if explicit_test:
        tests = [absolute(p) for p in explicit_test]
    elif testpaths:
        tests = [absolute(p) for p in testpaths if _isdir(absolute(p))]
        # ``testpaths = ["src", "tests"]`` (humanize 4.17, for --doctest-modules) names the
        # source root so that pytest collects doctests there: that makes it no test code.
        sources_dirs = [normalize_dir(s) for s in sources]
        tests = [
            t for t in tests if not any(src.startswith(normalize_dir(t)) for src in sources_dirs)
        ]
    else:
        tests = [root + name for name in ("tests", "test", "testing") if _isdir(root + name)]
    return sources, tests


def _isdir(path: str) -> bool:
    try:
        return (_stat(path).st_mode & 0o170000) == 0o040000
    except OSError:
        return False
