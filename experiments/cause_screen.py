"""What the first screen of a diff covers (#23.A): causes, groups by code change, and the share
of the changed tests that the first lines of the terminal report account for.

    python experiments/cause_screen.py DIFF.json TERMINAL.txt [COMMENT.md] [--lines 25] [--rerank]

DIFF.json is the diff document (``--json``), TERMINAL.txt the terminal report of the same diff
(standard output), COMMENT.md its Markdown comment. A cause's tests are not in the document
(only their count and a few examples), so they are found again here from each test's changes,
with the signature the differ groups by (``diff/causes.py``); a one-sided decision the differ
leaves out of the causes makes a key no cause has, and is ignored. The first screen is the
first ``--lines`` lines of the terminal report as written (no wrapping). A cause counts as on
the screen when its line is there; a group when its heading is (all its causes' tests count:
the heading names the code change and how many tests it reaches).
"""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path
from typing import Any

from diffgenome.analysis.diff.causes import (
    EDITED_KIND,
    STRUCTURE_KIND,
    _edited_anonymous,
    signature,
)
from diffgenome.analysis.models import DiffDocument

_LOUD = ("changed", "unverified")


def members(diff: DiffDocument) -> dict[tuple[str, str], set[str]]:
    """Each cause key → the tests that show it."""
    out: dict[tuple[str, str], set[str]] = {}
    for test in diff.tests:
        if test.status in _LOUD:
            edited = _edited_anonymous(test.changes)
            for change in test.changes:
                slot = edited.get(id(change))
                key = (EDITED_KIND, slot) if slot else (change.kind, signature(change))
                out.setdefault(key, set()).add(test.id)
        for moved in test.structure:
            key = (STRUCTURE_KIND, moved.split("`")[1] if moved.count("`") >= 2 else moved)
            out.setdefault(key, set()).add(test.id)
    return out


def cause_key(kind: str, summary: str) -> tuple[str, str]:
    if kind == STRUCTURE_KIND:
        return (kind, summary.split("`")[1] if summary.count("`") >= 2 else summary)
    return (kind, summary)


def screen(diff: DiffDocument, terminal: list[str], lines: int) -> dict[str, Any]:
    found = members(diff)
    tests_of = [found.get(cause_key(c.kind, c.summary), set()) for c in diff.causes]
    for cause, tests in zip(diff.causes, tests_of, strict=True):
        if len(tests) != cause.tests:
            raise SystemExit(f"cause {cause.summary!r}: {cause.tests} tests, found {len(tests)}")
    changed = {t.id for t in diff.tests if t.status == "changed"}
    first = terminal[:lines]
    start = next((i for i, line in enumerate(first) if line.startswith("causes (")), None)
    covered: set[str] = set()
    shown = 0
    if start is None:
        pass
    elif diff.cause_groups:
        heads = 0
        for line in first[start + 1 :]:
            if not line.strip():
                break
            if line.startswith("  ") and not line.startswith(("    ", "  \u2026")):
                heads += 1
        for group in diff.cause_groups[:heads]:
            shown += 1
            for index in group.causes:
                covered |= tests_of[index]
    else:
        for line in first[start + 1 :]:
            if not re.match(r"^  \d+ tests?", line):
                break
            covered |= tests_of[shown]
            shown += 1
    return {
        "causes": len(diff.causes),
        "groups": {
            reach: sum(1 for g in diff.cause_groups if g.reach == reach)
            for reach in ("code", "several", "none")
        },
        "changed_tests": len(changed),
        "screen_lines": lines,
        "shown": shown,
        "changed_covered": len(covered & changed),
        "share": round(len(covered & changed) / len(changed), 3) if changed else None,
    }


def comment(text: str) -> dict[str, Any]:
    """How many causes the Markdown comment names (one line each in its causes section), and
    how many more it says the JSON holds."""
    section: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("#### "):
            inside = line.startswith("#### Causes")
            continue
        if inside:
            section.append(line)
    named = sum(1 for line in section if re.match(r"^(  )?- `+ ?\d+ tests?", line))
    more = re.search(r"and (\d+) more causes?[^,]*, in the JSON report", "\n".join(section))
    return {
        "characters": len(text),
        "causes_named": named,
        "says_more": int(more.group(1)) if more else 0,
    }


def rerank(diff: DiffDocument) -> tuple[list[str], str]:
    """``diff``'s groups in the order of this diffgenome's rule (code changes before the
    causes of several and of none in each bucket), and its terminal and Markdown reports
    rendered anew: what a document written by an earlier ranking reads like now."""
    from rich.console import Console

    from diffgenome.analysis.report.markdown import render_markdown
    from diffgenome.analysis.report.terminal import render_terminal

    order = {"code": 0, "several": 1, "none": 2}

    def bucket(kinds: set[str]) -> int:
        return 0 if "outcome_changed" in kinds else 2 if kinds == {STRUCTURE_KIND} else 1

    def rank(group: Any) -> tuple[int, int, int, int, int, str]:
        kinds = {diff.causes[i].kind for i in group.causes}
        loud = sum(n for status, n in group.statuses.items() if status in _LOUD)
        reach = order[group.reach]
        return (bucket(kinds), reach, -loud, -group.tests, len(group.causes), group.symbol or "")

    diff.cause_groups.sort(key=rank)
    console = Console(width=1 << 16, record=True, soft_wrap=True, file=io.StringIO())
    console.print(render_terminal(diff, fail_on="changed"))
    return console.export_text().splitlines(), render_markdown(diff, fail_on="changed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json")
    parser.add_argument("terminal")
    parser.add_argument("markdown", nargs="?")
    parser.add_argument("--lines", type=int, default=25)
    parser.add_argument(
        "--rerank",
        action="store_true",
        help="re-sort the document's groups by this diffgenome's rule and read the reports "
        "rendered anew from it (TERMINAL.txt and COMMENT.md are then not read)",
    )
    args = parser.parse_args()
    diff = DiffDocument.model_validate_json(Path(args.json).read_text())
    terminal = Path(args.terminal).read_text().splitlines()
    markdown = Path(args.markdown).read_text() if args.markdown else None
    if args.rerank:
        terminal, markdown = rerank(diff)
    out = screen(diff, terminal, args.lines)
    if markdown is not None:
        out["markdown"] = comment(markdown)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
