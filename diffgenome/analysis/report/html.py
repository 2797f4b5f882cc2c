"""The diff, or one run, as a self-contained static site (like coverage.py's HTML report).

A site is a mapping of relative paths to bytes, rendered from the documents alone, so that the
same documents always give the same bytes (no clock, no absolute paths, no randomness); only
:func:`write_site` touches the disk. Pages load two assets of their own (``assets/``, package
data in ``static/``), nothing else: a Content-Security-Policy forbids every other source, so
the site opens from a file system, offline, and recorded text cannot run as script.

Everything recorded (test ids, symbols, predicates, values) is untrusted text and goes
through :func:`esc`; file names of pages are digests of test ids, never the ids themselves.
Call trees are written without recursion, because recorded chains can be deeper than Python's
recursion limit.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from diffgenome.analysis.diff.align import PhaseIndex, element, index_phase
from diffgenome.analysis.diff.describe import (
    ARROW,
    TIMES,
    ValueLabels,
    describe,
    describe_each,
    value_text,
    warning_text,
    where,
)
from diffgenome.analysis.diff.effects import effect_text
from diffgenome.analysis.models import (
    Cause,
    Change,
    DiffDocument,
    DiffSide,
    Run,
    TestDiff,
    TestRecord,
)
from diffgenome.analysis.outfiles import output_file
from diffgenome.analysis.report.common import (
    OUTCOME_GAP,
    STATUS_ORDER,
    Gap,
    cause_groups,
    cause_text,
    causes_worth_showing,
    gaps_of,
    group_text,
    summary_text,
    tier,
)
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.vocab import (
    BRANCH_CHANGED,
    CALL_ADDED,
    CALL_COUNT_CHANGED,
    CALL_REMOVED,
    CODE_ADDED,
    CODE_REMOVED,
    EFFECT_KINDS,
    EGRESS_ADDED,
    EGRESS_REMOVED,
    PHASES,
    STAND_IN_ADDED,
    STAND_IN_REMOVED,
    STATUS_ADDED,
    STATUS_REMOVED,
    STATUS_RESTRUCTURED,
    STATUS_UNCHANGED,
    STATUS_UNVERIFIED,
)

ASSETS = ("style.css", "report.js")
ASSET_DIR = "assets"
PAGE_DIR = "t"
INDEX = "index.html"
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'"
)
OUTCOMES = ("failed", "error", "xpassed", "passed", "xfailed", "skipped")
# Shown when the index opens, unless its URL says otherwise (#status=...): what needs a look.
_HIDDEN_AT_FIRST = (STATUS_UNCHANGED,)

Site = dict[str, bytes]
_PAGE_FILE = re.compile(r"[0-9a-f]{20}\.html")  # what page_name makes: nothing else is removed


class SiteError(UserError):
    """The site cannot be written where asked."""


def esc(text: object) -> str:
    """``text`` safe in element content and in quoted attribute values."""
    return html.escape(str(text), quote=True)


def page_name(test_id: str) -> str:
    """The page of a test: a digest of its id (ids hold any character, file names cannot)."""
    digest = hashlib.blake2b(test_id.encode("utf-8", "surrogatepass"), digest_size=10)
    return f"{PAGE_DIR}/{digest.hexdigest()}.html"


def _assets() -> Site:
    folder = resources.files("diffgenome.analysis.report").joinpath("static")
    return {f"{ASSET_DIR}/{name}": folder.joinpath(name).read_bytes() for name in ASSETS}


def _page(title: str, body: str, *, root: str, kind: str) -> bytes:
    head = (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{esc(title)}</title>\n"
        f'<link rel="stylesheet" href="{root}{ASSET_DIR}/style.css">\n'
        f'<script src="{root}{ASSET_DIR}/report.js" defer></script>\n'
        "</head>\n"
    )
    page = head + f'<body data-page="{kind}">\n{body}</body>\n</html>\n'
    return page.encode("utf-8", "backslashreplace")  # a lone surrogate: its escape, as text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _side(side: DiffSide) -> str:
    commit = f" ({side.commit[:12]})" if side.commit and side.commit != side.rev else ""
    return f"{side.rev}{commit}"


def _badge(word: str) -> str:
    return f'<span class="badge s-{esc(word)}">{esc(word)}</span>'


def _filters(
    counts: Sequence[tuple[str, int]],
    what: str,
    hidden: Iterable[str] = (),
    only: Sequence[tuple[str, int]] = (),
) -> str:
    """Status check boxes and a search field; report.js applies them to ``#tests`` rows.
    ``only``: flags (``unverified``) whose box, ticked, shows only the rows carrying
    ``data-<flag>``."""
    hide = set(hidden)
    boxes = "".join(
        f'<label class="filter s-{esc(status)}"><input type="checkbox" data-status="{esc(status)}"'
        f"{'' if status in hide else ' checked'}> {esc(status)} <b>{n}</b></label>\n"
        for status, n in counts
    )
    boxes += "".join(
        f'<label class="filter only"><input type="checkbox" data-only="{esc(flag)}"> only '
        f"{esc(flag)} <b>{n}</b></label>\n"
        for flag, n in only
    )
    return (
        '<form class="filters" id="filters">\n'
        f"{boxes}"
        f'<input type="search" id="search" placeholder="search {esc(what)}" '
        'aria-label="search" autocomplete="off">\n'
        '<output id="shown" aria-live="polite"></output>\n'
        "</form>\n"
    )


# -- the diff ------------------------------------------------------------------------------


def diff_site(
    diff: DiffDocument,
    base_tests: Mapping[str, TestRecord] | None = None,
    head_tests: Mapping[str, TestRecord] | None = None,
    source_url: str | None = None,
) -> Site:
    """The site of a diff: ``index.html`` and one page per test that is not unchanged.

    ``base_tests``/``head_tests``: the recordings of those tests, for their call trees; a test
    missing there gets its page without a tree (and says so). ``source_url``: how to link a
    file's line in the repository's web view (``{commit}``, ``{path}``, ``{line}``).
    """
    base_tests = base_tests or {}
    head_tests = head_tests or {}
    site = _assets()
    # Values are named as in the other reports ("value A"), one name per digest for the whole
    # site, given in the document's order so that the same diff names them the same.
    labels = ValueLabels()
    with_page = [t for t in diff.tests if t.status != STATUS_UNCHANGED or t.changes]
    pages = {test.id: page_name(test.id) for test in with_page}
    # Pages link to the previous and next test in the index's order.
    ordered = [t.id for t in _index_order(with_page)]
    around = {
        test_id: (ordered[i - 1] if i else None, ordered[i + 1] if i + 1 < len(ordered) else None)
        for i, test_id in enumerate(ordered)
    }
    for test in with_page:
        base, head = base_tests.get(test.base_id or test.id), head_tests.get(test.id)
        site[pages[test.id]] = _diff_test_page(diff, test, base, head, labels, around[test.id])
    site[INDEX] = _diff_index(diff, pages, labels, source_url)
    return dict(sorted(site.items()))


def _causes_section(diff: DiffDocument, pages: Mapping[str, str]) -> str:
    """Every cause: what changed, in how many tests, with links to a few of them; grouped
    by the code change each descends from when the diff read code changes (a heading row
    per group, its causes under it)."""

    def examples(tests: Sequence[str]) -> str:
        return ", ".join(
            f'<a href="{pages[test]}">{esc(test)}</a>' if test in pages else esc(test)
            for test in tests
        )

    def row(cause: Cause) -> str:
        return (
            f'<tr><td class="num">{cause.tests}</td><td>{esc(cause_text(cause))}</td>'
            f'<td class="first">{examples(cause.examples)}</td></tr>\n'
        )

    groups = cause_groups(diff)
    rows = []
    if groups:
        for group, causes in groups:
            rows.append(
                f'<tr class="cause-group"><td class="num">{group.tests}</td>'
                f"<th>{esc(group_text(group, len(causes)))}</th>"
                f'<td class="first">{examples(group.examples)}</td></tr>\n'
            )
            rows.extend(row(cause) for cause in causes)
        code = sum(1 for group, _ in groups if group.reach == "code")
        title = f"Causes ({len(diff.causes)}) by code change ({code})"
    else:
        rows.extend(row(cause) for cause in diff.causes)
        title = f"Causes ({len(diff.causes)})"
    return (
        f'<section id="causes">\n<h2>{esc(title)}</h2>\n'
        '<table class="causes">\n<thead><tr><th>tests</th><th>what changed</th>'
        "<th>for example</th></tr></thead>\n<tbody>\n" + "".join(rows) + "</tbody></table>\n"
        "</section>\n"
    )


def _diff_index(
    diff: DiffDocument,
    pages: Mapping[str, str],
    labels: ValueLabels,
    source_url: str | None = None,
) -> bytes:
    s = diff.summary
    title = f"diffgenome: {_side(diff.base)} {ARROW} {_side(diff.head)}"
    rows = Counter[str](test.status for test in diff.tests)  # the rows the boxes act on
    statuses = [*STATUS_ORDER, *sorted(set(rows) - set(STATUS_ORDER))]
    counts = [(status, rows[status]) for status in statuses if rows[status]]
    hidden = _HIDDEN_AT_FIRST if any(n for st, n in counts if st not in _HIDDEN_AT_FIRST) else ()
    parts = [
        f"<header>\n<h1>{esc(title)}</h1>\n",
        f'<p class="summary">{esc(summary_text(diff))}</p>\n',
        _runs_line(diff),
        _nav(diff),
        "</header>\n<main>\n",
    ]
    if s.unverified:
        one = s.unverified == 1
        parts.append(
            f'<p class="warn">{esc(_count(s.unverified, "test"))} '
            f"{'is' if one else 'are'} unverified: {'its' if one else 'their'} recordings "
            f"cannot be compared as a whole, so {'it is' if one else 'they are'} never "
            "reported as unchanged.</p>\n"
        )
    if causes_worth_showing(diff):
        parts.append(_causes_section(diff, pages))
    parts.append('<section id="tests-section">\n<h2>Tests</h2>\n')
    parts.append(_filters(counts, "test ids and changes", hidden))
    parts.append(
        '<table id="tests" class="tests">\n<thead><tr><th>test</th><th>status</th>'
        "<th>outcome</th><th>changes</th><th>first change or reason</th></tr></thead>\n<tbody>\n"
    )
    for test in _index_order(diff.tests):
        name = pages.get(test.id)
        label = f'<a href="{name}">{esc(test.id)}</a>' if name else esc(test.id)
        first = (
            "structure: " + test.structure[0]
            if test.structure and test.status == STATUS_RESTRUCTURED
            else describe(test.changes[0], labels)
            if test.changes
            else labels.rewrite((test.reasons or [""])[0])
        )
        parts.append(
            f'<tr data-status="{esc(test.status)}"><td class="id">{label}</td>'
            f"<td>{_badge(test.status)}</td><td>{esc(_outcome(test))}</td>"
            f'<td class="num">{len(test.changes)}</td><td class="first">{esc(first)}</td></tr>\n'
        )
    parts.append("</tbody>\n</table>\n")
    if not diff.tests:
        parts.append('<p class="empty">no tests</p>\n')
    parts.append("</section>\n")
    parts.append(_code_section(diff, pages, source_url))
    parts.append(_drift_section(diff, pages))
    parts.append("</main>\n")
    return _page(title, "".join(parts), root="", kind="index")


def _index_order(tests: Sequence[TestDiff]) -> list[TestDiff]:
    """In the reading order of every report (tests that now fail, behaviour changed, ...,
    same behaviour last), then by id."""
    return sorted(tests, key=lambda t: (tier(t), t.id))


def _runs_line(diff: DiffDocument) -> str:
    """Each side's run and the core that recorded it (the pure-Python one with its reason)."""
    runs = []
    for name, side in (("base", diff.base), ("head", diff.head)):
        core = {"c": ", compiled core", "python": f", pure-Python core: {side.core_reason}"}
        runs.append(f"{name} run {side.run}{core.get(side.core or '', '')}")
    return f'<p class="meta">{esc("; ".join(runs))}</p>\n'


