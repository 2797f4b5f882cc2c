"""The diff as a pull-request comment (GitHub-flavoured Markdown).

A reviewer reads the comment top down and stops early, so it leads with what needs a look:
the summary line, then the tests that ``changed`` (those that reach the changed code first,
ranked as the terminal report ranks them), mock ``drift``, changed code with ``gaps``, the
``unverified`` tests (those whose missing evidence could hide a change first), then the other
differences more briefly. Every entry of several lines is one collapsed ``<details>`` block,
so that hundreds of tests still make a comment one can scroll; an entry of one line is that
line, and a small comment (:data:`OPEN_UP_TO` entries) has its blocks open. Both commits are
named short, and the whole report is linked whenever a link is given.

A comment has a hard size limit (GitHub refuses a body over :data:`GITHUB_COMMENT_LIMIT`
characters and the job that posts it fails), so the report is cut to ``limit``: whole blocks,
lowest priority first, and one closing line says exactly what was left out and where the
whole report is. Nothing is dropped without being counted there.

Recorded text (ids, symbols, values, predicates) goes into code spans in Markdown and into
escaped ``<code>`` in the ``<summary>`` HTML, so that nothing in a test id can format the
comment, close a block early or inject HTML.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from diffgenome.analysis.diff.causes import UNREACHED
from diffgenome.analysis.diff.describe import ValueLabels, describe_each
from diffgenome.analysis.models import CauseGroup, CodeChange, DiffDocument, Drift
from diffgenome.analysis.report.common import (
    DEFAULT_SELECTION,
    STATUS_ORDER,
    Block,
    Gap,
    Selection,
    cause_groups,
    cause_text,
    causes_worth_showing,
    count,
    failing_text,
    fold_imported,
    gaps_of,
    gate_text,
    group_tail,
    imported_text,
    outcome_text,
    renamed_line,
    several_text,
    side_text,
    summary_text,
    test_blocks,
)
from diffgenome.protocol.jsontext import escape_surrogates
from diffgenome.protocol.vocab import (
    STATUS_ADDED,
    STATUS_CHANGED,
    STATUS_REMOVED,
    STATUS_UNVERIFIED,
)

ELLIPSIS = "\u2026"
DOT = " \u00b7 "

#: The most characters GitHub takes in a pull-request comment.
GITHUB_COMMENT_LIMIT = 65_536
#: What ``--markdown-limit`` defaults to: below GitHub's limit by enough for a header or a
#: footer that a CI job adds around the report.
DEFAULT_MARKDOWN_LIMIT = 65_000
#: The smallest limit accepted: the lead (both sides, the summary, notes) and the closing
#: line must fit whatever is cut.
MIN_MARKDOWN_LIMIT = 2_000
#: Lines listed per block of the leading sections, and of the rest, before ``… and K more``
#: (a selection, ``--test`` or ``--all``, lists everything).
MAX_LINES = 10
MAX_LINES_BRIEF = 3
#: One recorded line (a change, a value shape, an id) is shortened beyond this, so that no
#: single test can take the whole comment.
MAX_ITEM_CHARS = 1_000
#: A comment of at most this many blocks has them open: a reviewer of a small change reads
#: it without a click per test. A block of one line is never collapsed.
OPEN_UP_TO = 8

#: The section that a test of each status goes to; the order of sections is the reading
#: order of a review.
_CHANGED, _DRIFT, _GAPS, _UNVERIFIED, _ADDED, _INSIDE, _SAME = range(7)
_HEADINGS = {
    _CHANGED: "Changed",
    _DRIFT: "Mock drift",
    _GAPS: "Changed code not fully exercised",
    _UNVERIFIED: "Unverified",
    _ADDED: "Added and removed tests",
    # What the tests see comes first; these changed only inside (docs/diffing.md, "Reach").
    _INSIDE: "Changed only inside the project, results at the tests equal",
    # As the terminal says it: restructured, touched and unstable tests are no differences
    # to act on (they were under "Other differences", beside added tests).
    _SAME: "Same behaviour",
}


class MarkdownTooLong(ValueError):
    """The lead of the report and its closing line alone exceed the limit."""


def comment_length(text: str) -> int:
    """Length as the strictest counter measures it: UTF-16 code units (JavaScript's
    ``length``). That is never less than the count of code points, so a text within the limit
    by this measure is within it whichever way a forge counts. A lone surrogate counts as the
    escape it is written as (protocol/jsontext.py)."""
    return len(escape_surrogates(text).encode("utf-16-le")) // 2


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


def _short(text: str) -> str:
    """One line of recorded text, whitespace collapsed (a blank line would end the HTML block
    of a ``<summary>``), at most :data:`MAX_ITEM_CHARS` long; shortened *before* it is put in
    a code span, so that a span is never cut open."""
    text = " ".join(text.split())
    if len(text) > MAX_ITEM_CHARS:
        text = text[: MAX_ITEM_CHARS - 1] + ELLIPSIS
    return text


#: ``<summary>`` is HTML, where CommonMark (and GitHub) reads no Markdown: escaping ``&``,
#: ``<`` and ``>`` makes recorded text inert there. The characters that would format text or
#: ping someone if a renderer did read Markdown inside HTML (code, emphasis, tables, escapes,
#: strike-through, mentions) are written as numeric entities as well. Parametrized ids keep
#: their ``_`` and brackets (neither formats anything alone), so an id can be found in the
#: source of the comment. One pass, so that no entity is escaped twice.
_HTML_TEXT = str.maketrans(
    {
        **{char: f"&#{ord(char)};" for char in "`*|\\~@"},
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
    }
)


def html_text(text: str) -> str:
    """Recorded text as the inert content of an HTML element."""
    return _short(text).translate(_HTML_TEXT)


_MARKDOWN_SPECIAL = set("\\`*_{}[]<>()#+-.!|~&:@")


def plain(text: str) -> str:
    """Text of ours that quotes something recorded (a note naming a path or a revision) as
    Markdown that renders literally: every character Markdown or HTML could act on is
    backslash-escaped."""
    return "".join(f"\\{char}" if char in _MARKDOWN_SPECIAL else char for char in _short(text))


def _inert_tags(text: str) -> str:
    """Our own line with ``<`` and ``>`` as entities: GitHub drops a tag it does not allow,
    so ``<import> restructured`` read `` restructured``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _url(link: str) -> str:
    """A link destination that cannot end the link or the line early."""
    return urllib.parse.quote(link.strip(), safe=":/?#[]@!$&'*+,;=%~")


