"""The terminal and Markdown reports of a diff document: verdict first, grouping, collapsing."""

from __future__ import annotations

from rich.console import Console

from diffgenome.analysis.models import (
    Change,
    CodeChange,
    DiffDocument,
    DiffSide,
    DiffSummary,
    Drift,
    OutcomePair,
)
from diffgenome.analysis.models import TestDiff as DiffOfTest
from diffgenome.analysis.report import render_markdown, render_terminal
from diffgenome.analysis.report.markdown import code


def text_of(diff: DiffDocument, **options: int) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(render_terminal(diff, **options))
    return console.export_text()


def changed_test(index: int) -> DiffOfTest:
    return DiffOfTest(
        id=f"tests/test_x.py::test_case[{index}]",
        status="changed",
        outcome=OutcomePair(base="passed", head="passed"),
        changes=[
            Change(
                kind="exit_changed",
                phase="call",
                path=["py:tests.test_x.test_case", "py:pkg.f"],
                symbol="py:pkg.f",
                base={"returned": 1},
                head={"raised:py:builtins.ValueError": 1},
            )
        ],
    )


def big_diff(n: int) -> DiffDocument:
    tests = [changed_test(i) for i in range(n)]
    tests.append(
        DiffOfTest(
            id="tests/test_x.py::test_net",
            status="unverified",
            outcome=OutcomePair(base="passed", head="passed"),
            reasons=["head: call:untraced-subprocess:git"],
        )
    )
    return DiffDocument(
        base=DiffSide(run="r1", commit="a" * 40, rev="main"),
        head=DiffSide(run="r2", commit="b" * 40, rev="HEAD"),
        summary=DiffSummary(tests=n + 1, changed=n, unverified=1),
        tests=tests,
        drift=[
            Drift(
                claimed_target="py:pkg.fetch",
                tests=["tests/test_x.py::test_mocked"],
                evidence=["code: py:pkg.fetch modified"],
            )
        ],
        code_changes=[
            CodeChange(
                symbol="py:pkg.g",
                change="added",
                gaps=["not executed by any test"],
            )
        ],
    )


def test_terminal_puts_the_summary_first_and_collapses_thousands() -> None:
    text = text_of(big_diff(3000), max_tests=5)
    first = text.splitlines()[0]
    assert first.startswith("diffgenome main (aaaaaaaaaaaa) → HEAD (bbbbbbbbbbbb): 3001 tests")
    assert "3000 changed" in first and "1 unverified" in first
    assert "exits changed (3000 tests)" in text
    assert "… and 2995 more tests" in text
    assert text.count("py:pkg.f exits returned 1 → raised:py:builtins.ValueError 1") == 5
    assert len(text.splitlines()) < 60


def test_terminal_keeps_brackets_and_shows_unverified_drift_and_gaps() -> None:
    text = text_of(big_diff(2))
    assert "tests/test_x.py::test_case[1]" in text  # not eaten as markup
    assert "tests/test_x.py::test_net  head: call:untraced-subprocess:git" in text
    assert "stand-in for py:pkg.fetch in tests/test_x.py::test_mocked" in text
    assert "code: py:pkg.fetch modified" in text
    assert "py:pkg.g (added)" in text and "not executed by any test" in text


def test_markdown_has_a_table_sections_and_collapses() -> None:
    markdown = render_markdown(big_diff(50), max_tests=3)
    assert "| 51 | 50 | 1 | 0 | 0 | 0 | 0 |" in markdown
    assert "**exits changed** (50 tests)" in markdown
    assert "- … and 47 more tests" in markdown
    assert "#### Unverified tests (1)" in markdown
    assert "#### Mock drift (1)" in markdown and "`py:pkg.fetch`" in markdown
    assert "#### Changed code not fully exercised (1)" in markdown
    assert "- `tests/test_x.py::test_case[0]` (changed)" in markdown


def test_markdown_code_spans_survive_backticks() -> None:
    assert code("a `b` c") == "``a `b` c``"
    assert code("`x`") == "`` `x` ``"
    assert code("plain") == "`plain`"