def _nav(diff: DiffDocument) -> str:
    links = ['<a href="#tests-section">tests</a>']
    if diff.code_changes:
        gaps = sum(1 for entry in diff.code_changes if entry.gaps)
        links.append(
            f'<a href="#code">code changes ({len(diff.code_changes)}'
            + (f", {gaps} with gaps" if gaps else "")
            + ")</a>"
        )
    if diff.drift:
        links.append(f'<a href="#drift">mock drift ({len(diff.drift)})</a>')
    return "<nav>" + " · ".join(links) + "</nav>\n"


def _outcome(test: TestDiff) -> str:
    base, head = test.outcome.base, test.outcome.head
    if base == head:
        return base or "-"
    return f"{base or '-'} {ARROW} {head or '-'}"


def _gap_words(gap: Gap) -> str:
    """A gap's words, its predicate as code."""
    if gap.predicate and gap.text.startswith(OUTCOME_GAP):
        head, _, outcome = gap.text.rpartition(" ")
        return f"{esc(head)} <code>{esc(gap.predicate)}</code> {esc(outcome)}"
    return esc(gap.text)


def _place(gap: Gap, source_url: str | None) -> str:
    """Where a gap is (``tab/core.py:118``), linked to that line when the report knows how."""
    place = gap.place()
    if place is None:
        return ""
    url = gap.url(source_url)
    shown = f"<code>{esc(place)}</code>"
    if url and url.startswith(("https://", "http://")):
        shown = f'<a href="{esc(url)}">{shown}</a>'
    return f' <span class="place">at {shown}</span>'


