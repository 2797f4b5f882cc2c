"""The diff in a terminal: the verdict first, then what changed grouped by kind.

Everything recorded (ids, symbols, predicates) goes into ``Text`` objects, never into markup,
so brackets in test ids stay literal. Long lists collapse to ``... and K more`` so that a diff of
thousands of tests still fits a screen.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from diffgenome.analysis.diff.describe import describe
from diffgenome.analysis.models import DiffDocument
from diffgenome.analysis.report.common import (
    change_groups,
    count,
    side_text,
    summary_text,
    tests_with,
)

_STATUS_STYLE = {
    "changed": "yellow",
    "unverified": "red",
    "unstable": "magenta",
    "touched": "cyan",
    "added": "green",
    "removed": "red",
    "unchanged": "green",
}
ELLIPSIS = "\u2026"


def _more(hidden: int, what: str, indent: str = "  ") -> Text:
    return Text(f"{indent}{ELLIPSIS} and {hidden} more {what}", style="dim")


def render_terminal(
    diff: DiffDocument, *, max_tests: int = 10, max_changes: int = 5
) -> RenderableType:
    """``max_tests``: tests shown per group; ``max_changes``: changes shown per test."""
    s = diff.summary
    parts: list[RenderableType] = []
    headline = Text.assemble(
        ("diffgenome ", "bold"),
        f"{side_text(diff.base)} \u2192 {side_text(diff.head)}: ",
        (summary_text(diff), "bold red" if s.unverified else "bold"),
    )
    parts.append(headline)

    for group in change_groups(diff):
        parts.append(Text(""))
        parts.append(Text(f"{group.title} ({count(len(group.tests), 'test')})", style="bold cyan"))
        for test, changes in group.tests[:max_tests]:
            parts.append(
                Text.assemble(
                    "  ", (test.id, "bold"), "  ", (test.status, _STATUS_STYLE[test.status])
                )
            )
            for change in changes[:max_changes]:
                parts.append(Text("    " + describe(change)))
            if len(changes) > max_changes:
                parts.append(_more(len(changes) - max_changes, "changes", "    "))
        if len(group.tests) > max_tests:
            parts.append(_more(len(group.tests) - max_tests, "tests"))

    for status, title in (
        ("unverified", "unverified: not comparable, never read as unchanged"),
        ("unstable", "unstable: differed between recordings of one commit"),
        ("touched", "touched: ran changed decisions and behaved the same"),
        ("added", "added tests"),
        ("removed", "removed tests"),
    ):
        tests = tests_with(diff, status)
        if not tests:
            continue
        parts.append(Text(""))
        parts.append(Text(f"{title} ({len(tests)})", style=f"bold {_STATUS_STYLE[status]}"))
        for test in tests[:max_tests]:
            line = Text.assemble("  ", (test.id, "bold"))
            if test.reasons:
                extra = f" (+{len(test.reasons) - 1})" if len(test.reasons) > 1 else ""
                line.append(f"  {test.reasons[0]}{extra}", style="dim")
            parts.append(line)
        if len(tests) > max_tests:
            parts.append(_more(len(tests) - max_tests, "tests"))

    if diff.drift:
        parts.append(Text(""))
        parts.append(Text(f"mock drift ({len(diff.drift)})", style="bold magenta"))
        for drift in diff.drift[:max_tests]:
            users = ", ".join(drift.tests[:3]) + (
                f" and {len(drift.tests) - 3} more" if len(drift.tests) > 3 else ""
            )
            parts.append(
                Text.assemble("  stand-in for ", (drift.claimed_target, "bold"), f" in {users}")
            )
            for evidence in drift.evidence[:max_changes]:
                parts.append(Text(f"    {evidence}"))
            if len(drift.evidence) > max_changes:
                parts.append(_more(len(drift.evidence) - max_changes, "items", "    "))
        if len(diff.drift) > max_tests:
            parts.append(_more(len(diff.drift) - max_tests, "stand-ins"))

    gaps = [entry for entry in diff.code_changes if entry.gaps]
    if gaps:
        parts.append(Text(""))
        parts.append(Text(f"changed code not fully exercised ({len(gaps)})", style="bold yellow"))
        for entry in gaps[:max_tests]:
            parts.append(Text.assemble("  ", (entry.symbol, "bold"), f" ({entry.change})"))
            for gap in entry.gaps[:max_changes]:
                parts.append(Text(f"    {gap}"))
            if len(entry.gaps) > max_changes:
                parts.append(_more(len(entry.gaps) - max_changes, "gaps", "    "))
        if len(gaps) > max_tests:
            parts.append(_more(len(gaps) - max_tests, "symbols"))
    return Group(*parts)
