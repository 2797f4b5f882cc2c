"""End-to-end: look-alike decisions keep their identity when another one is added (#24.4).

A decision with the same condition as another in the same function was told apart by the
enclosing decision only once it had a look-alike, and otherwise by an ordinal: adding one
renamed the others, and every test through them read as one decision no longer reached and
another newly reached (mistune ``parse_inline_footnote`` 16 tests, ``parse_link`` 191, click
``Command.main`` 111). Naming revision 5 always takes the compound statements that enclose a
decision, so these tests are unchanged: the added decision is not on their path.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files


def _diff(tmp_path: Path, code: str, head_code: str, tests: str) -> tuple[int, dict[str, Any]]:
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": textwrap.dedent(code),
            "tests/test_mod.py": textwrap.dedent(tests),
        },
    )
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/mod.py": textwrap.dedent(head_code)})
    GitRepo(repo).commit_tracked("a look-alike decision added")
    return cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")


def _unchanged(document: dict[str, Any], looks_like: str) -> None:
    for test in document["tests"]:
        # ``touched``: it reaches the changed function, and behaves as it did
        assert test["status"] in ("unchanged", "touched"), test
        # only the added decision may be listed: it exists at head only
        for change in test.get("changes", []):
            assert change["kind"] == "branch_changed" and change["base"] is None, change
            assert change["predicate"] != looks_like, change
    assert document["tests"], document


NOTES = textwrap.dedent(
    """
    def parse(state, text):
        notes = state.get("notes")
        if text:
            if not notes:
                return None
            return [n for n in notes if n]
        return []
"""
)
NOTES_ADDED = NOTES.replace(
    "    if text:",
    "    if state.get('extra'):\n        if not notes:\n            notes = []\n    if text:",
)


def test_an_added_look_alike_does_not_rename_one_under_another_decision(tmp_path: Path) -> None:
    """mistune: ``if not notes:`` under ``if text:`` kept its counts but read as not reached,
    and the same condition under a new digest as newly reached."""
    tests = """
        from pkg.mod import parse

        def test_empty():
            assert parse({"notes": []}, "x") is None

        def test_some():
            assert parse({"notes": [1, 0]}, "x") == [1]
    """
    code, document = _diff(tmp_path, NOTES, NOTES_ADDED, tests)
    _unchanged(document, "not notes")
    assert code == 0


LINK = textwrap.dedent(
    """
    def link(text, pos):
        end_pos = text.find("]", pos)
        if text.startswith("("):
            end_pos = text.find(")", pos)
            assert end_pos is not None
            return text[pos:end_pos]
        assert end_pos is not None
        return text[pos:end_pos]
"""
)
LINK_ADDED = LINK.replace(
    "    return text[pos:end_pos]\n    assert",
    "    return text[pos:end_pos]\n    for _ in range(0):\n        assert end_pos is not None\n"
    "    assert",
)


def test_an_added_assert_does_not_renumber_the_same_assert(tmp_path: Path) -> None:
    """mistune ``parse_link``: ``assert end_pos is not None`` repeated in one function."""
    tests = """
        from pkg.mod import link

        def test_paren():
            assert link("(ab)", 1) == "ab"

        def test_bracket():
            assert link("[ab]", 1) == "ab"
    """
    assert LINK_ADDED != LINK
    code, document = _diff(tmp_path, LINK, LINK_ADDED, tests)
    _unchanged(document, "end_pos is not None")
    assert code == 0


MAIN = textwrap.dedent(
    """
    class ClickException(Exception):
        pass


    class Abort(Exception):
        pass


    def main(run, standalone_mode=True):
        try:
            rv = run()
            return rv
        except ClickException:
            if not standalone_mode:
                raise
            return 1
        except Abort:
            if not standalone_mode:
                raise
            return 2
"""
)
MAIN_ADDED = MAIN.replace(
    "        return rv\n",
    "        if not standalone_mode:\n            return rv\n        return rv\n",
)


def test_an_unchanged_decision_under_an_except_keeps_its_identity(tmp_path: Path) -> None:
    """click ``Command.main``: ``if not standalone_mode:`` under ``except ClickException:``,
    unchanged, read as ``#1`` not reached and ``#4`` newly reached when another
    ``if not standalone_mode:`` was added above it."""
    tests = """
        import pytest

        from pkg.mod import ClickException, main

        def fail():
            raise ClickException("no")

        def test_standalone():
            assert main(fail) == 1

        def test_embedded():
            with pytest.raises(ClickException):
                main(fail, standalone_mode=False)
    """
    assert MAIN_ADDED != MAIN
    code, document = _diff(tmp_path, MAIN, MAIN_ADDED, tests)
    _unchanged(document, "not standalone_mode")
    assert code == 0
