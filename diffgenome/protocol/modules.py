"""Which module a file is: the path rules the recorder applies and the differ repeats.

A changed file is matched to recorded code by its module name, so the differ must turn a path
into a module (and rule a file out) exactly as the recorder did. Standard library only; the
recorder calls these once per file at event time, so they are string work and a matcher bound
at import time.
"""

from __future__ import annotations

from fnmatch import fnmatchcase as _fnmatch
from typing import Final

# Folder names that are never project code, wherever they sit.
EXCLUDED_DIRS: Final = frozenset({"__pycache__", "site-packages", "dist-packages", "node_modules"})
DEFAULT_TEST_FILES: Final = ("test_*.py", "*_test.py", "conftest.py")


def is_excluded_dir(name: str) -> bool:
    """A folder whose files are never project code: dot-folders and package caches."""
    return name.startswith(".") or name in EXCLUDED_DIRS


def is_test_file(basename: str, patterns: tuple[str, ...] = DEFAULT_TEST_FILES) -> bool:
    """Named like a pytest test module or ``conftest.py``."""
    return any(_fnmatch(basename, pattern) for pattern in patterns)


def module_name(rel: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    stem = rel[:-3] if rel.endswith(".py") else rel
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem.replace("/", ".")
