"""What both reports show, in which order: the selection, ranking and collapsing rules live
here once, so that the terminal and the Markdown report agree.

A report reads in the order a reviewer acts (docs/diffing.md, "The report"): tests that
passed and now fail, then behaviour that changed (within a test, the changed code's own
change before its callers'), what cannot be told and tests added or removed, then drift and
gaps, and last what behaves the same: restructured, touched, unstable. Within each tier the
tests that reach the changed code come first."""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from diffgenome.analysis.diff.causes import STRUCTURE_KIND as STRUCTURE_CAUSE
from diffgenome.analysis.diff.causes import UNREACHED
from diffgenome.analysis.models import (
    Cause,
    CauseGroup,
    Change,
    CodeChange,
    DiffDocument,
    DiffSide,
    TestDiff,
)
from diffgenome.protocol.selection import pytest_node_id
from diffgenome.protocol.vocab import (
    CHANGE_KINDS,
    CODE_ADDED,
    CODE_REMOVED,
    IMPORT_TEST_ID,
    OUTCOME_CHANGED,
    STATUS_ADDED,
    STATUS_CHANGED,
    STATUS_REMOVED,
    STATUS_RESTRUCTURED,
    STATUS_TOUCHED,
    STATUS_UNCHANGED,
    STATUS_UNSTABLE,
    STATUS_UNVERIFIED,
)

#: The statuses in the order every report lists them (the summary line, the Markdown
#: report's sections, the HTML index's filters): what needs a look first.
STATUS_ORDER = (
    STATUS_CHANGED,
    STATUS_UNVERIFIED,
    STATUS_UNSTABLE,
    STATUS_RESTRUCTURED,
    STATUS_TOUCHED,
    STATUS_ADDED,
    STATUS_REMOVED,
    STATUS_UNCHANGED,
)


#: Outcomes that mean a test does not pass.
FAILING = frozenset({"failed", "error"})


def now_fails(test: TestDiff) -> bool:
    """A test that did not fail in base and fails in head, and the difference stands: an
    ``unstable`` test's outcome differed only as other recordings of one commit did, or
    was not reproduced when both sides were recorded again (a failure of head's
    environment, not of its code); it is listed as unstable with its outcome, never as a
    test that now fails."""
    base, head = test.outcome.base, test.outcome.head
    if test.status == STATUS_UNSTABLE:
        return False
    return base is not None and base not in FAILING and head in FAILING


def now_failing(diff: DiffDocument) -> list[TestDiff]:
    return [test for test in diff.tests if now_fails(test)]


#: Statuses that say the test behaves the same (shown after drift and gaps).
QUIET = frozenset({STATUS_UNSTABLE, STATUS_RESTRUCTURED, STATUS_TOUCHED, STATUS_UNCHANGED})


def inside_only(test: TestDiff) -> bool:
    """A changed test whose every change is inside the project, results at the test equal
    (docs/diffing.md, "Reach"): read after what the tests see."""
    return test.status == STATUS_CHANGED and test.reach == "internal" and not now_fails(test)


def tier(test: TestDiff) -> int:
    """Where a test stands in the reading order (lower first): what the tests see before
    what happens only inside the project."""
    if now_fails(test):
        return 0
    if test.status == STATUS_CHANGED and not inside_only(test):
        return 1
    if test.status == STATUS_UNVERIFIED and test.may_hide_change:
        return 2
    if test.status in (STATUS_ADDED, STATUS_REMOVED):
        return 3
    if inside_only(test):
        return 4
    if test.status == STATUS_UNVERIFIED:
        return 5
    return {STATUS_RESTRUCTURED: 6, STATUS_TOUCHED: 7, STATUS_UNSTABLE: 8}.get(test.status, 9)