@dataclass(frozen=True, slots=True)
class _Entry:
    """One ``<details>`` block: the section it belongs to, what it counts as when it is cut
    (a test's status, ``drift``, ``gaps``), and its text."""

    section: int
    kind: str
    text: str
    #: A test that reaches the changed code (the section's heading counts them, once).
    reaching: bool = False


def _details(summary: str, items: Sequence[str], opened: bool = False) -> str:
    """A block: one line when it has one item (five identical one-line tests are five lines,
    not five clicks), else a ``<details>`` element, open in a small comment."""
    if not items:
        return summary
    if len(items) == 1:
        return f"{summary}: {items[0]}"
    # GitHub renders the Markdown inside <details> only after a blank line that ends the
    # HTML block the tags open; the same before </details>.
    body = "\n".join(f"- {item}" for item in items)
    tag = "<details open>" if opened else "<details>"
    return f"{tag}<summary>{summary}</summary>\n\n{body}\n\n</details>"


def _more_lines(items: list[str], max_lines: int | None, hint: str) -> list[str]:
    if max_lines is None or len(items) <= max_lines:
        return items
    hidden = len(items) - max_lines
    return [*items[:max_lines], f"{ELLIPSIS} and {hidden} more {hint}"]


def _test_entry(
    section: int, block: Block, labels: ValueLabels, max_lines: int | None, opened: bool
) -> _Entry:
    test = block.test
    parts = [test.status, f"<code>{html_text(test.id)}</code>", count(len(block.changes), "change")]
    if block.reasons:
        parts.append(count(len(block.reasons), "reason"))
    if test.status == STATUS_UNVERIFIED and test.may_hide_change:
        parts.append("may hide a change")
    if block.test_code_edited:
        parts.append("its test code was edited")
    items = [code(_short(renamed_line(test.base_id)))] if test.base_id else []
    items += [f"structure: {code(_short(moved))}" for moved in test.structure]
    items += [code(_short(line)) for line in describe_each(block.changes, labels)]
    items += [f"_{code(_short(labels.rewrite(reason)))}_" for reason in block.reasons]
    outcome = outcome_text(test)
    if outcome and (test.status in (STATUS_ADDED, STATUS_REMOVED) or not items):
        # An outcome that changed is a change already; an added or removed test has nothing
        # else to say.
        side = {STATUS_ADDED: " (head only)", STATUS_REMOVED: " (base only)"}.get(test.status, "")
        items.insert(0, f"outcome {code(outcome)}{side}")
    items = _more_lines(
        items, max_lines, "lines (`diffgenome diff --test` with this test id shows them)"
    )
    reaching = block.reaches_changed_code
    return _Entry(section, test.status, _details(DOT.join(parts), items, opened), reaching)


