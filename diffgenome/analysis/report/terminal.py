"""The diff in a terminal: the verdict first, then one block per test, most relevant first.

Everything recorded (ids, symbols, predicates) goes into ``Text`` objects, never into markup,
so brackets in test ids stay literal. By default long lists collapse to ``... and K more``,
each saying how to see what it hides (``--test PATTERN``, ``--all``), so that a diff of
thousands of tests still fits a screen; a selection shows its tests whole.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from diffgenome.analysis.diff.describe import ValueLabels, describe_each
from diffgenome.analysis.models import Cause, CauseGroup, DiffDocument
from diffgenome.analysis.report.common import (
    DEFAULT_SELECTION,
    Block,
    Selection,
    cause_groups,
    cause_text,
    causes_worth_showing,
    count,
    failing_text,
    fold_imported,
    gaps_of,
    gate_text,
    group_text,
    imported_text,
    outcome_text,
    renamed_line,
    side_text,
    summary_text,
    test_blocks,
)
from diffgenome.protocol.vocab import (
    STATUS_ADDED,
    STATUS_CHANGED,
    STATUS_REMOVED,
    STATUS_RESTRUCTURED,
    STATUS_TOUCHED,
    STATUS_UNCHANGED,
    STATUS_UNSTABLE,
    STATUS_UNVERIFIED,
)

_STATUS_STYLE = {
    STATUS_CHANGED: "yellow",
    STATUS_UNVERIFIED: "red",
    STATUS_UNSTABLE: "magenta",
    STATUS_TOUCHED: "cyan",
    STATUS_RESTRUCTURED: "blue",
    STATUS_ADDED: "green",
    STATUS_REMOVED: "red",
    STATUS_UNCHANGED: "green",
}
ELLIPSIS = "\u2026"
#: Shown with the tests that reach the changed code.
REACHES = "reaches the changed code"
#: Its own file's code that the test runs was edited (common.Block.test_code_edited).
TEST_CODE_EDITED = "its test code was edited"


def _more(hidden: int, what: str, indent: str = "  ", how: str = "") -> Text:
    """``… and 3 more lines``; one is ``1 more line``."""
    if hidden == 1 and what.endswith("s"):
        what = what[:-1]
    return Text(f"{indent}{ELLIPSIS} and {hidden} more {what}{how}", style="dim")


def _block(
    block: Block, labels: ValueLabels, max_lines: int | None, *, reasons_first: bool = False
) -> list[Text]:
    test = block.test
    title = Text.assemble(
        "  ", (test.id, "bold"), "  ", (test.status, _STATUS_STYLE.get(test.status, ""))
    )
    outcome = outcome_text(test)
    if outcome:
        title.append(f"  {outcome}")
    if block.reaches_changed_code:
        title.append(f"  \u00b7 {REACHES}", style="cyan")
    if block.test_code_edited:
        title.append(f"  \u00b7 {TEST_CODE_EDITED}", style="cyan")
    lines = [Text("    " + renamed_line(test.base_id))] if test.base_id else []
    reasons = [Text("    " + labels.rewrite(reason), style="dim") for reason in block.reasons]
    if reasons_first:  # a short block: what explains its changes (cross-test state) first
        lines += reasons
    lines += [Text("    structure: " + moved, style="blue") for moved in test.structure]
    lines += [Text("    " + line) for line in describe_each(block.changes, labels)]
    if not reasons_first:
        lines += reasons
    shown = lines if max_lines is None else lines[:max_lines]
    out = [title, *shown]
    if len(lines) > len(shown):
        out.append(_more(len(lines) - len(shown), "lines", "    ", f" (--test {_quoted(test.id)})"))
    return out


def _quoted(test_id: str) -> str:
    """The id as one shell word, for the hint that shows it whole."""
    return "'" + test_id.replace("'", "'\\''") + "'"


#: Lines shown per test changed only inside the project, collapsed.
INSIDE_LINES = 3


def _alarming(diff: DiffDocument) -> bool:
    return any(t.status == STATUS_UNVERIFIED and t.may_hide_change for t in diff.tests)


def render_terminal(
    diff: DiffDocument,
    *,
    max_tests: int = 20,
    max_changes: int = 10,
    selection: Selection = DEFAULT_SELECTION,
    fail_on: str | None = None,
) -> RenderableType:
    """``max_tests``: test blocks shown; ``max_changes``: lines shown per test; neither limit
    applies to a ``selection`` with a pattern or ``everything``. ``fail_on``: the gate's
    ``--fail-on``, for the first line to say when it fails only on added tests."""
    parts: list[RenderableType] = []
    headline = Text.assemble(
        ("diffgenome ", "bold"),
        f"{side_text(diff.base)} \u2192 {side_text(diff.head)}: ",
        (failing_text(diff), "bold red"),
        # Red only where missing evidence could hide a change (the default gate fails on
        # it): ``<import>`` unverified because a conftest imported the package is no alarm.
        (summary_text(diff), "bold red" if _alarming(diff) else "bold"),
    )
    gate = gate_text(diff, fail_on)
    if gate:
        headline.append(f"; {gate}", style="bold yellow")
    parts.append(headline)

    if selection.pattern is None and causes_worth_showing(diff):
        parts.append(Text(""))
        groups = cause_groups(diff)
        if groups:
            parts.extend(_grouped_causes(diff, groups, selection.collapses))
        else:
            parts.append(Text(f"causes ({len(diff.causes)})", style="bold"))
            listed = diff.causes[:max_tests] if selection.collapses else diff.causes
            for cause in listed:
                parts.append(_cause_line(cause, "  "))
            if len(diff.causes) > len(listed):
                hidden = len(diff.causes) - len(listed)
                parts.append(_more(hidden, "causes", how=" (--all, --json)"))

    labels = ValueLabels()
    blocks = test_blocks(diff, selection)
    if selection.pattern is not None and not blocks:
        parts.append(Text(f"no test matches {selection.pattern!r}", style="dim"))
    collapse = selection.collapses
    if selection.pattern is not None:
        parts.append(Text(""))
        for block in blocks:
            parts.extend(_block(block, labels, None))
        return Group(*parts)
    loud = [block for block in blocks if not block.quiet and not block.inside]
    inside = [block for block in blocks if block.inside]
    quiet = [block for block in blocks if block.quiet]
    parts.extend(_loud_blocks(loud, labels, max_tests, max_changes, collapse))
    if not collapse:  # --all: nothing below is cut either
        max_tests = max_changes = 1 << 62

    if diff.drift:
        parts.append(Text(""))
        parts.append(Text(f"mock drift ({len(diff.drift)})", style="bold magenta"))
        for drift in diff.drift[:max_tests]:
            few = 3 if collapse else len(drift.tests)
            users = ", ".join(drift.tests[:few]) + (
                f" and {len(drift.tests) - few} more" if len(drift.tests) > few else ""
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
            for gap in gaps_of(entry, diff)[:max_changes]:
                place = gap.place()
                parts.append(Text(f"    {gap.words()}" + (f"  {place}" if place else "")))
            if len(entry.gaps) > max_changes:
                parts.append(_more(len(entry.gaps) - max_changes, "gaps", "    "))
        if len(gaps) > max_tests:
            parts.append(_more(len(gaps) - max_tests, "symbols"))
    if inside:
        parts.append(Text(""))
        parts.append(
            Text(
                f"changed only inside the project, results at the tests equal ({len(inside)})",
                style="bold cyan",
            )
        )
        shown = inside[:max_tests]
        for block in shown:
            # The causes above say what changed inside: by default a few lines each.
            parts.extend(
                _block(block, labels, INSIDE_LINES if collapse else None, reasons_first=True)
            )
        if len(inside) > len(shown):
            parts.append(_more(len(inside) - len(shown), "tests", how=" (--all shows every test)"))
    if quiet:
        kinds = ", ".join(
            f"{n} {status}"
            for status in (STATUS_RESTRUCTURED, STATUS_TOUCHED, STATUS_UNSTABLE, STATUS_UNCHANGED)
            if (n := sum(1 for block in quiet if block.test.status == status))
        )
        parts.append(Text(""))
        parts.append(Text(f"same behaviour ({kinds})", style="bold blue"))
        shown = quiet[:max_tests]
        for block in shown:
            # The causes above say what moved: by default a quiet test is its title line.
            lines = _block(block, labels, None)
            parts.extend(lines if not collapse else lines[:1])
        if len(quiet) > len(shown):
            parts.append(_more(len(quiet) - len(shown), "tests", how=" (--all shows every test)"))
        if collapse:
            parts.append(
                Text("  (--test ID shows one of them whole, --all every one)", style="dim")
            )
    return Group(*parts)


def _examples(examples: list[str], tests: int) -> str:
    shown = ", ".join(examples[:2])
    more = tests - min(2, len(examples))
    return f"  e.g. {shown}{f' and {more} more' if more > 0 else ''}"


def _cause_line(cause: Cause, indent: str) -> Text:
    line = Text(f"{indent}{cause_text(cause)}")
    line.append(_examples(cause.examples, cause.tests), style="dim")
    return line


#: The lines the causes take on the first screen (about 25 lines with the summary line and
#: the headings), and the causes shown under each code change there.
SCREEN_LINES = 21
CAUSES_PER_GROUP = 2


def _grouped_causes(
    diff: DiffDocument, groups: list[tuple[CauseGroup, list[Cause]]], collapse: bool
) -> list[RenderableType]:
    """The causes by code change: one heading per changed symbol (what changed in its code,
    how many tests, a few of them), its most telling causes under it, then the causes that
    reach several code changes and those that reach none. Collapsed, it fits the first screen
    (:data:`SCREEN_LINES`) and says what it leaves out; ``--all`` lists every cause."""
    heading = f"causes ({len(diff.causes)}) by code change"
    code = sum(1 for group, _ in groups if group.reach == "code")
    parts: list[RenderableType] = [Text(f"{heading} ({code})", style="bold")]
    folded: list[CauseGroup] = []
    if collapse:
        groups, folded = fold_imported(groups)
    budget = SCREEN_LINES - (1 if folded else 0)
    shown_groups = shown_causes = 0
    for group, causes in groups:
        listed = _varied(causes)[:CAUSES_PER_GROUP] if collapse else causes
        if collapse and shown_groups and 1 + len(listed) > budget:
            break
        title = Text(f"  {group_text(group, len(causes))}", style="bold")
        title.append(_examples(group.examples, group.tests), style="dim")
        parts.append(title)
        for cause in listed:
            parts.append(
                _cause_line(cause, "    ") if not collapse else Text(f"    {cause_text(cause)}")
            )
        budget -= 1 + len(listed)
        shown_groups += 1
        shown_causes += len(listed)
    hidden_groups = len(groups) - shown_groups
    hidden_causes = len(diff.causes) - shown_causes - len(folded)
    if hidden_causes > 0:
        where = f" in {count(hidden_groups, 'more group')}" if hidden_groups else ""
        text = f"  {ELLIPSIS} and {count(hidden_causes, 'more cause')}{where} (--all, --json)"
        parts.append(Text(text, style="dim"))
    if folded:
        parts.append(Text(f"  {imported_text(folded)} (--all lists them)", style="dim"))
    return parts


def _varied(causes: list[Cause]) -> list[Cause]:
    """The causes, the first of each kind before the second of any (in their order
    otherwise): the two lines a group shows collapsed say two things (the results that
    changed, and the output that moved) rather than one thing twice."""
    seen: set[str] = set()
    first: list[Cause] = []
    rest: list[Cause] = []
    for cause in causes:
        (rest if cause.kind in seen else first).append(cause)
        seen.add(cause.kind)
    return first + rest


def _loud_blocks(
    blocks: list[Block], labels: ValueLabels, max_tests: int, max_changes: int, collapse: bool
) -> list[RenderableType]:
    """The tests to review, in reading order under one heading."""
    if not blocks:
        return []
    reaching = sum(1 for block in blocks if block.reaches_changed_code)
    heading = f"to review ({count(len(blocks), 'test')}"
    verb = REACHES if reaching == 1 else REACHES.replace("reaches", "reach", 1)
    heading += f", {reaching} {verb})" if reaching else ")"
    parts: list[RenderableType] = [Text(""), Text(heading, style="bold cyan")]
    if not collapse:
        for block in blocks:
            parts.extend(_block(block, labels, None))
        return parts
    shown, alike = _one_of_each(blocks, max_tests)
    for block in shown:
        parts.extend(_block(block, labels, max_changes))
        others = alike.get(id(block))
        if others:
            parts.append(_alike_line(others))
    hidden = len(blocks) - len(shown) - sum(len(others) for others in alike.values())
    if hidden > 0:
        parts.append(_more(hidden, "tests", how=" (--all shows every test)"))
    return parts


def _signature(block: Block) -> tuple[object, ...]:
    """What a test's block says, without its values: tests whose changes are the same kinds
    at the same places (a parametrized test's cases, all raising the reworded message) read
    as one."""
    changes = tuple(
        (change.kind, change.phase, tuple(change.path), change.symbol, change.site)
        for change in block.changes
    )
    return (block.test.status, outcome_text(block.test), tuple(block.test.structure), changes)


def _one_of_each(blocks: list[Block], max_tests: int) -> tuple[list[Block], dict[int, list[Block]]]:
    """The blocks shown whole (the first of each signature, up to ``max_tests``) and, by
    the ``id`` of a shown block, the later ones that say the same with other values: a
    screen that shows the first of ten alike tests has room for the one whose output
    moved."""
    first: dict[tuple[object, ...], Block] = {}
    shown: list[Block] = []
    alike: dict[int, list[Block]] = {}
    for block in blocks:
        key = _signature(block)
        seen = first.get(key)
        if seen is not None:
            alike.setdefault(id(seen), []).append(block)
            continue
        if len(shown) >= max_tests:
            continue
        first[key] = block
        shown.append(block)
    return shown, alike


#: Ids named on a line of tests alike.
ALIKE_IDS = 3


def _alike_line(others: list[Block]) -> Text:
    """Under a test's block: the tests whose changes are the same but for their values."""
    names = ", ".join(block.test.id for block in others[:ALIKE_IDS])
    more = len(others) - ALIKE_IDS
    if more > 0:
        names += f" and {more} more"
    return Text(
        f"    {ELLIPSIS} and {count(len(others), 'more test')} with the same changes (their "
        f"values aside): {names}",
        style="dim",
    )
