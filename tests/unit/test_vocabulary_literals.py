"""The diff's words are defined once, in diffgenome/protocol/vocab.py: the analysis side (and
the rest of protocol/, and the store) names a status, a change kind, a code change kind, an
unverified reason or the symbol prefix by its constant, never by a string of its own (issue #28).

Only a whole string constant equal to one of the words counts: a word inside a sentence or
an f-string is English, and docstrings are for people. The ``Literal[...]`` types of the
models are spelled out because a type checker reads only literals there;
tests/unit/test_protocol.py pairs each of them with its vocab tuple.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from diffgenome.protocol import vocab

ROOT = Path(__file__).resolve().parents[2]
CHECKED = (
    ROOT / "diffgenome" / "analysis",
    ROOT / "diffgenome" / "protocol",
    ROOT / "diffgenome" / "store",
)
VOCAB = ROOT / "diffgenome" / "protocol" / "vocab.py"
MODELS = "diffgenome/analysis/models.py"

WORDS = frozenset(
    {
        *vocab.TEST_STATUSES,
        *vocab.CHANGE_KINDS,
        *vocab.CODE_CHANGE_KINDS,
        *vocab.UNVERIFIED_REASONS,
        vocab.SYMBOL_PREFIX,
    }
)

#: (module, word) pairs where the string is not the diff's word but means something else.
ALLOWED = {
    # English: the verb of ``diffgenome prune``'s lines ("removed <run id> ..."), not a status.
    ("diffgenome/analysis/cli.py", "removed"),
}


def _modules() -> list[Path]:
    return sorted(
        path
        for root in CHECKED
        for path in root.rglob("*.py")
        if path != VOCAB and "__pycache__" not in path.parts
    )


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants of the module, its classes and functions."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _skipped(tree: ast.Module, relative: str) -> set[int]:
    """The ids of the constants that are not code: docstrings, the literal parts of
    f-strings, and (in the models) the spelled-out ``Literal[...]`` types."""
    skipped = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values if isinstance(part, ast.Constant))
        elif (
            relative == MODELS
            and isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
        ):
            skipped.update(id(inner) for inner in ast.walk(node.slice))
    return skipped


def _literals(path: Path) -> list[str]:
    relative = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), relative)
    skipped = _skipped(tree, relative)
    return [
        f"{relative}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in WORDS
        and id(node) not in skipped
        and (relative, node.value) not in ALLOWED
    ]


def test_the_checked_modules_are_found() -> None:
    modules = {path.relative_to(ROOT).as_posix() for path in _modules()}
    assert MODELS in modules and "diffgenome/analysis/diff/compare.py" in modules
    assert VOCAB.relative_to(ROOT).as_posix() not in modules


@pytest.mark.parametrize("path", _modules(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_the_diffs_words_come_from_vocab(path: Path) -> None:
    found = _literals(path)
    assert not found, "say these by their diffgenome.protocol.vocab constant:\n" + "\n".join(
        sorted(found, key=lambda line: int(line.split(":")[1]))
    )


def test_every_allowed_literal_is_still_there() -> None:
    """An allow-list entry whose string went away goes too: the list stays short."""
    for relative, word in sorted(ALLOWED):
        tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"), relative)
        assert any(
            isinstance(node, ast.Constant) and node.value == word for node in ast.walk(tree)
        ), f"{relative} no longer says {word!r}: drop it from ALLOWED"
