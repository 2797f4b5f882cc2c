"""What both reports show, in which order: the selection, ranking and collapsing rules live
here once, so that the terminal and the Markdown report agree.

A report is one block per test (its status, then its changes in the fixed order of change
kinds, then its reasons), the tests that reach the changed code first."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from diffgenome.analysis.diff.compare import CHANGE_KINDS
from diffgenome.analysis.models import Change, DiffDocument, DiffSide, TestDiff

STATUS_ORDER = (
    "changed",
    "unverified",
    "unstable",
    "restructured",
    "touched",
    "added",
    "removed",
    "unchanged",
)


@dataclass(frozen=True, slots=True)
class Block:
    """One test as the reports show it: its diff, whether it reaches the changed code, and
    what to list under it (its changes in the fixed order of change kinds, then its reasons)."""

    test: TestDiff
    reaches_changed_code: bool
    changes: list[Change]

    @property
    def reasons(self) -> list[str]:
        return list(self.test.reasons)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which tests a report shows: ``pattern`` (``--test``) only the tests it matches, with
    everything about them; ``everything`` (``--all``) every test, unchanged ones as well, with
    nothing collapsed. Neither: the tests with a status other than unchanged, collapsed."""

    pattern: str | None = None
    everything: bool = False

    @property
    def collapses(self) -> bool:
        return self.pattern is None and not self.everything


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


#: Everything that is not unchanged, collapsed.
DEFAULT_SELECTION = Selection()


def matches(test_id: str, pattern: str) -> bool:
    """``--test PATTERN``: the exact id, a glob when the pattern has ``*`` or ``?`` (brackets
    are literal, as in parametrized ids), else any part of the id."""
    if test_id == pattern:
        return True
    if "*" in pattern or "?" in pattern:
        glob = pattern.replace("[", "[[]")
        return fnmatch.fnmatchcase(test_id, glob)
    return pattern in test_id


def ordered_changes(changes: list[Change]) -> list[Change]:
    """A test's changes in the fixed order of change kinds (outcome first), each kind's in
    the differ's order."""
    rank = {kind: index for index, kind in enumerate(CHANGE_KINDS)}
    return sorted(changes, key=lambda change: rank.get(change.kind, len(rank)))


def test_blocks(diff: DiffDocument, selection: Selection = DEFAULT_SELECTION) -> list[Block]:
    """The tests to show, most relevant first: those that reach the changed code (by the
    code-change mapping, on either side), then the rest; within each, by status (changed,
    unverified, unstable, touched, added, removed, unchanged), then by id."""
    reaching: set[str] = set()
    for entry in diff.code_changes:
        reaching.update(entry.tests_base)
        reaching.update(entry.tests_head)
    status_rank = {status: index for index, status in enumerate(STATUS_ORDER)}
    blocks = []
    for test in diff.tests:
        if selection.pattern is not None:
            if not matches(test.id, selection.pattern):
                continue
        elif test.status == "unchanged" and not selection.everything:
            continue
        blocks.append(Block(test, test.id in reaching, ordered_changes(test.changes)))
    blocks.sort(
        key=lambda b: (not b.reaches_changed_code, status_rank.get(b.test.status, 99), b.test.id)
    )
    return blocks


def outcome_text(test: TestDiff) -> str:
    """``passed``, ``passed → failed``, or the one side's outcome of an added/removed test."""
    base, head = test.outcome.base, test.outcome.head
    if base and head and base != head:
        return f"{base} \u2192 {head}"
    return head or base or ""


def tests_with(diff: DiffDocument, status: str) -> list[TestDiff]:
    return [test for test in diff.tests if test.status == status]


def renamed_line(base_id: str) -> str:
    """What a report says of a test paired under a new id (``TestDiff.base_id``)."""
    return f"was {base_id} in base (pytest numbers such cases by position; paired by values)"
