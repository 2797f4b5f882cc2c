"""Which changed tests confirmation records more: those whose head recording shows work on
threads the test started (docs/diffing.md, "Confirmation")."""

from __future__ import annotations

from typing import Any

from diffgenome.analysis.models import DiffDocument, DiffSide, DiffSummary, OutcomePair
from diffgenome.analysis.models import TestDiff as DiffOfTest
from diffgenome.analysis.pipeline import threaded_changes


def _diff(*statuses: tuple[str, str]) -> DiffDocument:
    return DiffDocument(
        base=DiffSide(run="b", rev="b", commit=None),
        head=DiffSide(run="h", rev="h", commit=None),
        summary=DiffSummary(),
        tests=[
            DiffOfTest(id=test_id, status=status, outcome=OutcomePair(base="passed", head="passed"))
            for test_id, status in statuses
        ],
    )


def _record(test_id: str, *nodes: dict[str, Any]) -> dict[str, Any]:
    return {"id": test_id, "phases": {"call": {"nodes": list(nodes), "branches": []}}}


def test_only_changed_tests_with_work_on_threads_are_confirmed_again() -> None:
    head = {
        "tests": [
            _record("t::racy", {"id": 0, "symbol": "py:t.racy"}, {"id": 1, "via": "thread"}),
            _record("t::plain", {"id": 0, "symbol": "py:t.plain"}),
            _record("t::quiet", {"id": 0, "via": "thread"}),
        ]
    }
    diff = _diff(("t::racy", "changed"), ("t::plain", "changed"), ("t::quiet", "unchanged"))
    assert threaded_changes(diff, head) == ["t::racy"]
