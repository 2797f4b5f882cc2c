"""Parsing and compiling a project's source without speaking through its warning filters.

Parsing source that has an invalid escape sequence (``"\\d"``) or compiling ``x is 1`` emits
a ``SyntaxWarning``. Python said so once when it imported the module; when diffgenome parses
the same text again to name code, the warning would reach the user's filters a second time,
where ``filterwarnings = error`` turns it into an exception inside the recorder and
``default`` prints it against ``<unknown>``. So each parse runs with one filter of its own in
front of the others that ignores warnings from a file name only diffgenome uses.

The filter is added to and removed from the current filter list in place, by identity, not
swapped as ``warnings.catch_warnings`` does: swapping is process-wide, and a thread of the
user's program entering or leaving ``catch_warnings`` meanwhile would get its filters
restored wrongly. A filter keyed on a private file name changes nothing for anyone else.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
import warnings
from types import CodeType
from typing import Any

# The name every quiet parse and compile gives its source; warnings about it are ignored.
FILENAME = "<diffgenome-quiet>"

_ast_parse = ast.parse
_compile = compile
_lock = threading.Lock()
_FILTER: tuple[Any, ...] = ("ignore", None, Warning, re.compile(re.escape(FILENAME) + r"\Z"), 0)


def _filters_changed() -> None:
    """Tell the C side of ``warnings`` that the list changed (its cache is versioned)."""
    changed = getattr(warnings, "_filters_mutated", None) or getattr(
        warnings, "_filters_mutated_lock_held", None
    )
    if callable(changed):
        changed()


class _Quiet:
    def __enter__(self) -> None:
        _lock.acquire()
        try:
            self._filters: list[Any] | None = getattr(sys.modules.get("warnings"), "filters", None)
            if isinstance(self._filters, list):
                self._filters.insert(0, _FILTER)
                _filters_changed()
        except BaseException:
            _lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            filters = self._filters
            if isinstance(filters, list):
                for index, entry in enumerate(filters):
                    if entry is _FILTER:
                        del filters[index]
                        break
                _filters_changed()
        finally:
            _lock.release()


def parse(source: str) -> ast.Module:
    """``ast.parse(source)`` with no warning reaching anyone's filters."""
    with _Quiet():
        return _ast_parse(source, FILENAME)


def compile_module(source: str) -> CodeType:
    """``compile(source, ..., "exec", dont_inherit=True)`` with no warning reaching anyone."""
    with _Quiet():
        code: CodeType = _compile(source, FILENAME, "exec", dont_inherit=True)
        return code