def _code_section(
    diff: DiffDocument, pages: Mapping[str, str], source_url: str | None = None
) -> str:
    entries = diff.code_changes
    if not entries:
        return ""
    parts = [
        f'<section id="code">\n<h2>Code changes ({len(entries)})</h2>\n',
        '<p class="help">Changed symbols, the tests that ran them on each side, their changed '
        "decisions with the outcomes each side observed, and the gaps: changed code without "
        "test evidence.</p>\n",
    ]
    for entry in entries:
        cls = "code-change has-gaps" if entry.gaps else "code-change"
        parts.append(
            f'<article class="{cls}">\n<h3><code>{esc(entry.symbol)}</code> '
            f"{_badge(entry.change)}</h3>\n"
            f'<p class="meta">ran in {esc(_count(len(entry.tests_base), "test"))} on base, '
            f"{esc(_count(len(entry.tests_head), 'test'))} on head</p>\n"
        )
        if entry.gaps:
            parts.append('<ul class="gaps">\n')
            parts.extend(
                f"<li>{_gap_words(gap)}{_place(gap, source_url)}</li>\n"
                for gap in gaps_of(entry, diff)
            )
            parts.append("</ul>\n")
        if entry.sites:
            parts.append(
                '<table class="sites"><thead><tr><th>decision</th><th>change</th>'
                "<th>base</th><th>head</th></tr></thead>\n<tbody>\n"
            )
            for site in entry.sites:
                predicate = site.get("predicate")
                pred = f" <code>{esc(predicate)}</code>" if predicate else ""
                parts.append(
                    f"<tr><td>{esc(site.get('site'))}{pred}</td><td>{esc(site.get('change'))}</td>"
                    f"<td>{esc(_outcomes(site.get('base')))}</td>"
                    f"<td>{esc(_outcomes(site.get('head')))}</td></tr>\n"
                )
            parts.append("</tbody>\n</table>\n")
        parts.append(_test_list("tests on head", entry.tests_head, pages))
        parts.append("</article>\n")
    parts.append("</section>\n")
    return "".join(parts)


