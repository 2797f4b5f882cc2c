"""End-to-end: same behaviour through changed code (#10.5).

A test whose only differences are decisions that exist in one side's code only (a guard the
change added, never taken), with every call, count, exit and value equal, ran changed code and
did the same: it is ``touched``, listed, and the default gate passes. A generator closed by its
consumer is one close whether or not its paused ``yield`` sits inside a ``try`` (CPython throws
GeneratorExit into it only then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import (
    GitRepo,
    cli_json,
    make_project,
    record,
    test_genome,
    write_files,
)

BASE = {
    "pkg/__init__.py": "",
    "pkg/calc.py": """
        def double(x):
            return x * 2


        def numbers(n):
            i = 0
            while True:
                yield i
                i += 1
                if i >= n:
                    i = 0


        def first_two(n):
            out = []
            for value in numbers(n):
                out.append(value)
                if len(out) == 2:
                    break
            return out
    """,
    "tests/test_calc.py": """
        from pkg.calc import double, first_two


        def test_double():
            assert double(2) == 4


        def test_first_two():
            assert first_two(5) == [0, 1]


        def test_close_explicitly():
            from pkg.calc import numbers

            gen = numbers(3)
            assert next(gen) == 0
            gen.close()
    """,
}
HEAD = {
    "pkg/calc.py": """
        def double(x):
            if x is None:
                raise TypeError("x is None")
            return x * 2


        def numbers(n):
            i = 0
            try:
                while True:
                    yield i
                    i += 1
                    if i >= n:
                        i = 0
            finally:
                i = -1


        def first_two(n):
            out = []
            for value in numbers(n):
                out.append(value)
                if len(out) == 2:
                    break
            return out
    """,
}


def _diff(repo: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE", *extra)
    return code, document


def test_a_new_guard_never_taken_is_touched_and_a_moved_try_is_no_change(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, HEAD)
    code, document = _diff(repo, tmp_path)
    statuses = {t["id"]: t["status"] for t in document["tests"]}
    assert statuses["tests/test_calc.py::test_double"] == "touched", document["tests"]
    # the try/finally around the paused yield: no GeneratorExit appears, nothing else changed
    assert statuses["tests/test_calc.py::test_first_two"] in ("unchanged", "touched")
    assert statuses["tests/test_calc.py::test_close_explicitly"] in ("unchanged", "touched")
    assert "changed" not in statuses.values(), document["tests"]
    assert document["summary"]["touched"] >= 1
    assert code == 0  # touched does not fail the default gate
    double = next(c for c in document["code_changes"] if c["symbol"] == "py:pkg.calc.double")
    [site] = [s for s in double["sites"] if s["change"] == "added"]
    assert site["head"] == {"true": 0, "false": 1}  # how the new decision was taken


REORDER_BASE = {
    "pkg/__init__.py": "",
    "pkg/rules.py": """
        def grade(score, bonus):
            if bonus:
                score += 5
            if score >= 90:
                return "A"
            return "B"
    """,
    "tests/test_rules.py": """
        from pkg.rules import grade


        def test_grades():
            assert grade(95, False) == "A"
            assert grade(50, True) == "B"
    """,
}
REORDER_HEAD = {
    "pkg/rules.py": """
        def grade(score, bonus):
            if score < 0:
                raise ValueError(score)
            if score >= 90:
                return "A" if not bonus or score >= 90 else "A"
            if bonus:
                score += 5
            return "B"
    """,
}


def test_decisions_inserted_and_moved_above_an_unchanged_one_leave_it_alone(
    tmp_path: Path,
) -> None:
    """``score >= 90`` keeps its identity when a decision is inserted above it and another
    moves below it: the report never pairs its counts with another condition's text."""
    repo = tmp_path / "repo"
    write_files(repo, REORDER_BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, REORDER_HEAD)
    _code, document = _diff(repo, tmp_path)
    (test,) = [t for t in document["tests"] if t["id"] == "tests/test_rules.py::test_grades"]
    touched_predicates = {c["predicate"] for c in test["changes"] if c["kind"] == "branch_changed"}
    assert "score >= 90" not in touched_predicates
    assert "bonus" in touched_predicates  # it moved below the return: reached once, not twice
    assert "score < 0" in touched_predicates  # new


CLOSED_LATER = {
    "pkg/__init__.py": "",
    "pkg/gen.py": """
        def numbers():
            try:
                yield 1
                yield 2
            finally:
                pass
    """,
    "tests/test_gen.py": """
        from pkg.gen import numbers

        KEPT = []


        def test_starts_a_generator():
            gen = numbers()
            assert next(gen) == 1
            KEPT.append(gen)


        def test_drops_it():
            KEPT.clear()  # the paused generator is closed here, by its last reference going
    """,
}


def test_a_generator_closed_in_a_later_test_leaves_no_empty_node(tmp_path: Path) -> None:
    """google-api-core: a paused generator closed in whichever test drops it was a call node
    with count 0 there (its close is no entry), and came and went between recordings."""
    project = make_project(tmp_path, CLOSED_LATER)
    doc = record(project)
    dropped = test_genome(doc, "::test_drops_it")["phases"]["call"]["nodes"]
    assert all(node["count"] > 0 for node in dropped), dropped
    assert [n["symbol"] for n in dropped if n["type"] == "call"] == [
        "py:tests.test_gen.test_drops_it"
    ]


NEW_GLOBAL_BASE = {
    "pkg/__init__.py": "",
    "pkg/text.py": """
        def clean(value):
            return value.strip()
    """,
    "tests/test_text.py": """
        from pkg.text import clean


        def test_clean():
            assert clean(" a ") == "a"
    """,
}
NEW_GLOBAL_HEAD = {
    "pkg/text.py": """
        import re

        _BARE_CR = re.compile(r"\\r(?!\\n)")


        def clean(value):
            if "\\r" in value:
                value = _BARE_CR.sub(" ", value)
            return value.strip()
    """,
}


def test_a_new_module_level_name_read_on_an_untaken_path_is_touched(tmp_path: Path) -> None:
    """tomlkit 0.15.2: a new module-level regex, used on a path the test never takes, showed
    as a new state fact of the function that names it: the test did the same."""
    repo = tmp_path / "repo"
    write_files(repo, NEW_GLOBAL_BASE)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, NEW_GLOBAL_HEAD)
    code, document = cli_json(repo, tmp_path, "diff", "HEAD", "WORKTREE")
    [test] = [t for t in document["tests"] if t["id"].endswith("::test_clean")]
    kinds = {c["kind"] for c in test["changes"]}
    assert test["status"] == "touched", test
    assert kinds <= {"branch_changed", "state_changed"}, kinds
    assert code == 0
