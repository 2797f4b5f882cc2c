"""Project modules that were not run from the recorded tree as recorded: imported before
recording started (a conftest.py imported them while pytest started up: their bodies ran
unseen, ``<import>`` discloses them), or imported from outside the rootdir (an editable
install of another checkout: nothing recorded is verified). Read at start and as each test
finishes, never in a callback.
"""

from __future__ import annotations

import os
import sys

from diffgenome.protocol.vocab import ORIGIN_REPO, SYMBOL_PREFIX
from diffgenome.recording.collect.scope import Scope


def imported_before(scope: Scope) -> list[str]:
    """Module symbols of the project's modules already imported (once, at start)."""
    found: set[str] = set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str):
            continue
        placement = scope.place(filename)
        if placement is not None and placement.origin == ORIGIN_REPO:
            found.add(SYMBOL_PREFIX + placement.module)
    return sorted(found)


def top_level_modules(scope: Scope) -> list[str]:
    """Names of the packages and modules directly under the source roots (read once)."""
    names: set[str] = set()
    test_roots = tuple(scope.test_roots)
    for root in scope.source_roots:
        try:
            entries = os.listdir(root)
        except OSError:
            continue
        for entry in entries:
            path = root + entry
            if entry.startswith((".", "_")) or (path + "/").startswith(test_roots):
                continue
            if entry.endswith(".py"):
                stem = entry[:-3]
                if stem.isidentifier() and stem not in ("setup", "conftest", "noxfile"):
                    names.add(stem)
            elif entry.isidentifier() and os.path.isfile(path + "/__init__.py"):
                names.add(entry)
    return sorted(names)


def foreign_modules(names: list[str], rootdir: str) -> list[tuple[str, str]]:
    """Project modules that were imported from outside the rootdir."""
    foreign: list[tuple[str, str]] = []
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        namespace = getattr(module, "__dict__", {})
        where = namespace.get("__file__")
        if not isinstance(where, str):
            paths = list(namespace.get("__path__") or [])
            where = str(paths[0]) if paths else None
        if isinstance(where, str) and not where.startswith(rootdir):
            foreign.append((name, where))
    return foreign