def _test_list(title: str, tests: Sequence[str], pages: Mapping[str, str], limit: int = 50) -> str:
    """Test ids, each linked to its page when it has one."""
    if not tests:
        return ""
    items = "".join(
        f'<li><a href="{pages[test]}">{esc(test)}</a></li>'
        if test in pages
        else f"<li>{esc(test)}</li>"
        for test in tests[:limit]
    )
    more = f"<li>… and {len(tests) - limit} more</li>" if len(tests) > limit else ""
    return (
        f"<details><summary>{esc(title)} ({len(tests)})</summary>"
        f'<ul class="ids">{items}{more}</ul></details>\n'
    )


def _drift_section(diff: DiffDocument, pages: Mapping[str, str]) -> str:
    if not diff.drift:
        return ""
    parts = [f'<section id="drift">\n<h2>Mock drift ({len(diff.drift)})</h2>\n']
    for drift in diff.drift:
        parts.append(
            f'<article class="drift"><h3>stand-in for <code>{esc(drift.claimed_target)}</code>'
            "</h3>\n<ul>"
            + "".join(f"<li>{esc(item)}</li>" for item in drift.evidence)
            + "</ul>\n"
            + _test_list("used by", drift.tests, pages)
            + "</article>\n"
        )
    parts.append("</section>\n")
    return "".join(parts)


def _outcomes(value: object) -> str:
    if not isinstance(value, Mapping):
        return "not reached"
    return f"true {value.get('true', 0)} / false {value.get('false', 0)}"


# -- one test of the diff ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Marks:
    """What to highlight in one side's tree: changed nodes and decisions, by identity."""

    nodes: Mapping[str, Mapping[tuple[str, ...], str]]  # phase -> path -> css class
    branches: Mapping[str, Mapping[tuple[tuple[str, ...], str], str]]  # (path, site) -> class
    #: Symbols of code that exists on this side only (a refactor's new or gone helpers):
    #: their calls are structure, drawn apart from what changed.
    moved: frozenset[str] = frozenset()


_ONE_SIDED = {
    CALL_ADDED: "head",
    STAND_IN_ADDED: "head",
    EGRESS_ADDED: "head",
    CALL_REMOVED: "base",
    STAND_IN_REMOVED: "base",
    EGRESS_REMOVED: "base",
}


def _one_sided_symbols(diff: DiffDocument, side: str) -> frozenset[str]:
    wanted = CODE_ADDED if side == "head" else CODE_REMOVED
    return frozenset(entry.symbol for entry in diff.code_changes if entry.change == wanted)


def _marks(changes: Sequence[Change], side: str, moved: frozenset[str] = frozenset()) -> _Marks:
    nodes: dict[str, dict[tuple[str, ...], str]] = defaultdict(dict)
    branches: dict[str, dict[tuple[tuple[str, ...], str], str]] = defaultdict(dict)
    for change in changes:
        phase = change.phase or "call"
        path = tuple(change.path)
        if change.kind == BRANCH_CHANGED:
            # A decision reached on one side only is new or gone, like a call.
            if change.base is None or change.head is None:
                if (change.base is None) == (side == "head"):
                    branches[phase][(path, change.site or "")] = "add" if side == "head" else "del"
            else:
                branches[phase][(path, change.site or "")] = "chg"
            continue
        if not path:
            continue
        one_side = _ONE_SIDED.get(change.kind)
        if one_side is None:
            nodes[phase].setdefault(path, "chg")
        elif one_side == side:
            nodes[phase][path] = "add" if side == "head" else "del"
    return _Marks(nodes=dict(nodes), branches=dict(branches), moved=moved)