@dataclass(frozen=True, slots=True)
class Block:
    """One test as the reports show it: its diff, whether it reaches the changed code, and
    what to list under it (its changes, the changed code's own first, then its reasons)."""

    test: TestDiff
    reaches_changed_code: bool
    changes: list[Change]
    #: The test's own file was edited where the test runs it (the test function, a helper
    #: or fixture of that file): a changed test whose assertions changed with the code is
    #: read differently from one that only meets the change.
    test_code_edited: bool = False

    @property
    def quiet(self) -> bool:
        """Same behaviour: listed after drift and gaps."""
        return self.test.status in QUIET

    @property
    def inside(self) -> bool:
        """Changed only inside the project: listed after what the tests see."""
        return inside_only(self.test)

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
    #: Where the user is in the repository (``proj/``): a node id given from there names the
    #: recorded id ``proj/<node id>``, as pytest run there would.
    prefix: str = ""

    def selects(self, test_id: str) -> bool:
        """Whether ``--test`` names ``test_id`` (:func:`matches`, also from :attr:`prefix`)."""
        if self.pattern is None:
            return True
        return matches(test_id, self.pattern) or (
            bool(self.prefix)
            and is_node_id(self.pattern)
            and matches(test_id, self.prefix + self.pattern)
        )

    @property
    def collapses(self) -> bool:
        return self.pattern is None and not self.everything


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def test_count(diff: DiffDocument) -> int:
    """The tests of a diff as pytest counts them, in every report and progress line:
    ``<import>`` (what importing the test modules did) is a record, not a test."""
    return sum(1 for test in diff.tests if test.id != IMPORT_TEST_ID)


def summary_text(diff: DiffDocument) -> str:
    """``9 tests: 3 changed, 6 unchanged``, the tests as :func:`test_count` counts them;
    ``<import>`` is named after them when it is not unchanged (``; <import> changed``), then
    how many tests confirmation recorded again (``; 3 recorded again to tell change from
    noise``)."""
    s = diff.summary
    statuses: Counter[str] = Counter(
        str(test.status) for test in diff.tests if test.id != IMPORT_TEST_ID
    )
    inside = sum(1 for t in diff.tests if t.id != IMPORT_TEST_ID and inside_only(t))
    parts = []
    for status in STATUS_ORDER:
        n = statuses[status]
        if status == STATUS_CHANGED and inside:
            # What the tests see first, then what changed only inside (docs/diffing.md,
            # "Reach").
            if n - inside:
                parts.append(f"{n - inside} {'sees' if n - inside == 1 else 'see'} a change")
            parts.append(f"{inside} changed only inside the project (results equal)")
        elif n and status == STATUS_UNCHANGED and s.carried:
            # --selective: how many of them were not run at head, and why that is safe.
            parts.append(
                f"{n} {status} ({s.carried} of them not run: the change does not reach them)"
            )
        elif n:
            parts.append(f"{n} {status}")
    shown = ", ".join(parts)
    tests = count(test_count(diff), "test")
    text = f"{tests}: {shown}" if shown else tests
    imported = next((test.status for test in diff.tests if test.id == IMPORT_TEST_ID), None)
    if imported not in (None, STATUS_UNCHANGED):
        text += f"; {IMPORT_TEST_ID} {imported}"
    if s.confirmed:
        # After a semicolon: in parentheses it read as a part of the last count ("32
        # unchanged (28 confirmed ...)") where the 28 are the tests that differed.
        text += f"; {s.confirmed} recorded again to tell change from noise"
    return text


def side_text(side: DiffSide) -> str:
    """``HEAD~1 (f921860f1ebf)``; a side given as a full commit (CI passes 40 characters)
    is its first 12, as git shortens them."""
    rev = side.rev
    if side.commit and len(rev) > 12 and side.commit.startswith(rev.lower()):
        return rev[:12]
    commit = f" ({side.commit[:12]})" if side.commit and side.commit != side.rev else ""
    return f"{rev}{commit}"


#: Everything that is not unchanged, collapsed.
DEFAULT_SELECTION = Selection()


def is_node_id(pattern: str) -> bool:
    """A ``--test`` pattern that is a pytest node id (``tests/a.py::test_x``), not a glob."""
    return "::" in pattern and "*" not in pattern and "?" not in pattern