def _drift_entry(drift: Drift, max_lines: int | None, opened: bool) -> _Entry:
    summary = DOT.join(
        [
            "drift",
            f"stand-in for <code>{html_text(drift.claimed_target)}</code>",
            count(len(drift.tests), "test"),
        ]
    )
    few = len(drift.tests) if max_lines is None else 5
    users = ", ".join(code(_short(test)) for test in drift.tests[:few])
    if len(drift.tests) > few:
        users += f" and {len(drift.tests) - few} more"
    items = [f"used by {users}"] if users else []
    evidence = [code(_short(line)) for line in drift.evidence]
    items += _more_lines(evidence, max_lines, "items")
    return _Entry(_DRIFT, "drift", _details(summary, items, opened))


def _gap_item(gap: Gap, source_url: str | None) -> str:
    """A gap as a comment line: its words (predicate included) as code, then its place,
    linked to the line where ``--source-url`` says how."""
    item = code(_short(gap.words()))
    place = gap.place()
    if place is None:
        return item
    url = gap.url(source_url)
    where = f"[{plain(place)}]({_url(url)})" if url else code(_short(place))
    return f"{item} at {where}"


def _gaps_entry(
    entry: CodeChange,
    max_lines: int | None,
    opened: bool,
    diff: DiffDocument,
    source_url: str | None,
) -> _Entry:
    summary = DOT.join(
        [
            "gaps",
            f"<code>{html_text(entry.symbol)}</code> ({entry.change})",
            count(len(entry.gaps), "gap"),
        ]
    )
    items = [_gap_item(gap, source_url) for gap in gaps_of(entry, diff)]
    items = _more_lines(items, max_lines, "gaps")
    return _Entry(_GAPS, "gaps", _details(summary, items, opened))


def _entries(
    diff: DiffDocument,
    blocks: list[Block],
    selection: Selection,
    max_lines: int,
    opened: bool = False,
    source_url: str | None = None,
) -> list[_Entry]:
    """Every block of the report in reading order; the cut keeps a prefix of this list."""
    labels = ValueLabels()  # labels follow the reading order, so a cut never renames a value
    whole = not selection.collapses
    lines = None if whole else max_lines
    brief = None if whole else min(max_lines, MAX_LINES_BRIEF)
    changed = [block for block in blocks if block.test.status == STATUS_CHANGED]
    inside = [block for block in changed if block.inside]
    changed = [block for block in changed if not block.inside]
    unverified = [block for block in blocks if block.test.status == STATUS_UNVERIFIED]
    # Stable: within each half, the ranking of test_blocks.
    unverified.sort(key=lambda block: not block.test.may_hide_change)
    added = [block for block in blocks if block.test.status in (STATUS_ADDED, STATUS_REMOVED)]
    loud = (STATUS_CHANGED, STATUS_UNVERIFIED, STATUS_ADDED, STATUS_REMOVED)
    same = [block for block in blocks if block.test.status not in loud]

    out = [_test_entry(_CHANGED, block, labels, lines, opened) for block in changed]
    if selection.pattern is None:
        out += [_drift_entry(drift, lines, opened) for drift in diff.drift]
        out += [
            _gaps_entry(entry, lines, opened, diff, source_url)
            for entry in diff.code_changes
            if entry.gaps
        ]
    out += [_test_entry(_UNVERIFIED, block, labels, lines, opened) for block in unverified]
    out += [_test_entry(_ADDED, block, labels, brief, opened) for block in added]
    out += [_test_entry(_INSIDE, block, labels, brief, opened) for block in inside]
    out += [_test_entry(_SAME, block, labels, brief, opened) for block in same]
    return out