def _diff_test_page(
    diff: DiffDocument,
    test: TestDiff,
    base: TestRecord | None,
    head: TestRecord | None,
    labels: ValueLabels,
    around: tuple[str | None, str | None] = (None, None),
) -> bytes:
    title = test.id
    steps = "".join(
        f' · <a href="../{page_name(other)}" rel="{rel}" title="{esc(other)}">{word}</a>'
        for other, rel, word in ((around[0], "prev", "← previous"), (around[1], "next", "next →"))
        if other is not None
    )
    parts = [
        f'<header>\n<p class="crumb"><a href="../{INDEX}">↑ all tests</a>{steps} · '
        f"{esc(_side(diff.base))} {ARROW} {esc(_side(diff.head))}</p>\n",
        f'<h1 class="id">{esc(test.id)}</h1>\n',
        f"<p>{_badge(test.status)} outcome {esc(_outcome(test))} · "
        f"{esc(_count(len(test.changes), 'change'))}</p>\n",
        "</header>\n<main>\n",
    ]
    if test.reasons:
        parts.append('<section id="reasons"><h2>Reasons</h2>\n<ul class="reasons">\n')
        parts.extend(f"<li>{esc(labels.rewrite(reason))}</li>\n" for reason in test.reasons)
        parts.append("</ul></section>\n")
    if test.structure:
        parts.append('<section id="structure"><h2>Structure</h2>\n<ul class="structure">\n')
        parts.extend(f"<li>{esc(moved)}</li>\n" for moved in test.structure)
        parts.append("</ul></section>\n")
    if test.changes:
        parts.append(_changes_table(test.changes, labels))
    parts.append(
        '<section id="trees">\n<h2>Call trees</h2>\n'
        '<p class="tools"><button type="button" data-expand="open">expand all</button> '
        '<button type="button" data-expand="close">collapse all</button> '
        '<span class="legend"><span class="chg">changed</span> <span class="add">only on '
        'head</span> <span class="del">only on base</span> <span class="moved">code on one '
        "side only (structure)</span></span></p>\n"
        '<div class="sides">\n'
    )
    sides = {"base": base, "head": head}
    marks = {
        side: _marks(
            test.changes, side, _one_sided_symbols(diff, side) if test.structure else frozenset()
        )
        for side in sides
    }
    # Both trees open at the same nodes: what leads to a change on either side is opened on
    # both (before: base stayed collapsed where only head had the new call).
    opened: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for side, record in sides.items():
        if record is not None:
            for phase, found in _opened(record, marks[side]).items():
                opened[phase] |= found
    for side, record in sides.items():
        parts.append(f'<div class="side" data-side="{side}">\n<h3>{side}</h3>\n')
        if record is None:
            missing = {
                STATUS_ADDED: "the test does not exist on the base side",
                STATUS_REMOVED: "the test does not exist on the head side",
            }
            gone = (test.status == STATUS_ADDED and side == "base") or (
                test.status == STATUS_REMOVED and side == "head"
            )
            note = missing[test.status] if gone else "recording not available"
            parts.append(f'<p class="empty">{esc(note)}</p>\n')
        else:
            parts.append(_record_tree(record, marks[side], opened))
        parts.append("</div>\n")
    parts.append("</div>\n</section>\n</main>\n")
    return _page(title, "".join(parts), root="../", kind="test")


def _changes_table(changes: Sequence[Change], labels: ValueLabels) -> str:
    parts = [
        f'<section id="changes"><h2>Changes ({len(changes)})</h2>\n'
        '<table class="changes"><thead><tr><th>where</th><th>change</th><th>base</th>'
        "<th>head</th></tr></thead>\n<tbody>\n"
    ]
    # Look-alike lines (one function reached from two callers) say where each is.
    described = describe_each(changes, labels)
    for change, line in zip(changes, described, strict=True):
        place = where(change)
        if change.kind == BRANCH_CHANGED:
            place = change.site or "?"
            if change.predicate:
                place += f" `{change.predicate}`"
        full = " \u203a ".join(change.path)
        parts.append(
            f'<tr class="k-{esc(change.kind)}"><td class="where" title="{esc(full)}">'
            f"<code>{esc(place)}</code></td>"
            f'<td>{esc(change.kind.replace("_", " "))}<div class="line">{esc(line)}'
            f'</div></td><td class="base">{_value(change.kind, change.base, labels)}</td>'
            f'<td class="head">{_value(change.kind, change.head, labels)}</td></tr>\n'
        )
    parts.append("</tbody>\n</table>\n</section>\n")
    return "".join(parts)


def _value(kind: str, value: object, labels: ValueLabels) -> str:
    """One side of a change, as escaped HTML: lists as lines, mappings as ``key value``."""
    if value is None:
        return '<span class="none">—</span>'
    if kind == BRANCH_CHANGED:
        return esc(_outcomes(value))
    if kind == CALL_COUNT_CHANGED:
        return esc(f"{TIMES}{value}")
    if kind in EFFECT_KINDS and isinstance(value, list):
        # What was printed, logged, written: as the terminal says it, never as raw JSON.
        shown = [effect_text(e, labels) for e in value if isinstance(e, Mapping)]
        return "<br>".join(esc(line) for line in shown) or '<span class="none">none</span>'
    lines = _lines(value, labels)
    return "<br>".join(esc(line) for line in lines) if lines else '<span class="none">none</span>'