def matches(test_id: str, pattern: str) -> bool:
    """``--test PATTERN``: a node id (with ``::``) selects that test, with its parametrized
    cases and subtests when it names a function, and the items that share its node id
    (``#1``), as ``pytest NODE_ID`` does (``tests/a.py::test_pipe`` is not
    ``test_pipe_headerless``); a glob when the pattern has ``*`` or ``?`` (brackets are
    literal, as in parametrized ids); else any part of the id."""
    if test_id == pattern:
        return True
    if "*" in pattern or "?" in pattern:
        glob = pattern.replace("[", "[[]")
        return fnmatch.fnmatchcase(test_id, glob)
    if is_node_id(pattern):
        if pytest_node_id(test_id) == pattern:
            return True
        return test_id.startswith((pattern + "[", pattern + " ", pattern + "::"))
    return pattern in test_id


def ordered_changes(changes: list[Change], changed: frozenset[str] = frozenset()) -> list[Change]:
    """A test's changes as a reviewer reads them: the outcome first, then what the test sees
    (effects, what comes back into its own code: docs/diffing.md, "Reach"), then the changed
    code's own changes (``changed``: its symbols), then the deepest node first (a function's
    result before its callers'), each depth in the fixed order of change kinds."""
    rank = {kind: index for index, kind in enumerate(CHANGE_KINDS)}

    def key(change: Change) -> tuple[int, int, int, int, int]:
        own = change.symbol in changed or (change.site or "").split("/", 1)[0] in changed
        return (
            change.kind != OUTCOME_CHANGED,
            change.reach == "internal",
            not own,
            -len(change.path),
            rank.get(change.kind, len(rank)),
        )

    return sorted(changes, key=key)


def test_blocks(diff: DiffDocument, selection: Selection = DEFAULT_SELECTION) -> list[Block]:
    """The tests to show in reading order (:func:`tier`); within a tier, those that reach
    the changed code (by the code-change mapping, on either side) first, then by id, and
    ``<import>`` after the tests of its tier (what importing the test modules did is read
    after the tests themselves)."""
    reaching: set[str] = set()
    edited: set[str] = set()
    for entry in diff.code_changes:
        reaching.update(entry.tests_base)
        reaching.update(entry.tests_head)
        if entry.path is not None:
            edited.update(
                test_id
                for test_id in (*entry.tests_base, *entry.tests_head)
                if test_id.split("::", 1)[0] == entry.path
            )
    changed = frozenset(entry.symbol for entry in diff.code_changes)
    blocks = []
    for test in diff.tests:
        if selection.pattern is not None:
            if not selection.selects(test.id):
                continue
        elif test.status == STATUS_UNCHANGED and not selection.everything:
            continue
        blocks.append(
            Block(
                test,
                test.id in reaching,
                ordered_changes(test.changes, changed),
                test.status not in (STATUS_ADDED, STATUS_REMOVED)
                and (test.id in edited or (test.base_id is not None and test.base_id in edited)),
            )
        )
    # ``<import>`` is a record, not a test: within its tier it comes after the tests.
    blocks.sort(
        key=lambda b: (
            tier(b.test),
            b.test.id == IMPORT_TEST_ID,
            not b.reaches_changed_code,
            b.test.id,
        )
    )
    return blocks


def failing_text(diff: DiffDocument, few: int = 3) -> str:
    """``2 tests now fail (tests/a.py::x, tests/b.py::y): `` for the first line; empty when
    none does."""
    failing = now_failing(diff)
    if not failing:
        return ""
    names = ", ".join(test.id for test in failing[:few])
    more = f" and {len(failing) - few} more" if len(failing) > few else ""
    verb = "now fails" if len(failing) == 1 else "now fail"
    return f"{count(len(failing), 'test')} {verb} ({names}{more}); "