def _lead(
    diff: DiffDocument,
    selection: Selection,
    blocks: list[Block],
    notes: Sequence[str],
    limit: int = DEFAULT_MARKDOWN_LIMIT,
    link: str | None = None,
    fail_on: str | None = None,
) -> list[str]:
    s = diff.summary
    gate = gate_text(diff, fail_on)
    lines = [
        f"### diffgenome: {code(_short(side_text(diff.base)))} \u2192 "
        f"{code(_short(side_text(diff.head)))}",
        "",
        f"**{_inert_tags(failing_text(diff) + summary_text(diff))}**"
        + (f"; {plain(gate)}" if gate else ""),
    ]
    if link:
        # Whether or not the comment is cut: the call trees and every value are there.
        lines += ["", f"{_where(link, ())}: every test, both call trees, the JSON."]
    if s.unverified:
        lines += [
            "",
            f"> **{count(s.unverified, 'test')} "
            f"{'is' if s.unverified == 1 else 'are'} unverified**: "
            f"{'its recordings' if s.unverified == 1 else 'their recordings'} cannot be "
            "compared as a whole, so "
            f"{'it is' if s.unverified == 1 else 'they are'} not reported as unchanged"
            + (
                "."
                if any(t.status == STATUS_UNVERIFIED and t.may_hide_change for t in diff.tests)
                else ": the same evidence is missing on both sides, so none can hide a change."
            ),
        ]
    for note in notes:
        lines += ["", f"> note: {plain(note)}"]
    if selection.pattern is None and causes_worth_showing(diff):
        lines += _grouped_causes(diff, limit) if diff.cause_groups else _causes(diff, limit)
    if selection.pattern is not None and not blocks:
        lines += ["", f"No test matches {code(_short(selection.pattern))}."]
    return lines


#: A cause is one line; the list of causes takes at most this share of the comment.
MAX_CAUSE_CHARS = 300
CAUSES_SHARE = 0.4


def _causes(diff: DiffDocument, limit: int = DEFAULT_MARKDOWN_LIMIT) -> list[str]:
    """Every cause, one line each, in the lead (never cut with the tests): what a reviewer of
    a change that hit a thousand tests reads first. A list too long for its share of the
    comment ends with how many causes it leaves out."""
    lines = ["", f"#### Causes ({len(diff.causes)})", ""]
    budget = int(limit * CAUSES_SHARE)
    for index, cause in enumerate(diff.causes):
        example = f" (e.g. {code(_short(cause.examples[0]))})" if cause.examples else ""
        text = cause_text(cause)
        if len(text) > MAX_CAUSE_CHARS:
            text = text[:MAX_CAUSE_CHARS] + ELLIPSIS
        line = f"- {code(text)}{example}"
        budget -= comment_length(line) + 1
        if budget < 0:
            left = len(diff.causes) - index
            lines.append(f"- {ELLIPSIS} and {count(left, 'more cause')}, in the JSON report")
            break
        lines.append(line)
    return lines