def _lines(value: object, labels: ValueLabels) -> list[str]:
    if isinstance(value, str | int | float | bool):
        return [str(value)]
    if isinstance(value, Sequence):
        out: list[str] = []
        for item in value:
            if isinstance(item, Mapping) and "shape" in item:
                out.append(value_text(item, labels))
            elif isinstance(item, Mapping) and "overflow" in item:
                out.append(f"+{item['overflow']} more")
            elif isinstance(item, Mapping) and "bucket" in item:
                out.append(f"{item.get('when')} {item.get('target')}={item.get('bucket')}")
            elif isinstance(item, Mapping) and "category" in item:
                out.append(warning_text(item))
            else:
                out.append(_compact(item))
        return out
    if isinstance(value, Mapping):
        return [f"{key}: {_flat(item)}" for key, item in sorted(value.items(), key=_by_key)]
    return [_compact(value)]


def _by_key(item: tuple[object, object]) -> str:
    return str(item[0])


def _flat(value: object) -> str:
    """A mapping of counts (exits, outcomes) as ``key n, key n``; anything else compact."""
    if isinstance(value, Mapping) and all(isinstance(v, int) for v in value.values()):
        return ", ".join(f"{key} {count}" for key, count in sorted(value.items(), key=_by_key))
    return _compact(value)