def gate_text(diff: DiffDocument, fail_on: str | None) -> str:
    """What the first line says of a gate that fails only because tests were added (and, it
    may be, because ``<import>`` changed: a new test module's import runs collection hooks
    once more): no behaviour of an
    existing test changed, and ``--fail-on changed`` counts an added test all the same (a
    product rule, docs/diffing.md, "The gate"). Empty in every other case: the statuses on
    the line say why."""
    if fail_on not in (
        STATUS_CHANGED,
        STATUS_UNVERIFIED,
        STATUS_RESTRUCTURED,
        "seen",
    ) or now_failing(diff):
        return ""
    added = [t for t in diff.tests if t.status == STATUS_ADDED and t.id != IMPORT_TEST_ID]
    if not added:
        return ""
    quiet = {STATUS_ADDED, STATUS_UNCHANGED, STATUS_TOUCHED, STATUS_UNSTABLE}
    if fail_on != STATUS_RESTRUCTURED:
        quiet.add(STATUS_RESTRUCTURED)
    if fail_on != STATUS_UNVERIFIED:
        quiet.add(STATUS_UNVERIFIED)
    for test in diff.tests:
        if test.id == IMPORT_TEST_ID or (test.status in quiet and not test.may_hide_change):
            continue
        return ""
    imported = next((t for t in diff.tests if t.id == IMPORT_TEST_ID), None)
    also = ""
    if imported is not None and imported.status == STATUS_CHANGED:
        also = f" and {IMPORT_TEST_ID} changed"
    tests = count(len(added), "test")
    verb = "was" if len(added) == 1 else "were"
    return (
        f"the gate fails only because {tests} {verb} added{also}: --fail-on {fail_on} "
        "counts an added test; no existing test's behaviour changed"
    )


def causes_worth_showing(diff: DiffDocument) -> bool:
    """Causes are shown when they say something the test blocks do not: some change is
    shared by more than one test."""
    return any(cause.tests > 1 for cause in diff.causes)


def cause_text(cause: Cause) -> str:
    """``6 tests: py:pkg.f results: int → float``; quiet tests' share named."""
    quiet = {
        k: v for k, v in cause.statuses.items() if k not in (STATUS_CHANGED, STATUS_UNVERIFIED)
    }
    extra = ", ".join(f"{n} {status}" for status, n in sorted(quiet.items()))
    prefix = "structure: " if cause.kind == "structure" else ""
    return f"{count(cause.tests, 'test')}{f' ({extra})' if extra else ''}: {prefix}{cause.summary}"


def cause_groups(diff: DiffDocument) -> list[tuple[CauseGroup, list[Cause]]]:
    """The causes by the code change they descend from (``DiffDocument.cause_groups``), each
    group with its causes; empty when the diff read no code changes (the reports then list
    the causes flat)."""
    out = []
    for group in diff.cause_groups:
        members = [diff.causes[i] for i in group.causes if 0 <= i < len(diff.causes)]
        out.append((group, members))
    return out


def only_imported(group: CauseGroup, causes: Sequence[Cause]) -> bool:
    """A group of new code that only ``<import>`` shows, as structure: a new test module or
    class that collection imported (``structure: new `tests.test_pr`, called by the test``).
    It changes no test's behaviour, and a pull request that adds tests has one per module:
    the reports fold such groups into one line after the others, each still named."""
    return (
        group.reach == "code"
        and group.change == CODE_ADDED
        and group.examples == [IMPORT_TEST_ID]
        and group.tests == 1
        and all(cause.kind == STRUCTURE_CAUSE for cause in causes)
    )


def fold_imported(
    groups: Sequence[tuple[CauseGroup, list[Cause]]],
) -> tuple[list[tuple[CauseGroup, list[Cause]]], list[CauseGroup]]:
    """``groups`` without those :func:`only_imported` holds (kept in order), and those."""
    kept: list[tuple[CauseGroup, list[Cause]]] = []
    folded: list[CauseGroup] = []
    for group, causes in groups:
        if only_imported(group, causes):
            folded.append(group)
        else:
            kept.append((group, causes))
    return kept, folded


def imported_text(folded: Sequence[CauseGroup], few: int = 3) -> str:
    """``new code only <import> shows (3): py:tests.test_a, py:tests.test_b and 1 more``."""
    names = ", ".join(str(group.symbol) for group in folded[:few])
    more = f" and {len(folded) - few} more" if len(folded) > few else ""
    return f"new code that only <import> shows, no test's behaviour ({len(folded)}): {names}{more}"


