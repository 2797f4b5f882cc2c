"""Which module a changed file is, as the recordings named it.

The recorder names modules relative to pytest's rootdir and its source and test roots; a
commit range names files relative to the repository's top. The recordings carry what is needed
to translate (their roots in ``run.config``, their symbols' files), so the differ can apply the
recorder's own path rules (:mod:`diffgenome.protocol.modules`) without asking git or pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from diffgenome.protocol.modules import is_excluded_dir, is_test_file, module_name
from diffgenome.protocol.vocab import SYMBOL_PREFIX


def module_namer(
    documents: Sequence[Mapping[str, object]],
) -> Callable[[str], str | None]:
    """``module_of(path)`` for paths from the repository root, as the recorder named them.

    The recordings say their roots relative to pytest's rootdir (``run.config``) and their
    symbols' files relative to the repository root; the rootdir's place in the repository
    is where a test symbol's file and its module name agree.
    """
    rules: list[tuple[str, list[str], list[str]]] = []
    for document in documents:
        run = document.get("run")
        config = run.get("config") if isinstance(run, dict) else None
        if not isinstance(config, dict):
            continue
        sources = [_root(r) for r in config.get("source_roots") or () if isinstance(r, str)]
        tests = [_root(r) for r in config.get("test_roots") or () if isinstance(r, str)]
        prefix = _rootdir_prefix(document)
        rules.append((prefix, sources, tests))

    def module_of(path: str) -> str | None:
        if not path.endswith(".py"):
            return None
        for prefix, sources, tests in rules:
            if prefix and not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            parts = rel.split("/")
            if any(is_excluded_dir(p) for p in parts[:-1]):
                return None
            name = parts[-1]
            if any(rel.startswith(root) for root in tests if root) or is_test_file(name):
                return module_name(rel)
            for root in sorted(sources, key=len, reverse=True):
                if rel.startswith(root):
                    return module_name(rel[len(root) :])
        return None

    return module_of


def test_code_rule(documents: Sequence[Mapping[str, object]]) -> Callable[[str], bool]:
    """``is_test(path)`` for paths from the repository root: under a recording's test root or
    named like a test module (``conftest.py`` included), as the recorder tells test code from
    project code. A helper under ``tests/`` that no test called holds no recorded symbol, so
    only this rule says it is test code."""
    rules: list[tuple[str, list[str]]] = []
    for document in documents:
        run = document.get("run")
        config = run.get("config") if isinstance(run, dict) else None
        if not isinstance(config, dict):
            continue
        tests = [_root(r) for r in config.get("test_roots") or () if isinstance(r, str)]
        rules.append((_rootdir_prefix(document), tests))

    def is_test(path: str) -> bool:
        if not path.endswith(".py"):
            return False
        if is_test_file(path.rpartition("/")[2]):
            return True
        for prefix, tests in rules:
            if prefix and not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            if any(rel.startswith(root) for root in tests if root):
                return True
        return False

    return is_test


def _root(relative: str) -> str:
    """A recorded root (``"."``, ``"src/"``) as a path prefix (``""``, ``"src/"``)."""
    if relative in (".", "./", ""):
        return ""
    return relative.rstrip("/") + "/"


def _rootdir_prefix(document: Mapping[str, object]) -> str:
    """``sub/`` when the recording's pytest rootdir was ``sub/`` of the repository."""
    symbols = document.get("symbols")
    if not isinstance(symbols, list):
        return ""
    for symbol in symbols:
        if not isinstance(symbol, dict) or symbol.get("origin") != "test":
            continue
        path, ident = symbol.get("path"), symbol.get("id")
        if not isinstance(path, str) or not isinstance(ident, str) or not path.endswith(".py"):
            continue
        parts = path.split("/")
        for k in range(len(parts)):
            module = module_name("/".join(parts[k:]))
            body = ident.removeprefix(SYMBOL_PREFIX)
            if body == module or body.startswith(module + "."):
                return "".join(p + "/" for p in parts[:k])
    return ""
