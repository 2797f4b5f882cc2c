"""The gap of a decision edited in place that no test tells apart (diff/exercised.py)."""

from __future__ import annotations

from diffgenome.analysis.diff.exercised import GAP_UNTOLD_EDIT, untold_edits
from diffgenome.analysis.models import CodeChange, OutcomePair
from diffgenome.analysis.models import TestDiff as DiffOfTest


def _entry(gone: str, came: str) -> CodeChange:
    return CodeChange(
        symbol="py:m.C.f",
        change="modified",
        sites=[
            {"site": "py:m.C.f/if[aaaaaaaaaa]", "change": "removed", "predicate": gone},
            {"site": "py:m.C.f/ifexp[bbbbbbbbbb]", "change": "added", "predicate": came},
        ],
        tests_base=["t.py::test_f"],
        tests_head=["t.py::test_f"],
    )


def _quiet() -> list[DiffOfTest]:
    return [
        DiffOfTest(
            id="t.py::test_f",
            status="touched",
            outcome=OutcomePair(base="passed", head="passed"),
            may_hide_change=False,
        )
    ]


def test_one_condition_for_another_is_an_edit_no_test_tells_apart() -> None:
    entry = _entry("age > max_age", "age >= max_age")
    untold_edits([entry], _quiet())
    assert entry.gaps == [GAP_UNTOLD_EDIT.format(edit="`age > max_age` → `age >= max_age`")]


def test_the_same_condition_under_another_kind_of_decision_is_no_edit() -> None:
    """xmltodict's ``if not short_namespace: return name / else: return ...`` made one
    ``return name if not short_namespace else ...``: the gap said "`not short_namespace` →
    `not short_namespace`"."""
    entry = _entry("not short_namespace", "not short_namespace")
    untold_edits([entry], _quiet())
    assert entry.gaps == []
