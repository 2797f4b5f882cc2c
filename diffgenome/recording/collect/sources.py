"""Reading source files without touching names that tests patch.

Tests routinely patch ``builtins.open``, ``os.path`` or ``inspect``; the collector reads
sources while those patches are live, so it holds its own references to the real functions,
taken when this module is imported (before any test runs).
"""

from __future__ import annotations

import _io
import importlib.util

_open = _io.open
_decode_source = importlib.util.decode_source


def read_source(path: str) -> str | None:
    """The decoded text of a Python source file, or None when it cannot be read."""
    try:
        with _open(path, "rb") as handle:
            data = handle.read()
        text: str = _decode_source(data)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    return text
