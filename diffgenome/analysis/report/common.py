"""What both reports show, in which order: the grouping and collapsing rules live here once."""

from __future__ import annotations

from dataclasses import dataclass

from diffgenome.analysis.diff.compare import CHANGE_KINDS
from diffgenome.analysis.models import Change, DiffDocument, DiffSide, TestDiff

STATUS_ORDER = (
    "changed",
    "unverified",
    "unstable",
    "touched",
    "added",
    "removed",
    "unchanged",
)
KIND_TITLES = {
    "outcome_changed": "outcome changed",
    "call_added": "new calls",
    "call_removed": "calls no longer made",
    "call_count_changed": "call counts changed",
    "exit_changed": "exits changed",
    "result_changed": "results changed",
    "args_changed": "arguments changed",
    "branch_changed": "decisions changed",
    "stand_in_added": "new stand-ins",
    "stand_in_removed": "stand-ins no longer used",
    "stand_in_changed": "stand-ins changed",
    "egress_added": "new network or process access",
    "egress_removed": "network or process access no longer made",
    "state_changed": "state changed",
    "warnings_changed": "warnings changed",
}


@dataclass(frozen=True, slots=True)
class Group:
    """Tests sharing one change kind, each with its changes of that kind."""

    kind: str
    title: str
    tests: list[tuple[TestDiff, list[Change]]]


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary_text(diff: DiffDocument) -> str:
    s = diff.summary
    counts = [(status, getattr(s, status)) for status in STATUS_ORDER]
    shown = ", ".join(f"{n} {status}" for status, n in counts if n)
    text = f"{s.tests} tests: {shown}" if shown else f"{s.tests} tests"
    if s.confirmed:
        text += f" ({s.confirmed} confirmed by recording them again)"
    return text


def side_text(side: DiffSide) -> str:
    commit = f" ({side.commit[:12]})" if side.commit and side.commit != side.rev else ""
    return f"{side.rev}{commit}"


def change_groups(diff: DiffDocument) -> list[Group]:
    """Tests with changes, grouped by change kind in the contract's order; a test with several
    kinds appears in each of its groups (with only that kind's changes)."""
    by_kind: dict[str, list[tuple[TestDiff, list[Change]]]] = {}
    for test in diff.tests:
        if not test.changes:
            continue
        mine: dict[str, list[Change]] = {}
        for change in test.changes:
            mine.setdefault(change.kind, []).append(change)
        for kind, changes in mine.items():
            by_kind.setdefault(kind, []).append((test, changes))
    order = list(CHANGE_KINDS) + sorted(set(by_kind) - set(CHANGE_KINDS))
    return [
        Group(kind, KIND_TITLES.get(kind, kind), by_kind[kind]) for kind in order if kind in by_kind
    ]


def tests_with(diff: DiffDocument, status: str) -> list[TestDiff]:
    return [test for test in diff.tests if test.status == status]