def _grouped_causes(diff: DiffDocument, limit: int = DEFAULT_MARKDOWN_LIMIT) -> list[str]:
    """The causes by code change, in the lead: one item per changed symbol (what changed in
    its code, its tests, an example) with every cause of it nested under it, then the causes
    through several code changes and those with none in reach. Every cause is named while
    the list fits its share of the comment; a longer one ends with how many causes (in how
    many groups) the JSON holds besides."""
    groups = cause_groups(diff)
    code_groups = sum(1 for group, _ in groups if group.reach == "code")
    lines = [
        "",
        f"#### Causes by code change ({count(code_groups, 'code change')}, "
        f"{count(len(diff.causes), 'cause')})",
        "",
    ]
    groups, folded = fold_imported(groups)
    # Each new module or class that only collection imported, named on one line, last.
    tail = [f"- {_inert_tags(imported_text(folded, few=len(folded)))}"] if folded else []
    budget = int(limit * CAUSES_SHARE) - sum(comment_length(line) + 1 for line in tail)
    named = len(folded)
    for shown, (group, causes) in enumerate(groups):
        block = [_group_line(group, len(causes))]
        for cause in causes:
            text = cause_text(cause)
            if len(text) > MAX_CAUSE_CHARS:
                text = text[:MAX_CAUSE_CHARS] + ELLIPSIS
            block.append(f"  - {code(text)}")
        cost = sum(comment_length(line) + 1 for line in block)
        if cost > budget:
            # Whole causes while they fit, then what is left, counted.
            fits = [block[0]]
            budget -= comment_length(block[0]) + 1
            for line in block[1:]:
                budget -= comment_length(line) + 1
                if budget < 0:
                    break
                fits.append(line)
            if len(fits) > 1:
                lines += fits
                named += len(fits) - 1
                shown += 1
            left = len(diff.causes) - named
            more_groups = len(groups) - shown
            where = f" (in {count(more_groups, 'more group')})" if more_groups else ""
            lines.append(f"- {ELLIPSIS} and {count(left, 'more cause')}{where}, in the JSON report")
            return lines + tail
        budget -= cost
        lines += block
        named += len(causes)
    return lines + tail


def _group_line(group: CauseGroup, causes: int) -> str:
    """``- **`py:pkg.f`** (modified) · 70 tests, 3 causes (e.g. `tests/a.py::t`)``."""
    example = f" (e.g. {code(_short(group.examples[0]))})" if group.examples else ""
    if group.reach == "code" and group.symbol is not None:
        title = f"**{code(group.symbol)}** ({plain(group.code)})"
    elif group.reach == "several":
        title = f"**through several code changes** ({several_text(group.symbols, code)})"
    else:
        title, _, besides = (group.code or UNREACHED).partition("; ")
        title = f"**{title}**" + (f" ({plain(besides)})" if besides else "")
    tail = group_tail(group, causes)
    return f"- {title}{DOT}{plain(tail)}{example}"


def _where(link: str | None, written: Sequence[str]) -> str:
    if link:
        return f"[the whole report]({_url(link)})"
    if written:
        return (
            "the whole report is in "
            + " and ".join(code(_short(w)) for w in written)
            + (", written with this comment (in CI: the job's artifacts)")
        )
    return "`diffgenome diff` with `--json FILE` or `--html DIR` writes the whole report"


def _cut_line(left_out: Sequence[_Entry], limit: int, where: str) -> str:
    """The closing line of a cut report: what was left out, by status, exactly."""
    by_kind: dict[str, int] = {}
    for entry in left_out:
        by_kind[entry.kind] = by_kind.get(entry.kind, 0) + 1
    tests = [(status, by_kind[status]) for status in STATUS_ORDER if status in by_kind]
    parts = []
    if tests:
        total = sum(n for _, n in tests)
        detail = ", ".join(f"{n} {status}" for status, n in tests)
        parts.append(f"{count(total, 'test')} ({detail})")
    if "drift" in by_kind:
        parts.append(f"{count(by_kind['drift'], 'stand-in')} with drift")
    if "gaps" in by_kind:
        parts.append(f"{count(by_kind['gaps'], 'changed symbol')} with gaps")
    return f"**Cut to fit {limit:,} characters**: left out {'; '.join(parts)}; {where}."