def _compact(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


# -- call trees ----------------------------------------------------------------------------


def _opened(record: TestRecord, marks: _Marks) -> dict[str, set[tuple[str, ...]]]:
    """By phase, the nodes of ``record``'s tree that are open: those on the way to what
    ``marks`` marks (a change, a decision that changed, a call of one-sided code)."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for phase, genome in record.phases.items():
        index = index_phase(genome.model_dump(mode="json"))
        on_way: set[tuple[str, ...]] = set()
        for path in marks.nodes.get(phase, {}):
            on_way.update(path[:cut] for cut in range(1, len(path) + 1))
        if marks.moved:
            for path, node in index.nodes.items():
                if node.get("symbol") in marks.moved:
                    on_way.update(path[:cut] for cut in range(1, len(path)))
        for path, _site in marks.branches.get(phase, {}):  # inside the node: open it too
            on_way.update(path[:cut] for cut in range(1, len(path) + 1))
        out[phase] = on_way
    return out


def _record_tree(
    record: TestRecord,
    marks: _Marks | None = None,
    opened: Mapping[str, set[tuple[str, ...]]] | None = None,
) -> str:
    parts: list[str] = []
    if not record.verified:
        parts.append('<ul class="reasons unverified">')
        parts.extend(
            f"<li>unverified: {esc(reason)}</li>"
            for reason in record.unverified_reasons or [STATUS_UNVERIFIED]
        )
        parts.append("</ul>\n")
    rank = {phase: i for i, phase in enumerate(PHASES)}
    phases = sorted(record.phases.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))
    if not phases:
        parts.append('<p class="empty">no phases recorded</p>\n')
    for phase, genome in phases:
        raw = genome.model_dump(mode="json")
        marked = marks.nodes.get(phase, {}) if marks else {}
        marked_branches = marks.branches.get(phase, {}) if marks else {}
        size = len(genome.nodes)
        is_open = " open" if genome.nodes or genome.branches else ""
        parts.append(
            f'<details class="phase"{is_open}><summary><b>{esc(phase)}</b> '
            f'<span class="dim">{esc(_count(size, "node"))}, '
            f"{esc(_count(len(genome.branches), 'decision'))}</span></summary>\n"
        )
        moved = marks.moved if marks else frozenset()
        index = index_phase(raw)
        is_opened = (opened or {}).get(phase)
        if is_opened is None and marks is not None:
            is_opened = _opened(record, marks).get(phase, set())
        parts.append(_phase_tree(index, marked, marked_branches, moved, is_opened or set(), phase))
        parts.append("</details>\n")
    if record.warnings:
        parts.append('<details class="warnings"><summary>warnings</summary><ul>')
        parts.extend(
            f"<li>{esc(warning_text(w.model_dump(mode='json')))}</li>" for w in record.warnings
        )
        parts.append("</ul></details>\n")
    if record.effects or record.effects_unrecorded:
        parts.append('<details class="effects"><summary>effects</summary><ul>')
        parts.extend(
            f"<li>[{esc(e.phase)}] {esc(effect_text(e.model_dump(mode='json', exclude_none=True)))}"
            "</li>"
            for e in record.effects or ()
        )
        parts.extend(f"<li>not seen: {esc(why)}</li>" for why in record.effects_unrecorded)
        parts.append("</ul></details>\n")
    return "".join(parts)


def _phase_tree(
    index: PhaseIndex,
    marked: Mapping[tuple[str, ...], str],
    marked_branches: Mapping[tuple[tuple[str, ...], str], str],
    moved: frozenset[str] = frozenset(),
    opened: set[tuple[str, ...]] | None = None,
    phase: str = "call",
) -> str:
    """Nested ``<details>`` per node with children, in the recorded order, open at
    ``opened`` (the way to a change on either side, so that both trees open alike);
    decisions under the node they were taken in; calls of one-sided code (``moved``) drawn as
    structure. Each node and decision carries ``data-key`` (its phase and call path, as a
    digest), which is the same in both trees: the page keeps them open and scrolled alike."""
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
    for path in index.nodes:
        children[path[:-1]].append(path)
    decisions: dict[tuple[str, ...], list[tuple[str, Mapping[str, object]]]] = defaultdict(list)
    for (path, site), branch in index.branches.items():
        decisions[path if path in index.nodes else ()].append((site, branch))
    if opened is None:
        opened = set()
        for path in marked:
            opened.update(path[:cut] for cut in range(1, len(path) + 1))
        for path, _site in marked_branches:
            opened.update(path[:cut] for cut in range(1, len(path) + 1))
    on_way = opened
    if not index.nodes and not index.branches:
        return '<p class="empty">nothing recorded</p>\n'

    out: list[str] = ['<ul class="tree">\n']
    out.extend(_decision(site, b, (), marked_branches, phase) for site, b in decisions[()])
    # (path, closing) items: closing=True closes the node opened for path.
    stack: list[tuple[tuple[str, ...], bool]] = [(p, False) for p in reversed(children[()])]
    while stack:
        path, closing = stack.pop()
        if closing:
            out.append("</ul></details></li>\n")
            continue
        node = index.nodes[path]
        cls = marked.get(path) or ("moved" if node.get("symbol") in moved else "")
        label = _node_label(node)
        kids = children.get(path, [])
        mine = decisions.get(path, [])
        key = _key(phase, path)
        attr = f' class="node {cls}"' if cls else ' class="node"'
        if not kids and not mine:
            out.append(f'<li><span{attr} data-key="{key}">{label}</span></li>\n')
            continue
        is_open = " open" if len(path) == 1 or path in on_way else ""
        out.append(
            f'<li><details{is_open} data-key="{key}"><summary><span{attr} data-key="{key}">'
            f"{label}</span></summary><ul>\n"
        )
        out.extend(_decision(site, b, path, marked_branches, phase) for site, b in mine)
        stack.append((path, True))
        stack.extend((child, False) for child in reversed(kids))
    out.append("</ul>\n")
    return "".join(out)


def _node_label(node: Mapping[str, object]) -> str:
    kind = node.get("type")
    count = node.get("count")
    if kind == "substitution":
        target = node.get("claimed_target") or "an unknown target"
        text = (
            f'<span class="sub">⇄ stand-in {esc(node.get("mechanism"))}</span> for '
            f"<code>{esc(target)}</code> ({esc(node.get('relation'))}) {TIMES}{esc(count)}"
        )
        details = [f"by {node.get('substitute')}"]
        if node.get("signature_mismatch"):
            text += ' <span class="bad">signature mismatch</span>'
        return text + f' <span class="dim">{esc(" · ".join(details))}</span>'
    if kind == "os_event":
        outcome = str(node.get("outcome"))
        cls = "bad" if outcome.startswith("refused") else "os"
        return (
            f'<span class="{cls}">{esc(node.get("kind"))} {esc(node.get("target"))} '
            f"{esc(outcome)}</span> {TIMES}{esc(count)}"
        )
    symbol = element(node)
    exits = node.get("exits")
    details = (
        [f"{key} {value}" for key, value in sorted(exits.items())]
        if isinstance(exits, Mapping)
        else []
    )
    for name in ("args", "results"):
        values = node.get(name)
        if isinstance(values, list) and values:
            details.append(f"{name} {len(values)}")
    return (
        f"<code>{esc(symbol)}</code> {TIMES}{esc(count)}"
        f' <span class="dim">{esc(" · ".join(details))}</span>'
    )


def _key(phase: str, path: tuple[str, ...], site: str = "") -> str:
    """A node's (or a decision's) name on both trees of a test page: the same call path
    has the same key on base and head."""
    text = "\x1f".join((phase, *path, site))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _decision(
    site: str,
    branch: Mapping[str, object],
    path: tuple[str, ...],
    marked: Mapping[tuple[tuple[str, ...], str], str],
    phase: str = "call",
) -> str:
    symbol = str(branch.get("symbol") or "")
    short = site[len(symbol) + 1 :] if symbol and site.startswith(symbol + "/") else site
    outcomes = branch.get("outcomes")
    one_sided = isinstance(outcomes, Mapping) and not (
        outcomes.get("true") and outcomes.get("false")
    )
    mark = marked.get((path, site))
    cls = f"decision {mark}" if mark else "decision"
    counts = esc(_outcomes(outcomes))
    # One way only is not a change: drawn as plain text (amber is for what changed).
    shown = f'<span class="one-sided">{counts}</span>' if one_sided else counts
    key = _key(phase, path, site)
    return (
        f'<li class="d"><span class="{cls}" data-key="{key}">◇ {esc(short)} '
        f'<code class="predicate">{esc(branch.get("predicate"))}</code>: {shown}</span></li>\n'
    )


# -- one run -------------------------------------------------------------------------------


def run_site(run: Run, tests: Sequence[TestRecord]) -> Site:
    """The site of one recorded run: an index of its tests by outcome, a page per test."""
    site = _assets()
    pages: dict[str, str] = {}
    for test in tests:
        name = page_name(test.id)
        if name in site:
            continue
        pages[test.id] = name
        site[name] = _run_test_page(run, test)
    site[INDEX] = _run_index(run, tests, pages)
    return dict(sorted(site.items()))


def _run_title(run: Run) -> str:
    commit = f" at {run.commit[:12]}{'*' if run.dirty else ''}" if run.commit else ""
    return f"diffgenome run {run.id}{commit}"


def _run_meta(run: Run) -> str:
    text = f"started {run.started_at} · {run.python} · {run.platform}"
    parts = [f'<p class="meta">{esc(text)}</p>\n']
    if not run.complete:
        parts.extend(
            f'<p class="warn">incomplete: {esc(reason)}</p>\n'
            for reason in run.incomplete_reasons or ["incomplete"]
        )
    return "".join(parts)


def _run_index(run: Run, tests: Sequence[TestRecord], pages: Mapping[str, str]) -> bytes:
    title = _run_title(run)
    by_outcome: dict[str, int] = defaultdict(int)
    for test in tests:
        by_outcome[test.outcome] += 1
    order = list(OUTCOMES) + sorted(set(by_outcome) - set(OUTCOMES))
    counts = [(outcome, by_outcome[outcome]) for outcome in order if by_outcome.get(outcome)]
    unverified = sum(1 for test in tests if not test.verified)
    parts = [
        f"<header>\n<h1>{esc(title)}</h1>\n",
        f'<p class="summary">{esc(_count(len(tests), "test"))}: '
        + esc(", ".join(f"{n} {outcome}" for outcome, n in counts))
        + (esc(f"; {unverified} unverified") if unverified else "")
        + "</p>\n",
        _run_meta(run),
        '</header>\n<main>\n<section id="tests-section">\n<h2>Tests</h2>\n',
        _filters(counts, "test ids", only=[(STATUS_UNVERIFIED, unverified)] if unverified else []),
        '<table id="tests" class="tests">\n<thead><tr><th>test</th><th>outcome</th>'
        "<th>verified</th><th>calls</th></tr></thead>\n<tbody>\n",
    ]
    rank = {outcome: i for i, outcome in enumerate(order)}
    for test in sorted(tests, key=lambda t: (rank[t.outcome], t.id)):
        name = pages.get(test.id)
        label = f'<a href="{name}">{esc(test.id)}</a>' if name else esc(test.id)
        verified = "yes" if test.verified else "no: " + "; ".join(test.unverified_reasons or ["?"])
        calls = sum(len(genome.nodes) for genome in test.phases.values())
        parts.append(
            f'<tr data-status="{esc(test.outcome)}"{"" if test.verified else " data-unverified"}>'
            f'<td class="id">{label}</td><td>{_badge(test.outcome)}</td>'
            f'<td class="{"" if test.verified else "bad"}">{esc(verified)}</td>'
            f'<td class="num">{calls}</td></tr>\n'
        )
    parts.append("</tbody>\n</table>\n</section>\n</main>\n")
    return _page(title, "".join(parts), root="", kind="index")


def _run_test_page(run: Run, test: TestRecord) -> bytes:
    parts = [
        f'<header>\n<p class="crumb"><a href="../{INDEX}">↑ all tests</a> · '
        f"{esc(_run_title(run))}</p>\n",
        f'<h1 class="id">{esc(test.id)}</h1>\n<p>{_badge(test.outcome)}</p>\n',
        "</header>\n<main>\n",
        '<section id="trees">\n<h2>Call tree</h2>\n'
        '<p class="tools"><button type="button" data-expand="open">expand all</button> '
        '<button type="button" data-expand="close">collapse all</button></p>\n'
        '<div class="side">\n',
        _record_tree(test),
        "</div>\n</section>\n</main>\n",
    ]
    return _page(test.id, "".join(parts), root="../", kind="test")


# -- writing -------------------------------------------------------------------------------


def write_site(site: Mapping[str, bytes], directory: str) -> str:
    """Write ``site`` under ``directory`` (created when missing; files of an earlier report
    there are replaced, its pages of tests no longer in it are removed) and return the path of
    its index. Any failure is a :class:`SiteError` naming the folder."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise SiteError(
            f"cannot write the HTML report: {directory} is not a folder; pass --html DIR"
        )
    try:
        os.makedirs(directory, exist_ok=True)
        pages = os.path.join(directory, PAGE_DIR)
        if os.path.isdir(pages):
            wanted = {os.path.basename(name) for name in site if name.startswith(PAGE_DIR + "/")}
            for old in os.listdir(pages):
                if _PAGE_FILE.fullmatch(old) and old not in wanted:
                    os.unlink(os.path.join(pages, old))
        for name, data in site.items():
            path = os.path.join(directory, *name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with output_file(path) as handle:
                handle.write(data)
    except OSError as exc:
        raise SiteError(
            f"cannot write the HTML report to {directory}: {exc.strerror or exc}; "
            "pass another --html DIR"
        ) from None
    return os.path.join(directory, INDEX)
