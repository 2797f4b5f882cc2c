"""The diff as a pull-request comment (GitHub-flavoured Markdown).

Recorded text (ids, predicates) is always put in code spans, so that Markdown in a test id
cannot format the comment; long sections collapse to ``... and K more``.
"""

from __future__ import annotations

from diffgenome.analysis.diff.describe import describe
from diffgenome.analysis.models import DiffDocument
from diffgenome.analysis.report.common import (
    STATUS_ORDER,
    change_groups,
    count,
    side_text,
    summary_text,
    tests_with,
)

ELLIPSIS = "\u2026"


def code(text: str) -> str:
    """``text`` as an inline code span that survives backticks and newlines inside it."""
    text = " ".join(text.split())
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_markdown(diff: DiffDocument, *, max_tests: int = 20, max_changes: int = 5) -> str:
    s = diff.summary
    lines = [
        f"### diffgenome: {code(side_text(diff.base))} \u2192 {code(side_text(diff.head))}",
        "",
        f"**{summary_text(diff)}**",
        "",
        "| tests | " + " | ".join(STATUS_ORDER) + " |",
        "|" + "---:|" * (len(STATUS_ORDER) + 1),
        f"| {s.tests} | " + " | ".join(str(getattr(s, status)) for status in STATUS_ORDER) + " |",
    ]
    if s.unverified:
        lines += [
            "",
            f"> **{s.unverified} tests are unverified**: their recordings cannot be compared "
            "as a whole, so they are not reported as unchanged.",
        ]

    groups = change_groups(diff)
    if groups:
        lines += ["", "#### Changed behaviour"]
        for group in groups:
            lines += ["", f"**{group.title}** ({count(len(group.tests), 'test')})", ""]
            for test, changes in group.tests[:max_tests]:
                lines.append(f"- {code(test.id)} ({test.status})")
                for change in changes[:max_changes]:
                    lines.append(f"  - {code(describe(change))}")
                if len(changes) > max_changes:
                    lines.append(f"  - {ELLIPSIS} and {len(changes) - max_changes} more changes")
            if len(group.tests) > max_tests:
                lines.append(f"- {ELLIPSIS} and {len(group.tests) - max_tests} more tests")

    for status, title in (
        ("unverified", "Unverified tests"),
        ("unstable", "Unstable tests (differed between recordings of one commit)"),
        ("touched", "Touched tests (ran changed decisions, behaved the same)"),
        ("added", "Added tests"),
        ("removed", "Removed tests"),
    ):
        tests = tests_with(diff, status)
        if not tests:
            continue
        lines += ["", f"#### {title} ({len(tests)})", ""]
        for test in tests[:max_tests]:
            reasons = "; ".join(test.reasons[:3])
            more = f" (+{len(test.reasons) - 3})" if len(test.reasons) > 3 else ""
            lines.append(f"- {code(test.id)}" + (f": {code(reasons)}{more}" if reasons else ""))
        if len(tests) > max_tests:
            lines.append(f"- {ELLIPSIS} and {len(tests) - max_tests} more tests")

    if diff.drift:
        lines += ["", f"#### Mock drift ({len(diff.drift)})", ""]
        for drift in diff.drift[:max_tests]:
            users = ", ".join(code(test) for test in drift.tests[:5])
            if len(drift.tests) > 5:
                users += f" and {len(drift.tests) - 5} more"
            lines.append(f"- stand-in for {code(drift.claimed_target)} used by {users}")
            for evidence in drift.evidence[:max_changes]:
                lines.append(f"  - {code(evidence)}")
            if len(drift.evidence) > max_changes:
                lines.append(f"  - {ELLIPSIS} and {len(drift.evidence) - max_changes} more")
        if len(diff.drift) > max_tests:
            lines.append(f"- {ELLIPSIS} and {len(diff.drift) - max_tests} more stand-ins")

    gaps = [entry for entry in diff.code_changes if entry.gaps]
    if gaps:
        lines += ["", f"#### Changed code not fully exercised ({len(gaps)})", ""]
        for entry in gaps[:max_tests]:
            lines.append(f"- {code(entry.symbol)} ({entry.change})")
            for gap in entry.gaps[:max_changes]:
                lines.append(f"  - {code(gap)}")
            if len(entry.gaps) > max_changes:
                lines.append(f"  - {ELLIPSIS} and {len(entry.gaps) - max_changes} more")
        if len(gaps) > max_tests:
            lines.append(f"- {ELLIPSIS} and {len(gaps) - max_tests} more symbols")
    return "\n".join(lines) + "\n"
