"""The diff as a pull-request comment (GitHub-flavoured Markdown).

One block per test (status, then its changes in the fixed order, then its reasons), the tests
that reach the changed code first, as in the terminal report. Recorded text (ids, predicates)
is always put in code spans, so that Markdown in a test id cannot format the comment; long
sections collapse to ``... and K more`` unless a selection asks for everything.
"""

from __future__ import annotations

from diffgenome.analysis.diff.describe import ValueLabels, describe
from diffgenome.analysis.models import DiffDocument
from diffgenome.analysis.report.common import (
    DEFAULT_SELECTION,
    STATUS_ORDER,
    Block,
    Selection,
    count,
    outcome_text,
    side_text,
    summary_text,
    test_blocks,
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


def _block(block: Block, labels: ValueLabels, max_lines: int | None) -> list[str]:
    test = block.test
    outcome = outcome_text(test)
    title = f"- {code(test.id)} **{test.status}**" + (f" ({outcome})" if outcome else "")
    items = [code(describe(change, labels)) for change in block.changes]
    items += [f"_{code(labels.rewrite(reason))}_" for reason in block.reasons]
    shown = items if max_lines is None else items[:max_lines]
    out = [title, *(f"  - {item}" for item in shown)]
    if len(items) > len(shown):
        out.append(
            f"  - {ELLIPSIS} and {len(items) - len(shown)} more "
            f"(`diffgenome diff --test` with this test id shows them)"
        )
    return out


def render_markdown(
    diff: DiffDocument,
    *,
    max_tests: int = 30,
    max_changes: int = 10,
    selection: Selection = DEFAULT_SELECTION,
) -> str:
    """``max_tests``: test blocks shown; ``max_changes``: lines shown per test; neither limit
    applies to a ``selection`` with a pattern or ``everything``."""
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
            f"> **{count(s.unverified, 'test')} "
            f"{'is' if s.unverified == 1 else 'are'} unverified**: their recordings cannot be "
            "compared as a whole, so they are not reported as unchanged.",
        ]

    labels = ValueLabels()
    blocks = test_blocks(diff, selection)
    collapse = selection.collapses
    shown = blocks[:max_tests] if collapse else blocks
    reaching = [block for block in shown if block.reaches_changed_code]
    others = [block for block in shown if not block.reaches_changed_code]
    total_reaching = sum(1 for block in blocks if block.reaches_changed_code)
    if selection.pattern is not None and not blocks:
        lines += ["", f"No test matches {code(selection.pattern)}."]
    for title, group, total in (
        ("Tests that reach the changed code", reaching, total_reaching),
        ("Other tests" if total_reaching else "Tests", others, len(blocks) - total_reaching),
    ):
        if not group:
            continue
        lines += ["", f"#### {title} ({total})", ""]
        for block in group:
            lines += _block(block, labels, max_changes if collapse else None)
    if len(blocks) > len(shown):
        lines.append(
            f"- {ELLIPSIS} and {len(blocks) - len(shown)} more tests "
            "(`diffgenome diff --all` shows every test)"
        )
    if selection.pattern is not None:
        return "\n".join(lines) + "\n"
    if not collapse:  # --all: nothing below is cut either
        max_tests = max_changes = 1 << 62

    if diff.drift:
        lines += ["", f"#### Mock drift ({len(diff.drift)})", ""]
        for drift in diff.drift[:max_tests]:
            few = 5 if collapse else len(drift.tests)
            users = ", ".join(code(test) for test in drift.tests[:few])
            if len(drift.tests) > few:
                users += f" and {len(drift.tests) - few} more"
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