#: Changed symbols named in the heading of a group of causes that reach several of them.
_NAMED_SYMBOLS = 3


def group_tail(group: CauseGroup, causes: int) -> str:
    """``70 tests (3 restructured), 3 causes``: a group's tests, the quiet ones' share named."""
    quiet = {
        k: v for k, v in group.statuses.items() if k not in (STATUS_CHANGED, STATUS_UNVERIFIED)
    }
    extra = ", ".join(f"{n} {status}" for status, n in sorted(quiet.items()))
    tests = count(group.tests, "test") + (f" ({extra})" if extra else "")
    return f"{tests}, {count(causes, 'cause')}"


def several_text(symbols: Sequence[str], name: Callable[[str], str] = str) -> str:
    """The changed symbols a group reaches, the first few named: ``a, b, c and 2 more``."""
    named = ", ".join(name(symbol) for symbol in symbols[:_NAMED_SYMBOLS])
    more = len(symbols) - _NAMED_SYMBOLS
    return named + (f" and {more} more" if more > 0 else "")


def group_text(group: CauseGroup, causes: int) -> str:
    """A group's heading: ``py:pkg.f (modified; decision `x` added): 70 tests, 3 causes``
    (the quiet tests' share named, as in :func:`cause_text`),
    ``through several code changes (py:a, py:b): 20 tests, 5 causes``, ``no code change in
    reach: 2 tests, 1 cause``."""
    tail = group_tail(group, causes)
    if group.reach == "code":
        return f"{group.symbol} ({group.code}): {tail}"
    if group.reach == "several":
        return f"through several code changes ({several_text(group.symbols)}): {tail}"
    return f"{group.code or UNREACHED}: {tail}"


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


@dataclass(frozen=True, slots=True)
class Gap:
    """A gap of changed code as a reviewer looks it up: the diff's words for it, the
    decision's predicate when it is one, and where it is at the revision the entry reports
    (head's file, base's when the symbol was removed)."""

    text: str
    predicate: str | None
    path: str | None
    line: int | None
    commit: str | None

    def place(self) -> str | None:
        """``tab/core.py:118``, as coverage.py and tracebacks name a line."""
        if self.path is None:
            return None
        return f"{self.path}:{self.line}" if self.line is not None else self.path

    def url(self, template: str | None) -> str | None:
        """The line in the repository's web view: ``template`` with ``{commit}``, ``{path}``
        and ``{line}`` filled in (``--source-url``); None without a commit to point at."""
        if not template or self.path is None or self.commit is None:
            return None
        return (
            template.replace("{commit}", self.commit)
            .replace("{path}", self.path)
            .replace("{line}", str(self.line or 1))
        )

    def words(self) -> str:
        """The gap with its predicate, without the place (``… if[3f2a] `x > 0` true``)."""
        if self.predicate and self.text.startswith(OUTCOME_GAP):
            head, _, outcome = self.text.rpartition(" ")
            return f"{head} `{self.predicate}` {outcome}"
        return self.text


#: How the differ words a decision outcome no test observed (``diff/exercised.py``).
OUTCOME_GAP = "decision outcome never observed: "


def gaps_of(entry: CodeChange, diff: DiffDocument) -> list[Gap]:
    """``entry``'s gaps with their places: a decision's at its condition, the others at the
    symbol's definition."""
    side = diff.base if entry.change == CODE_REMOVED else diff.head
    commit = side.commit if side.commit and side.rev != "WORKTREE" else None
    out = []
    for text in entry.gaps:
        predicate, line = None, entry.line
        if text.startswith(OUTCOME_GAP):
            site_id = text[len(OUTCOME_GAP) :].rpartition(" ")[0]
            for site in entry.sites:
                if site.get("site") == site_id:
                    found = site.get("predicate")
                    predicate = found if isinstance(found, str) else None
                    at = site.get("line")
                    line = at if isinstance(at, int) else line
        out.append(Gap(text, predicate, entry.path, line, commit))
    return out