def _headings(entries: Sequence[_Entry]) -> dict[int, str]:
    """Each section's heading, with how many of its blocks there are in all (a cut keeps
    fewer) and how many of its tests reach the changed code (ranked first after those that
    now fail): said once here, not on every block."""
    totals: dict[int, int] = {}
    reaching: dict[int, int] = {}
    for entry in entries:
        totals[entry.section] = totals.get(entry.section, 0) + 1
        reaching[entry.section] = reaching.get(entry.section, 0) + entry.reaching
    out = {}
    for section, total in totals.items():
        n = reaching[section]
        if n == 0:
            out[section] = f"#### {_HEADINGS[section]} ({total})"
        elif n == total:
            out[section] = f"#### {_HEADINGS[section]} ({total}, all reaching the changed code)"
        else:
            out[section] = f"#### {_HEADINGS[section]} ({total}, {n} reaching the changed code)"
    return out


def _assemble(lead: list[str], entries: Sequence[_Entry], kept: int, cut: str | None) -> str:
    headings = _headings(entries)
    lines = list(lead)
    section = None
    for entry in entries[:kept]:
        if entry.section != section:
            section = entry.section
            lines += ["", headings[section]]
        lines += ["", entry.text]
    if cut is not None:
        lines += ["", cut]
    return "\n".join(lines) + "\n"


def render_markdown(
    diff: DiffDocument,
    *,
    selection: Selection = DEFAULT_SELECTION,
    limit: int = DEFAULT_MARKDOWN_LIMIT,
    link: str | None = None,
    written: Sequence[str] = (),
    notes: Sequence[str] = (),
    max_changes: int = MAX_LINES,
    source_url: str | None = None,
    fail_on: str | None = None,
) -> str:
    """The comment, at most ``limit`` characters (:func:`comment_length`).

    ``link``: where the whole report is (the CI run with its artifacts), named by the closing
    line of a cut report; else ``written``, the JSON and HTML outputs written with it, are
    named. ``notes`` (what the differ could not do) come right after the summary and are never
    cut. ``max_changes`` lines are listed per test (fewer for the other differences); a
    ``selection`` with a pattern or ``everything`` lists them all. ``fail_on``: the gate's
    ``--fail-on``, for the summary line to say when it fails only on added tests. Raises
    :class:`MarkdownTooLong` when even the lead and the closing line do not fit."""
    blocks = test_blocks(diff, selection)
    lead = _lead(diff, selection, blocks, notes, limit, link, fail_on)
    entries = _entries(diff, blocks, selection, max_changes, source_url=source_url)
    if len(entries) <= OPEN_UP_TO:
        entries = _entries(diff, blocks, selection, max_changes, True, source_url)
    if not entries and selection.pattern is None:
        lead += ["", "No test behaves differently."]
    text = _assemble(lead, entries, len(entries), None)
    if comment_length(text) <= limit:
        return escape_surrogates(text)
    if not entries:
        raise MarkdownTooLong(
            f"the report's lead alone takes {comment_length(text):,} characters, more than "
            f"the limit of {limit:,}"
        )

    where = _where(link, written)
    # The closing line is longest when everything is left out (more kinds, larger counts):
    # reserving that much makes the first estimate fit.
    reserve = comment_length(_cut_line(entries, limit, where))
    budget = limit - comment_length(_assemble(lead, entries, 0, None)) - 2 - reserve
    kept, section = 0, None
    headings = _headings(entries)
    for entry in entries:
        cost = comment_length(entry.text) + 2
        if entry.section != section:
            cost += comment_length(headings[entry.section]) + 2
        if cost > budget:
            break  # lowest priority first: nothing after a block that does not fit is kept
        budget -= cost
        kept += 1
        section = entry.section
    while True:
        text = _assemble(lead, entries, kept, _cut_line(entries[kept:], limit, where))
        if comment_length(text) <= limit:
            return escape_surrogates(text)
        if kept == 0:
            raise MarkdownTooLong(
                f"the report's lead and closing line alone take {comment_length(text):,} "
                f"characters, more than the limit of {limit:,}"
            )
        kept -= 1
